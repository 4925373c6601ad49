"""Grading throughput: the sandboxed parallel grader against the old sequential one.

A generated class (``students`` folders, every assignment each) mixes four kinds of
submission in turn: honest (the instructor's solutions), wrong (every function returns
zeros), broken (a truncated notebook) and adversarial (patches ``torch.allclose`` to always
pass and returns zeros). Both graders grade the same class in the same run; the report gives
submissions per minute and whether each grader gave the adversarial submissions points.

    from bench import grading
    result = grading.run()               # 12 students x every assignment (9 today: 108 submissions)
    result = grading.run(quick=True)     # 4 students x ch03: proves it works
    print(grading.render(result))

    python -m bench.grading [--jobs N] [--students N] [--no-legacy] [--quick]   # prints the table
"""
from __future__ import annotations

import argparse
import ast
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
KINDS = ("honest", "wrong", "broken", "adversarial")


def _graders():
    """``coursegrader.run.grade`` (the sandboxed grader) and ``bench.legacy`` (the old one)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench import legacy
    from coursegrader.course import assignment_names
    from coursegrader.run import grade

    return grade, assignment_names, legacy


def _submission(name: str, kind: str) -> str:
    """The notebook text of one submission of ``kind`` for assignment ``name``."""
    path = SOURCE / name / f"{name}.ipynb"
    if kind == "broken":
        return path.read_text()[:900]
    from coursegrader.spec import is_manual  # sys.path: see _graders, which run() calls first

    nb = nbformat.read(path, as_version=4)
    if kind != "honest":
        for c in nb.cells:  # a written answer is graded by hand: left as it is
            meta = c.metadata.get("nbgrader", {})
            if meta.get("solution") and not is_manual(meta):
                names = [n.name for n in ast.parse(c.source).body if isinstance(n, ast.FunctionDef)]
                stubs = "".join(f"def {n}(*args, **kwargs):\n    return torch.zeros(1)\n\n" for n in names)
                rig = "torch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"
                c.source = (rig if kind == "adversarial" else "") + stubs
    return nbformat.writes(nb)


def make_class(root: Path, students: int, names: list[str]) -> dict[str, str]:
    """Write the class under ``root``; returns student -> kind."""
    kinds = {}
    for i in range(students):
        student, kind = f"s{i:03d}", KINDS[i % len(KINDS)]
        kinds[student] = kind
        for name in names:
            folder = root / student / name
            folder.mkdir(parents=True)
            (folder / f"{name}.ipynb").write_text(_submission(name, kind))
    return kinds


def run(quick: bool = False, students: int = 12, names: list[str] | None = None,
        jobs: int | None = None, timeout: float = 30.0, legacy: bool = True) -> dict:
    """Grade one generated class with both graders; returns the measurements."""
    grade, assignment_names, old = _graders()
    names = names or assignment_names(SOURCE)
    if quick:
        students, names = 4, [n for n in names if n.startswith("ch03")][:1]
    jobs = jobs or os.cpu_count() or 1
    from .common import commit

    result = {"students": students, "assignments": names, "submissions": students * len(names),
              "cpus": os.cpu_count(), "jobs": jobs, "graders": {},
              "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit()}
    with tempfile.TemporaryDirectory(prefix="grading-bench-") as tmp:
        tmp = Path(tmp)
        kinds = make_class(tmp / "submitted", students, names)
        start = time.perf_counter()
        run_ = grade(tmp / "submitted", tmp / "new", timeout=timeout, jobs=jobs, log=lambda *a: None)
        rows = [(kinds[r.student], r.total) for r in run_.results]
        result["graders"]["sandboxed"] = _measure(time.perf_counter() - start, rows, len(kinds) * len(names),
                                                  f"sandbox on, {jobs} jobs")
        if legacy:
            start = time.perf_counter()
            results = old.grade(tmp / "submitted", tmp / "legacy", timeout=timeout, log=lambda *a: None)
            rows = [(kinds[r.student], r.total) for r in results]
            result["graders"]["legacy"] = _measure(time.perf_counter() - start, rows, len(kinds) * len(names),
                                                   "nbgrader autograde, sequential, no sandbox")
    return result


def _measure(seconds: float, rows: list[tuple[str, float]], submissions: int, how: str) -> dict:
    return {"how": how, "seconds": round(seconds, 1),
            "per_minute": round(submissions / seconds * 60, 2),
            "adversarial_points": sum(t for k, t in rows if k == "adversarial"),
            "wrong_points": sum(t for k, t in rows if k == "wrong"),
            "honest_points": sum(t for k, t in rows if k == "honest")}


def render(result: dict) -> str:
    """A markdown table of ``run``'s result."""
    names = result["assignments"]
    span = f"{names[0]} to {names[-1]}" if len(names) > 1 else names[0]
    when = (f"Measured on {result['date_utc']} at commit {result.get('commit') or 'unknown'}: g"
            if result.get("date_utc") else "G")
    lines = [f"{when}rading {result['submissions']} submissions ({result['students']} students x "
             f"{len(names)} assignments, {span}; honest, wrong, broken and adversarial in turn) "
             f"on {result['cpus']} CPUs.", "",
             "| grader | how | seconds | submissions / min | points given to adversarial |",
             "|---|---|---|---|---|"]
    for name, g in result["graders"].items():
        lines.append(f"| {name} | {g['how']} | {g['seconds']:g} | {g['per_minute']:g} | "
                     f"{g['adversarial_points']:g} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.grading", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="4 students x ch03: proves it works")
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--jobs", type=int, help="pairs graded at once (default: all cores)")
    parser.add_argument("--no-legacy", action="store_true", help="leave out the old sequential grader")
    args = parser.parse_args(argv)
    print(render(run(quick=args.quick, students=args.students, jobs=args.jobs, legacy=not args.no_legacy)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
