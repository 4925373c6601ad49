"""Chapter 6: telling self-attention where each token is.

Self-attention is permutation-equivariant: shuffle the inputs and the outputs
shuffle the same way. Order must be added to the inputs (absolute encodings:
:class:`PositionalEncoding`, :class:`LearnedPositionalEmbedding`) or to the
scores (relative: :class:`RotaryEmbedding`).
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_float, check_probability, check_tensor


def _check_count(name: str, value) -> None:
    """Require a positive ``int`` (a length or a width)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be positive, got {value}")


def _check_offset(offset) -> None:
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise ValueError(f"offset must be a non-negative int (the position of the first step), "
                         f"got {offset!r}")


def sinusoidal_table(max_len: int, num_hiddens: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """``P (max_len, num_hiddens)`` with ``P[p, 2j] = sin(p / 10000^(2j/d))``,
    ``P[p, 2j+1] = cos(p / 10000^(2j/d))``. An odd ``num_hiddens`` ends with a lone sine column.
    ``dtype`` (a floating type) is the precision of the whole computation, angles included."""
    _check_count("max_len", max_len)
    _check_count("num_hiddens", num_hiddens)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype}")
    pos = torch.arange(max_len, dtype=dtype).unsqueeze(1)  # (max_len, 1)
    freq = torch.pow(10000, torch.arange(0, num_hiddens, 2, dtype=dtype) / num_hiddens)
    angles = pos / freq  # (max_len, ceil(d / 2))
    P = torch.zeros(max_len, num_hiddens, dtype=dtype)
    P[:, 0::2] = torch.sin(angles)
    P[:, 1::2] = torch.cos(angles[:, : num_hiddens // 2])
    return P


def offset_rotation(offset: int, num_hiddens: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The matrix ``M_k (num_hiddens, num_hiddens)`` with ``P[p + k] = M_k @ P[p]`` for every ``p``.

    Each pair ``(sin(p w_j), cos(p w_j))`` moves ``k`` steps by the angle-addition
    formulas, a 2x2 rotation by ``k w_j`` that does not depend on ``p``::

        [sin((p+k) w)]   [ cos(k w)  sin(k w)] [sin(p w)]
        [cos((p+k) w)] = [-sin(k w)  cos(k w)] [cos(p w)]

    so ``M_k`` is block diagonal. This is why a linear layer can learn to attend
    "k positions away". ``offset`` may be negative; ``num_hiddens`` must be even.
    Computed in float64, returned as ``dtype``.
    """
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TypeError(f"offset must be an int, got {type(offset).__name__}")
    _check_count("num_hiddens", num_hiddens)
    if num_hiddens % 2:
        raise ValueError(f"offset_rotation needs an even num_hiddens (sine/cosine pairs), "
                         f"got {num_hiddens}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point dtype, got {dtype}")
    freq = torch.pow(10000, torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)
    angle = offset / freq  # (num_hiddens / 2,): k w_j
    cos, sin = angle.cos(), angle.sin()
    blocks = torch.stack((torch.stack((cos, sin), -1),
                          torch.stack((-sin, cos), -1)), -2)  # (num_hiddens / 2, 2, 2)
    return torch.block_diag(*blocks).to(dtype)  # (num_hiddens, num_hiddens)


class _AbsolutePosition(nn.Module):
    """Shared forward: add position vectors ``offset .. offset+n-1`` to ``X``, then dropout."""

    def __init__(self, num_hiddens: int, dropout: float, max_len: int) -> None:
        super().__init__()
        _check_count("num_hiddens", num_hiddens)
        _check_count("max_len", max_len)
        check_probability("dropout", dropout)
        self.num_hiddens, self.max_len = num_hiddens, max_len
        self.dropout = nn.Dropout(dropout)

    def table(self) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def forward(self, X: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``X (batch, n, num_hiddens)``; ``offset`` is the position of ``X[:, 0]`` (decoding)."""
        check_tensor("X", X, 3, f"(batch, steps, {self.num_hiddens})")
        check_float("X", X)  # adding a float table to ids would truncate it
        if X.shape[-1] != self.num_hiddens:
            raise ValueError(f"X has last dim {X.shape[-1]} (shape {tuple(X.shape)}); "
                             f"expected num_hiddens={self.num_hiddens}")
        _check_offset(offset)
        if offset + X.shape[1] > self.max_len:
            raise ValueError(f"positions up to {offset + X.shape[1]} requested "
                             f"(X shape {tuple(X.shape)}, offset {offset}), but max_len={self.max_len}")
        P = self.table()[offset: offset + X.shape[1]]  # (n, num_hiddens)
        return self.dropout(X + P.to(X.dtype))  # (batch, n, num_hiddens)


class PositionalEncoding(_AbsolutePosition):
    """Sinusoidal positional encoding (Vaswani et al.), d2l's interface.

    A fixed table, so every position up to ``max_len`` has an encoding with nothing to
    learn, and the encoding of ``p + k`` is a rotation of that of ``p``. Having an
    encoding is not generalising to it: models trained on short sequences degrade on
    longer ones (Press et al., 2022). Inputs past ``max_len`` raise a ``ValueError``.
    """

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000) -> None:
        super().__init__(num_hiddens, dropout, max_len)
        self.register_buffer("P", sinusoidal_table(max_len, num_hiddens).unsqueeze(0),
                             persistent=False)  # (1, max_len, num_hiddens), as d2l

    def table(self) -> torch.Tensor:
        return self.P[0]


class LearnedPositionalEmbedding(_AbsolutePosition):
    """One trained vector per position (BERT, GPT): flexible, but none exists past ``max_len``
    (a ``ValueError``), and positions rarely seen in training keep poorly trained vectors."""

    def __init__(self, num_hiddens: int, dropout: float = 0.0, max_len: int = 1000) -> None:
        super().__init__(num_hiddens, dropout, max_len)
        self.embedding = nn.Embedding(max_len, num_hiddens)

    def table(self) -> torch.Tensor:
        return self.embedding.weight


class RotaryEmbedding(nn.Module):
    """Rotary position embedding, RoPE (Su et al.).

    Rotates each pair of features ``(x_2j, x_2j+1)`` of a query or key at
    position ``p`` by the angle ``p * theta_j``, ``theta_j = base ** (-2j / dim)``. The dot
    product of a rotated query at ``m`` and a rotated key at ``n`` then depends on the two
    vectors and on their positions only through ``m - n``: the scores see relative, not
    absolute, positions.
    Apply it to queries and keys, not values. With a small ``dim`` and short sequences the
    slow pairs hardly turn at all (``dim = 8``, base 10000: 0.001 rad per position); a
    smaller ``base`` makes every pair turn faster.
    """

    def __init__(self, dim: int, base: float = 10000.0, max_len: int = 4096) -> None:
        super().__init__()
        _check_count("dim", dim)
        _check_count("max_len", max_len)
        if dim % 2:
            raise ValueError(f"RotaryEmbedding needs an even dim, got {dim}")
        if not isinstance(base, (int, float)) or isinstance(base, bool):
            raise TypeError(f"base must be a number, got {type(base).__name__}")
        if not (math.isfinite(base) and base > 1):
            raise ValueError(f"base must be a finite number > 1 (the longest wavelength), got {base!r}")
        self.dim, self.max_len = dim, max_len
        theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)  # (dim / 2,)
        angles = torch.arange(max_len, dtype=torch.float32).unsqueeze(1) * theta  # (max_len, dim / 2)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x (..., n, dim)`` at positions ``offset .. offset+n-1``; returns the same shape."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor of shape (..., n, {self.dim}), got {type(x).__name__}")
        if x.dim() < 2 or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape (..., n, {self.dim}), got {tuple(x.shape)}")
        check_float("x", x)
        _check_offset(offset)
        n = x.shape[-2]
        if offset + n > self.max_len:
            raise ValueError(f"positions up to {offset + n} requested, but max_len={self.max_len} "
                             f"(x shape {tuple(x.shape)}, offset {offset})")
        cos = self.cos[offset: offset + n].to(x.dtype)  # (n, dim / 2)
        sin = self.sin[offset: offset + n].to(x.dtype)  # (n, dim / 2)
        x1, x2 = x[..., 0::2], x[..., 1::2]  # (..., n, dim / 2) each
        rotated = torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (..., n, dim/2, 2)
        return rotated.flatten(-2)  # (..., n, dim)
