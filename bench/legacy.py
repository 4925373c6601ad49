"""The grader as it was before the sandbox, kept beside the benchmark so that
``bench/grading.py`` can measure the new grader against it in the same run. It runs the
tests in the student's own kernel and is NOT safe for untrusted submissions.

``grade`` reads ``SUBMISSIONS/STUDENT/ASSIGNMENT/*.ipynb`` (nbgrader's ``submitted``
layout; ``SUBMISSIONS/STUDENT/ASSIGNMENT.ipynb`` works too), builds a course directory in a
new run folder ``OUT/runs/STAMP/course`` from the current sources (``course.generate``), and
autogrades every (student, assignment) pair, one after the other, in its own ``nbgrader
autograde`` process, so one broken submission cannot stop the others. The originals are
copied, never modified. It writes

* ``RUN/grades.csv``: one row per (student, assignment): points per exercise, total,
  maximum, a status and a ``notes`` column saying why points were lost;
* ``RUN/feedback/STUDENT/ASSIGNMENT.md``: the same for the student, with the error of
  every failed cell;
* ``RUN/course/autograded/STUDENT/ASSIGNMENT/``: the executed notebooks.

A submission that is not a notebook (a text file, broken JSON) scores 0 with the reason;
a cell that raises costs that exercise only; a cell that runs past ``--timeout`` seconds
is interrupted; edited test cells are replaced by the originals from the gradebook; a
deleted test cell scores 0 for its exercise.
"""
from __future__ import annotations

import csv
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursegrader.course import SOURCE, assignment_names, generate, nbgrader_command, nbgrader_env
from coursegrader.reports import new_run_folder, write_feedback
from coursegrader.result import Result
from coursegrader.result import short as _short
from coursegrader.spec import EXERCISE
from coursegrader.submissions import find_submission, stage


def _env() -> dict:
    """nbgrader's environment, with its own autograde let through (``noautograde``)."""
    env = nbgrader_env()
    env["COURSEGRADER_NBGRADER_AUTOGRADE"] = "1"
    return env

SANDBOX = "no"  # the Result's sandbox column: this grader has none


def _autograde(course: Path, name: str, student: str, timeout: float, cell_timeout: float):
    """``nbgrader autograde`` of one pair in its own process group, all of it killed after
    ``timeout`` seconds. Returns ``(returncode or None on timeout, combined output)``."""
    env = _env()
    env["ATTN_CELL_TIMEOUT"] = str(int(cell_timeout))  # read by assignments/nbgrader_config.py
    proc = subprocess.Popen(nbgrader_command(course, ["autograde", name, "--student", student, "--force"]),
                            cwd=course, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # nbgrader and the kernel it started
        out, _ = proc.communicate()
        return None, out


@dataclass
class Exercise:
    number: int
    points: float
    test_ids: list[str] = field(default_factory=list)


def exercises(source: Path, name: str) -> dict[int, Exercise]:
    """Exercise number -> points and graded cell ids, read from the source notebook."""
    nb = nbformat.read(source / name / f"{name}.ipynb", as_version=4)
    out: dict[int, Exercise] = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        m = EXERCISE.match(meta.get("grade_id", ""))
        if meta.get("grade") and m:
            ex = out.setdefault(int(m.group(1)), Exercise(int(m.group(1)), 0.0))
            ex.points += float(meta.get("points", 0))
            ex.test_ids.append(meta["grade_id"])
    return out


# ----------------------------------------------------------------------------- grade
def _cell_errors(nb, timeout: float) -> dict[str, str]:
    """grade_id -> readable error of every nbgrader cell whose execution failed."""
    errors = {}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or not gid:
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                ename, evalue = out.get("ename", "Error"), _short(out.get("evalue", ""), 120)
                if ename == "NotImplementedError":
                    errors[gid] = "not answered (raise NotImplementedError is still there)"
                elif ename in ("CellTimeoutError", "KeyboardInterrupt", "TimeoutError"):
                    errors[gid] = f"stopped after the {timeout:g} s time limit per cell"
                else:
                    errors[gid] = f"{ename}: {evalue}" if evalue else ename
                break
        else:  # nbgrader also fails a graded cell that wrote to stderr (warnings included)
            stderr = [o.get("text", "") for o in cell.get("outputs", [])
                      if o.get("output_type") == "stream" and o.get("name") == "stderr"]
            if stderr and cell.metadata["nbgrader"].get("grade"):
                errors[gid] = "the cell wrote to stderr, which nbgrader counts as a failure: " + \
                    _short(stderr[0], 120)
    return errors


def _grade_one(course: Path, student: str, name: str, submission: Path | None,
               exs: dict[int, Exercise], timeout: float) -> Result:
    max_score = sum(e.points for e in exs.values())
    zero = dict.fromkeys(exs, 0.0)
    if submission is None:
        return Result(student, name, zero, max_score, "no submission", ["nothing handed in"], SANDBOX)
    staged = stage(submission, course / "submitted" / student / name, name)
    nb, notes = staged.nb, staged.notes
    if nb is None:
        return Result(student, name, zero, max_score, "not a notebook", notes, SANDBOX)
    present = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    deleted = {gid for e in exs.values() for gid in e.test_ids if gid not in present}

    n_cells = len(nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4).cells)
    limit = 400 + n_cells * (timeout + 5)  # a backstop: the kernel's own limits act first
    rc, log = _autograde(course, name, student, limit, timeout)
    graded = course / "autograded" / student / name / f"{name}.ipynb"
    if rc is None or rc != 0 or not graded.exists():
        why = (f"grading stopped after {limit:.0f} s" if rc is None
               else "nbgrader could not grade it: " + _short(_last_error(log), 200))
        return Result(student, name, zero, max_score, "grading failed", notes + [why], SANDBOX)

    from nbgrader.api import Gradebook  # SQLAlchemy: imported only once there is a grade to read

    scores = dict(zero)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "attention-book") as gb:
        sub = gb.find_submission_notebook(name, name, student)
        by_id = {g.name: float(g.score or 0.0) for g in sub.grades}
    errors = _cell_errors(nbformat.read(graded, as_version=4), timeout)
    for k, ex in sorted(exs.items()):
        lost = []
        for gid in ex.test_ids:
            if gid in deleted:
                lost.append(f"test cell {gid} was deleted, so this exercise scores 0")
                continue
            scores[k] += by_id.get(gid, 0.0)
            if by_id.get(gid, 0.0) < _points(exs, gid):
                solution = f"ex{k}_solution"
                if solution in errors and "not answered" in errors[solution]:
                    lost.append(errors[solution])
                elif solution in errors:
                    lost.append(f"your solution cell failed: {errors[solution]}")
                elif solution not in present:
                    lost.append(f"solution cell {solution} was deleted")
                else:
                    lost.append("tests failed: " + errors.get(gid, "no error recorded"))
        if lost:
            notes.append(f"ex{k}: " + "; ".join(dict.fromkeys(lost)))
    return Result(student, name, scores, max_score, "graded", notes, SANDBOX)


def _points(exs: dict[int, Exercise], gid: str) -> float:
    """Points of one graded cell (an exercise's points are split evenly over its cells)."""
    for ex in exs.values():
        if gid in ex.test_ids:
            return ex.points / len(ex.test_ids)
    return 0.0


def _last_error(log: str) -> str:
    lines = [ln for ln in log.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln or "error" in ln:
            return ln
    return lines[-1] if lines else "(no output)"


def grade(submissions: Path, out: Path, timeout: float = 30.0, source: Path = SOURCE,
          log=print) -> list[Result]:
    """Autograde every student folder in ``submissions``; write the CSV and the feedback."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise SystemExit(f"error: submissions folder {submissions} does not exist "
                         "(expected SUBMISSIONS/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb)")
    names = assignment_names(source)
    students = sorted(p.name for p in submissions.iterdir()
                      if (p.is_symlink() or p.is_dir()) and not p.name.startswith("."))
    handed = {s: {n: find_submission(submissions / s, n) for n in names} for s in students}
    wanted = [n for n in names if any(handed[s][n] for s in students)]
    out = new_run_folder(Path(out))  # a fresh folder: nothing of an earlier run is replaced
    course = out / "course"
    log(f"generating {len(wanted)} assignment(s) into {course}")
    if wanted:
        generate(course, source, wanted, log=lambda *a: None, env=_env())
    else:
        course.mkdir(parents=True, exist_ok=True)
    all_exs = {n: exercises(source, n) for n in wanted}
    results = []
    for s in students:
        for n in wanted:
            try:
                r = _grade_one(course, s, n, handed[s][n], all_exs[n], timeout)
            except Exception as err:  # never let one submission stop the run
                r = Result(s, n, dict.fromkeys(all_exs[n], 0.0),
                           sum(e.points for e in all_exs[n].values()), "grading failed",
                           [f"internal error: {type(err).__name__}: {_short(err)}"], SANDBOX)
            results.append(r)
            write_feedback(r, {k: e.points for k, e in all_exs[n].items()},
                           out / "feedback" / s / f"{n}.md")
            log(f"{s:>20} {n:<26} {r.total:g}/{r.max_score:g} {r.status}")
    width = max((len(e) for e in all_exs.values()), default=0)
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["student", "assignment", *[f"ex{k}" for k in range(1, width + 1)],
                    "total", "max_total", "status", "notes"])
        for r in results:
            per = [f"{r.scores[k]:g}" if k in r.scores else "" for k in range(1, width + 1)]
            w.writerow([r.student, r.assignment, *per, f"{r.total:g}", f"{r.max_score:g}",
                        r.status, " | ".join(r.notes)])
    return results
