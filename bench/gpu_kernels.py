"""What one forward of each multi-head module launches on a GPU, and what that costs.

    python -m bench.gpu_kernels [--sizes 512,2048] [--dtype bfloat16]

For raw SDPA, attnlib's ``MultiHeadAttention`` and ``nn.MultiheadAttention`` (the candidates of
:func:`bench.attention.module_candidates`: self-attention, batch 8, 16 heads of 64) and every
mask: the device kernels one forward launches (counted with ``torch.profiler``), the forward's
time synchronised after each call and back to back (the GPU's own time, launches overlapped), and
the kernels attnlib launches beyond raw SDPA's, by name. On a machine without CUDA it counts the
aten operations instead (:func:`bench.common.count_ops`), at the same sizes scaled down, so that
the script is checked here too. ``bench/gpu_run.sh`` runs it first; its table goes to the log.
"""
from __future__ import annotations

import argparse
import collections
import os
import time

import torch

from .attention import MASKS, NN_MHA, module_candidates
from .common import count_ops, interleaved, sync

SHOWN = ("sdpa", "attnlib", NN_MHA)


def device_kernels(fn, device: torch.device) -> list[str]:
    """The names of the kernels one call of ``fn()`` (no autograd) launches on ``device``; on the
    CPU, the aten operations it dispatches."""
    if device.type != "cuda":
        return count_ops(fn)
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # Kineto's USDT lines (see common.kernels_used)
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.no_grad():
        fn()
        sync(device)
        with torch.profiler.profile(activities=activities) as prof:
            fn()
            sync(device)
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def forward_ms(fns: dict, device: torch.device, calls: int = 50) -> dict[str, tuple[float, float]]:
    """Per candidate of ``fns``: the median ms of one forward synchronised after each call
    (:func:`bench.common.interleaved`, the candidates taking turns), and the mean ms of ``calls``
    forwards back to back, one synchronisation at the end (the launches overlap the GPU's work)."""
    out = {}
    with torch.no_grad():
        synced = interleaved(fns, device, max_repeats=calls, min_repeats=calls, warmup=5)
        for name, fn in fns.items():
            sync(device)
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            sync(device)
            out[name] = (1e3 * synced[name]["median_s"], 1e3 * (time.perf_counter() - t0) / calls)
    return out


def rows(sizes, device: torch.device, dtype: torch.dtype, batch: int, hidden: int, heads: int):
    """One row per (n, mask, candidate): kernels, synced ms, back-to-back ms, and attnlib's extra
    kernels by name (the multiset difference with raw SDPA's)."""
    out = []
    for n in sizes:
        for mask in MASKS:
            fns, _, _ = module_candidates(batch, hidden, heads, n, mask, device, dtype=dtype)
            names = {c: device_kernels(fns[c], device) for c in SHOWN}
            extra = collections.Counter(names["attnlib"]) - collections.Counter(names["sdpa"])
            times = forward_ms({c: fns[c] for c in SHOWN}, device)
            for c in SHOWN:
                synced, together = times[c]
                out.append({"n": n, "mask": mask, "candidate": c, "kernels": len(names[c]),
                            "synced_ms": synced, "back_to_back_ms": together,
                            "extra": dict(extra) if c == "attnlib" else None})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_kernels", description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="512,2048")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    sizes = [int(s) for s in args.sizes.split(",")] if cuda else [16]
    batch, hidden, heads = (8, 1024, 16) if cuda else (2, 64, 4)
    dtype = getattr(torch, args.dtype) if cuda else torch.float32
    what = "CUDA kernels" if cuda else "aten operations (no CUDA here)"
    print(f"{what} of one forward, self-attention, batch {batch}, {heads} heads, {dtype}")
    print(f"{'n':>5} {'mask':8} {'candidate':28} {'kernels':>7} {'synced ms':>10} {'back to back ms':>16}")
    for r in rows(sizes, device, dtype, batch, hidden, heads):
        print(f"{r['n']:>5} {r['mask']:8} {r['candidate']:28} {r['kernels']:>7} "
              f"{r['synced_ms']:>10.3f} {r['back_to_back_ms']:>16.3f}")
        if r["extra"]:
            print("      attnlib beyond raw SDPA: " + "; ".join(
                f"{count} x {name[:70]}" for name, count in sorted(r["extra"].items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
