"""``python -m bench [--quick] [--parts attention,training,notebooks,grading] [--out DIR]``.

A full run writes ``results/bench.{json,md}`` (the book publishes them; ``make bench``).
A quick run checks that the benchmark works and writes ``build/bench-quick/``, so that
it never replaces the committed results.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Threads that sleep instead of spinning between parallel regions: on a machine whose
# cores other processes share, spinning threads make timings erratic (attnlib.training's
# docstring measured a 7x slowdown). Set before torch starts OpenMP; notebooks get the
# environment the user had.
_USER_OMP = os.environ.get("OMP_WAIT_POLICY")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, short runs, no notebooks (about a minute)")
    parser.add_argument("--parts", default=None,
                        help="comma-separated: attention,training,notebooks,grading (default: all; "
                             "--quick: attention,training)")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated sequence lengths for the attention tables")
    parser.add_argument("--no-d2l", action="store_true", help="do not import d2l")
    parser.add_argument("--gpu-only", action="store_true",
                        help="on a CUDA machine: attention tables at GPU sizes on the GPU only, "
                             "training on both (one CPU thread is the speed-ups' baseline)")
    parser.add_argument("--merge-gpu", type=Path, default=None, metavar="RUN_DIR",
                        help="keep a --gpu-only run (RUN_DIR/bench.json, and RUN_DIR/"
                             "notebook_times.json and RUN_DIR/tests.json if there) as "
                             "results/bench-gpu.json and rewrite results/bench.md; runs nothing")
    parser.add_argument("--gpu-dtypes", default=None,
                        help="comma-separated dtypes of the GPU-sized tables (default: "
                             "bfloat16,float16,float32)")
    parser.add_argument("--keep-rest", action="store_true",
                        help="with --parts: keep the parts not run from the bench.json already in "
                             "the output folder (the report says which run measured each part)")
    parser.add_argument("--out", default=None, type=Path,
                        help="folder for bench.json and bench.md (default: results/, or "
                             "build/bench-quick/ with --quick)")
    args = parser.parse_args(argv)
    out = args.out or ROOT / ("build/bench-quick" if args.quick else "results")
    if args.merge_gpu is not None:
        from . import report
        run = args.merge_gpu
        extra = {name: run / f"{name}.json" for name in ("notebook_times", "tests")}
        kept = report.merge_gpu(run / "bench.json", out, extra["notebook_times"]
                                if extra["notebook_times"].exists() else None,
                                json.loads(extra["tests"].read_text())
                                if extra["tests"].exists() else None)
        print(f"kept {_shown(kept)}; rewrote {_shown(out / 'bench.md')}")
        return 0
    command = shlex.join(["python", "-m", "bench",
                          *(sys.argv[1:] if argv is None else argv)])

    import torch

    from . import attention, report, training  # grading and notebooks: below, when asked for
    from .common import machine_info, sdpa_self_check

    parts = set((args.parts or ("attention,training" if args.quick else
                                "attention,training,notebooks,grading")).split(","))
    unknown = parts - {"attention", "training", "notebooks", "grading"}
    if unknown:
        parser.error(f"unknown part(s) {sorted(unknown)}")
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    if args.gpu_dtypes:
        attention.GPU_DTYPES = tuple(getattr(torch, d) for d in args.gpu_dtypes.split(","))
    start = time.perf_counter()
    devices = [torch.device("cpu")]
    if torch.cuda.is_available():
        devices.append(torch.device("cuda"))
    d2l = None
    if not args.no_d2l and parts & {"attention", "training"}:
        print("importing d2l ...", flush=True)
        d2l = attention.load_d2l()
    results = {"machine": machine_info(devices[0]), "quick": args.quick, "command": command,
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "devices": {}}
    if args.gpu_only and len(devices) == 1:
        parser.error("--gpu-only needs CUDA, and torch.cuda.is_available() is False here")
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "bench.partial.json"  # what is measured so far, should a later part fail

    def checkpoint():
        partial.write_text(json.dumps(results, indent=1, default=str) + "\n")

    for device in devices:
        res = results["devices"].setdefault(str(device.type), {})
        if "attention" in parts and not args.gpu_only:
            res["sdpa_kernels"] = sdpa_self_check(device)
            res["attention"] = attention.run(device, quick=args.quick, d2l=d2l, sizes=sizes)
            checkpoint()
        if "training" in parts:
            res["training"] = training.run(device, quick=args.quick, d2l=d2l,
                                           threads=1 if device.type == "cpu" else None)
            checkpoint()
        if device.type == "cuda":
            res["gpu"] = torch.cuda.get_device_name(device)
            if "attention" in parts:  # GPU-sized shapes, half precision, share of the bf16 peak
                res["sdpa_kernels"] = sdpa_self_check(device)
                def progress(gpu, res=res):
                    res["attention_gpu"] = gpu
                    checkpoint()
                res["attention_gpu"] = attention.run_gpu(device, quick=args.quick, d2l=d2l,
                                                         progress=progress)
    if "notebooks" in parts:
        if _USER_OMP is None:
            os.environ.pop("OMP_WAIT_POLICY", None)
        print("notebooks", flush=True)
        from . import notebooks
        results["notebooks"] = notebooks.run(ROOT, lab=True)
    if "grading" in parts:
        print("grading", flush=True)
        from . import grading
        results["grading"] = grading.run(quick=args.quick)
    results["wall_seconds"] = time.perf_counter() - start
    if args.keep_rest and (out / "bench.json").exists():
        report.keep_rest(results, json.loads((out / "bench.json").read_text()), parts)
    js, md = report.write(results, out)
    partial.unlink(missing_ok=True)
    print(f"wrote {_shown(js)} and {_shown(md)} in {results['wall_seconds']:.0f} s")
    for device, res in results["devices"].items():
        for key, g in res.get("goals", {}).items():
            print(f"  [{device}] {'met   ' if g['met'] else 'MISSED'} {report.GOALS[key]}: "
                  f"{g['value']}")
    return 0


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies below it."""
    path = path.resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


if __name__ == "__main__":
    sys.exit(main())
