"""The grader as it was before the sandbox (``assignments.py grade --legacy``), kept unchanged so
that ``bench/grading.py`` can measure the new grader against it in the same run. It runs the
tests in the student's own kernel and is NOT safe for untrusted submissions.

Classroom assignments: generate student versions and autograde submissions in bulk.

    python scripts/assignments.py generate [--out build/assignments]
    python scripts/assignments.py grade SUBMISSIONS [--out build/grades] [--timeout 30]

``generate`` copies ``assignments/source`` and ``assignments/nbgrader_config.py`` into a
fresh nbgrader course directory (``--out``) and runs ``nbgrader generate_assignment`` for
every assignment: the student versions land in ``OUT/release/ASSIGNMENT/ASSIGNMENT.ipynb``
(solutions replaced by ``raise NotImplementedError()``, hidden tests removed) and the
gradebook in ``OUT/gradebook.db``.

``grade`` reads ``SUBMISSIONS/STUDENT/ASSIGNMENT/*.ipynb`` (nbgrader's ``submitted``
layout; ``SUBMISSIONS/STUDENT/ASSIGNMENT.ipynb`` works too), builds a fresh course
directory under ``OUT/course`` from the current sources, and autogrades every
(student, assignment) pair in its own ``nbgrader autograde`` process, so one broken
submission cannot stop the others. The originals are copied, never modified. It writes

* ``OUT/grades.csv``: one row per (student, assignment): points per exercise, total,
  maximum, a status and a ``notes`` column saying why points were lost;
* ``OUT/feedback/STUDENT/ASSIGNMENT.md``: the same for the student, with the error of
  every failed cell;
* ``OUT/course/autograded/STUDENT/ASSIGNMENT/``: the executed notebooks.

A submission that is not a notebook (a text file, broken JSON) scores 0 with the reason;
a cell that raises costs that exercise only; a cell that runs past ``--timeout`` seconds
is interrupted; edited test cells are replaced by the originals from the gradebook; a
deleted test cell scores 0 for its exercise.
"""
from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "assignments" / "source"
CONFIG = ROOT / "assignments" / "nbgrader_config.py"
EXERCISE = re.compile(r"^ex(\d+)_")


# ----------------------------------------------------------------------------- helpers
def _env() -> dict:
    """nbgrader runs ``alembic`` and the kernel by name: put this Python's bin/ first."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["JUPYTER_PREFER_ENV_PATH"] = "1"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def _nbgrader(course: Path, args: list[str], timeout: float | None = None,
              cell_timeout: float = 30.0):
    """Run ``nbgrader ARGS`` on ``course`` in its own process group; kill it all on timeout.

    Returns ``(returncode or None on timeout, combined output)``.
    """
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.root={course}",
           f"--CourseDirectory.db_url=sqlite:///{course / 'gradebook.db'}"]
    env = _env()
    env["ATTN_CELL_TIMEOUT"] = str(int(cell_timeout))  # read by assignments/nbgrader_config.py
    proc = subprocess.Popen(cmd, cwd=course, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # nbgrader and the kernel it started
        out, _ = proc.communicate()
        return None, out


def assignment_names(source: Path = SOURCE) -> list[str]:
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())


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


# ----------------------------------------------------------------------------- generate
def generate(out: Path, source: Path = SOURCE, names: list[str] | None = None) -> list[Path]:
    """Build a fresh course directory in ``out`` and the student versions in ``out/release``."""
    names = names or assignment_names(source)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copy(CONFIG, out / "nbgrader_config.py")
    for name in names:
        shutil.copytree(source / name, out / "source" / name,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    rc, log = _nbgrader(out, ["generate_assignment", "*", "--force"])  # one process for all
    released = [out / "release" / name / f"{name}.ipynb" for name in names]
    if rc != 0 or not all(p.is_file() for p in released):
        raise RuntimeError(f"nbgrader generate_assignment failed:\n{log}")
    return released


# ----------------------------------------------------------------------------- grade
@dataclass
class Result:
    student: str
    assignment: str
    scores: dict[int, float]
    max_score: float
    status: str
    notes: list[str]

    @property
    def total(self) -> float:
        return sum(self.scores.values())


def _short(text: str, limit: int = 160) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip().replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _find_submission(student_dir: Path, name: str) -> Path | None:
    """The folder or file a student handed in for assignment ``name`` (None if absent)."""
    if (student_dir / name).is_dir():
        return student_dir / name
    files = [p for p in student_dir.iterdir() if p.is_file()]
    exact = [p for p in files if p.stem == name]
    if exact:
        return exact[0]
    similar = [p for p in files if p.name.startswith(name) and p.suffix == ".ipynb"]
    return similar[0] if len(similar) == 1 else None  # e.g. "ch03_x (1).ipynb" from a download


def _stage(submission: Path, dest: Path, name: str) -> tuple[Path | None, list[str]]:
    """Copy a submission into ``dest`` and return the notebook to grade, or None and why."""
    notes = []
    dest.mkdir(parents=True)
    if submission.is_dir():
        for p in submission.iterdir():
            if p.is_file():
                shutil.copy2(p, dest / p.name)
    else:
        shutil.copy2(submission, dest / submission.name)
    target = dest / f"{name}.ipynb"
    if not target.exists():
        notebooks = sorted(dest.glob("*.ipynb"))
        if len(notebooks) == 1:
            notebooks[0].rename(target)
            notes.append(f"graded {notebooks[0].name} as {target.name}")
        else:
            found = ", ".join(sorted(p.name for p in dest.iterdir())) or "nothing"
            return None, [f"no notebook {target.name} in the submission (found: {found})"]
    try:
        nb = nbformat.read(target, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # any unreadable file: JSON errors, schema errors, binary junk
        return None, [f"{target.name} is not a readable notebook ({type(err).__name__}: {_short(err, 120)})"]
    return target, notes


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
        return Result(student, name, zero, max_score, "no submission", ["nothing handed in"])
    dest = course / "submitted" / student / name
    target, notes = _stage(submission, dest, name)
    if target is None:
        return Result(student, name, zero, max_score, "not a notebook", notes)
    present = {c.metadata.get("nbgrader", {}).get("grade_id")
               for c in nbformat.read(target, as_version=4).cells}
    deleted = {gid for e in exs.values() for gid in e.test_ids if gid not in present}

    n_cells = len(nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4).cells)
    limit = 400 + n_cells * (timeout + 5)  # a backstop: the kernel's own limits act first
    rc, log = _nbgrader(course, ["autograde", name, "--student", student, "--force"],
                        timeout=limit, cell_timeout=timeout)
    graded = course / "autograded" / student / name / f"{name}.ipynb"
    if rc is None or rc != 0 or not graded.exists():
        why = (f"grading stopped after {limit:.0f} s" if rc is None
               else "nbgrader could not grade it: " + _short(_last_error(log), 200))
        return Result(student, name, zero, max_score, "grading failed", notes + [why])

    from nbgrader.api import Gradebook  # imported here: generate does not need SQLAlchemy

    scores = dict(zero)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
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
    return Result(student, name, scores, max_score, "graded", notes)


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


def _feedback(result: Result, exs: dict[int, Exercise], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {result.assignment}: feedback for {result.student}", "",
             f"**Score: {result.total:g} / {result.max_score:g}** ({result.status})", "",
             "| exercise | points | out of |", "|---|---|---|"]
    lines += [f"| {k} | {result.scores[k]:g} | {ex.points:g} |" for k, ex in sorted(exs.items())]
    lines += ["", "## Notes", ""]
    lines += [f"- {n}" for n in result.notes] or ["- every test passed"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def grade(submissions: Path, out: Path, timeout: float = 30.0, source: Path = SOURCE,
          log=print) -> list[Result]:
    """Autograde every student folder in ``submissions``; write the CSV and the feedback."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise SystemExit(f"error: submissions folder {submissions} does not exist "
                         "(expected SUBMISSIONS/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb)")
    names = assignment_names(source)
    students = sorted(p.name for p in submissions.iterdir()
                      if p.is_dir() and not p.name.startswith("."))
    handed = {s: {n: _find_submission(submissions / s, n) for n in names} for s in students}
    wanted = [n for n in names if any(handed[s][n] for s in students)]
    course = out / "course"
    shutil.rmtree(out / "feedback", ignore_errors=True)  # no stale feedback from an earlier run
    log(f"generating {len(wanted)} assignment(s) into {course}")
    generate(course, source, wanted) if wanted else course.mkdir(parents=True, exist_ok=True)
    all_exs = {n: exercises(source, n) for n in wanted}
    results = []
    for s in students:
        for n in wanted:
            try:
                r = _grade_one(course, s, n, handed[s][n], all_exs[n], timeout)
            except Exception as err:  # never let one submission stop the run
                r = Result(s, n, dict.fromkeys(all_exs[n], 0.0),
                           sum(e.points for e in all_exs[n].values()), "grading failed",
                           [f"internal error: {type(err).__name__}: {_short(err)}"])
            results.append(r)
            _feedback(r, all_exs[n], out / "feedback" / s / f"{n}.md")
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
