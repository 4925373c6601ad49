"""Chapter 8: SNAIL, causal attention interleaved with dilated causal convolutions.

Mishra et al. (2018, "A Simple Neural Attentive Meta-Learner") pair two causal layers:
*temporal convolutions* see a fixed window of exact relative positions, *soft attention*
looks up any earlier position by content. Both only concatenate new features to their
input (dense connections), so later layers see everything before them.

* :class:`CausalConv1d`: a dilated convolution that never looks ahead;
* :class:`DenseBlock`, :class:`TCBlock`: gated dilated convolutions, 1, 2, 4, ... apart;
* :class:`AttentionBlock`: causal single-head attention, output concatenated to the input;
* :class:`SNAIL`: a sequence tagger built from them (no positional encoding);
* :func:`make_recall_task`: a causal task that needs content *and* exact relative position.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_float, check_module_input, check_tensor, module_device
from .lm import CausalBlock  # the decoder-only block
from .multihead import MultiHeadAttention
from .positional import LearnedPositionalEmbedding, PositionalEncoding
from .seq2seq import check_sizes, check_token_ids


def _check_channels(X: torch.Tensor, channels: int) -> None:
    """``X`` must be a float ``(batch, steps, channels)`` tensor."""
    check_tensor("X", X, 3, f"(batch, steps, {channels})")
    check_float("X", X)
    if X.shape[-1] != channels:
        raise ValueError(f"X has {X.shape[-1]} channels (shape {tuple(X.shape)}), expected "
                         f"{channels}")


class CausalConv1d(nn.Module):
    """``(batch, steps, in_channels) -> (batch, steps, out_channels)``; output ``t`` sees inputs
    ``t, t - d, .., t - (kernel_size - 1) d`` only (``d = dilation``; zeros before the start).

    The same function as ``nn.Conv1d`` with ``(kernel_size - 1) d`` zeros padded on the left,
    written as one linear layer over the ``kernel_size`` shifted copies of the input (one
    matrix product: several times faster than ``nn.Conv1d`` for these tiny sizes on a CPU).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 2,
                 dilation: int = 1) -> None:
        super().__init__()
        check_sizes(in_channels=in_channels, out_channels=out_channels, kernel_size=kernel_size,
                    dilation=dilation)
        self.in_channels, self.kernel_size, self.dilation = in_channels, kernel_size, dilation
        self.linear = nn.Linear(kernel_size * in_channels, out_channels)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        _check_channels(X, self.in_channels)
        check_module_input(self, "X", X)
        n = X.shape[1]
        taps = [F.pad(X, (0, 0, k * self.dilation, 0))[:, :n]  # (batch, steps, in): X shifted k d
                for k in range(self.kernel_size - 1, -1, -1)]  # oldest tap first, as Conv1d
        return self.linear(torch.cat(taps, dim=-1))  # (batch, steps, out_channels)


class DenseBlock(nn.Module):
    """A gated causal convolution whose output is concatenated to the input:
    ``(batch, steps, c) -> (batch, steps, c + filters)``, new features ``tanh(f) * sigmoid(g)``."""

    def __init__(self, in_channels: int, filters: int, dilation: int) -> None:
        super().__init__()
        self.conv = CausalConv1d(in_channels, 2 * filters, 2, dilation)  # f and g in one call

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        f, g = self.conv(X).chunk(2, dim=-1)  # (batch, steps, filters) each
        act = torch.tanh(f) * torch.sigmoid(g)  # (batch, steps, filters)
        return torch.cat((X, act), dim=-1)  # (batch, steps, c + filters)


class TCBlock(nn.Module):
    """Dense blocks with dilations ``1, 2, 4, .., 2^(L-1)``, ``L = ceil(log2 seq_len)``, so the
    last one sees the whole sequence: ``(batch, steps, c) -> (batch, steps, c + L filters)``."""

    def __init__(self, in_channels: int, seq_len: int, filters: int) -> None:
        super().__init__()
        check_sizes(in_channels=in_channels, seq_len=seq_len, filters=filters)
        num_layers = max(1, math.ceil(math.log2(seq_len)))
        self.blocks = nn.Sequential(*(DenseBlock(in_channels + i * filters, filters, 2 ** i)
                                      for i in range(num_layers)))
        self.out_channels = in_channels + num_layers * filters

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return self.blocks(X)  # (batch, steps, out_channels)


class AttentionBlock(nn.Module):
    """Causal single-head attention whose output is concatenated to the input:
    ``(batch, steps, c) -> (batch, steps, c + value_size)``."""

    def __init__(self, in_channels: int, value_size: int) -> None:
        super().__init__()
        check_sizes(in_channels=in_channels, value_size=value_size)
        self.in_channels = in_channels
        self.attention = MultiHeadAttention(value_size, 1, query_size=in_channels,
                                            key_size=in_channels, value_size=in_channels)
        self.out_channels = in_channels + value_size

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        _check_channels(X, self.in_channels)
        read = self.attention(X, X, X, causal=True)  # (batch, steps, value_size)
        return torch.cat((X, read), dim=-1)  # (batch, steps, c + value_size)


class SNAIL(nn.Module):
    """Embedding, then ``TC, attention, TC, attention``, then a linear classifier per position.

    ``forward(X (batch, steps)) -> logits (batch, steps, num_classes)``, causal throughout:
    output ``t`` depends on tokens ``0 .. t``. No positional encoding: the convolutions are
    the only source of order.
    """

    def __init__(self, vocab_size: int, num_classes: int, seq_len: int, num_hiddens: int = 32,
                 filters: int = 16, value_size: int = 32) -> None:
        super().__init__()
        check_sizes(vocab_size=vocab_size, num_classes=num_classes, seq_len=seq_len,
                    num_hiddens=num_hiddens, filters=filters, value_size=value_size)
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        layers, c = [], num_hiddens
        for _ in range(2):
            tc = TCBlock(c, seq_len, filters)
            att = AttentionBlock(tc.out_channels, value_size)
            layers += [tc, att]
            c = att.out_channels
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(c, num_classes)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_token_ids("X", X, self.vocab_size, module_device(self))
        H = self.embedding(X)  # (batch, steps, num_hiddens)
        return self.head(self.layers(H))  # (batch, steps, num_classes)


class CausalTransformerTagger(nn.Module):
    """The comparison model: embedding, optional absolute positions, ``num_blks`` causal
    (GPT-style) blocks and a linear classifier: ``(batch, steps) -> (batch, steps, classes)``.
    ``position`` is ``None``, ``"sinusoidal"`` or ``"learned"``."""

    def __init__(self, vocab_size: int, num_classes: int, num_hiddens: int = 32,
                 ffn_num_hiddens: int = 64, num_heads: int = 4, num_blks: int = 2,
                 position: str | None = "sinusoidal", max_len: int = 64) -> None:
        super().__init__()
        if position not in (None, "sinusoidal", "learned"):
            raise ValueError(f"position must be None, 'sinusoidal' or 'learned', got {position!r}")
        check_sizes(vocab_size=vocab_size, num_classes=num_classes, num_hiddens=num_hiddens,
                    ffn_num_hiddens=ffn_num_hiddens, num_heads=num_heads, num_blks=num_blks,
                    max_len=max_len)
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos = {"sinusoidal": lambda: PositionalEncoding(num_hiddens, 0.0, max_len),
                    "learned": lambda: LearnedPositionalEmbedding(num_hiddens, 0.0, max_len),
                    }.get(position, nn.Identity)()
        self.blks = nn.ModuleList(CausalBlock(num_hiddens, ffn_num_hiddens, num_heads, pre_norm=True)
                                  for _ in range(num_blks))
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        check_token_ids("X", X, self.vocab_size, module_device(self))
        H = self.pos(self.embedding(X))  # (batch, steps, num_hiddens)
        for blk in self.blks:
            H = blk(H)  # (batch, steps, num_hiddens)
        return self.head(H)  # (batch, steps, num_classes)


IGNORE = -100
"""Label of positions that have no answer (``F.cross_entropy``'s default ``ignore_index``)."""


def make_recall_task(num_examples: int, seq_len: int, vocab_size: int,
                     generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Associative recall ("what came after this token last time?"), a causal task.

    ``X (num_examples, seq_len)``: i.i.d. tokens in ``0 .. vocab_size-1``. ``Y[:, t]`` is the
    token that followed the most recent earlier occurrence of ``X[:, t]``, i.e. ``X[:, j+1]``
    for the largest ``j < t`` with ``X[:, j] == X[:, t]``, and :data:`IGNORE` if there is none.
    Finding ``j`` is a lookup by content (attention); reading ``j + 1`` needs the exact offset
    "one step later" (position).
    """
    for name, value in (("num_examples", num_examples), ("seq_len", seq_len),
                        ("vocab_size", vocab_size)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    X = torch.randint(vocab_size, (num_examples, seq_len), generator=generator)  # (examples, n)
    pos = torch.arange(seq_len)
    earlier = pos[None, :] < pos[:, None]  # (n, n): [t, j] is True when j < t
    same = (X[:, :, None] == X[:, None, :]) & earlier  # (examples, n, n): X[t] == X[j], j < t
    last = torch.where(same, pos, -1).max(-1).values  # (examples, n): the largest such j, or -1
    after = X.gather(1, (last + 1).clamp(max=seq_len - 1))  # (examples, n): X[j + 1]
    return X, torch.where(last >= 0, after, IGNORE)
