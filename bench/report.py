"""Goals, ``results/bench.json`` and the Markdown tables of ``results/bench.md``."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

from . import training

GOALS = {
    "sdpa_overhead": "attnlib MultiHeadAttention (weights not requested) against raw SDPA, fwd+bwd, "
                     "n = 16 .. 1024, every mask: geometric mean at most 1.05x, worst at most 1.15x",
    "vs_nn_mha": "attnlib MultiHeadAttention as fast as nn.MultiheadAttention (need_weights=False) "
                 "at every n = 16 .. 1024 and mask, fwd+bwd",
    "op_count": "one forward of attnlib's MultiHeadAttention (weights not requested) dispatches at "
                "most 2 aten ops more than raw SDPA's, every mask",
    "weights_path": "asking for the weights (record_attention) costs at most 1.3x the fast path at "
                    "n <= 256, fwd+bwd",
    "vs_d2l_1024": "at least 2x faster than d2l's MultiHeadAttention at n = 1024, fwd+bwd",
    "memory_4096": "peak memory at n = 4096 (fwd+bwd) at most 10 % of d2l's",
    "transformer_step": "Transformer training step within 1.1x of nn.Transformer's",
    "book": "the whole book in at most 5 minutes",
}


def _rows(results: dict, device: str, **match) -> list[dict]:
    rows = results.get("devices", {}).get(device, {}).get("attention", {}).get("rows", [])
    return [r for r in rows if all(r[k] == v for k, v in match.items())]


def _geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def goals(results: dict, device: str = "cpu") -> dict:
    """Each goal's measured value and whether it is met (None: not measured in this run)."""
    out = {}
    ours = [r for r in _rows(results, device, table="module", candidate="attnlib", mode="fwd+bwd")
            if r["n"] <= 1024]
    if ours:
        worst = max(ours, key=lambda r: r["ratio_to_sdpa"])
        gm = _geomean(r["ratio_to_sdpa"] for r in ours)
        out["sdpa_overhead"] = {
            "value": f"geometric mean {gm:.3f}x over {len(ours)} cases; worst "
                     f"{worst['ratio_to_sdpa']:.3f}x (n={worst['n']}, {worst['mask']})",
            "met": gm <= 1.05 and worst["ratio_to_sdpa"] <= 1.15}
    vs_torch = [r for r in ours if "ratio_to_nn.MHA need_weights=False" in r]
    if vs_torch:
        key = "ratio_to_nn.MHA need_weights=False"
        worst = max(vs_torch, key=lambda r: r[key])
        slower = sum(r[key] > 1.0 for r in vs_torch)
        out["vs_nn_mha"] = {
            "value": f"attnlib / nn.MHA: geometric mean {_geomean(r[key] for r in vs_torch):.3f}x, "
                     f"worst {worst[key]:.3f}x (n={worst['n']}, {worst['mask']}); slower at "
                     f"{slower} of {len(vs_torch)} points",
            "met": slower == 0}
    counts = results.get("devices", {}).get(device, {}).get("attention", {}).get("op_counts")
    if counts:
        extra = {m: c["attnlib"] - c["sdpa"] for m, c in counts.items()}
        out["op_count"] = {"value": ", ".join(f"{m}: {c['attnlib']} vs {c['sdpa']}"
                                              for m, c in counts.items()),
                           "met": max(extra.values()) <= 2}
    weights = [r for r in _rows(results, device, table="module", candidate="attnlib (weights)",
                                mode="fwd+bwd") if r["n"] <= 256 and "ratio_to_attnlib" in r]
    if weights:
        worst = max(weights, key=lambda r: r["ratio_to_attnlib"])
        out["weights_path"] = {
            "value": f"worst {worst['ratio_to_attnlib']:.3f}x (n={worst['n']}, {worst['mask']}); "
                     f"geometric mean {_geomean(r['ratio_to_attnlib'] for r in weights):.3f}x",
            "met": worst["ratio_to_attnlib"] <= 1.3}
    speedups = {}
    for r in _rows(results, device, table="module", n=1024, mode="fwd+bwd",
                   candidate="d2l MultiHeadAttention"):
        ref = _rows(results, device, table="module", n=1024, mode="fwd+bwd", mask=r["mask"],
                    candidate="attnlib")[0]
        speedups[r["mask"]] = r["median_ms"] / ref["median_ms"]
    if speedups:
        out["vs_d2l_1024"] = {"value": ", ".join(f"{m}: {s:.2f}x" for m, s in speedups.items()),
                              "met": min(speedups.values()) >= 2.0}
    mem = {r["candidate"]: r["peak_mib"] for r in _rows(results, device, table="module", n=4096,
                                                          mode="fwd+bwd", mask="none")}
    if mem.get("attnlib") and mem.get("d2l MultiHeadAttention"):
        frac = mem["attnlib"] / mem["d2l MultiHeadAttention"]
        out["memory_4096"] = {"value": f"{mem['attnlib']:.0f} MiB vs d2l "
                                       f"{mem['d2l MultiHeadAttention']:.0f} MiB = {100 * frac:.1f} %",
                              "met": frac <= 0.10}
    training = results.get("devices", {}).get(device, {}).get("training")
    if training:
        ratio = training["seq2seq"]["attnlib Transformer"]["ratio_to_nn.Transformer"]
        out["transformer_step"] = {"value": f"{ratio:.2f}x nn.Transformer's step time",
                                   "met": ratio <= 1.1}
    book = results.get("notebooks")
    if book and book["notebooks"] and device == "cpu":
        errors = [r["notebook"] for r in book["notebooks"] if r["error"]]
        out["book"] = {"value": f"{book['total_seconds']:.0f} s for {len(book['notebooks'])} "
                                f"notebooks" + (f" ({len(errors)} failed)" if errors else ""),
                       "met": book["total_seconds"] <= 300 and not errors}
    return out


PARTS = {"attention": ("sdpa_kernels", "attention"), "training": ("training",)}


def keep_rest(results: dict, earlier: dict, parts: set[str]) -> None:
    """Copy into ``results`` the parts of an ``earlier`` run that this run did not measure
    (``parts`` is what it did), and note in ``results["kept"]`` which run each came from."""
    kept = dict(earlier.get("kept", {}))
    when = f"{earlier['machine']['date_utc']} (`{earlier.get('command', 'python -m bench')}`)"
    for part, keys in PARTS.items():
        if part in parts:
            kept.pop(part, None)
            continue
        for device, res in earlier.get("devices", {}).items():
            for key in keys:
                if key in res:
                    results["devices"].setdefault(device, {})[key] = res[key]
                    kept.setdefault(part, when)
    for part in ("notebooks", "grading"):
        if part not in parts and part in earlier:
            results[part] = earlier[part]
            kept.setdefault(part, when)
    if kept:
        results["kept"] = kept


def write(results: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write ``bench.json`` and ``bench.md`` into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for device in results.get("devices", {}):
        results["devices"][device]["goals"] = goals(results, device)
    js, md = out_dir / "bench.json", out_dir / "bench.md"
    js.write_text(json.dumps(results, indent=1, default=_plain) + "\n")
    root = Path(__file__).resolve().parent.parent
    docs = root / "docs" / "bench.md"
    link = (os.path.relpath(docs, out_dir.resolve()) if out_dir.resolve().is_relative_to(root)
            else docs.as_uri())
    text = markdown(results, link)
    gpu = out_dir / "bench-gpu.json"  # a run on a lent GPU machine (merge_gpu), if one was kept
    if gpu.exists() and not results.get("quick"):
        text += gpu_section(json.loads(gpu.read_text()), results.get("notebooks"))
    md.write_text(text)
    return js, md


def _plain(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _mib(x) -> str:
    return "-" if x is None else (f"{x:.2f}" if x < 10 else f"{x:,.0f}")


def _attention_tables(rows: list[dict], table: str) -> str:
    rows = [r for r in rows if r["table"] == table]
    if not rows:
        return ""
    cands = list(dict.fromkeys(r["candidate"] for r in rows))
    text = ""
    for mode in ("fwd", "fwd+bwd"):
        body = []
        keys = list(dict.fromkeys((r["n"], r["mask"]) for r in rows if r["mode"] == mode))
        for n, mask in keys:
            cell = {r["candidate"]: r for r in rows
                    if r["n"] == n and r["mask"] == mask and r["mode"] == mode}
            line = [n, mask, f"{cell['sdpa']['median_ms']:.3g} ms"]
            for c in cands[1:]:
                r = cell.get(c)
                line.append("-" if r is None else
                            f"{r['ratio_to_sdpa']:.2f}x" + ("" if r["agrees"] else " (DIFFERS)"))
            body.append(line)
        text += f"\n**{mode}**: time of raw SDPA, and every other candidate as a multiple of it\n\n"
        text += _table(["n", "mask", "sdpa", *cands[1:]], body)
    mem = [r for r in rows if r["peak_mib"] is not None and r["mask"] == "none"]
    if mem:
        text += "\n**peak memory** (MiB of tensors allocated during the call, mask none)\n\n"
        body = []
        for mode in ("fwd", "fwd+bwd"):
            for n in dict.fromkeys(r["n"] for r in mem if r["mode"] == mode):
                cell = {r["candidate"]: r for r in mem if r["n"] == n and r["mode"] == mode}
                body.append([n, mode] + [_mib(cell[c]["peak_mib"]) if c in cell else "-"
                                         for c in cands])
        text += _table(["n", "mode", *cands], body)
    return text


def _side_by_side(att: dict) -> str:
    """attnlib, raw SDPA and nn.MultiheadAttention in one table of ratios (fwd+bwd), the weights
    path against the fast path, and the aten operations one forward of each dispatches."""
    rows = [r for r in att["rows"] if r["table"] == "module" and r["mode"] == "fwd+bwd"]
    cell = {(r["n"], r["mask"], r["candidate"]): r for r in rows}
    body = []
    for n, mask in dict.fromkeys((r["n"], r["mask"]) for r in rows):
        ours, torch_mha = cell.get((n, mask, "attnlib")), cell.get((n, mask, "nn.MHA need_weights=False"))
        weights = cell.get((n, mask, "attnlib (weights)"))
        if ours is None or torch_mha is None:
            continue
        body.append([n, mask, f"{cell[(n, mask, 'sdpa')]['median_ms']:.3g} ms",
                     f"{ours['ratio_to_sdpa']:.3f}x",
                     f"{torch_mha['ratio_to_sdpa']:.3f}x",
                     f"{ours['ratio_to_nn.MHA need_weights=False']:.3f}x",
                     "-" if weights is None else f"{weights['ratio_to_attnlib']:.3f}x"])
    if not body:
        return ""
    threads = att["settings"].get("threads")
    text = ["\n### attnlib, raw SDPA and nn.MultiheadAttention side by side\n\nfwd+bwd"
            + (f", {threads} torch thread{'s' if threads != 1 else ''}" if threads else "")
            + ", taking turns with the table's other candidates in one loop on the same weights; "
            "each ratio is the median "
            "over rounds of the two times measured in the same round. `weights / fast`: attnlib "
            "inside `record_attention` against attnlib without it.\n\n"]
    text.append(_table(["n", "mask", "raw SDPA", "attnlib / SDPA", "nn.MHA / SDPA",
                        "attnlib / nn.MHA", "weights / fast"], body))
    counts = att.get("op_counts")
    if counts:
        names = list(next(iter(counts.values())))
        text.append("\n**aten operations one forward dispatches** (n = 16, counted with a "
                    "`TorchDispatchMode`, views included: deterministic, and on a GPU most of "
                    "them are kernel launches)\n\n")
        text.append(_table(["mask", *names], [[m, *(c[k] for k in names)] for m, c in counts.items()]))
    return "".join(text)


def _gpu_tables(gpu: dict, device: str) -> str:
    """The GPU-sized tables: per dtype, attnlib against raw SDPA, with TFLOP/s and the backend."""
    peak = gpu["bf16_matmul_peak"]
    s = gpu["settings"]
    text = [f"\n## Attention on {device} at GPU sizes\n\nbatch {s['batch']}, {s['heads']} heads, "
            f"n in {s['sizes']}; measured bf16 matmul peak {peak['gflops_median'] / 1e3:.0f} "
            "TFLOP/s (median, same run).\n\nSDPA backends (each tried alone; `picked` is what "
            "the default dispatch ran):\n\n"]
    text.append(_table(["dtype and mask", "accepted", "picked"], [
        [k, ", ".join(v["accepted"]), ", ".join(v["picked"])] for k, v in gpu["sdpa_backends"].items()]))
    for dtype, tables in gpu["tables"].items():
        for kind, rows in tables.items():
            text.append(f"\n### {kind} ({dtype})\n")
            text.append(_attention_tables(rows, kind))
            rate = [r for r in rows if r["mode"] == "fwd" and r.get("gflops") is not None]
            if rate:
                text.append("\n**achieved TFLOP/s** (forward, 4 n^2 d per head, half that with "
                            "the causal mask, whose kernels skip the hidden half) and share of the "
                            "bf16 matmul peak\n\n")
                text.append(_table(["n", "mask", "candidate", "TFLOP/s", "of peak"], [
                    [r["n"], r["mask"], r["candidate"], f"{r['gflops'] / 1e3:.1f}",
                     f"{100 * r['fraction_of_peak']:.0f} %"] for r in rate]))
    return "".join(text)


TURNS = {"rotated": "one order, rotated every round",
         "balanced": "in a balanced order: each candidate right after each other equally often"}


def _turns(results: dict) -> str:
    """How the candidates of each measured part took turns (each part records it; parts
    measured before the balanced order recorded nothing and rotated one order)."""
    parts = {}
    for res in results.get("devices", {}).values():
        if res.get("attention"):
            parts.setdefault("attention", res["attention"]["settings"].get("turn_order", "rotated"))
        if res.get("training"):
            parts.setdefault("training", res["training"].get("turn_order", "rotated"))
    if len(set(parts.values())) <= 1:
        return TURNS[next(iter(parts.values()), "rotated")]
    return "; ".join(f"{part}: {TURNS[order]}" for part, order in parts.items())


def markdown(results: dict, docs: str = "../docs/bench.md") -> str:
    """The report; ``docs`` is the link to docs/bench.md relative to where it is written."""
    m = results["machine"]
    command = results.get("command") or "python -m bench" + (" --quick" if results.get("quick")
                                                            else "")
    by = f"`make bench` (`{command}`)" if command == "python -m bench" else f"`{command}`"
    text = ["# Benchmarks: attnlib against PyTorch and d2l"
            + (" (quick run)" if results.get("quick") else "") + "\n\n",
            f"Written by {by} on {m['date_utc']} in {results.get('wall_seconds', 0):.0f} s. "
            "Machine-readable: [bench.json](bench.json). How to read it: "
            f"[docs/bench.md]({docs}).\n\n"]
    if results.get("kept"):
        text.append("This run measured only part of the benchmark; the rest is kept from earlier "
                    "runs on the same machine: " + "; ".join(
                        f"{part} from {when}" for part, when in results["kept"].items()) + ".\n\n")
    if results.get("quick"):
        text.append("A quick run (small sizes, short timings, no notebooks) checks that the "
                    "benchmark works on this machine; its numbers are not the book's "
                    "measurements, which `make bench` writes to `results/bench.md`.\n\n")
    text.append(_table(["", ""], [
        ["CPU", f"{m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable)"],
        ["load average at start", m.get("load_average")],
        ["Python / torch / d2l", f"{m['python']} / {m['torch']} / {m['d2l']}"],
        ["torch threads (attention)", next((r["attention"]["settings"].get("threads")
                                            for r in results.get("devices", {}).values()
                                            if r.get("attention")), None) or m["torch_threads"]],
        ["OMP_WAIT_POLICY", results.get("omp_wait_policy")],
        ["GPU", m.get("gpu") or "none (CUDA not available: GPU tables not measured)"],
    ]))
    text.append("\nThe machine is shared with other processes, so absolute times are noisy. "
                f"Candidates are timed alternately in one loop ({_turns(results)}); a ratio is "
                "the median over rounds of the two times measured in the same round. "
                "Times are medians.\n")
    for device, res in results.get("devices", {}).items():
        text.append(f"\n## Goals ({device})\n\n")
        text.append(_table(["goal", "measured", "met"], [
            [GOALS[k], g["value"], "yes" if g["met"] else "**no**"]
            for k, g in res.get("goals", {}).items()]))
        att = res.get("attention")
        if att:
            s = att["settings"]
            text.append(f"\n## Attention on {device}\n\nbatch {s['batch']}, {s['heads']} heads of "
                        f"{s['head_dim']} ({s['num_hiddens']} hidden), {s['dtype']}; padding: "
                        f"{s['padding']}; causal: every query sees the keys up to its own. Outputs "
                        "(and weights, where returned) agree with raw SDPA unless marked DIFFERS.\n")
            kern = res.get("sdpa_kernels", {})
            if kern:
                text.append("\nSDPA kernel that raw `F.scaled_dot_product_attention` runs "
                            "(found with torch.profiler):\n\n")
                text.append(_table(["mask", "kernel"], [[k, ", ".join(v)] for k, v in kern.items()]))
            used = {(r["mask"], r["sdpa_kernel"]) for r in att["rows"]
                    if r["candidate"] == "attnlib" and r["table"] == "module"}
            if used:
                text.append("\nattnlib's `MultiHeadAttention` without weights runs: " + "; ".join(
                    f"{mask}: {k}" for mask, k in sorted(used)) + "\n")
            text.append(_side_by_side(att))
            text.append("\n### Multi-head modules (self-attention, projections included)\n")
            text.append("\n`sdpa` is the same projections with `F.linear` around one "
                        "`F.scaled_dot_product_attention` call. `attnlib (weights)` runs inside "
                        "`record_attention`; nn.MHA uses `average_attn_weights=False`; d2l's causal "
                        "case uses per-query valid lengths.\n")
            text.append(_attention_tables(att["rows"], "module"))
            text.append("\n### Attention core (inputs already split into heads)\n")
            text.append("\n`attnlib.scaled_dot_product` against `F.scaled_dot_product_attention`.\n")
            text.append(_attention_tables(att["rows"], "core"))
            lim = att.get("limit")
            if lim:
                p = lim["matmul_peak"]
                text.append(f"\n### The limit: GFLOP/s at n = {lim['n']}\n\nForward FLOPs "
                            f"4 n^2 d per head (QK^T and AV), batch {lim['batch']}, "
                            f"{lim['heads']} heads of {lim['head_dim']}: "
                            f"{lim['flops_fwd'] / 1e9:.1f} GFLOP. Measured matmul peak "
                            f"({p['size']}x{p['size']} fp32 matmul, same run): "
                            f"{p['gflops_median']:.1f} GFLOP/s median, "
                            f"{p['gflops_best']:.1f} best.\n\n")
                text.append(_table(["candidate", "median ms", "GFLOP/s", "best GFLOP/s",
                                    "of measured matmul peak"], [
                    [k, f"{v['median_ms']:.1f}", f"{v['gflops']:.1f}",
                     f"{v.get('gflops_best', float('nan')):.1f}",
                     f"{100 * v['fraction_of_peak']:.0f} %"]
                    for k, v in lim["candidates"].items()]))
        long = (att or {}).get("long")
        if long:
            text.append("\n### Long sequences: blockwise attention (chapter 9)\n\nOne head of 64, "
                        "forward, no mask: median ms and peak MiB of the tensors allocated.\n\n")
            text.append(_table(["n", "candidate", "median ms", "peak MiB", "agrees"], [
                [r["n"], r["candidate"], f"{r['median_ms']:.1f}", _mib(r["peak_mib"]),
                 "yes" if r["agrees"] else "DIFFERS"] for r in long]))
        tr = res.get("training")
        if tr:
            text.append(f"\n## Training on {device}\n\nSizes of `attnlib.presets` "
                        f"(Transformer {tr['transformer']}), data `TranslationData"
                        f"({tr['data']})`, {tr['steps']} measured steps each after 3 warm-up "
                        f"steps, taking turns on the same batches; torch threads: "
                        f"{tr.get('cpu_threads_used')}.\n\n")
            body = []
            for part in ("seq2seq", "encoder", "bahdanau"):
                for name, v in tr.get(part, {}).items():
                    ratio = next((f"{x:.2f}x" for k, x in v.items() if k.startswith("ratio_to_")
                                  and x != 1.0), "1 (baseline)")
                    body.append([name, f"{v['median_step_ms']:.1f}", f"{v['steps_per_s']:.1f}",
                                 f"{v['tokens_per_s']:,.0f}", ratio])
            text.append(_table(["model", "median step ms", "steps/s", "tokens/s",
                                "step time vs baseline"], body))
        gpu = res.get("attention_gpu")
        if gpu:
            text.append(_gpu_tables(gpu, device))
    speed = training.speedups(results)
    if speed:
        text.append("\n## Training: accelerator throughput as a multiple of the CPU's\n\n"
                    "Same presets and batches; the CPU runs one torch thread.\n\n")
        text.append(_table(["device", *next(iter(speed.values()))],
                           [[d, *(f"{x:.1f}x" for x in v.values())] for d, v in speed.items()]))
    if results.get("grading"):
        from . import grading  # nbformat and nbgrader: only for a report that has them
        text.append("\n## Grading throughput\n\n" + grading.render(results["grading"]))
    book = results.get("notebooks")
    if book:
        text.append("\n## The book\n\nEvery chapter notebook executed headless with nbclient "
                    "(fresh kernel each, kernel start included, committed files untouched).\n\n")
        lab = "lab_total_seconds" in book  # bench/notebooks.py: Run All in JupyterLab as well
        if lab:
            text.append("JupyterLab: the same notebook opened in the book's JupyterLab (headless "
                        "Chromium), timed from Run All until its last cell ran.\n\n")
        body = [[r["notebook"], r["cells"], f"{r['seconds']:.1f}"]
                + ([f"{r['lab_seconds']:.1f}" if r["lab_seconds"] is not None else "-"] if lab
                   else []) + [r["error"] or (lab and r["lab_error"]) or "ok"]
                for r in book["notebooks"]]
        body.append(["**whole book**", "", f"**{book['total_seconds']:.1f}**"]
                    + ([f"**{book['lab_total_seconds']:.1f}**"] if lab else []) + [""])
        text.append(_table(["notebook", "code cells", "seconds"]
                           + (["JupyterLab Run All s"] if lab else []) + ["status"], body))
    return "".join(text)


# --- a run on a lent GPU machine, kept beside the book machine's run ---------------------------

#: The day attnlib's MultiHeadAttention began packing its projections: GPU runs made before it
#: measured the older module, and the report says so.
PACKED_SINCE = "2026-11-29"

GPU_GOALS = {
    "sdpa_overhead": "attnlib MultiHeadAttention within 1.05x of raw SDPA for every mask, at GPU sizes",
    "padding_bf16": "bfloat16 with a padding mask: attnlib MultiHeadAttention within 1.1x of raw SDPA "
                    "at every n, fwd and fwd+bwd",
    "vs_d2l_4096": "at least 2x faster than d2l's MultiHeadAttention at n >= 4096, fwd+bwd",
    "train_transformer": "chapter 7's Transformer trains at least 5x as fast as one CPU thread",
    "train_bahdanau": "chapter 4's Bahdanau model trains at least 3x as fast as one CPU thread",
}


def gpu_goals(gpu_run: dict) -> dict:
    """The GPU goals of a ``--gpu-only`` run: attnlib against raw SDPA (worst ratio per dtype and
    mask; every bfloat16 point with a padding mask), against d2l at n >= 4096, and training
    throughput against one CPU thread."""
    out = {}
    tables = gpu_run["devices"]["cuda"].get("attention_gpu", {}).get("tables", {})
    worst, vs_d2l = [], []
    for dtype, kinds in tables.items():
        rows = kinds.get("module", [])
        for mask in ("none", "padding", "causal"):
            ours = [r for r in rows if r["candidate"] == "attnlib" and r["mask"] == mask]
            if ours:
                w = max(ours, key=lambda r: r["ratio_to_sdpa"])
                worst.append((dtype, mask, w, _geomean(r["ratio_to_sdpa"] for r in ours)))
            for r in rows:
                if (r["candidate"] == "d2l MultiHeadAttention" and r["mask"] == mask
                        and r["n"] >= 4096 and r["mode"] == "fwd+bwd"):
                    ref = next(x for x in ours if x["n"] == r["n"] and x["mode"] == "fwd+bwd")
                    vs_d2l.append((dtype, mask, r["n"], r["median_ms"] / ref["median_ms"]))
    if worst:
        out["sdpa_overhead"] = {
            "value": "; ".join(f"{d} {m}: geometric mean {gm:.2f}x, worst {w['ratio_to_sdpa']:.2f}x "
                               f"(n={w['n']} {w['mode']})" for d, m, w, gm in worst),
            "met": all(w["ratio_to_sdpa"] <= 1.05 for _, _, w, _ in worst)}
    pad = [r for r in tables.get("bfloat16", {}).get("module", [])
           if r["candidate"] == "attnlib" and r["mask"] == "padding"]
    if pad:
        over = [r for r in pad if r["ratio_to_sdpa"] > 1.1]
        w = max(pad, key=lambda r: r["ratio_to_sdpa"])
        out["padding_bf16"] = {
            "value": (f"worst {w['ratio_to_sdpa']:.2f}x (n={w['n']} {w['mode']}); over 1.1x at "
                      f"{len(over)} of {len(pad)} points"
                      + (": " + ", ".join(f"n={r['n']} {r['mode']} {r['ratio_to_sdpa']:.2f}x"
                                          for r in over) if over else "")),
            "met": not over}
    if vs_d2l:
        out["vs_d2l_4096"] = {"value": "; ".join(f"{d} {m} n={n}: {x:.1f}x" for d, m, n, x in vs_d2l),
                              "met": all(x >= 2 for *_, x in vs_d2l)}
    speed = training.speedups(gpu_run).get("cuda", {})
    for key, preset, target in (("train_transformer", "transformer (ch7 preset)", 5),
                                ("train_bahdanau", "bahdanau (ch4 preset)", 3)):
        if preset in speed:
            out[key] = {"value": f"{speed[preset]:.1f}x", "met": speed[preset] >= target}
    return out


def gpu_section(gpu_run: dict, book: dict | None = None) -> str:
    """``results/bench.md``'s part for a run on a lent GPU machine (``results/bench-gpu.json``):
    the machine, the goals, the chapters' wall times beside the book machine's (``book``: its
    ``notebooks`` part), then that run's own tables: a section of the page (``##``), so that the
    page keeps one title."""
    m = gpu_run["machine"]
    text = [f"\n## On a lent GPU: {m.get('gpu')}\n\nA separate run, `{gpu_run.get('command')}`, on "
            f"{m['date_utc']}: {m.get('gpu')}, CUDA {m.get('cuda')}, cuDNN {m.get('cudnn')}, torch "
            f"{m['torch']}, Python {m['python']}, host CPU {m['cpu']} ({m['cores']} cores). Its "
            "CPU numbers are that host's, not the book machine's; every ratio below compares two "
            "numbers of the same run."
            + (" It measured attnlib as it was then: its `MultiHeadAttention` made three projections "
               "and built its masks in more operations than now (packed and trimmed on "
               f"{PACKED_SINCE}); the CPU tables above measure the current code, and the GPU's "
               "have not been measured again since." if m["date_utc"] < PACKED_SINCE else "")
            + "\n\n"]
    text.append(_table(["goal", "measured", "met"], [
        [GPU_GOALS[k], g["value"], "yes" if g["met"] else "**no**"]
        for k, g in gpu_goals(gpu_run).items()]))
    tests = gpu_run.get("tests")
    if tests:
        text.append(f"\nThe test suite on CUDA (`{tests['command']}`): {tests['summary']}. "
                    f"{tests.get('note', '')}\n")
    chapters = gpu_run.get("notebooks")
    if chapters:
        cpu = {r["notebook"]: r["seconds"] for r in (book or {}).get("notebooks", [])}
        text.append("\n### The chapters on the GPU\n\nExecuted top to bottom with nbclient (fresh "
                    "kernel each, kernel start included), the GPU as the chapters' device; beside "
                    "them the book machine's 2-core CPU run from the tables above.\n\n")
        text.append(_table(["notebook", "seconds on the GPU machine", "seconds on 2 CPU cores",
                            "status"], [
            [name, f"{r['seconds']:.1f}", f"{cpu[name]:.1f}" if name in cpu else "-",
             r.get("status") or ("ok" if not r.get("error") else r["error"])]
            for name, r in chapters.items()]))
    body = markdown({k: v for k, v in gpu_run.items() if k not in ("tests", "notebooks")})
    body = body.split("\n", 1)[1]  # its title: this section has one
    text.append("\n".join(("#" + line) if line.startswith("#") else line
                          for line in body.splitlines()) + "\n")
    return "".join(text)


def merge_gpu(run_json: Path, results_dir: Path, notebooks: Path | None = None,
              tests: dict | None = None) -> Path:
    """Keep a ``--gpu-only`` run (its ``bench.json``) as ``results_dir/bench-gpu.json``, with the
    chapters' times (``notebooks``: ``{name: {seconds, error}}``) and a summary of the tests run
    there; then rewrite ``results_dir/bench.md`` from ``bench.json`` with the GPU section."""
    gpu_run = json.loads(run_json.read_text())
    if "cuda" not in gpu_run.get("devices", {}):
        raise ValueError(f"{run_json} holds no CUDA device: run `python -m bench --gpu-only` on a GPU")
    for kinds in gpu_run["devices"]["cuda"].get("attention_gpu", {}).get("tables", {}).values():
        for row in (r for rows in kinds.values() for r in rows):
            if row["mask"] == "causal" and row.get("gflops") and "flops_fwd" not in row:
                row["gflops"] /= 2  # measured before causal FLOPs were counted at half: same times
                row["fraction_of_peak"] /= 2
                row["flops_fwd"] = "half of 4 n^2 d per head (corrected when merged)"
    if notebooks is not None:
        gpu_run["notebooks"] = json.loads(notebooks.read_text())
    if tests is not None:
        gpu_run["tests"] = tests
    target = results_dir / "bench-gpu.json"
    target.write_text(json.dumps(gpu_run, indent=1, default=_plain) + "\n")
    write(json.loads((results_dir / "bench.json").read_text()), results_dir)
    return target
