"""Chapter 2: attention pooling as Nadaraya-Watson kernel regression.

Given training pairs ``(x_i, y_i)`` (keys and values) and a query ``x``, the
Nadaraya-Watson estimator predicts

    f(x) = sum_i  K((x - x_i) / h) / sum_j K((x - x_j) / h)  *  y_i

a weighted average of the values whose weights come from how close each key
is to the query. ``K`` is a kernel and ``h`` its width. This is attention
pooling with a fixed, non-parametric score; making ``h`` a learned parameter
gives the simplest parametric attention. With the Gaussian kernel the weights
are ``softmax_i(-((x - x_i) / h)^2 / 2)``: softmax attention with a distance score.

``kernel_weights`` computes the weights for any kernel in ``KERNELS``,
``NWKernelRegression`` is the (optionally learnable) module, ``leave_one_out``
builds the training keys a learned width needs, and ``loo_cv_mse`` scores a
grid of widths by leave-one-out cross-validation.
"""
from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from ._checks import check_bool, check_float, check_positive, check_tensor, check_values
from .recording import AttentionModule


def _gaussian(u):  # log K(u) for exp(-u^2 / 2), computed in log space for stability
    return -(u ** 2) / 2


def _boxcar(u):
    return torch.where(u.abs() <= 1, 0.0, float("-inf"))


def _epanechnikov(u):
    return torch.log(torch.clamp(1 - u ** 2, min=0.0))


def _constant(u):
    return torch.zeros_like(u)


#: name -> log K(u). Working with log K lets a softmax normalise the weights.
KERNELS = {"gaussian": _gaussian, "boxcar": _boxcar,
           "epanechnikov": _epanechnikov, "constant": _constant}

#: Kernels whose weights do not change as the width moves a little (the boxcar's only jump when a
#: key crosses the window's edge; the constant kernel's never change): no gradient to learn from.
_FLAT_IN_WIDTH = ("boxcar", "constant")


def kernel_weights(queries, keys, kernel: str = "gaussian", width=1.0):
    """Nadaraya-Watson weights ``(n_queries, n_keys)``; each row sums to 1 (or is all 0).

    ``queries (n_queries,)``; ``keys (n_keys,)`` shared by every query or
    ``(n_queries, n_keys)`` per query. A query with no key inside a compact
    kernel's support gets all-zero weights rather than NaN.
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
    check_tensor("queries", queries, 1, "(n_queries,)")
    check_tensor("keys", keys, (1, 2), "(n_keys,) or (n_queries, n_keys)")
    check_float("queries", queries)
    check_float("keys", keys)
    if keys.dim() == 2 and keys.shape[0] != queries.shape[0]:
        raise ValueError(f"keys of shape {tuple(keys.shape)} must have one row per query "
                         f"(queries has shape {tuple(queries.shape)})")
    if not isinstance(width, torch.Tensor):
        check_positive("width", width)
    else:
        check_values((width > 0) & width.isfinite(), lambda: "width must be positive, "
                     f"got {width.detach().flatten().tolist()}")
    u = (queries.unsqueeze(-1) - keys) / width  # (n_queries, n_keys)
    log_k = KERNELS[kernel](u)  # (n_queries, n_keys)
    empty = torch.isinf(log_k).all(dim=-1, keepdim=True)  # (n_queries, 1)
    weights = torch.softmax(log_k.masked_fill(empty, 0.0), dim=-1)  # (n_queries, n_keys)
    return weights.masked_fill(empty, 0.0)


def leave_one_out(x, y):
    """Keys and values ``(n, n - 1)``: row ``i`` holds every training pair except pair ``i``.

    Training a learned width with ``x`` as both queries and keys has a trivial
    optimum: width -> 0, so each point attends only to itself and copies its
    own label (zero training loss, a useless model). Removing pair ``i`` from
    the keys of query ``i`` makes the model predict each label from its
    neighbours instead.
    """
    check_tensor("x", x, 1, "(n,)")
    check_tensor("y", y, 1, "(n,)")
    if x.shape != y.shape or len(x) < 2:
        raise ValueError(f"x and y must have the same shape (n,) with n >= 2, "
                         f"got x {tuple(x.shape)} and y {tuple(y.shape)}")
    n = len(x)
    keep = ~torch.eye(n, dtype=torch.bool, device=x.device)  # (n, n), False on the diagonal
    keys = x.expand(n, n)[keep].reshape(n, n - 1)  # (n, n - 1)
    values = y.expand(n, n)[keep].reshape(n, n - 1)  # (n, n - 1)
    return keys, values


def loo_cv_mse(x, y, kernel: str = "gaussian", widths=(1.0,)):
    """Leave-one-out cross-validation error of Nadaraya-Watson, one value per width.

    For each width, predict every ``y_i`` from the other ``n - 1`` pairs and
    average the squared errors. Points whose window holds no other key (compact
    kernels with a small width) predict 0, which the error then punishes.
    Returns a tensor ``(len(widths),)``.
    """
    if isinstance(widths, (int, float)):
        raise TypeError(f"widths must be a sequence of widths, got the number {widths!r}: "
                        f"pass [{widths!r}]")
    if isinstance(widths, str) or not isinstance(widths, Iterable):
        raise TypeError(f"widths must be a sequence of widths, got {type(widths).__name__}")
    widths = list(widths)
    if not widths:
        raise ValueError("widths must hold at least one width, got an empty sequence")
    keys, values = leave_one_out(x, y)  # (n, n - 1) each
    errors = []
    for width in widths:
        weights = kernel_weights(x, keys, kernel, width)  # (n, n - 1)
        y_hat = (weights * values).sum(dim=-1)  # (n,)
        errors.append(((y_hat - y) ** 2).mean())
    return torch.stack(errors)  # (len(widths),)


class NWKernelRegression(AttentionModule):
    """Nadaraya-Watson regression; ``learnable=True`` trains the width.

    ``forward(queries, keys, values)``: queries ``(n,)``; keys and values
    ``(m,)`` shared by all queries or ``(n, m)`` per query (the leave-one-out
    training set-up). Returns predictions ``(n,)``.

    The learned form follows d2l: a parameter ``w`` scales the distance, so the
    width is ``1 / |w|``. Only the Gaussian and Epanechnikov kernels can learn it:
    the boxcar's and the constant kernel's weights are flat in the width, so
    gradient descent would get no gradient (a ``ValueError`` says so up front).
    """

    def __init__(self, kernel: str = "gaussian", width: float = 1.0, learnable: bool = False):
        super().__init__()
        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
        check_positive("width", width)
        check_bool("learnable", learnable)
        if learnable and kernel in _FLAT_IN_WIDTH:
            raise ValueError(f"kernel {kernel!r} cannot have a learnable width: its weights are "
                             "piecewise constant in the width, so the loss has no gradient with "
                             "respect to it; use 'gaussian' or 'epanechnikov', or pick the width "
                             "with loo_cv_mse")
        self.kernel = kernel
        w = torch.tensor([1.0 / width])
        self.w = nn.Parameter(w) if learnable else None
        if not learnable:
            self.register_buffer("_w", w, persistent=False)

    @property
    def width(self) -> float:
        w = self.w if self.w is not None else self._w
        return float(1.0 / w.detach().abs())

    def forward(self, queries, keys, values):
        check_tensor("keys", keys, (1, 2), "(n_keys,) or (n_queries, n_keys)")
        check_tensor("values", values, (1, 2), "(n_keys,) or (n_queries, n_keys)")
        if values.shape != keys.shape:
            raise ValueError(f"values must match keys: keys {tuple(keys.shape)}, "
                             f"values {tuple(values.shape)}")
        check_float("values", values)
        w = self.w if self.w is not None else self._w
        weights = kernel_weights(queries, keys, self.kernel, 1.0 / w.abs())  # (n, m)
        self._keep(weights.unsqueeze(0))  # (1, n, m): one "batch" of queries
        if values.dim() == 1:
            return weights @ values  # (n,)
        # one (1, m) x (m, 1) product per query: (n, 1, m) bmm (n, m, 1) -> (n, 1, 1)
        return torch.bmm(weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)  # (n,)
