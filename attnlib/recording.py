"""Getting attention weights out of a model, for heatmaps.

Every module that computes attention derives from :class:`AttentionModule`.
Normally it keeps nothing: the fused kernels never even build the
``queries x keys`` matrix. Inside ``with record_attention(model) as rec:`` each
such module takes the path that computes its weights and hands a detached copy,
shaped ``(batch, heads, queries, keys)``, to ``rec``::

    with record_attention(model) as rec:
        model(X, valid_lens)
    rec.names()                         # ['blks.0.attention', 'blks.1.attention']
    rec.last('blks.1.attention')        # (batch, heads, queries, keys)

Modules called once per decoding step record one entry per call;
``rec.stack(name)`` joins them along the query axis.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn


class AttentionModule(nn.Module):
    """Base class: a module whose forward computes attention weights."""

    def __init__(self) -> None:
        super().__init__()
        self._record: list[torch.Tensor] | None = None  # a list only while recording
        self.attention_weights: torch.Tensor | None = None  # last weights, while recording

    @property
    def recording(self) -> bool:
        """True inside ``record_attention``: forward must compute its weights."""
        return self._record is not None

    def _keep(self, weights: torch.Tensor | None) -> None:
        """Store ``weights`` (``(batch, queries, keys)`` or 4-D with heads) if recording."""
        if self._record is None or weights is None:
            return
        weights = weights.detach()
        self.attention_weights = weights
        self._record.append(weights if weights.dim() == 4 else weights.unsqueeze(1))


class AttentionRecord:
    """Weights recorded by :func:`record_attention`, by module name."""

    def __init__(self) -> None:
        self.weights: dict[str, list[torch.Tensor]] = {}

    def names(self) -> list[str]:
        """Names of the modules that recorded at least one call."""
        return [name for name, calls in self.weights.items() if calls]

    def _calls(self, name: str) -> list[torch.Tensor]:
        if name not in self.weights:
            raise KeyError(f"no attention module named {name!r}; recorded: {list(self.weights)}")
        if not self.weights[name]:
            raise KeyError(f"attention module {name!r} was not called while recording")
        return self.weights[name]

    def __getitem__(self, name: str) -> list[torch.Tensor]:
        """Every call's weights, each ``(batch, heads, queries, keys)``."""
        return self._calls(name)

    def last(self, name: str) -> torch.Tensor:
        """The last call's weights, ``(batch, heads, queries, keys)``."""
        return self._calls(name)[-1]

    def stack(self, name: str) -> torch.Tensor:
        """All calls joined along the query axis (step-by-step decoding).

        Steps that saw fewer keys (a growing cache) are padded with zeros on the right.
        """
        calls = self._calls(name)
        nk = max(w.shape[-1] for w in calls)
        calls = [nn.functional.pad(w, (0, nk - w.shape[-1])) for w in calls]
        return torch.cat(calls, dim=2)  # (batch, heads, steps * queries, keys)


@contextmanager
def record_attention(model: nn.Module) -> Iterator[AttentionRecord]:
    """Record the attention weights of every :class:`AttentionModule` in ``model``."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    modules = [(n or type(m).__name__, m) for n, m in model.named_modules()
               if isinstance(m, AttentionModule)]
    if not modules:
        raise ValueError(f"{type(model).__name__} contains no AttentionModule to record")
    rec = AttentionRecord()
    for name, module in modules:
        module._record = rec.weights.setdefault(name, [])
    try:
        yield rec
    finally:
        for _, module in modules:
            module._record = None
            module.attention_weights = None
