"""The grades in nbgrader's gradebook: ``record`` writes graded pairs into it, through nbgrader's
``Gradebook`` API, the way formgrader, ``nbgrader export`` and ``generate_feedback`` read it.

For each graded pair (a folder ``pairs.grade_pair`` wrote) ``record``:

* creates or updates the submission with its ``timestamp.txt`` time (and the extension the
  course's ``extensions.csv`` grants, nbgrader's ``grant_extension``);
* sets the autograded score of every test cell, and the note that says why points were lost
  as the automatic comment of the exercise's solution cell (formgrader shows it, the
  feedback prints it; an instructor's comment takes its place);
* leaves every cell nbgrader grades by hand (a written answer) to formgrader: no score, marked
  as needing a manual grade;
* keeps an instructor's manual scores, extra credit and comments, unless the hand-in itself
  changed since it was graded (a resubmission): then they no longer apply, and are returned
  as ``Superseded`` (the run's report lists them) before they are cleared;
* puts the autograded notebook, ``timestamp.txt`` and ``submission_secret.txt`` in
  ``autograded/STUDENT/ASSIGNMENT/``, where formgrader and ``nbgrader generate_feedback`` read
  them (a previous autograded folder of the pair is kept in the run's folder).

Students who are not on the roster (``nbgrader db student import``) are not added unless
``add_unknown``: their pairs are graded and reported, not recorded. ``refresh_penalties`` asks
the course's late-work plugin (nbgrader's ``AssignLatePenalties``) for every submission's
penalty, with the scores as they are now (manual ones included).
"""
from __future__ import annotations

import csv
import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursegrader import autograded
from coursegrader.course import Course
from coursegrader.result import GRADED, Result
from coursegrader.spec import EXERCISE


@dataclass
class Superseded:
    """An instructor's manual grade or comment that a resubmission made obsolete."""

    student: str
    assignment: str
    cell: str
    manual_score: float | None
    extra_credit: float | None
    manual_comment: str | None


@dataclass
class Recorded:
    recorded: list[tuple[str, str]] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)  # graded, not on the roster
    superseded: list[Superseded] = field(default_factory=list)
    unchanged_manual: int = 0  # pairs whose manual grades were kept


def roster(course: Course) -> set[str]:
    with course.gradebook() as gb:
        return {s.id for s in gb.students}


def extensions(course: Course) -> dict[tuple[str, str], dict]:
    """``extensions.csv`` of the course (student_id, assignment, days, hours):
    (student, assignment) -> keyword arguments of nbgrader's ``grant_extension``."""
    path = course.root / "extensions.csv"
    found = {}
    if path.is_file():
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                found[row["student_id"].strip(), row["assignment"].strip()] = {
                    "days": float(row.get("days") or 0), "hours": float(row.get("hours") or 0)}
    return found


def record(course: Course, folders: list[Path], add_unknown: bool = False, keep: Path | None = None,
           log=print) -> Recorded:
    """Record the graded pairs in ``folders`` (``pairs.grade_pair``'s folders) in the course's
    gradebook; ``keep``: where a replaced autograded folder goes (default: beside the pair's)."""
    done = Recorded()
    known = roster(course)
    granted = extensions(course)
    for folder in folders:
        r = Result.load(folder / "result.json")
        if r.status == "no submission":
            continue
        if r.student not in known:
            if not add_unknown:
                done.unknown.append((r.student, r.assignment))
                continue
            with course.gradebook() as gb:
                gb.update_or_create_student(r.student)
            known.add(r.student)
            log(f"added {r.student} to the gradebook (not on the roster)")
        _record_one(course, r, folder, granted.get((r.student, r.assignment)), done,
                    keep or folder / "replaced-autograded")
        _keep_tracebacks(course, r, folder)
        done.recorded.append((r.student, r.assignment))
    return done


def _keep_tracebacks(course: Course, r: Result, folder: Path) -> None:
    """The instructor's tracebacks of the pair as recorded, where formgrader's JupyterLab file
    browser finds them beside the gradebook: ``grading/tracebacks/ASSIGNMENT/STUDENT.txt``."""
    dest = course.reports / "tracebacks" / r.assignment / f"{r.student}.txt"
    dest.parent.mkdir(parents=True, exist_ok=True)
    found = folder / "tracebacks.txt"
    text = found.read_text(encoding="utf-8") if found.is_file() else "no traceback: nothing failed\n"
    dest.write_text(f"{r.student} / {r.assignment}, graded in {folder}\n\n{text}", encoding="utf-8")


def _changed(course: Course, r: Result) -> bool:
    """Whether the hand-in differs from the one last recorded for this pair."""
    path = course.folder("autograded", r.student, r.assignment) / f"{r.assignment}.ipynb"
    if not path.is_file():
        return True
    return autograded.graded_as(nbformat.read(path, as_version=4)).get("sha256") != r.sha256


def _record_one(course: Course, r: Result, folder: Path, extension: dict | None, done: Recorded,
                keep: Path) -> None:
    from sqlalchemy.exc import SAWarning

    changed = _changed(course, r)
    with course.gradebook() as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's add_submission, with SQLAlchemy 2
        try:
            gb.find_assignment(r.assignment)
        except Exception:  # noqa: BLE001 - MissingEntry
            raise SystemExit(f"error: {r.assignment} is not in the gradebook {course.db_url}: run "
                             "`make assignments` (nbgrader generate_assignment) first") from None
        gb.update_or_create_submission(r.assignment, r.student, timestamp=r.submitted_at)
        if extension:
            gb.grant_extension(r.assignment, r.student, **extension)
        nb = gb.find_submission_notebook(r.assignment, r.assignment, r.student)
        for grade in nb.grades:
            name, manual = grade.name, _is_manual(grade)
            if changed and (grade.manual_score is not None or grade.extra_credit is not None):
                done.superseded.append(Superseded(r.student, r.assignment, name, grade.manual_score,
                                                  grade.extra_credit, None))
                grade.manual_score = grade.extra_credit = None
            if manual:
                if changed:
                    gradable = r.status == GRADED
                    grade.auto_score = None if gradable else 0.0
                    grade.needs_manual_grade = gradable
                continue
            new = float(r.cell_scores.get(name, 0.0)) if r.status == GRADED else 0.0
            if grade.manual_score is not None:
                if grade.auto_score != new:
                    grade.needs_manual_grade = True  # the override was made for another score: review it
            else:
                grade.needs_manual_grade = False
            grade.auto_score = new
        general = "; ".join(r.notes) if r.status != GRADED else None
        for i, comment in enumerate(sorted(nb.comments, key=lambda c: c.name)):
            if changed and comment.manual_comment:
                done.superseded.append(Superseded(r.student, r.assignment, comment.name, None, None,
                                                  comment.manual_comment))
                comment.manual_comment = None
            m = EXERCISE.match(comment.name)
            note = r.exercise_notes.get(int(m.group(1))) if m else None
            comment.auto_comment = note if r.status == GRADED else (general if i == 0 else None)
        gb.db.commit()
        if not changed and any(g.manual_score is not None for g in nb.grades):
            done.unchanged_manual += 1
    target = course.folder("autograded", r.student, r.assignment)
    if target.exists():
        if keep.exists():
            shutil.rmtree(keep)  # an earlier copy kept by this same run folder: this one replaces it
        shutil.copytree(target, keep)
        for p in sorted(target.iterdir()):
            if p.is_file() and p.name in (f"{r.assignment}.ipynb", "timestamp.txt", "submission_secret.txt"):
                p.unlink()
    if (folder / "autograded").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        for p in (folder / "autograded").iterdir():
            shutil.copyfile(p, target / p.name)


def _is_manual(grade) -> bool:
    """A cell nbgrader grades by hand: a written answer (markdown), a manually graded code
    answer (a grade cell that is also a solution cell) or a task."""
    from nbgrader.api import TaskCell

    cell = grade.cell
    if isinstance(cell, TaskCell) or grade.cell_type == "markdown":
        return True
    return any(s.name == cell.name for s in cell.notebook.solution_cells)


def refresh_penalties(course: Course) -> int:
    """Every submission's late penalty, from the course's late-work plugin and the current
    scores (nbgrader's ``AssignLatePenalties`` and its checks); how many are late."""
    from nbgrader.preprocessors import AssignLatePenalties

    pre = AssignLatePenalties(config=course.config)
    pre.init_plugin()
    late = 0
    with course.gradebook() as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                seconds = sub.total_seconds_late
                late += seconds > 0
                for nb in sub.notebooks:
                    penalty = None
                    if seconds > 0:
                        penalty = pre.plugin_inst.late_submission_penalty(sub.student.id, nb.score, seconds)
                        if penalty is not None:
                            penalty = pre._check_late_penalty(nb, penalty)
                    nb.late_submission_penalty = penalty
        gb.db.commit()
    return late


def dump(course: Course) -> dict:
    """The gradebook's grades as plain, comparable data (no generated ids)."""
    out = {}
    with course.gradebook() as gb:
        out["students"] = sorted((s.id, s.first_name, s.last_name, s.email, s.lms_user_id)
                                 for s in gb.students)
        subs = []
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                for nb in sub.notebooks:
                    grades = sorted((g.name, g.auto_score, g.manual_score, g.extra_credit,
                                     g.needs_manual_grade) for g in nb.grades)
                    comments = sorted((c.name, c.auto_comment, c.manual_comment) for c in nb.comments)
                    subs.append((sub.student.id, assignment.name, str(sub.timestamp), str(sub.extension),
                                 nb.name, nb.late_submission_penalty, tuple(grades), tuple(comments)))
        out["submissions"] = sorted(subs)
    return out
