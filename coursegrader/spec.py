"""What the source notebook of an assignment says about grading it: its ``Spec``.

The source notebook is the specification. Its locked ``setup`` cells, the names its solution
cells define and its test cells (a visible self-check, then ``### BEGIN HIDDEN TESTS`` ...),
with their points, say how the autograded part is graded. Cells that nbgrader grades by hand
(a markdown or code cell with ``grade`` and ``solution`` set, nbgrader's "manually graded
answer", or a ``task`` cell) are listed as ``manual``: the grader never scores them, formgrader
does, and their points count in the gradebook's total.

A hidden test carries hints for students: the last ``# hint: ...`` comment of the hidden part
at or above the line that failed, continued on comment lines ``#   ...``
(what that part checks, in words that do not give the test
away), or else the message of the failing ``assert`` (``assert ok, "check the 1/sqrt(d)
scaling"``). The feedback shows the hint, never the test.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

EXERCISE = re.compile(r"^ex(\d+)_")  # grade ids exN_solution and exN_tests: exercise N
HIDDEN = "### BEGIN HIDDEN TESTS"
CJK = re.compile(r"[\u4e00-\u9fff]")  # Chinese characters in a statement: the Chinese course
HINT = re.compile(r"^\s*#\s*hint:\s*(?P<text>.+?)\s*$", re.IGNORECASE)
MORE = re.compile(r"^\s*#\s{2,}(?P<text>\S.*?)\s*$")  # a hint's next line: "#   ..." (two spaces or more)


@dataclass
class TestCell:
    """A locked, graded code cell: a visible self-check, then (optionally) hidden tests."""

    grade_id: str
    exercise: int
    points: float
    visible: str
    hidden: str  # "### BEGIN HIDDEN TESTS" ... as the source has it ("" if none)

    def hint_at(self, line: int | None) -> str | None:
        """The ``# hint:`` comment of the hidden part that covers ``line`` (a line number of
        ``hidden``, 1-based): the last one at or above it (None if none is)."""
        found, going = None, False
        for number, text in enumerate(self.hidden.splitlines(), start=1):
            if line is not None and number > line:
                break
            m, more = HINT.match(text), MORE.match(text)
            if m:
                found, going = m.group("text"), True
            elif going and more:
                found += " " + more.group("text")
            else:
                going = False
        return found


@dataclass
class ManualCell:
    """A cell graded by hand in formgrader (a written answer, a task)."""

    grade_id: str
    points: float
    cell_type: str


@dataclass
class SourceCell:
    """An nbgrader cell of the source notebook, as the autograded notebook shows it."""

    grade_id: str
    cell_type: str
    nbgrader: dict  # the source's nbgrader metadata (never the student's)
    source: str | None  # what the autograded notebook shows (None: the student's own text)


@dataclass
class Spec:
    """What the source notebook says about grading one assignment."""

    name: str
    locked: dict[str, str]  # grade_id -> source of every locked code cell that is not a test
    setup: list[str]  # the locked code cells, in order (run before anything else)
    solutions: dict[str, int]  # solution grade_id -> exercise
    functions: dict[str, int]  # name a solution cell defines -> exercise
    tests: list[TestCell]
    points: dict[int, float] = field(default_factory=dict)  # exercise -> autograded points
    answers: dict[str, list[str]] = field(default_factory=dict)  # function -> calls it rules out
    manual: list[ManualCell] = field(default_factory=list)
    source_sha256: str = ""  # of the source notebook file: a changed test means a regrade
    lang: str = "en"  # "zh": the Chinese course's source (its statements are Chinese): zh.say
    cells: list[SourceCell] = field(default_factory=list)  # every nbgrader cell, in order

    @property
    def auto_points(self) -> float:
        return sum(self.points.values())

    @property
    def manual_points(self) -> float:
        return sum(c.points for c in self.manual)


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
    return [node.name for node in ast.parse(source).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def is_manual(meta: dict) -> bool:
    """nbgrader's manually graded cells: an answer (``grade`` and ``solution``) or a task."""
    return bool(meta.get("task") or (meta.get("grade") and meta.get("solution")))


def load_spec(source: Path, name: str) -> Spec:
    """The ``Spec`` of assignment ``name`` from ``source/name/name.ipynb``."""
    path = Path(source) / name / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    spec = Spec(name, {}, [], {}, {}, [], source_sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id", "")
        if not gid:
            continue
        shown = None if meta.get("solution") else cell.source.partition(HIDDEN)[0].rstrip()
        spec.cells.append(SourceCell(gid, cell.cell_type, dict(meta), shown))
        if is_manual(meta):
            spec.manual.append(ManualCell(gid, float(meta.get("points", 0)), cell.cell_type))
            continue
        if cell.cell_type != "code":
            continue
        m = EXERCISE.match(gid)
        if meta.get("grade"):
            visible, _, hidden = cell.source.partition(HIDDEN)
            test = TestCell(gid, int(m.group(1)) if m else 0, float(meta.get("points", 0)),
                            visible, HIDDEN + hidden if hidden else "")
            spec.tests.append(test)
            spec.points[test.exercise] = spec.points.get(test.exercise, 0.0) + test.points
        elif meta.get("solution") and m:
            spec.solutions[gid] = int(m.group(1))
            for fn in _defined_names(cell.source):
                spec.functions[fn] = int(m.group(1))
        elif meta.get("locked"):
            spec.locked[gid] = cell.source
            spec.setup.append(gid)
    if any(CJK.search(c.source) for c in nb.cells if c.cell_type == "markdown"):
        spec.lang = "zh"  # book.i18n translated its markdown: the grader speaks Chinese to its students
    spec.answers = _answers(name, [spec.locked[gid] for gid in spec.setup])
    missing = sorted(set(spec.functions) - set(spec.answers))
    unknown = sorted(set(spec.answers) - set(spec.functions))
    if missing or unknown:
        raise SpecError(f"{name}: ANSWERS must have one entry per function a solution cell defines"
                        + (f"; missing: {', '.join(missing)}" if missing else "")
                        + (f"; not a solution's function: {', '.join(unknown)}" if unknown else ""))
    return spec
