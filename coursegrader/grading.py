"""Grade one parsed submission against its ``Spec``: the student's code runs sandboxed, the
tests run here.

1. The submission's code cells run in a ``Session`` (a sandbox) in notebook order: the
   student's solution cells and any cells they added; locked cells are taken from the source
   (what the student wrote in them is ignored) and test cells do not run there at all.
2. The test cells run in the grader's process, in a namespace built from the source's setup
   cells, where every function a solution cell defines is a ``StudentFunction``: calling it
   sends the arguments to the sandbox and brings back plain data. Every ``assert`` and every
   comparison runs here, on plain tensors, with the grader's own torch.
3. While a test calls one of the student's functions, the calls the assignment's ``ANSWERS``
   lists for that function are unavailable in the sandbox (``ownwork.py``, the same rule as
   the notebook's self-checks): one used, by whatever route, sets the exercise to 0 and the
   notes name it.
4. Each test cell's verdict is appended to ``progress.jsonl`` as soon as it is known.

What the student reads (``Graded.notes``, per exercise in ``Graded.exercise_notes``) names
what failed and quotes a hidden test's hint (``spec.py``), never the hidden test itself; what
the instructor reads besides (``Graded.tracebacks``, ``Graded.flags``) may quote anything.
"""
from __future__ import annotations

import contextlib
import io
import json
import linecache
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from coursegrader.result import short
from coursegrader.session import (
    NOT_ANSWERED,
    SETUP_TIMEOUT,
    Broken,
    RuledOut,
    Session,
    Step,
    StudentFunction,
    ruled_out,
)
from coursegrader.spec import Spec, TestCell

HARD_CODED = ("every self-check passed and every hidden test failed: an answer fitted to the "
              "self-checks (hard-coded)?")  # said per exercise: "ex3: every self-check ..."


# ----------------------------------------------------------------------------- the plan
def plan(spec: Spec, nb) -> tuple[list[Step], list[str]]:
    """The cells to run in the sandbox, and notes about duplicated, moved or missing cells."""
    steps, notes, seen = [], [], {}
    for gid in spec.setup:  # locked cells first, as the source has them
        steps.append(Step(gid, spec.locked[gid], None, SETUP_TIMEOUT, locked=True))
    test_ids = {t.grade_id for t in spec.tests}
    for index, cell in enumerate(nb.cells, start=1):
        if cell.cell_type != "code":
            continue
        gid = cell.metadata.get("nbgrader", {}).get("grade_id") if isinstance(
            cell.metadata.get("nbgrader"), dict) else None
        gid = gid if isinstance(gid, str) else None
        seen.setdefault(gid, []).append(index)
        if gid in spec.locked or gid in test_ids:
            continue  # locked: the source's version is used; tests run in the grader
        if gid in spec.solutions:
            steps.append(Step(gid, cell.source, spec.solutions[gid]))
        else:
            steps.append(Step(f"cell {index}", cell.source, None))
    for gid, cells in seen.items():
        if gid in spec.solutions and len(cells) > 1:
            notes.append(f"{gid} appears {len(cells)} times (cells {', '.join(map(str, cells))}); "
                         f"they ran in order, so the last one (cell {cells[-1]}) is the one graded")
        elif gid in test_ids and len(cells) > 1:
            notes.append(f"test cell {gid} appears {len(cells)} times; the original ran once")
    for t in spec.tests:
        if t.grade_id not in seen:
            notes.append(f"test cell {t.grade_id} was missing; the original ran")
    for gid, ex in spec.solutions.items():
        if gid not in seen:
            notes.append(f"ex{ex}: solution cell {gid} was missing (cells without it ran as they are)")
    return steps, notes


# ----------------------------------------------------------------------------- verdicts
@dataclass
class Verdict:
    """How one test cell went."""

    grade_id: str
    exercise: int
    points: float  # what the cell is worth
    earned: float = 0.0
    failed: str | None = None  # "self-check" or "hidden tests" (None: passed, or not tested)
    why: str | None = None  # what the student reads (None: passed)
    traceback: str = ""  # for the instructor
    by_student: bool = False  # the student's code raised, crashed or ran late (not the test's verdict)

    def to_json(self) -> dict:
        return dict(vars(self))


@dataclass
class Graded:
    """What grading one notebook found."""

    scores: dict[int, float]  # exercise -> points earned
    verdicts: list[Verdict]
    notes: list[str]  # for the student: general notes, then "exN: why" per exercise short of full marks
    exercise_notes: dict[int, str] = field(default_factory=dict)  # exercise -> why (student's words)
    flags: list[str] = field(default_factory=list)  # for the instructor only
    tracebacks: list[str] = field(default_factory=list)  # for the instructor only
    cell_tracebacks: dict[str, str] = field(default_factory=dict)  # solution grade id -> its traceback


def grade_notebook(spec: Spec, nb, work: Path, timeout: float = 30.0,
                   no_sandbox: bool = False) -> Graded:
    """Grade one parsed student notebook against ``spec``; writes ``work/progress.jsonl``,
    ``work/grader-output.txt`` and the sandbox logs."""
    work.mkdir(parents=True, exist_ok=True)
    progress = work / "progress.jsonl"
    steps, notes = plan(spec, nb)
    session = Session(steps, work, timeout, no_sandbox, spec.answers, spec.functions,
                      record=any("TorchDispatchMode" in t.hidden for t in spec.tests))
    scores = dict.fromkeys(spec.points, 0.0)
    lost: dict[int, list[str]] = {}
    namespace: dict = {"__name__": "__main__"}
    ruled: dict[int, str] = {}  # exercise -> the note that says what it used
    verdicts: list[Verdict] = []
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            for gid in spec.setup:  # the grader's own copy of the setup (trusted code)
                exec(compile(spec.locked[gid], f"<{gid}>", "exec"), namespace)  # noqa: S102
        for fn in spec.functions:
            namespace[fn] = StudentFunction(session, fn)
        session.ensure()
        for i, step in enumerate(steps):
            why = session.outcome.get(i, "ok")
            if why != "ok":
                ex = step.exercise or 0
                where = "your solution cell failed: " if step.exercise else f"{step.label} failed: "
                text = why if why.startswith("not answered") else where + why
                if step.exercise:
                    lost.setdefault(ex, []).append(text)
                else:
                    notes.append(text)
        for test in spec.tests:
            session.used = []
            verdict = _run_test(test, namespace, out)
            if session.used:  # however the test went: the exercise scores 0
                ruled.setdefault(test.exercise, ruled_out(test.exercise, session.used[0]))
                verdict.why, verdict.failed = ruled[test.exercise], None
            for used in session.charged:  # made by another exercise's own code: that one scores 0
                ruled.setdefault(used.exercise, ruled_out(used.exercise, used))
            session.charged = []
            if verdict.why is None:
                verdict.earned = test.points
                scores[test.exercise] += test.points
            else:
                lost.setdefault(test.exercise, []).append(verdict.why)
            verdicts.append(verdict)
            with open(progress, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"grade_id": test.grade_id, "exercise": test.exercise,
                                     "points": verdict.earned, "why": verdict.why}) + "\n")
    finally:
        session.close()
        (work / "grader-output.txt").write_text(out.getvalue()[-200_000:], encoding="utf-8")
    for ex, why in ruled.items():
        scores[ex] = 0.0
        lost[ex] = [why]
        for v in verdicts:
            if v.exercise == ex:
                v.earned, v.why = 0.0, v.why or why
    exercise_notes = {}
    for ex in sorted(lost):
        if ex in ruled:
            exercise_notes[ex] = ruled[ex]
            notes.append(ruled[ex])
        elif scores.get(ex, 0.0) < spec.points.get(ex, 0.0):
            reasons = list(dict.fromkeys(lost[ex]))
            if any(r.startswith("not answered") for r in reasons):
                reasons = [NOT_ANSWERED]  # the rest follows from it
            exercise_notes[ex] = "; ".join(reasons)
            notes.append(f"ex{ex}: {exercise_notes[ex]}")
    tracebacks = session.tracebacks + [f"{v.grade_id} ({v.failed}):\n{v.traceback}"
                                       for v in verdicts if v.traceback]
    return Graded(scores, verdicts, notes, exercise_notes, _flags(spec, verdicts), tracebacks,
                  session.cell_tracebacks)


def _flags(spec: Spec, verdicts: list[Verdict]) -> list[str]:
    """What the instructor should look at: each exercise whose self-checks all passed and whose
    hidden tests all failed (the test's verdict, not the student's code raising), whatever the
    other exercises did."""
    flags = []
    for ex in sorted({t.exercise for t in spec.tests}):
        pairs = [(v, t) for v, t in zip(verdicts, spec.tests, strict=True) if t.exercise == ex]
        mine, hidden = [v for v, _ in pairs], [v for v, t in pairs if t.hidden.strip()]
        if hidden and all(v.failed in (None, "hidden tests") for v in mine) and \
                all(v.failed == "hidden tests" and not v.by_student for v in hidden):
            flags.append(f"ex{ex}: {HARD_CODED}")
    return flags


def _run_test(test: TestCell, namespace: dict, out: io.StringIO) -> Verdict:
    """Run one test cell (visible part, then hidden part); its verdict."""
    verdict = Verdict(test.grade_id, test.exercise, test.points)
    for part, source in (("self-check", test.visible), ("hidden tests", test.hidden)):
        if not source.strip():
            continue
        name = _register(test, part, source)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(source, name, "exec"), namespace)  # noqa: S102
        except RuledOut:
            return verdict  # grade_notebook says why from session.used
        except Exception as err:  # noqa: BLE001 - the test's own verdict, or the student's error
            verdict.failed = part
            verdict.by_student = isinstance(err, Broken) or bool(getattr(err, "from_student", None))
            verdict.why = _explain(part, err, test, source)
            verdict.traceback = "".join(traceback.format_exception(err))[-6000:]
            student = getattr(err, "student_traceback", "")
            if student:
                verdict.traceback += "\nin the student's function:\n" + student
            return verdict
    return verdict


def _register(test: TestCell, part: str, source: str) -> str:
    """The file name a test cell part is compiled under, its lines known to ``linecache`` so
    that the instructor's traceback shows them."""
    name = f"<{test.grade_id}: {part}>"
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return name


def _failing_line(err: Exception, test: TestCell, part: str) -> int | None:
    """The line of the test cell part (as exec'ed) where ``err`` was raised."""
    line = None
    for frame, number in traceback.walk_tb(err.__traceback__):
        if frame.f_code.co_filename == f"<{test.grade_id}: {part}>":
            line = number
    return line


def _explain(part: str, err: Exception, test: TestCell, source: str) -> str:
    """Why a test part failed, in words a student may read: the student's own error in full,
    a self-check's failing line (students see the self-check), a hidden test's hint if it
    has one (its ``# hint:`` above the failing line, else the assert's message: ``assert ok, x``
    often names only the case that failed), else only the kind of error."""
    if isinstance(err, Broken):
        return f"{part} failed: your function {err}"
    mine = getattr(err, "from_student", None)
    if mine:
        return mine if mine.startswith("not answered") else f"{part} failed: your function raised {mine}"
    if isinstance(err, NameError):
        return f"{part} failed: {err}"
    line = _failing_line(err, test, part)
    if part == "self-check":
        lines = source.splitlines()
        at = f" at `{short(lines[line - 1].strip(), 100)}`" if line and 0 < line <= len(lines) else ""
        message = f": {short(err, 120)}" if str(err) else ""
        return f"{part} failed: {type(err).__name__}{message}{at}"
    hint = test.hint_at(line) or (str(err).strip() if isinstance(err, AssertionError) else "")
    return f"{part} failed: {type(err).__name__}" + (f" (hint: {short(hint, 200)})" if hint else "")
