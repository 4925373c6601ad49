"""What the chapters use to show their work: a function's source, tensors as stable text, and one
line saying whether two computations agree.

    from attnlib.notebook import agree, rounded, show_source
    show_source(attnlib.masked_softmax)                      # the code the chapter is about
    print(rounded(weights))                                  # [[0.5, 0.5, 0.0], ...]
    print(agree("by hand and attnlib", by_hand - weights))   # "by hand and attnlib agree to within 1e-6"
"""
from __future__ import annotations

import inspect
import math

import torch


def show_source(obj) -> None:
    """Display the source code of ``obj`` (a function, class or method), highlighted, in a notebook."""
    from IPython.display import Code, display  # IPython only where a notebook shows code

    display(Code(inspect.getsource(obj), language="python"))


def rounded(t: torch.Tensor, digits: int = 3) -> list:
    """``t`` as nested lists of floats rounded to ``digits`` places: text that prints alike on
    machines whose last bits differ (``-0.0`` prints as ``0.0``)."""
    return (torch.round(t.detach().double(), decimals=digits) + 0.0).tolist()


def agree(what: str, difference, tol: float = 1e-6) -> str:
    """One line for the reader: ``what`` agree to within ``tol``, or by how much they differ.

    ``difference`` is a tensor of differences (``a - b``) or the largest absolute difference already
    taken; only its largest absolute value counts.
    """
    gap = float(torch.as_tensor(difference).detach().abs().max())
    if gap <= tol:
        return f"{what} agree to within 1e{round(math.log10(tol))}"
    return f"{what} differ by {gap:.1e}, more than {tol:g}"
