"""Timing, memory and machine facts shared by every benchmark."""
from __future__ import annotations

import datetime
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F


def sync(device: torch.device) -> None:
    """Wait for queued kernels on ``device`` (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(fns: dict[str, Callable[[], object]], device: torch.device, *,
                max_repeats: int = 15, min_repeats: int = 3, budget_s: float = 4.0,
                warmup: int = 1) -> dict[str, dict]:
    """Time every function of ``fns`` in turns; return ``{name: {median_s, times_s}}``.

    Each round calls every candidate once, in the order :func:`turn_orders` gives, so a
    burst of load from another process slows all of them alike. The number of rounds is
    chosen from the warm-up so that the whole measurement takes about ``budget_s`` (between
    ``min_repeats`` and ``max_repeats`` rounds); without warm-up it is ``min_repeats``.
    """
    names = list(fns)
    start = time.perf_counter()
    for _ in range(warmup):
        for name in names:
            fns[name]()
            sync(device)
    if warmup:
        per_round = (time.perf_counter() - start) / warmup
        rounds = int(min(max_repeats, max(min_repeats, budget_s / max(per_round, 1e-9))))
    else:  # nothing to estimate from: the minimum
        rounds = min_repeats
    times: dict[str, list[float]] = {name: [] for name in names}
    for order in turn_orders(names, rounds):
        for name in order:
            sync(device)
            t0 = time.perf_counter()
            fns[name]()
            sync(device)
            times[name].append(time.perf_counter() - t0)
    return {name: {"median_s": statistics.median(ts), "min_s": min(ts), "times_s": ts}
            for name, ts in times.items()}


#: how :func:`turn_orders` orders the candidates; each part's results record it (earlier runs
#: recorded nothing: they rotated one order)
TURN_ORDER = "balanced"


def turn_orders(names: list[str], rounds: int, seed: int = 0) -> list[list[str]]:
    """The order of the candidates ``names`` in each of ``rounds`` rounds: a Williams design
    (Williams, 1949), in which, over every ``k = len(names)`` rounds (``2 k`` when ``k`` is odd),
    each candidate comes first equally often and right after each other candidate equally often.
    Which candidate takes which place in the design is drawn at random (``seed``).

    Why it matters: at small sizes the call before leaves the caches and the memory allocator in
    a state that slows or speeds the next call by a few percent. Rotating one fixed order puts
    every candidate after the same other one in almost every round, so that effect biases a
    ratio the same way round after round instead of averaging out (measured here once: two
    identical attnlib candidates, no mask, n = 16, one thread, came out 1.080x and 1.037x of raw
    SDPA rotated). A random order each round removes the bias only on average: some candidate
    still follows one other candidate more often than the rest."""
    k = len(names)
    first, low, high = [0], 1, k - 1  # the design's first row: 0, 1, k-1, 2, k-2, ...
    while len(first) < k:
        first.append(low)
        low += 1
        if len(first) < k:
            first.append(high)
            high -= 1
    design = [[(x + i) % k for x in first] for i in range(k)]  # each row shifted by one
    if k % 2:  # an odd k needs the mirrored rows too
        design += [row[::-1] for row in design]
    places = random.Random(seed).sample(names, k)
    return [[places[x] for x in design[r % len(design)]] for r in range(rounds)]


def paired_ratio(res: dict[str, dict], name: str, base: str) -> float:
    """Median over rounds of ``time(name) / time(base)`` within the same round.

    Both were measured moments apart, so a slow period caused by another process
    cancels out better than in a ratio of the two medians.
    """
    pairs = zip(res[name]["times_s"], res[base]["times_s"], strict=True)
    return statistics.median(a / b for a, b in pairs)


def peak_bytes(fn: Callable[[], object], device: torch.device) -> int:
    """Peak bytes of the tensors ``fn()`` allocates (inputs and parameters excluded).

    CUDA: ``torch.cuda.max_memory_allocated`` above what was allocated before.
    CPU: :func:`attnlib.selfattention.peak_memory`, which counts every storage an
    operator returns while it is alive (a fused kernel's private scratch is not
    visible to it; the tensors that dominate, like an ``n x n`` weight matrix, are).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        fn()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    from attnlib.selfattention import peak_memory

    return peak_memory(fn)[0]


# Operator names that tell which SDPA kernel ran (PyTorch 2.x).
SDPA_KERNELS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (fused CPU kernel)",
    "aten::_scaled_dot_product_flash_attention": "flash (CUDA)",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient (CUDA)",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN",
    "aten::_scaled_dot_product_fused_attention_overrideable": "fused (other backend)",
    "aten::_scaled_dot_product_attention_math": "math (unfused)",
}


def kernels_used(fn: Callable[[], object]) -> list[str]:
    """The SDPA kernels (see :data:`SDPA_KERNELS`) that ``fn()`` calls, found with torch.profiler.

    Without any SDPA op (a step-by-step path) it returns ``["none (bmm + softmax)"]``.
    """
    # torch.profiler runs Kineto (in libtorch), which logs "USDT ... profiler_start" and
    # "profiler_stop" at every use, and "ERROR ... gpuGetDeviceCount failed" without a GPU.
    # Kineto reads KINETO_LOG_LEVEL when the profiler first starts; its levels run from
    # 0 (verbose) to 5 (USDT, the highest), so 6 silences it. Set it yourself to see them.
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities) as prof:
        fn()
    names = {e.name for e in prof.events()}
    found = [label for op, label in SDPA_KERNELS.items() if op in names]
    return found or ["none (bmm + softmax)"]


def commit() -> str | None:
    """The book's commit (short hash, ``+changes`` when the working tree differs from it), or
    None outside a git checkout: what a measurement was made on."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty else "")


class OpCounter:
    """The aten operations dispatched inside ``with OpCounter() as ops:``, views included,
    in ``ops.names``: deterministic, unlike a time, and what a GPU pays as kernel launches
    (most of them) and a CPU as a few microseconds each."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        names: list[str] = []

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                names.append(func.overloadpacket.__name__)
                return func(*args, **(kwargs or {}))

        self.names, self._mode = names, _Mode()

    def __enter__(self) -> OpCounter:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)


def count_ops(fn: Callable[[], object]) -> list[str]:
    """The aten operations one call of ``fn()`` dispatches, without autograd (a forward pass)."""
    with torch.no_grad(), OpCounter() as ops:
        fn()
    return ops.names


def machine_info(device: torch.device) -> dict:
    """CPU model, cores, versions, threads and date: the facts a result needs to be read."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        import importlib.metadata as md

        d2l_version = md.version("d2l")
    except Exception:  # noqa: BLE001 - d2l is optional for the report
        d2l_version = "not installed"
    info = {
        "date_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "d2l": d2l_version,
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
    }
    if device.type == "cuda" or torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name()
        info["cuda"] = torch.version.cuda
        info["cudnn"] = torch.backends.cudnn.version()
    return info


def sdpa_self_check(device: torch.device) -> dict:
    """Which kernel raw SDPA picks for each mask kind at a mid size (profiled once)."""
    q = torch.randn(2, 4, 256, 64, device=device)
    pad = (torch.arange(256, device=device) < 200).view(1, 1, 1, 256).expand(2, 1, 1, 256)
    return {
        "none": kernels_used(lambda: F.scaled_dot_product_attention(q, q, q)),
        "padding (bool mask)": kernels_used(lambda: F.scaled_dot_product_attention(
            q, q, q, attn_mask=pad)),
        "causal (is_causal)": kernels_used(lambda: F.scaled_dot_product_attention(
            q, q, q, is_causal=True)),
    }
