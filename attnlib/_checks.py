"""Input validation shared by the whole library.

Each check raises a ``TypeError`` (wrong kind of thing) or ``ValueError`` (right kind,
wrong shape or value) that names the argument, what it got and what was expected, so a
reader never has to decode an error from deep inside ``torch.bmm``.

Shapes, dtypes and devices are read from a tensor's metadata, which costs nothing. Checks
of tensor *values* (lengths in range, ids in the vocabulary) need the numbers: they run
eagerly on the CPU, and on an accelerator only as ``torch._assert_async``, which never
makes the host wait for the device (see :func:`check_values`).
"""
from __future__ import annotations

import math

import torch


def _kind(x) -> str:
    return type(x).__name__


def check_tensor(name: str, x, ndim: int | tuple[int, ...], what: str) -> None:
    """Require ``x`` to be a tensor with ``ndim`` dimensions (``what`` names them)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {what}, got {_kind(x)}")
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if x.dim() not in ndims:
        raise ValueError(
            f"{name} must have shape {what} ({' or '.join(map(str, ndims))}-D), "
            f"got a {x.dim()}-D tensor of shape {tuple(x.shape)}"
        )


def check_float(name: str, x: torch.Tensor) -> None:
    """Require a floating-point tensor (attention averages, so ids or bools make no sense)."""
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}: "
                        f"convert it with {name}.float()")


def check_nonempty(name: str, x: torch.Tensor) -> None:
    if x.numel() == 0:
        raise ValueError(f"{name} must not be empty (every dim > 0), got shape {tuple(x.shape)}")


def check_same(names: str, *xs: torch.Tensor) -> None:
    """Require one dtype and one device for tensors that meet in one computation."""
    if len({x.dtype for x in xs}) > 1:
        raise TypeError(f"{names} must share one dtype, got {', '.join(str(x.dtype) for x in xs)}")
    if len({x.device for x in xs}) > 1:
        raise ValueError(f"{names} must be on one device, got {', '.join(str(x.device) for x in xs)}")


def check_device(name: str, x: torch.Tensor, device: torch.device | None, where: str = "the model") -> None:
    """Require ``x`` on ``device`` (None: anywhere); the message names both devices."""
    if device is not None and x.device != device:
        raise ValueError(f"{name} is on {x.device} but {where} is on {device}: "
                         f"move it with {name}.to({str(device)!r})")


def module_device(module: torch.nn.Module) -> torch.device | None:
    """The device of a module's first parameter or buffer (None when it has neither)."""
    for t in module.parameters():
        return t.device
    for t in module.buffers():
        return t.device
    return None


def check_module_input(module: torch.nn.Module, name: str, x: torch.Tensor,
                       param: torch.Tensor | None = None) -> None:
    """``x`` on the module's device, in its parameters' dtype (autocast converts by itself).
    ``param``: the parameter to compare with (default: the module's first one); a layer called
    many times per step passes it, since walking ``module.parameters()`` costs microseconds."""
    p = next(module.parameters(), None) if param is None else param
    if p is None:
        return
    check_device(name, x, p.device, "the module")
    if x.dtype != p.dtype and not (x.device.type in ("cpu", "cuda", "mps")
                                   and torch.is_autocast_enabled(x.device.type)):
        raise TypeError(f"{name} has dtype {x.dtype} but the module's parameters are {p.dtype}: "
                        f"convert one of them (module.to({x.dtype}))")


def check_qkv(queries, keys, values, *, same_dim: bool = False) -> None:
    """Check ``(batch, queries, d_q)``, ``(batch, keys, d_k)``, ``(batch, keys, d_v)``."""
    check_tensor("queries", queries, 3, "(batch, queries, query_size)")
    check_tensor("keys", keys, 3, "(batch, keys, key_size)")
    check_tensor("values", values, 3, "(batch, keys, value_size)")
    check_float("queries", queries)
    check_same("queries, keys and values", queries, keys, values)
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
    for name, x in (("queries", queries), ("keys", keys), ("values", values)):
        check_nonempty(name, x)
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


def check_number(name: str, value) -> None:
    """A real number (``bool`` is not one), finite."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {_kind(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")


def check_positive(name: str, value, what: str = "positive") -> None:
    """A finite number > 0 (a learning rate, a width, a temperature); NaN is not positive."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {_kind(value)}")
    if not value > 0:
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")


def check_probability(name: str, value) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {_kind(value)}")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}")


def check_int(name: str, value, minimum: int = 1) -> None:
    """An ``int`` (not a ``bool``) of at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {_kind(value)}")
    if value < minimum:
        what = {0: "a non-negative int", 1: "a positive int"}.get(minimum, f"an int >= {minimum}")
        raise ValueError(f"{name} must be {what}, got {value}")


def check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {_kind(value)}")


def check_values(ok: torch.Tensor, message) -> None:
    """Raise ``ValueError(message())`` unless every element of the bool tensor ``ok`` holds.

    On the CPU the check is eager. On an accelerator, reading ``ok`` would make the host
    wait for the device (a sync in every forward pass), so the check is queued with
    ``torch._assert_async`` instead: a violation stops the process at a later kernel
    launch, with the device's assertion message. ``meta`` tensors hold no values.
    """
    if ok.device.type == "cpu":
        if not bool(ok.all()):
            raise ValueError(message())
    elif ok.device.type != "meta":
        torch._assert_async(ok.all())


def check_lengths(name: str, lens: torch.Tensor, low: int, high: int) -> None:
    """Whole numbers in ``[low, high]`` (valid lengths). On the CPU the few numbers are read
    in Python (cheaper than tensor ops at these sizes); elsewhere as :func:`check_values`."""
    if lens.numel() == 0:
        return
    if lens.device.type == "cpu":
        values = lens.flatten().tolist()
        if lens.is_floating_point() and not all(math.isfinite(x) and x == int(x) for x in values):
            raise ValueError(f"{name} must hold whole numbers, got {lens.tolist()}")
        if min(values) < low or max(values) > high:
            raise ValueError(f"{name} must lie in [{low}, {high}], got {lens.tolist()}")
        return
    if lens.is_floating_point():
        check_values(lens == lens.round(), lambda: f"{name} must hold whole numbers")
    check_values((lens >= low) & (lens <= high), lambda: f"{name} must lie in [{low}, {high}]")


def check_rows(index, batch_size: int) -> None:
    """``index`` (of ``reorder_state``, beam search): a 1-D integer tensor of batch rows in
    ``[0, batch_size)``; negative rows, which torch would wrap around, are refused."""
    check_tensor("index", index, 1, "(new_batch,) of batch rows")
    if index.is_floating_point() or index.dtype == torch.bool:
        raise TypeError(f"index must hold integer batch rows, got dtype {index.dtype}")
    check_lengths("index", index, 0, batch_size - 1)
