"""Attention core and full multi-head modules: attnlib against raw SDPA, nn.MultiheadAttention, d2l.

Two tables, each forward ("fwd") and forward+backward ("fwd+bwd"), for every sequence
length and mask kind (``none``, ``padding``: the second sequence has half its keys
masked, ``causal``):

* **core** (inputs ``(batch, heads, n, head_dim)``): ``F.scaled_dot_product_attention``
  ("sdpa", the baseline) against :func:`attnlib.scaled_dot_product` without and with
  ``need_weights``, and chapter 9's :func:`attnlib.blockwise_attention` (online softmax over
  blocks of 128 keys, in Python).
* **module** (inputs ``(batch, n, num_hiddens)``, self-attention): "sdpa" is the same
  four projections as attnlib done with ``F.linear`` around one SDPA call, a module written
  by hand without checks, masks built in its caller (three projections, as d2l writes them;
  attnlib and ``nn.MultiheadAttention`` pack them into one product); against attnlib's
  :class:`~attnlib.MultiHeadAttention` (weights not requested, and requested through ``record_attention``),
  ``nn.MultiheadAttention`` (``need_weights`` False and True) and d2l 1.0.3's
  ``MultiHeadAttention``. All share attnlib's weights, and every output (and the weights
  where returned) is checked to agree with the baseline before anything is timed.

A third, **long** table (:func:`long_table`): one head, forward only, at n up to 8192: SDPA,
the materialised ``n x n`` path and the blockwise one, time and peak memory.

On the CPU everything runs on one torch thread (the chapters' small models wait on overhead, not
arithmetic, and one thread is what a shared machine gives fairly), and :func:`op_counts` counts
the aten operations one forward of each module dispatches (deterministic, where times are not).
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import attnlib

from .common import TURN_ORDER, count_ops, interleaved, kernels_used, paired_ratio, peak_bytes

MASKS = ("none", "padding", "causal")
NN_MHA = "nn.MHA need_weights=False"  # PyTorch's module on its fused path
BLOCK = 128  # keys per block of attnlib.blockwise_attention
LONG_SIZES, LONG_QUICK_SIZES = (1024, 2048, 4096, 8192), (256, 1024)
FULL_SIZES = (16, 64, 256, 1024, 4096)
QUICK_SIZES = (16, 64, 256)


def load_d2l():
    """d2l 1.0.3's torch module, or None if it cannot be imported (about 14 s the first time)."""
    try:
        from d2l import torch as d2l
    except Exception:  # noqa: BLE001 - the report says d2l was unavailable
        return None
    return d2l


def _valid_lens(batch: int, n: int, device) -> torch.Tensor:
    """Full length for the first sequence, half for the others: ``(batch,)``."""
    lens = torch.full((batch,), max(1, n // 2), device=device)
    lens[0] = n
    return lens


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    tol = 2e-2 if a.dtype in (torch.float16, torch.bfloat16) else 1e-3  # a few units of the last place
    return bool(torch.allclose(a.float(), b.float(), rtol=tol, atol=tol / 10))


# ----------------------------------------------------------------------------- core


def core_candidates(batch: int, heads: int, n: int, head_dim: int, mask_kind: str,
                    device, dtype=torch.float32) -> tuple[dict[str, Callable], list[torch.Tensor], dict]:
    """Functions returning ``(output, weights or None)`` for the attention core, and their inputs."""
    q, k, v = (torch.randn(batch, heads, n, head_dim, device=device, dtype=dtype, requires_grad=True)
               for _ in range(3))
    lens = _valid_lens(batch, n, device)
    pad = (torch.arange(n, device=device) < lens.view(-1, 1)).view(batch, 1, 1, n)  # True = attend
    causal = mask_kind == "causal"
    mask = pad if mask_kind == "padding" else None

    def sdpa():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal), None

    def ours():
        return attnlib.scaled_dot_product(q, k, v, mask, causal)

    def ours_weights():
        return attnlib.scaled_dot_product(q, k, v, mask, causal, need_weights=True)

    def reference_weights():  # softmax(q k^T / sqrt(d)) with -inf at hidden keys
        scores = q.float() @ k.float().transpose(-2, -1) / head_dim ** 0.5  # (batch, heads, n, n)
        hide = ~pad if mask_kind == "padding" else \
            torch.ones(n, n, dtype=torch.bool, device=device).triu(1) if causal else None
        if hide is not None:
            scores = scores.masked_fill(hide, float("-inf"))
        return scores.softmax(-1).to(dtype)

    def blockwise():
        return attnlib.blockwise_attention(q, k, v, mask, causal, block_size=BLOCK), None

    fns = {"sdpa": sdpa, "attnlib": ours, "attnlib (weights)": ours_weights, "blockwise": blockwise}
    share = 0.5 if mask_kind == "causal" else 1.0  # a causal kernel skips the hidden half
    return fns, [q, k, v], {"flops_fwd": share * 4 * batch * heads * n * n * head_dim,
                            "reference_weights": reference_weights}


# ----------------------------------------------------------------------------- modules


class RawSDPA(nn.Module):
    """Multi-head attention written directly on ``F.scaled_dot_product_attention``.

    Uses the projection weights of an attnlib :class:`~attnlib.MultiHeadAttention`, so
    the two compute the same function; masks are passed in the form SDPA likes best
    (a boolean ``(batch, 1, 1, keys)`` padding mask, ``is_causal`` for the causal one).
    """

    def __init__(self, mha: attnlib.MultiHeadAttention) -> None:
        super().__init__()
        self.mha = mha

    def forward(self, X, pad_mask=None, causal=False):
        m, h = self.mha, self.mha.num_heads
        b, n, d = X.shape
        q, k, v = (F.linear(X, W.weight, W.bias).view(b, n, h, d // h).transpose(1, 2)
                   for W in (m.W_q, m.W_k, m.W_v))  # (batch, heads, n, head_dim)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=pad_mask, is_causal=causal)
        out = out.transpose(1, 2).reshape(b, n, d)  # (batch, n, num_hiddens)
        return F.linear(out, m.W_o.weight, m.W_o.bias)


def _torch_mha(ours: attnlib.MultiHeadAttention, device) -> nn.MultiheadAttention:
    d, h = ours.num_hiddens, ours.num_heads
    mha = nn.MultiheadAttention(d, h, bias=False, batch_first=True).to(device, ours.W_q.weight.dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        mha.out_proj.weight.copy_(ours.W_o.weight)
    return mha


def _d2l_mha(d2l, ours: attnlib.MultiHeadAttention, X: torch.Tensor, device):
    mha = d2l.MultiHeadAttention(ours.num_hiddens, ours.num_heads, 0.0).to(device, X.dtype)
    with torch.no_grad():
        mha(X[:1, :2], X[:1, :2], X[:1, :2], None)  # materialise the lazy layers
        for name in ("W_q", "W_k", "W_v", "W_o"):
            getattr(mha, name).weight.copy_(getattr(ours, name).weight)
    return mha


def module_candidates(batch: int, num_hiddens: int, heads: int, n: int, mask_kind: str,
                      device, d2l=None, dtype=torch.float32
                      ) -> tuple[dict[str, Callable], list[torch.Tensor], dict]:
    """Functions returning ``(output, weights (batch, heads, n, n) or None)`` for each module."""
    ours = attnlib.MultiHeadAttention(num_hiddens, heads).to(device, dtype)
    raw = RawSDPA(ours)
    X = torch.randn(batch, n, num_hiddens, device=device, dtype=dtype, requires_grad=True)
    lens = _valid_lens(batch, n, device)
    keep = torch.arange(n, device=device) < lens.view(-1, 1)  # (batch, keys), True = attend
    causal = mask_kind == "causal"
    valid_lens = lens if mask_kind == "padding" else None
    sdpa_mask = keep.view(batch, 1, 1, n) if mask_kind == "padding" else None
    tmha = _torch_mha(ours, device)
    kpm = ~keep if mask_kind == "padding" else None  # True = ignore, PyTorch's convention
    cmask = nn.Transformer.generate_square_subsequent_mask(n, device=device, dtype=torch.bool) \
        if causal else None  # True = ignore

    def sdpa():
        return raw(X, sdpa_mask, causal), None

    def ours_fast():
        return ours(X, X, X, valid_lens, causal=causal), None

    def ours_weights():
        with attnlib.record_attention(ours) as rec:
            out = ours(X, X, X, valid_lens, causal=causal)
        return out, rec.last("MultiHeadAttention")

    def torch_mha(need_weights):
        def call():
            out, w = tmha(X, X, X, key_padding_mask=kpm, attn_mask=cmask, is_causal=causal,
                          need_weights=need_weights, average_attn_weights=False)
            return out, w
        return call

    fns = {"sdpa": sdpa, "attnlib": ours_fast, "attnlib (weights)": ours_weights,
           "nn.MHA need_weights=False": torch_mha(False),
           "nn.MHA need_weights=True": torch_mha(True)}
    params = [X, *ours.parameters(), *tmha.parameters()]
    if d2l is not None:
        dmha = _d2l_mha(d2l, ours, X, device)
        if causal:  # d2l has no causal flag: per-query valid lengths 1..n say the same
            d2l_lens = torch.arange(1, n + 1, device=device).repeat(batch, 1)  # (batch, n)
        else:
            d2l_lens = valid_lens

        def d2l_call():
            return dmha(X, X, X, d2l_lens), None

        fns["d2l MultiHeadAttention"] = d2l_call
        params += list(dmha.parameters())
    share = 0.5 if causal else 1.0  # a causal kernel skips the hidden half of the scores
    return fns, params, {"flops_fwd": share * 4 * batch * n * n * num_hiddens}


# ----------------------------------------------------------------------------- running


def _zero_grads(params):
    for p in params:
        p.grad = None


def _forward_backward(fn, params):
    def step():
        _zero_grads(params)
        out, _ = fn()
        out.sum().backward()
    return step


def _no_grad(fn):
    def call():
        with torch.no_grad():
            return fn()
    return call


def check_agreement(fns: dict[str, Callable], reference_weights=None) -> dict[str, bool]:
    """Each candidate's output vs the baseline "sdpa", and its weights (where it returns
    them) vs ``reference_weights()`` (default: those of ``nn.MultiheadAttention``)."""
    with torch.no_grad():
        results = {name: fn() for name, fn in fns.items()}
        if reference_weights is not None:
            ref_w = reference_weights()
        else:  # None if nn.MultiheadAttention was left out: weights are then not compared
            ref_w = results.get("nn.MHA need_weights=True", (None, None))[1]
    base_out = results["sdpa"][0]
    agree = {}
    for name, (out, w) in results.items():
        ok = _close(out, base_out)
        if w is not None and ref_w is not None:
            ok = ok and _close(w, ref_w)
        agree[name] = ok
    return agree


def run_table(kind: str, plan, device, *, batch=2, num_hiddens=256, heads=4, d2l=None,
              budget_s=3.0, max_repeats=15, skip=None, log=print, dtype=torch.float32,
              peak_gflops: float | None = None) -> list[dict]:
    """Measure one table (``kind`` = "core" or "module"); one row per (n, mask, mode, candidate).

    ``plan`` is a list of ``(n, masks, memory_modes, warmup)``: the mask kinds to run at
    length ``n``, the modes whose peak memory is measured, and the warm-up rounds.
    ``skip(name, n) -> bool`` leaves out candidates that would not fit in memory.
    ``peak_gflops`` (a measured matmul peak) adds each forward's share of it.
    """
    rows = []
    for n, masks, memory_modes, warmup in plan:
        for mask_kind in masks:
            torch.manual_seed(0)
            if kind == "core":
                fns, params, meta = core_candidates(batch, heads, n, num_hiddens // heads,
                                                    mask_kind, device, dtype)
            else:
                fns, params, meta = module_candidates(batch, num_hiddens, heads, n, mask_kind,
                                                      device, d2l, dtype)
            if skip is not None:
                fns = {k: f for k, f in fns.items() if k == "sdpa" or not skip(k, n)}
            agree = check_agreement(fns, meta.get("reference_weights"))
            backends = {name: kernels_used(_no_grad(fn)) for name, fn in fns.items()
                        if name in ("sdpa", "attnlib")}
            for mode in ("fwd", "fwd+bwd"):
                timed = {name: (_no_grad(fn) if mode == "fwd" else _forward_backward(fn, params))
                         for name, fn in fns.items()}
                res = interleaved(timed, device, budget_s=budget_s, max_repeats=max_repeats,
                                  warmup=warmup, min_repeats=3 if warmup else 2)
                for name in fns:
                    mem = peak_bytes(timed[name], device) if mode in memory_modes else None
                    gflops = meta["flops_fwd"] / res[name]["median_s"] / 1e9
                    rows.append({
                        **{f"ratio_to_{other}": paired_ratio(res, name, other)
                           for other in ("attnlib", NN_MHA) if other in res},
                        "table": kind, "n": n, "mask": mask_kind, "mode": mode,
                        "dtype": str(dtype).removeprefix("torch."), "batch": batch, "heads": heads,
                        "candidate": name, "median_ms": 1e3 * res[name]["median_s"],
                        "min_ms": 1e3 * res[name]["min_s"],
                        "ratio_to_sdpa": paired_ratio(res, name, "sdpa"),
                        "repeats": len(res[name]["times_s"]),
                        "peak_mib": None if mem is None else mem / 2**20, "agrees": agree[name],
                        "sdpa_kernel": ", ".join(backends.get(name, [])) or None,
                        "gflops": gflops if mode == "fwd" else None, "flops_fwd": meta["flops_fwd"],
                        "fraction_of_peak": gflops / peak_gflops
                        if mode == "fwd" and peak_gflops else None,
                    })
                log(f"  {kind} n={n:5d} {mask_kind:8s} {mode:8s} " + "  ".join(
                    f"{name}={1e3 * r['median_s']:.2f}ms" for name, r in res.items()))
            del fns, params
    return rows


def op_counts(device, n: int = 16, batch: int = 2, num_hiddens: int = 256, heads: int = 4) -> dict:
    """Aten operations one forward of each module candidate dispatches (self-attention, the
    module table's inputs at length ``n``), per mask: ``{mask: {candidate: count}}``."""
    out = {}
    for mask_kind in MASKS:
        torch.manual_seed(0)
        fns, _, _ = module_candidates(batch, num_hiddens, heads, n, mask_kind, device)
        out[mask_kind] = {name: len(count_ops(fns[name]))
                          for name in ("sdpa", "attnlib", "attnlib (weights)", NN_MHA)}
    return out


def matmul_peak(device, size: int = 2048, budget_s: float = 3.0, dtype=torch.float32) -> dict:
    """Measured matmul peak: GFLOP/s of a ``size x size`` matmul (2 size^3 FLOPs) in ``dtype``."""
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
    res = interleaved({"matmul": lambda: a @ b}, device, budget_s=budget_s, max_repeats=20)
    best = res["matmul"]["min_s"]
    med = res["matmul"]["median_s"]
    flops = 2 * size**3
    return {"size": size, "dtype": str(dtype).removeprefix("torch."), "median_ms": 1e3 * med,
            "gflops_median": flops / med / 1e9, "gflops_best": flops / best / 1e9}


def limit(device, n: int = 2048, batch: int = 2, heads: int = 4, head_dim: int = 64,
          budget_s: float = 4.0) -> dict:
    """Achieved GFLOP/s of the attention core at ``n`` (4 n^2 d per head, forward) vs matmul peak."""
    torch.manual_seed(0)
    fns, _, meta = core_candidates(batch, heads, n, head_dim, "none", device)
    peak = matmul_peak(device)
    timed = {name: _no_grad(fn) for name, fn in fns.items()}
    res = interleaved(timed, device, budget_s=budget_s, max_repeats=10)
    rows = {}
    for name, r in res.items():
        gflops = meta["flops_fwd"] / r["median_s"] / 1e9
        rows[name] = {"median_ms": 1e3 * r["median_s"], "gflops": gflops,
                      "fraction_of_peak": gflops / peak["gflops_median"],
                      "gflops_best": meta["flops_fwd"] / r["min_s"] / 1e9}
    return {"n": n, "batch": batch, "heads": heads, "head_dim": head_dim,
            "flops_fwd": meta["flops_fwd"], "matmul_peak": peak, "candidates": rows}


def long_table(device, quick: bool = False, head_dim: int = 64, budget_s: float = 3.0,
               log=print) -> list[dict]:
    """One head, forward, no mask, at long lengths: time and peak memory of SDPA, the
    materialised path (``attnlib.scaled_dot_product(..., need_weights=True)``) and
    ``attnlib.blockwise_attention``; every output checked against SDPA first."""
    rows = []
    for n in LONG_QUICK_SIZES if quick else LONG_SIZES:
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 1, n, head_dim, device=device) for _ in range(3))
        fns = _long_candidates(q, k, v)
        agree = check_agreement(fns)
        res = interleaved(fns, device, budget_s=budget_s, max_repeats=10, min_repeats=2)
        for name, fn in fns.items():
            rows.append({"n": n, "candidate": name, "median_ms": 1e3 * res[name]["median_s"],
                         "peak_mib": peak_bytes(fn, device) / 2**20, "agrees": agree[name]})
        log(f"  long n={n:5d} " + "  ".join(f"{name}={1e3 * r['median_s']:.1f}ms"
                                            for name, r in res.items()))
    return rows


def _long_candidates(q, k, v) -> dict[str, Callable]:
    """SDPA, the materialised path and the blockwise one on ``q, k, v``, without autograd."""
    fns = {"sdpa": lambda: (F.scaled_dot_product_attention(q, k, v), None),
           "materialised": lambda: attnlib.scaled_dot_product(q, k, v, need_weights=True),
           "blockwise": lambda: (attnlib.blockwise_attention(q, k, v, block_size=BLOCK), None)}
    return {name: _no_grad(fn) for name, fn in fns.items()}


def fits_in_memory(name: str, n: int, batch: int, heads: int, limit_gib: float) -> bool:
    """Rough check for the candidates that build ``n x n`` matrices (several copies in backward;
    the blockwise path's autograd keeps every block's weights, ``n x n`` in all)."""
    if name in ("sdpa", "attnlib", "nn.MHA need_weights=False"):
        return True
    copies = 8  # scores, masked scores, softmax, dropout/mask product, and their gradients
    return batch * heads * n * n * 4 * copies / 2**30 <= limit_gib


def plans(quick: bool, sizes=None):
    """The (n, masks, memory modes, warm-up rounds) to run for the core and the module tables.

    Full run: every mask up to n = 1024; at n = 4096 (one forward+backward of d2l takes
    about 14 s here) only the unmasked case, two rounds without warm-up, peak memory of
    forward+backward only, and only the module table (the core's limit is measured at 2048).
    """
    both = ("fwd", "fwd+bwd")
    if sizes is None:
        sizes = QUICK_SIZES if quick else FULL_SIZES
    module = [(n, MASKS, both, 1) if n < 4096 else (n, ("none",), ("fwd+bwd",), 0) for n in sizes]
    core = [p for p in module if p[0] < 4096]
    return core, module


def run(device, quick: bool = False, d2l=None, log=print, memory_limit_gib: float = 12.0,
        sizes=None, threads: int | None = 1) -> dict:
    """Both tables, the GFLOP/s limit, the long table and the operation counts on ``device``,
    on ``threads`` torch threads when it is the CPU (None: torch's default)."""
    from attnlib.training import torch_threads

    with torch_threads(threads, device):
        return _run(device, quick, d2l, log, memory_limit_gib, sizes, threads)


def _run(device, quick, d2l, log, memory_limit_gib, sizes, threads) -> dict:
    core_plan, module_plan = plans(quick, sizes)
    budget = 1.0 if quick else 3.0
    # rounds until the budget is spent: at small n a round takes milliseconds, and the more
    # rounds, the less one burst of other people's load moves a median ratio
    rounds = 15 if quick else 200
    batch, num_hiddens, heads = 2, 256, 4

    def skip(name, n):
        return not fits_in_memory(name, n, batch, heads, memory_limit_gib)

    settings = {"batch": batch, "num_hiddens": num_hiddens, "heads": heads,
                "head_dim": num_hiddens // heads, "dtype": "float32",
                "threads": threads if device.type == "cpu" else None,
                "core_sizes": [p[0] for p in core_plan],
                "module_sizes": [p[0] for p in module_plan], "masks": list(MASKS),
                "padding": "sequence 0 full length, sequence 1 half masked",
                "d2l": d2l is not None, "budget_s": budget, "max_rounds": rounds,
                "turn_order": TURN_ORDER}
    log(f"attention core on {device}")
    core = run_table("core", core_plan, device, batch=batch, num_hiddens=num_hiddens,
                     heads=heads, budget_s=budget, max_repeats=rounds, skip=skip, log=log)
    log(f"multi-head modules on {device}")
    module = run_table("module", module_plan, device, batch=batch, num_hiddens=num_hiddens,
                       heads=heads, d2l=d2l, budget_s=budget, max_repeats=rounds, skip=skip,
                       log=log)
    lim = limit(device, n=512 if quick else 2048, budget_s=budget)
    log(f"long sequences, one head, on {device}")
    long = long_table(device, quick, budget_s=budget, log=log)
    return {"settings": settings, "rows": core + module, "limit": lim, "long": long,
            "op_counts": op_counts(device)}


#: GPU-sized work: batch x heads = 128 (head_dim 64) fills an H100's SMs at n >= 512.
GPU_SETTINGS = dict(batch=8, heads=16, num_hiddens=1024)
GPU_SIZES, GPU_QUICK_SIZES = (512, 1024, 2048, 4096, 8192), (512, 2048)
GPU_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def run_gpu(device, quick: bool = False, d2l=None, log=print, progress=None) -> dict:
    """The core and module tables at GPU sizes in bf16, fp16 and fp32, with TFLOP/s as a share
    of the measured bf16 matmul peak, and the SDPA kernel each mask gets in each dtype.
    ``progress(result so far)`` is called after each dtype, so a run cut short keeps its tables."""
    sizes = GPU_QUICK_SIZES if quick else GPU_SIZES
    budget = 0.5 if quick else 1.5
    free_gib = torch.cuda.mem_get_info(device)[0] / 2**30
    peak = matmul_peak(device, size=8192, budget_s=budget, dtype=torch.bfloat16)
    g = GPU_SETTINGS

    def skip(name, n):  # the n x n paths, in 2-byte or 4-byte floats, within half the free memory
        return not fits_in_memory(name, n, g["batch"], g["heads"], free_gib / 2)

    tables = {}
    result = {"settings": dict(g, sizes=list(sizes), dtypes=[str(d) for d in GPU_DTYPES]),
              "bf16_matmul_peak": peak, "sdpa_backends": sdpa_backends(device), "tables": tables}
    for dtype in GPU_DTYPES:
        plan = [(n, MASKS, (), 1) for n in sizes]
        name = str(dtype).removeprefix("torch.")
        log(f"GPU tables on {device}, {name}")
        tables[name] = {kind: run_table(kind, plan, device, d2l=d2l if kind == "module" else None,
                                        budget_s=budget, skip=skip, log=log, dtype=dtype,
                                        peak_gflops=peak["gflops_median"], **g)
                        for kind in ("core", "module")}
        if progress is not None:
            progress(result)
    return result


def sdpa_backends(device, n: int = 2048) -> dict:
    """Which SDPA backends accept each mask at GPU sizes, per dtype (each tried alone)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    g = GPU_SETTINGS
    out = {}
    for dtype in GPU_DTYPES:
        q = torch.randn(g["batch"], g["heads"], n, g["num_hiddens"] // g["heads"], device=device,
                        dtype=dtype)
        pad = (torch.arange(n, device=device) < n // 2).view(1, 1, 1, n)
        for mask, kwargs in (("none", {}), ("padding", {"attn_mask": pad}), ("causal", {"is_causal": True})):
            ok = []
            for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
                            SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
                try:
                    with sdpa_kernel(backend):
                        F.scaled_dot_product_attention(q, q, q, **kwargs)
                    ok.append(backend.name.lower())
                except RuntimeError:
                    pass
            picked = kernels_used(functools.partial(F.scaled_dot_product_attention, q, q, q, **kwargs))
            out[f"{str(dtype).removeprefix('torch.')} {mask}"] = {"accepted": ok, "picked": picked}
    return out
