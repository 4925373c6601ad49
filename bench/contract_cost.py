"""What two rules of attnlib's masking contract cost: MultiHeadAttention timed with and without them.

    python -m bench.contract_cost [--sizes 16,64,256] [--masks padding,none] [--budget 3] [--repeat 3]

:func:`attnlib.scaled_dot_product` keeps two promises that neither raw SDPA nor
``nn.MultiheadAttention`` makes, and both cost operations on every call:

* **zeroing**: the key and value positions that the mask hides from every query are zeroed
  (:func:`attnlib.scoring.zero_unseen`), so that padding garbage, NaN or inf, never reaches an
  output: a ``torch.where`` over K and one over V, in the forward and again in the backward
  (with a mask only);
* **NaN queries**: a query holding NaN or inf gives NaN, whatever the fused kernel does with it
  (:func:`attnlib.scoring.nan_where_queries_are`): a sum over the queries and an add over the
  output (every mask).

Each candidate switches off its rules for its own calls only, by swapping the function for one
that does nothing, while the candidates take turns on the same weights, as in the module table of
``make bench`` (self-attention, batch 2, 4 heads of 64, fwd+bwd, one thread; each ratio the median
over rounds of two times measured in the same round). Every attnlib candidate pays about the same
swapping (under a microsecond). The inputs hold no NaN, so every candidate's output agrees with
raw SDPA's (:func:`bench.attention.check_agreement`); the table says so, and counts the aten
operations one forward dispatches.

Small differences are noise: without a mask nothing is zeroed, so "attnlib without zeroing" runs
the same code as "attnlib" there, and the gap between those two rows is the noise of the
measurement. ``--repeat`` measures everything that many times and gives each ratio's median and
range over the repeats.
"""
from __future__ import annotations

import argparse
import statistics

import torch

from attnlib import scoring
from attnlib.training import torch_threads

from .attention import MASKS, NN_MHA, _forward_backward, check_agreement, module_candidates
from .common import count_ops, interleaved, machine_info, paired_ratio

CPU = torch.device("cpu")
#: rule -> (the function of attnlib.scoring that keeps it, a stand-in that does nothing); the
#: swap works because scaled_dot_product looks these names up in attnlib.scoring at each call
RULES = {
    "zeroing": ("zero_unseen", lambda mask, *xs: xs),
    "NaN queries": ("nan_where_queries_are", lambda out, queries: out),
}
VARIANTS = {"attnlib": (), "attnlib without zeroing": ("zeroing",),
            "attnlib without NaN queries": ("NaN queries",),
            "attnlib without both": ("zeroing", "NaN queries")}


def without(fn, rules):
    """``fn`` with the named ``rules`` switched off while it runs (none: only the swapping)."""
    def call():
        kept = {name: getattr(scoring, name) for name, _ in RULES.values()}
        for rule in rules:
            name, stand_in = RULES[rule]
            setattr(scoring, name, stand_in)
        try:
            return fn()
        finally:
            for name, f in kept.items():
                setattr(scoring, name, f)
    return call


def rows(sizes, masks, budget_s: float = 3.0, batch: int = 2, hidden: int = 256,
         heads: int = 4) -> list[dict]:
    """One row per (n, mask, candidate): fwd+bwd ratios to raw SDPA and to nn.MHA, the aten
    operations of one forward, and whether the output agrees with raw SDPA's."""
    out = []
    with torch_threads(1, CPU):
        for n in sizes:
            for mask in masks:
                torch.manual_seed(0)
                fns, params, _ = module_candidates(batch, hidden, heads, n, mask, CPU)
                cands = {"sdpa": fns["sdpa"], NN_MHA: fns[NN_MHA]}
                cands |= {name: without(fns["attnlib"], r) for name, r in VARIANTS.items()}
                agrees = check_agreement(cands)
                ops = {c: len(count_ops(f)) for c, f in cands.items()}
                res = interleaved({c: _forward_backward(f, params) for c, f in cands.items()}, CPU,
                                  budget_s=budget_s, max_repeats=200, warmup=1)
                out += [{"n": n, "mask": mask, "candidate": c, "ops": ops[c], "agrees": agrees[c],
                         "median_ms": 1e3 * res[c]["median_s"], "rounds": len(res[c]["times_s"]),
                         "ratio_to_sdpa": paired_ratio(res, c, "sdpa"),
                         "ratio_to_nn_mha": paired_ratio(res, c, NN_MHA)} for c in cands]
    return out


def table(runs: list[list[dict]]) -> str:
    """Markdown: per (n, mask, candidate) the median over ``runs`` (each a list of :func:`rows`)
    of each ratio, with its range when there are several runs."""
    def cell(values, fmt="{:.3f}x"):
        text = fmt.format(statistics.median(values))
        if len(values) == 1:
            return text
        return f"{text} ({fmt.format(min(values))} .. {fmt.format(max(values))})"

    lines = ["| n | mask | candidate | fwd+bwd ms | / raw SDPA | / nn.MHA | rounds | aten ops (fwd) "
             "| agrees |", "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(runs[0]):
        same = [run[i] for run in runs]  # this (n, mask, candidate) in every run
        lines.append(
            f"| {r['n']} | {r['mask']} | {r['candidate']} | "
            f"{statistics.median(x['median_ms'] for x in same):.3g} | "
            f"{cell([x['ratio_to_sdpa'] for x in same])} | "
            f"{cell([x['ratio_to_nn_mha'] for x in same])} | "
            f"{'/'.join(str(x['rounds']) for x in same)} | {r['ops']} | "
            f"{'yes' if all(x['agrees'] for x in same) else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.contract_cost",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="16,64,256")
    parser.add_argument("--masks", default="padding,none")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds per (n, mask)")
    parser.add_argument("--repeat", type=int, default=3, help="whole measurements to take")
    args = parser.parse_args(argv)
    masks = args.masks.split(",")
    if not set(masks) <= set(MASKS):
        parser.error(f"--masks takes {', '.join(MASKS)}, got {args.masks}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    m = machine_info(CPU)
    print(f"{m['date_utc']}, commit {m['commit']}, torch {m['torch']}, {m['cpu']}, load average "
          f"{m['load_average']}; one thread, {args.repeat} run(s), median (range) of each ratio\n")
    sizes = [int(s) for s in args.sizes.split(",")]
    print(table([rows(sizes, masks, args.budget) for _ in range(args.repeat)]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
