"""Grade one (student, assignment) pair: the student's code runs sandboxed, the tests run here.

The source notebook is the specification: its locked ``setup`` cells, the names its
solution cells define, and its test cells (visible self-check, then hidden tests), with
their points. Grading a submission:

1. Its code cells run in a ``Sandbox`` in notebook order: the student's solution cells and
   any cells they added; locked cells are taken from the source (what the student wrote in
   them is ignored) and test cells do not run there at all.
2. The test cells run in the grader's process, in a namespace built from the source's setup
   cells, where every function a solution cell defines is a ``StudentFunction``: calling it
   sends the arguments to the sandbox and brings back plain data. Every ``assert`` and every
   comparison runs here, on plain tensors, with the grader's own torch.
3. While a test calls one of the student's functions, the calls the assignment's ``ANSWERS``
   lists for that function are unavailable in the sandbox (``ownwork.py``, the same rule as
   the notebook's self-checks): one used, by whatever route, sets the exercise to 0 and the
   notes name it.
4. Each test cell's verdict is appended to ``progress.jsonl`` as soon as it is known. A
   sandbox that dies or runs late is restarted (the cells that worked are run again, the
   one that broke it is skipped), so a crash costs only the exercise it happened in.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from autograde.course import EXERCISE
from autograde.pairs import _short
from autograde.sandbox import AnswerUsed, Sandbox, SandboxError, StudentError

HIDDEN = "### BEGIN HIDDEN TESTS"
SETUP_TIMEOUT = 300.0  # the locked setup cells import torch and attnlib


# ----------------------------------------------------------------------------- the spec
@dataclass
class TestCell:
    grade_id: str
    exercise: int
    points: float
    visible: str
    hidden: str


@dataclass
class Spec:
    """What the source notebook says about grading one assignment."""

    name: str
    locked: dict[str, str]  # grade_id -> source of every locked code cell that is not a test
    setup: list[str]  # the locked code cells, in order (run before anything else)
    solutions: dict[str, int]  # solution grade_id -> exercise
    functions: dict[str, int]  # name a solution cell defines -> exercise
    tests: list[TestCell]
    points: dict[int, float] = field(default_factory=dict)  # exercise -> points
    answers: dict[str, list[str]] = field(default_factory=dict)  # function -> calls it rules out


class SpecError(ValueError):
    """The source notebook does not say something grading needs (e.g. its ``ANSWERS``)."""


def _answers(name: str, sources: list[str]) -> dict[str, list[str]]:
    """The ``ANSWERS = {...}`` literal of the locked cells: function -> dotted names."""
    for source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "ANSWERS" for t in node.targets):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError as err:
                    raise SpecError(f"{name}: ANSWERS must be a literal dict (no names, no calls): "
                                    f"{err}") from None
                if not (isinstance(value, dict) and all(
                        isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v)
                        for k, v in value.items())):
                    raise SpecError(f"{name}: ANSWERS must map each function name to a list of dotted names")
                return value
    raise SpecError(f"{name}: no locked cell declares ANSWERS, the calls that would answer each exercise "
                    "(see docs/instructors.md, 'Calls that answer an exercise')")


def _defined_names(source: str) -> list[str]:
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return names


def load_spec(source: Path, name: str) -> Spec:
    nb = nbformat.read(Path(source) / name / f"{name}.ipynb", as_version=4)
    spec = Spec(name, {}, [], {}, {}, [])
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id", "")
        if cell.cell_type != "code" or not gid:
            continue
        m = EXERCISE.match(gid)
        if meta.get("grade"):
            visible, _, hidden = cell.source.partition(HIDDEN)
            spec.tests.append(TestCell(gid, int(m.group(1)) if m else 0, float(meta.get("points", 0)),
                                       visible, HIDDEN + hidden if hidden else ""))
            spec.points[spec.tests[-1].exercise] = spec.points.get(spec.tests[-1].exercise, 0.0) + \
                spec.tests[-1].points
        elif meta.get("solution") and m:
            spec.solutions[gid] = int(m.group(1))
            for fn in _defined_names(cell.source):
                spec.functions[fn] = int(m.group(1))
        elif meta.get("locked"):
            spec.locked[gid] = cell.source
            spec.setup.append(gid)
    spec.answers = _answers(name, [spec.locked[gid] for gid in spec.setup])
    missing = sorted(set(spec.functions) - set(spec.answers))
    unknown = sorted(set(spec.answers) - set(spec.functions))
    if missing or unknown:
        raise SpecError(f"{name}: ANSWERS must have one entry per function a solution cell defines"
                        + (f"; missing: {', '.join(missing)}" if missing else "")
                        + (f"; not a solution's function: {', '.join(unknown)}" if unknown else ""))
    return spec


# ----------------------------------------------------------------------------- the plan
@dataclass
class Step:
    label: str  # what the feedback calls it: "ex1_solution", "setup", "cell 7"
    source: str
    exercise: int | None  # the exercise whose solution this is
    timeout: float | None = None  # None: the per-cell limit
    locked: bool = False  # one of the source's locked cells (trusted)


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


# ----------------------------------------------------------------------------- grading
class StudentFunction:
    """Stands for a function the student defined: a call runs it in the sandbox."""

    def __init__(self, session: Session, name: str):
        self.session, self.name = session, name

    def __call__(self, *args, **kwargs):
        return self.session.call(self.name, args, kwargs)

    def __repr__(self):
        return f"<student function {self.name}>"


class Broken(Exception):  # noqa: N818 - a test failed because the student's process broke
    pass


class RuledOut(Exception):  # noqa: N818 - a call used what its exercise rules out
    pass


def ruled_out(exercise: int, used: AnswerUsed) -> str:
    """The note for an exercise whose function used ``used``."""
    if used.kind == "answer":
        return f"ex{exercise} uses {used.what}, which this exercise asks you to write yourself"
    return f"ex{exercise} uses {used.what}, which could get round the check of the calls it rules out"


_BUILTIN_ERRORS = {e.__name__: e for e in (ValueError, TypeError, IndexError, KeyError,
                                           RuntimeError, ZeroDivisionError, AttributeError,
                                           NotImplementedError, NameError, AssertionError,
                                           ArithmeticError, LookupError, OverflowError)}


class Session:
    """The sandbox of one submission, restarted (and its good cells re-run) after a crash."""

    def __init__(self, steps: list[Step], work: Path, timeout: float, no_sandbox: bool,
                 answers: dict[str, list[str]] | None = None):
        self.steps, self.work, self.timeout, self.no_sandbox = steps, work, timeout, no_sandbox
        self.answers = answers or {}
        self.box: Sandbox | None = None
        self.outcome: dict[int, str] = {}  # step index -> "ok" or why it failed
        self.restarts = 0
        self.used: list[AnswerUsed] = []  # what the calls since the last reset used

    def _start(self) -> None:
        self.close()
        self.box = Sandbox(self.work / f"sandbox{self.restarts}", self.no_sandbox)
        self.restarts += 1
        forbidden = False
        for i, step in enumerate(self.steps):
            if self.outcome.get(i, "ok") != "ok":
                continue  # it failed before: skip it this time
            try:
                if not step.locked and not forbidden:  # the trusted set-up is done
                    self.box.forbid(self.answers, SETUP_TIMEOUT)
                    forbidden = True
                self.box.run(step.source, step.timeout or self.timeout)
                self.outcome[i] = "ok"
            except StudentError as err:
                self.outcome[i] = _student_error(err)
            except SandboxError as err:
                self.outcome[i] = _sandbox_error(err, self.timeout)
                self.box.close()
                return self._start()
        if not forbidden:
            self.box.forbid(self.answers, SETUP_TIMEOUT)

    def ensure(self) -> None:
        if self.box is None or not self.box.alive:
            self._start()

    def call(self, name: str, args, kwargs):
        self.ensure()
        try:
            return self.box.call(name, args, kwargs, self.timeout)
        except AnswerUsed as err:
            self.used.append(err)
            raise RuledOut(err.what) from None
        except StudentError as err:
            cls = _BUILTIN_ERRORS.get(err.ename, RuntimeError)  # a test may expect ValueError
            exc = cls(err.message if cls.__name__ == err.ename else f"{err.ename}: {err.message}")
            exc.from_student = _student_error(err)
            raise exc from None
        except SandboxError as err:
            self.box.close()
            raise Broken(f"{name}: " + _sandbox_error(err, self.timeout)) from None

    def close(self) -> None:
        if self.box is not None:
            self.box.close()
            self.box = None


def _student_error(err: StudentError) -> str:
    if err.ename == "NotImplementedError":
        return "not answered (raise NotImplementedError is still there)"
    return _memory_note(f"{err.ename}: {_short(err.message, 120)}" if err.message else err.ename)


def _sandbox_error(err: SandboxError, timeout: float) -> str:
    if err.kind == "timeout":
        return f"stopped after the {timeout:g} s time limit per cell"
    if err.kind == "died":
        return f"{err}; the points already earned were kept"
    return f"the grader could not read what it returned ({err})"


def _memory_note(text: str) -> str:
    low = text.lower()
    if "can't allocate memory" in low or "memoryerror" in low or "cannot allocate" in low:
        return text + " (memory limit)"
    return text


def grade_notebook(spec: Spec, nb, work: Path, timeout: float = 30.0,
                   no_sandbox: bool = False) -> tuple[dict[int, float], list[str]]:
    """Points per exercise and notes for one parsed student notebook."""
    work.mkdir(parents=True, exist_ok=True)
    progress = work / "progress.jsonl"
    steps, notes = plan(spec, nb)
    session = Session(steps, work, timeout, no_sandbox, spec.answers)
    scores = dict.fromkeys(spec.points, 0.0)
    lost: dict[int, list[str]] = {}
    namespace: dict = {"__name__": "__main__"}
    ruled: dict[int, str] = {}  # exercise -> the note that says what it used
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
                verdict = ruled[test.exercise]
            if verdict is None:
                scores[test.exercise] += test.points
            else:
                lost.setdefault(test.exercise, []).append(verdict)
            with open(progress, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"grade_id": test.grade_id, "exercise": test.exercise,
                                     "points": test.points if verdict is None else 0.0,
                                     "why": verdict}) + "\n")
    finally:
        session.close()
        (work / "grader-output.txt").write_text(out.getvalue()[-200_000:], encoding="utf-8")
    for ex, why in ruled.items():
        scores[ex] = 0.0
        lost[ex] = [why]
    for ex in sorted(lost):
        if ex in ruled:
            notes.append(ruled[ex])
        elif scores.get(ex, 0.0) < spec.points.get(ex, 0.0):
            notes.append(f"ex{ex}: " + "; ".join(dict.fromkeys(lost[ex])))
    return scores, notes


def _run_test(test: TestCell, namespace: dict, out: io.StringIO) -> str | None:
    """None if the test cell passes, else why (never quoting the hidden tests)."""
    for part, source in (("self-check", test.visible), ("hidden tests", test.hidden)):
        if not source.strip():
            continue
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(source, f"<{test.grade_id}>", "exec"), namespace)  # noqa: S102
        except Broken as err:
            return f"{part} failed: your function {err}"
        except RuledOut:
            return None  # grade_notebook says why from session.used
        except NameError as err:
            return f"{part} failed: {err}"
        except Exception as err:  # noqa: BLE001 - the test's own verdict
            return _explain(part, err)
    return None


def _explain(part: str, err: Exception) -> str:
    """Why a test part failed: the student's own error in full, the test's by name only."""
    if getattr(err, "from_student", None):
        return f"{part} failed: your function raised {err.from_student}"
    if part == "self-check" and type(err) is not AssertionError and str(err):
        return f"{part} failed: {type(err).__name__}: {_short(err, 120)}"
    return f"{part} failed: {type(err).__name__}"
