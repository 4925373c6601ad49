"""The benchmark code (``bench/``) on tiny sizes, so that ``make bench`` cannot rot.

Nothing here asserts a time: only that every candidate runs, agrees with the baseline,
and that the results are written and judged as documented.
"""
import collections
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import torch

from bench import attention, common, notebooks, report, training

CPU = torch.device("cpu")
ROOT = Path(__file__).resolve().parent.parent
TINY_PLAN = [(8, attention.MASKS, ("fwd", "fwd+bwd"), 0)]


def _tiny_table(kind, d2l=None):
    return attention.run_table(kind, TINY_PLAN, CPU, batch=2, num_hiddens=8, heads=2, d2l=d2l,
                               budget_s=0.0, max_repeats=1, log=lambda *_: None)


def test_core_table_runs_and_agrees():
    rows = _tiny_table("core")
    assert {r["candidate"] for r in rows} == {"sdpa", "attnlib", "attnlib (weights)", "blockwise"}
    assert len(rows) == 3 * 2 * 4  # masks x modes x candidates
    assert all(r["agrees"] for r in rows)
    assert all(r["ratio_to_sdpa"] == 1.0 for r in rows if r["candidate"] == "sdpa")
    assert all(r["peak_mib"] > 0 for r in rows)
    assert {r["sdpa_kernel"] for r in rows if r["candidate"] == "sdpa"} == {
        "flash (fused CPU kernel)"}


def test_long_table_blockwise_agrees_and_saves_memory(monkeypatch):
    monkeypatch.setattr(attention, "LONG_QUICK_SIZES", (64, 256))
    rows = attention.long_table(CPU, quick=True, budget_s=0.0, log=lambda *_: None)
    assert [r["candidate"] for r in rows[:3]] == ["sdpa", "materialised", "blockwise"]
    assert all(r["agrees"] for r in rows)
    at = {r["candidate"]: r["peak_mib"] for r in rows if r["n"] == 256}
    assert at["materialised"] >= 256 * 256 * 4 / 2**20 and at["sdpa"] < at["materialised"]


def test_module_table_all_candidates_agree(d2l):
    rows = _tiny_table("module", d2l)
    names = {r["candidate"] for r in rows}
    assert names == {"sdpa", "attnlib", "attnlib (weights)", "nn.MHA need_weights=False",
                     "nn.MHA need_weights=True", "d2l MultiHeadAttention"}
    bad = [(r["candidate"], r["mask"]) for r in rows if not r["agrees"]]
    assert bad == []


@pytest.mark.parametrize("mask_kind", attention.MASKS)
def test_agreement_check_catches_a_wrong_output(mask_kind):
    fns, _, _ = attention.module_candidates(2, 8, 2, 6, mask_kind, CPU)
    fns["attnlib"] = lambda: (fns["sdpa"]()[0] + 1e-2, None)
    w = fns["attnlib (weights)"]
    fns["attnlib (weights)"] = lambda: (w()[0], w()[1].flip(-1))  # right output, wrong weights
    agree = attention.check_agreement(fns)
    assert not agree["attnlib"] and not agree["attnlib (weights)"]
    assert agree["sdpa"] and agree["nn.MHA need_weights=True"]


def test_fits_in_memory_keeps_the_fused_paths():
    assert attention.fits_in_memory("attnlib", 10**6, 2, 4, 1.0)
    assert not attention.fits_in_memory("d2l MultiHeadAttention", 65536, 2, 4, 12.0)
    assert attention.fits_in_memory("d2l MultiHeadAttention", 4096, 2, 4, 12.0)


def test_kernels_used_tells_fused_from_step_by_step():
    q = torch.randn(1, 2, 8, 4)
    assert common.kernels_used(lambda: torch.nn.functional.scaled_dot_product_attention(
        q, q, q)) == ["flash (fused CPU kernel)"]
    assert common.kernels_used(lambda: torch.softmax(q @ q.transpose(-1, -2), -1) @ q) == [
        "none (bmm + softmax)"]


def test_peak_bytes_counts_what_the_call_allocates():
    assert common.peak_bytes(lambda: torch.ones(1000, 1000), CPU) >= 4_000_000
    x = torch.ones(1000, 1000)
    assert common.peak_bytes(lambda: x.view(-1), CPU) == 0


def test_interleaved_and_paired_ratio():
    res = common.interleaved({"a": lambda: None, "b": lambda: sum(range(20000))}, CPU,
                             budget_s=0.0, min_repeats=5, max_repeats=5)
    assert len(res["a"]["times_s"]) == len(res["b"]["times_s"]) == 5
    assert common.paired_ratio(res, "a", "a") == 1.0
    assert common.paired_ratio(res, "b", "a") > 1.0
    once = common.interleaved({"a": lambda: None}, CPU, warmup=0, min_repeats=2, max_repeats=9)
    assert len(once["a"]["times_s"]) == 2  # no warm-up to estimate from: the minimum


@pytest.mark.parametrize("k", [2, 3, 4, 6])
def test_turn_orders_are_balanced(k):
    """Over each block of the design (k rounds, 2k for an odd k) every candidate comes first
    equally often and right after each other candidate equally often; one order rotated would
    put each candidate after the same other one in almost every round."""
    names = [f"c{i}" for i in range(k)]
    block = k if k % 2 == 0 else 2 * k
    orders = common.turn_orders(names, 3 * block)
    assert all(sorted(o) == names for o in orders)
    firsts = collections.Counter(o[0] for o in orders[:block])
    pairs = collections.Counter(p for o in orders[:block] for p in itertools.pairwise(o))
    assert set(firsts.values()) == {block // k}
    assert len(pairs) == k * (k - 1) and set(pairs.values()) == {block // k}
    assert orders == common.turn_orders(names, 3 * block)  # seeded
    assert orders[block:2 * block] == orders[:block]


def test_turn_orders_place_the_candidates_by_seed_and_drive_the_loops():
    names = ["a", "b", "c", "d"]
    assert common.turn_orders(names, 4, seed=0) != common.turn_orders(names, 4, seed=1)
    seen = []
    common.interleaved({n: (lambda n=n: seen.append(n)) for n in names}, CPU, warmup=0,
                       min_repeats=3)
    assert [seen[i:i + 4] for i in (0, 4, 8)] == common.turn_orders(names, 3)
    seen.clear()
    steps = {n: (lambda batch, n=n: seen.append(n) or 1) for n in names[:3]}
    training.race(steps, [None] * 6, CPU, warmup=0)
    assert [seen[i:i + 3] for i in range(0, 18, 3)] == common.turn_orders(names[:3], 6)


def test_limit_and_matmul_peak():
    lim = attention.limit(CPU, n=32, batch=1, heads=1, head_dim=8, budget_s=0.0)
    assert lim["flops_fwd"] == 4 * 32 * 32 * 8
    assert lim["matmul_peak"]["gflops_median"] > 0
    assert set(lim["candidates"]) == {"sdpa", "attnlib", "attnlib (weights)", "blockwise"}


def test_training_runs_on_tiny_data(d2l):
    data_args = dict(batch_size=16, num_pairs=200)
    res = training.run(CPU, d2l=d2l, data_args=data_args, steps=2, log=lambda *_: None)
    assert set(res["seq2seq"]) == {"attnlib Transformer", "nn.Transformer"}
    assert set(res["encoder"]) == {"attnlib TransformerEncoder", "d2l TransformerEncoder"}
    for part in ("seq2seq", "encoder", "bahdanau"):
        for v in res[part].values():
            assert v["steps"] == 2 and v["tokens_per_s"] > 0
    assert res["cpu_threads_used"] == 1 and res["turn_order"] == common.TURN_ORDER
    assert res["throughput"]["bahdanau (ch4 preset)"] == res["bahdanau"]["attnlib Bahdanau"]["tokens_per_s"]


def test_torch_transformer_shapes_and_causality():
    torch.manual_seed(0)
    model = training.TorchTransformer(11, 13, 8, 16, 2, 1, 0.0).eval()
    src, tgt = torch.randint(0, 11, (2, 5)), torch.randint(0, 13, (2, 4))
    lens = torch.tensor([5, 3])
    out = model(src, tgt, lens)
    assert out.shape == (2, 4, 13)
    tgt2 = tgt.clone()
    tgt2[:, -1] = (tgt[:, -1] + 1) % 13  # changing the last token leaves earlier logits alone
    assert torch.allclose(model(src, tgt2, lens)[:, :-1], out[:, :-1], atol=1e-5)
    src2 = src.clone()
    src2[1, 3:] = (src[1, 3:] + 1) % 11  # padding of sequence 1 is ignored
    assert torch.allclose(model(src2, tgt, lens), out, atol=1e-5)


def test_notebooks_are_timed_and_errors_reported(tmp_path):
    good, bad = tmp_path / "01_good.ipynb", tmp_path / "02_bad.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1 + 1\nprint(x)")]
    nbformat.write(nb, good)
    nb.cells.append(nbformat.v4.new_code_cell("raise ValueError('boom')"))
    nbformat.write(nb, bad)
    res = notebooks.run(tmp_path, log=lambda *_: None, paths=[good, bad])
    rows = {r["notebook"]: r for r in res["notebooks"]}
    assert rows["01_good.ipynb"]["error"] is None and rows["01_good.ipynb"]["cells"] == 1
    assert "boom" in rows["02_bad.ipynb"]["error"]
    assert res["total_seconds"] == pytest.approx(sum(r["seconds"] for r in res["notebooks"]))
    assert nbformat.read(good, as_version=4).cells[0].outputs == []  # never written back


def test_the_book_is_timed_from_an_empty_model_cache_shared_by_its_chapters(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLIB_CACHE", str(tmp_path / "readers-cache"))
    first, second = tmp_path / "01_first.ipynb", tmp_path / "02_second.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import os, pathlib\ncache = pathlib.Path(os.environ['ATTNLIB_CACHE'])\n"
        "assert 'readers-cache' not in str(cache) and list(cache.iterdir()) == []\n"
        "(cache / 'model.pt').write_text('trained')")]
    nbformat.write(nb, first)
    nb.cells = [nbformat.v4.new_code_cell(
        "import os, pathlib\nassert (pathlib.Path(os.environ['ATTNLIB_CACHE']) / 'model.pt').exists()")]
    nbformat.write(nb, second)
    res = notebooks.run(tmp_path, log=lambda *_: None, paths=[first, second])
    assert [r["error"] for r in res["notebooks"]] == [None, None]
    assert os.environ["ATTNLIB_CACHE"] == str(tmp_path / "readers-cache")  # restored afterwards


def _fake_results(attnlib_mib, d2l_mib, step_ratio, book_seconds, small_ratio=1.04):
    def row(n, mask, mode, cand, ms, ratio, mib=None, **more):
        return {"table": "module", "n": n, "mask": mask, "mode": mode, "candidate": cand,
                "median_ms": ms, "min_ms": ms, "ratio_to_sdpa": ratio, "repeats": 3,
                "peak_mib": mib, "agrees": True, "sdpa_kernel": None, "gflops": None, **more}
    vs_torch = {"ratio_to_nn.MHA need_weights=False": 0.99}
    rows = [row(16, "padding", "fwd+bwd", "sdpa", 1.0, 1.0),
            row(16, "padding", "fwd+bwd", "attnlib", small_ratio, small_ratio,
                **{"ratio_to_nn.MHA need_weights=False": small_ratio / 1.1}),
            row(16, "padding", "fwd+bwd", "nn.MHA need_weights=False", 1.1, 1.1),
            row(16, "padding", "fwd+bwd", "attnlib (weights)", 1.2 * small_ratio, 1.2 * small_ratio,
                ratio_to_attnlib=1.2),
            row(1024, "none", "fwd+bwd", "sdpa", 10.0, 1.0),
            row(1024, "none", "fwd+bwd", "attnlib", 10.2, 1.02, **vs_torch),
            row(1024, "none", "fwd+bwd", "d2l MultiHeadAttention", 30.0, 3.0),
            row(4096, "none", "fwd+bwd", "sdpa", 100.0, 1.0, attnlib_mib),
            row(4096, "none", "fwd+bwd", "attnlib", 101.0, 1.01, attnlib_mib),
            row(4096, "none", "fwd+bwd", "d2l MultiHeadAttention", 300.0, 3.0, d2l_mib)]
    training_res = {"seq2seq": {"attnlib Transformer": {
        "median_step_ms": 10.0, "steps_per_s": 100.0, "tokens_per_s": 1000.0, "steps": 2,
        "ratio_to_nn.Transformer": step_ratio}}, "transformer": {}, "data": {}, "steps": 2}
    machine = common.machine_info(CPU)
    return {"machine": machine, "devices": {"cpu": {
        "attention": {"rows": rows, "settings": {
            "batch": 2, "heads": 4, "head_dim": 64, "num_hiddens": 256, "dtype": "float32",
            "padding": "p", "threads": 1},
            "op_counts": {"none": {"sdpa": 25, "attnlib": 17}, "padding": {"sdpa": 28, "attnlib": 28}}},
        "training": training_res}},
        "notebooks": {"notebooks": [{"notebook": "01_x.ipynb", "seconds": book_seconds,
                                     "cells": 3, "error": None}],
                      "total_seconds": book_seconds}}


def test_goals_met_and_missed():
    met = report.goals(_fake_results(40.0, 1000.0, 1.05, 200.0))
    assert set(met) == set(report.GOALS)
    assert all(g["met"] for g in met.values())
    missed = report.goals(_fake_results(200.0, 1000.0, 1.3, 400.0))
    assert not missed["memory_4096"]["met"] and "20.0 %" in missed["memory_4096"]["value"]
    assert not missed["transformer_step"]["met"] and not missed["book"]["met"]
    assert missed["vs_d2l_1024"]["met"] and missed["sdpa_overhead"]["met"]
    slow = report.goals(_fake_results(40.0, 1000.0, 1.05, 200.0, small_ratio=1.2))
    assert not slow["sdpa_overhead"]["met"]
    assert "worst 1.200x (n=16, padding)" in slow["sdpa_overhead"]["value"]
    assert not slow["vs_nn_mha"]["met"] and "slower at 1 of 2 points" in slow["vs_nn_mha"]["value"]
    assert slow["op_count"]["met"] and slow["weights_path"]["met"]


def test_write_json_and_markdown(tmp_path):
    results = _fake_results(40.0, 1000.0, 1.05, 200.0)
    js, md = report.write(results, tmp_path / "out")
    data = json.loads(js.read_text())
    assert data["devices"]["cpu"]["goals"]["memory_4096"]["met"] is True
    text = md.read_text()
    for needle in ("AMD" if "AMD" in results["machine"]["cpu"] else "CPU", "torch threads",
                   "| 1024 | none |", "**whole book**", "## Goals (cpu)", "side by side",
                   "| 16 | padding | 1 ms | 1.040x | 1.100x | 0.945x | 1.200x |",
                   "| padding | 28 | 28 |"):
        assert needle in text
    assert "(one order, rotated every round)" in text  # parts measured before the balanced order
    cpu = results["devices"]["cpu"]
    cpu["attention"]["settings"]["turn_order"] = "balanced"
    assert ("(attention: in a balanced order: each candidate right after each other equally "
            "often; training: one order, rotated every round)") in report.markdown(results)
    cpu["training"]["turn_order"] = "balanced"
    assert "(in a balanced order: each candidate right after each other" in report.markdown(results)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_tables_agree_and_give_a_share_of_the_peak(dtype):
    rows = attention.run_table("module", TINY_PLAN, CPU, batch=2, num_hiddens=8, heads=2,
                               budget_s=0.0, max_repeats=1, log=lambda *_: None, dtype=dtype,
                               peak_gflops=1.0)
    assert {r["dtype"] for r in rows} == {str(dtype).removeprefix("torch.")}
    assert [(r["candidate"], r["mask"]) for r in rows if not r["agrees"]] == []
    assert all(r["fraction_of_peak"] == r["gflops"] for r in rows if r["mode"] == "fwd")


def test_training_throughput_and_speedups():
    res = {"devices": {"cpu": {"training": {"throughput": {"a": 10.0}}},
                       "cuda": {"training": {"throughput": {"a": 50.0}}}}}
    assert training.speedups(res) == {"cuda": {"a": 5.0}}


def _gpu_run(attnlib_ratio: float, d2l_ms: float, cuda_tokens: float) -> dict:
    def row(candidate, mask, ms, ratio):
        return {"table": "module", "n": 4096, "mask": mask, "mode": "fwd+bwd", "dtype": "bfloat16",
                "candidate": candidate, "median_ms": ms, "ratio_to_sdpa": ratio, "agrees": True,
                "gflops": None, "fraction_of_peak": None, "peak_mib": None, "sdpa_kernel": None}
    rows = [r for mask in ("none", "padding", "causal") for r in (
        row("sdpa", mask, 10.0, 1.0), row("attnlib", mask, 10.0 * attnlib_ratio, attnlib_ratio),
        row("d2l MultiHeadAttention", mask, d2l_ms, d2l_ms / 10.0))]
    machine = {"date_utc": "2026-01-01 00:00 UTC", "cpu": "host", "cores": 16, "cores_usable": 16,
               "python": "3.12", "torch": "2.11", "d2l": "1.0.3", "torch_threads": 16,
               "gpu": "Some GPU", "cuda": "13.0", "cudnn": 91900}
    gpu = {"settings": {"batch": 8, "heads": 16, "sizes": [4096]},
           "bf16_matmul_peak": {"gflops_median": 1e6}, "sdpa_backends": {},
           "tables": {"bfloat16": {"module": rows}}}
    through = {"transformer (ch7 preset)": 100.0, "bahdanau (ch4 preset)": 100.0}

    def trained(tokens):
        return {"transformer": {}, "data": {}, "steps": 1, "cpu_threads_used": 1,
                "throughput": {k: tokens for k in through}}
    return {"machine": machine, "command": "python -m bench --gpu-only", "devices": {
        "cpu": {"training": trained(100.0)},
        "cuda": {"attention_gpu": gpu, "training": trained(cuda_tokens)}}}


def test_gpu_goals_read_the_gpu_run():
    met = report.gpu_goals(_gpu_run(1.04, 25.0, 600.0))
    assert all(g["met"] for g in met.values()) and set(met) == set(report.GPU_GOALS)
    missed = report.gpu_goals(_gpu_run(1.2, 15.0, 400.0))
    assert not missed["sdpa_overhead"]["met"] and "worst 1.20x" in missed["sdpa_overhead"]["value"]
    assert not missed["padding_bf16"]["met"]
    assert missed["padding_bf16"]["value"].endswith("over 1.1x at 1 of 1 points: n=4096 fwd+bwd 1.20x")
    assert report.gpu_goals(_gpu_run(1.08, 25.0, 600.0))["padding_bf16"]["met"]  # 1.05 < 1.08 <= 1.1
    assert not missed["vs_d2l_4096"]["met"]  # 15 ms against 12 ms: 1.25x
    assert not missed["train_transformer"]["met"] and missed["train_bahdanau"]["met"]


def test_merge_gpu_keeps_the_run_and_adds_its_section(tmp_path):
    results = _fake_results(40.0, 1000.0, 1.05, 200.0)
    report.write(results, tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.json").write_text(json.dumps(_gpu_run(1.2, 25.0, 600.0)))
    (run / "times.json").write_text(json.dumps({"05_x.ipynb": {"seconds": 12.5, "error": None}}))
    report.merge_gpu(run / "bench.json", tmp_path, run / "times.json",
                     {"command": "pytest", "summary": "3 passed"})
    kept = json.loads((tmp_path / "bench-gpu.json").read_text())
    assert kept["notebooks"]["05_x.ipynb"]["seconds"] == 12.5 and kept["tests"]["summary"] == "3 passed"
    text = (tmp_path / "bench.md").read_text()
    assert text.index("## Goals (cpu)") < text.index("\n## On a lent GPU: Some GPU")
    titles = [line for line in text.splitlines() if line.startswith("# ")]
    assert titles == [text.splitlines()[0]]  # one title: the GPU part is a section
    for needle in ("CUDA 13.0", "| 05_x.ipynb | 12.5 |", "3 passed", "### Goals (cuda)", "**no**"):
        assert needle in text
    with pytest.raises(ValueError, match="holds no CUDA device"):
        (run / "cpu.json").write_text(json.dumps({"devices": {"cpu": {}}}))
        report.merge_gpu(run / "cpu.json", tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout")
def test_quick_bench_in_a_fresh_clone_leaves_every_tracked_file_alone(tmp_path):
    """The documented ``python -m bench --quick`` must not replace the committed results."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)],
                   check=True)
    env = dict(os.environ, PYTHONPATH=str(clone))
    env.pop("KINETO_LOG_LEVEL", None)
    # The smallest run that still goes through every step: one size, no d2l.
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--parts", "attention",
                           "--sizes", "16", "--no-d2l"], cwd=clone, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                            cwd=clone, capture_output=True, text=True, check=True).stdout
    assert status == ""  # nothing tracked changed, nothing new outside the ignored build/
    out = clone / "build" / "bench-quick"
    text = (out / "bench.md").read_text()
    assert "(quick run)" in text and "make bench" in text  # points to the real results
    assert "Written by `python -m bench --quick" in text and "Written by `make bench`" not in text
    assert "](../../docs/bench.md)" in text  # the link works from build/bench-quick/
    assert json.loads((out / "bench.json").read_text())["quick"] is True
    assert "wrote build/bench-quick/bench.json" in done.stdout
    noise = [line for line in (done.stdout + done.stderr).splitlines()
             if "USDT" in line or "ERROR" in line]
    assert noise == []  # Kineto (torch.profiler) is kept quiet


def test_grading_class_is_made_for_every_assignment(tmp_path):
    """The grading benchmark's generated class: every assignment, every kind of submission, and
    a wrong or adversarial one replaces each solution function by a stub that returns zeros."""
    from bench import grading
    from coursegrader.course import assignment_names
    from coursegrader.spec import is_manual

    names = assignment_names(grading.SOURCE)
    kinds = grading.make_class(tmp_path, len(grading.KINDS), names)
    assert sorted(kinds.values()) == sorted(grading.KINDS)
    for student, kind in kinds.items():
        for name in names:
            text = (tmp_path / student / name / f"{name}.ipynb").read_text()
            if kind == "broken":
                with pytest.raises(nbformat.reader.NotJSONError):
                    nbformat.reads(text, as_version=4)
                continue
            nb = nbformat.reads(text, as_version=4)
            solutions = [c for c in nb.cells if (meta := c.metadata.get("nbgrader", {})).get("solution")
                         and not is_manual(meta)]
            assert solutions, name
            stubbed = all("return torch.zeros(1)" in c.source for c in solutions)
            assert stubbed == (kind in ("wrong", "adversarial")), (student, name)
            assert ("torch.allclose = lambda" in solutions[0].source) == (kind == "adversarial")


def test_keep_rest_takes_the_parts_not_run_from_the_earlier_run(tmp_path):
    earlier = _fake_results(40.0, 1000.0, 1.05, 200.0)
    earlier["machine"]["date_utc"] = "2026-01-01 00:00 UTC"
    now = _fake_results(40.0, 1000.0, 1.05, 200.0)
    del now["devices"]["cpu"]["training"], now["notebooks"]
    now["devices"]["cpu"]["attention"]["rows"][1]["ratio_to_sdpa"] = 1.03  # measured anew
    report.keep_rest(now, earlier, {"attention"})
    assert now["devices"]["cpu"]["training"] == earlier["devices"]["cpu"]["training"]
    assert now["devices"]["cpu"]["attention"]["rows"][1]["ratio_to_sdpa"] == 1.03
    assert set(now["kept"]) == {"training", "notebooks"}
    text = report.write(now, tmp_path)[1].read_text()
    assert "training from 2026-01-01 00:00 UTC" in text and "notebooks from 2026-01-01" in text


def test_gpu_kernels_names_what_attnlib_launches_beyond_raw_sdpa(capsys):
    """bench.gpu_kernels (run first on a lent GPU) works here too, counting aten operations: a
    broken script would cost the GPU run its first minute and its table."""
    from bench import gpu_kernels

    rows = gpu_kernels.rows([8], CPU, torch.float32, batch=2, hidden=16, heads=2)
    assert {(r["mask"], r["candidate"]) for r in rows} == {
        (m, c) for m in attention.MASKS for c in gpu_kernels.SHOWN}
    padded = next(r for r in rows if r["mask"] == "padding" and r["candidate"] == "attnlib")
    assert padded["extra"]["where"] == 2 and padded["kernels"] > 0  # the hidden keys and values
    assert gpu_kernels.main([]) == 0
    assert "attnlib beyond raw SDPA: " in capsys.readouterr().out


def test_contract_cost_switches_off_each_rule_for_its_candidate_only(capsys, monkeypatch):
    """bench.contract_cost: each 'without' candidate really skips its rule (the zeroing's two
    where, their scalars and a transpose; the NaN-query rule's sum and add), the others keep
    it, every output agrees here (no NaN in the inputs), and the library is whole again
    afterwards, also after an error."""
    from attnlib import scoring
    from bench import contract_cost
    kept = (scoring.zero_unseen, scoring.nan_where_queries_are)
    rows = contract_cost.rows([8], ["padding", "none"], budget_s=0.0, hidden=16, heads=2)
    ops = {(r["mask"], r["candidate"]): r["ops"] for r in rows}
    assert all(r["agrees"] for r in rows)
    for mask in ("padding", "none"):
        full = ops[mask, "attnlib"]
        assert ops[mask, "attnlib without NaN queries"] == full - 2  # sum, add
        assert ops[mask, "attnlib without both"] == ops[mask, "attnlib without zeroing"] - 2
    assert ops["padding", "attnlib without zeroing"] == ops["padding", "attnlib"] - 5
    assert ops["none", "attnlib without zeroing"] == ops["none", "attnlib"]  # no mask, no zeroing
    assert (scoring.zero_unseen, scoring.nan_where_queries_are) == kept
    # the timed calls are the variants': the rules run once per call of the candidates keeping them
    calls = collections.Counter()
    for rule, (name, _) in contract_cost.RULES.items():
        real = getattr(scoring, name)
        monkeypatch.setattr(scoring, name, lambda *a, rule=rule, real=real: (
            calls.update([rule]), real(*a))[1])
    contract_cost.rows([8], ["padding"], budget_s=0.0, hidden=16, heads=2)
    # each of the two candidates keeping a rule: agreement, op count, warm-up and 3 rounds (no
    # budget: the minimum) = 6 calls
    assert calls == {"zeroing": 2 * 6, "NaN queries": 2 * 6}
    monkeypatch.undo()
    broken = contract_cost.without(lambda: 1 / 0, ("zeroing", "NaN queries"))
    with pytest.raises(ZeroDivisionError):
        broken()
    assert (scoring.zero_unseen, scoring.nan_where_queries_are) == kept
    assert contract_cost.main(["--sizes", "8", "--masks", "none", "--budget", "0", "--repeat", "2"]) == 0
    assert "attnlib without both" in capsys.readouterr().out
