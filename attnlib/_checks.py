"""Input validation shared by every attention module.

Each check raises a ``TypeError`` or ``ValueError`` that names the argument, the
shape it saw and the shape it expected, so a reader never has to decode an
error from deep inside ``torch.bmm``.
"""
from __future__ import annotations

import torch


def check_tensor(name: str, x, ndim: int | tuple[int, ...], what: str) -> None:
    """Require ``x`` to be a tensor with ``ndim`` dimensions (``what`` names them)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {what}, got {type(x).__name__}")
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if x.dim() not in ndims:
        raise ValueError(
            f"{name} must have shape {what} ({' or '.join(map(str, ndims))}-D), "
            f"got a {x.dim()}-D tensor of shape {tuple(x.shape)}"
        )


def check_qkv(queries, keys, values, *, same_dim: bool = False) -> None:
    """Check ``(batch, queries, d_q)``, ``(batch, keys, d_k)``, ``(batch, keys, d_v)``."""
    check_tensor("queries", queries, 3, "(batch, queries, query_size)")
    check_tensor("keys", keys, 3, "(batch, keys, key_size)")
    check_tensor("values", values, 3, "(batch, keys, value_size)")
    b = queries.shape[0]
    if keys.shape[0] != b or values.shape[0] != b:
        raise ValueError(
            "queries, keys and values must share the batch size, got "
            f"queries {tuple(queries.shape)}, keys {tuple(keys.shape)}, values {tuple(values.shape)}"
        )
    if keys.shape[1] != values.shape[1]:
        raise ValueError(
            "keys and values must have the same number of pairs (dim 1), got "
            f"keys {tuple(keys.shape)} and values {tuple(values.shape)}"
        )
    if same_dim and queries.shape[-1] != keys.shape[-1]:
        raise ValueError(
            "this score compares queries and keys directly, so their last dims must match: "
            f"got queries {tuple(queries.shape)} and keys {tuple(keys.shape)}"
        )


def check_size(name: str, got: int, expected: int, x: torch.Tensor) -> None:
    """Require the last dim of ``x`` (argument ``name``) to be ``expected``."""
    if got != expected:
        raise ValueError(
            f"{name} has last dim {got} (shape {tuple(x.shape)}), but this module was "
            f"built for size {expected}"
        )


def check_positive(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value}")


def check_probability(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")
