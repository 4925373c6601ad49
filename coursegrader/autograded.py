"""The autograded notebook: a graded submission as formgrader shows it to the instructor and
``nbgrader generate_feedback`` turns it into the student's feedback.

It is the student's notebook with what grading decided put back in: the source's nbgrader
metadata on every nbgrader cell (points, grade ids, locks: a student's edits to them never
count), the source's text of every locked cell and of every test cell's visible self-check
(the hidden tests are left out: the feedback is made from this notebook), the student's own
outputs cleared, and under each test cell one output line saying how it went (the points and,
if some were lost, why: ``hidden tests failed: AssertionError (hint: ...)``), followed where it
failed by the tracebacks, for the instructor only (``feedback.py``: formgrader shows them, the
feedback leaves them out). Notes that belong
to no exercise (a renamed notebook, ignored files) open the notebook in a markdown cell. A cell
the student deleted is added back at the end, a written answer's as an empty answer.

The notebook's metadata ``coursegrader`` records what was graded (the notebook's sha256, its
``timestamp.txt``, the source's sha256), so that a later ``grade`` knows whether the hand-in
or the test changed since.
"""
from __future__ import annotations

import copy
import re

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from coursegrader.feedback import HIDDEN_INPUT, instructor_output
from coursegrader.result import Result
from coursegrader.spec import Spec
from coursegrader.zh import verdict

META = "coursegrader"  # notebook metadata key: what was graded
MISSING_ANSWER = "*(The notebook handed in has no cell for this answer.)*"
MISSING_CODE = "# (The notebook handed in has no cell with this grade id.)"


def graded_as(nb) -> dict:
    """What an autograded notebook records about the hand-in it was made from."""
    return dict(nb.metadata.get(META, {}))


def _grade_id(cell) -> str | None:
    meta = cell.metadata.get("nbgrader")
    gid = meta.get("grade_id") if isinstance(meta, dict) else None
    return gid if isinstance(gid, str) else None


def verdict_line(earned: float, points: float, why: str | None, lang: str = "en") -> str:
    return verdict(earned, points, why, lang)


def build(spec: Spec, nb, result: Result, verdicts: list, general_notes: list[str],
          cell_tracebacks: dict[str, str] | None = None):
    """The autograded notebook of ``nb`` (the student's parsed notebook), graded as ``result``
    with ``verdicts`` (``grading.Verdict``, one per test cell); ``cell_tracebacks``: grade id ->
    the traceback of a solution cell that raised (for the instructor, as the tests' are)."""
    nb = copy.deepcopy(nb)
    source = {c.grade_id: c for c in spec.cells}
    last = {}  # grade id -> index of its last cell in nb (the one graded)
    for i, cell in enumerate(nb.cells):
        gid = _grade_id(cell)
        if gid in source:
            last[gid] = i
    cells = []
    for i, cell in enumerate(nb.cells):
        gid = _grade_id(cell)
        if "nbgrader" in cell.metadata and (gid not in source or last[gid] != i):
            del cell.metadata["nbgrader"]  # made up, or a duplicate: shown as the student's own cell
            gid = None
        if gid is not None:
            want = source[gid]
            if cell.cell_type != want.cell_type:
                cell = _cell(want.cell_type, cell.source, cell.get("id") or f"student-{want.grade_id}",
                             metadata=dict(cell.metadata))
            cell.metadata["nbgrader"] = dict(want.nbgrader)
            if want.source is not None:
                cell.source = want.source
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cells.append(cell)
    for want in spec.cells:
        if want.grade_id not in last:
            if want.source is not None:
                text = want.source
            else:
                text = MISSING_ANSWER if want.cell_type == "markdown" else MISSING_CODE
            new = _cell(want.cell_type, text, f"missing-{want.grade_id}")
            new.metadata["nbgrader"] = dict(want.nbgrader)
            cells.append(new)
    from coursegrader.course import RULE_ID

    for cell in cells:  # formgrader and the feedback leave out the rule's input, and only its
        tags = [t for t in cell.metadata.get("tags", []) if t != HIDDEN_INPUT]
        tags += [HIDDEN_INPUT] if _grade_id(cell) == RULE_ID else []
        if tags or "tags" in cell.metadata:
            cell.metadata["tags"] = tags
    by_id = {_grade_id(c): c for c in cells if _grade_id(c)}
    for v in verdicts:
        cell = by_id.get(v.grade_id)
        if cell is not None and cell.cell_type == "code":
            line = verdict_line(v.earned, v.points, v.why, spec.lang)
            cell.outputs = [new_output("stream", name="stdout", text=line)]
            if v.traceback:  # formgrader shows it under the verdict; the feedback leaves it out
                cell.outputs.append(instructor_output(f"{v.grade_id} ({v.failed}):\n{v.traceback}"))
    for label, text in (cell_tracebacks or {}).items():  # a solution cell that raised when it ran
        cell = by_id.get(label)
        if cell is not None and cell.cell_type == "code":
            cell.outputs.append(instructor_output(text))
    if general_notes:
        text = ("**评分说明**" if spec.lang == "zh" else "**Notes from grading**") + "\n\n" + \
            "\n".join(f"- {_escape(n)}" for n in general_notes)
        cells.insert(0, _cell("markdown", text, "grading-notes", metadata={"tags": ["grading-notes"]}))
    nb.cells = cells
    if nb.nbformat_minor < 5:  # cell ids came with nbformat 4.5
        for cell in nb.cells:
            cell.pop("id", None)
    nb.metadata[META] = {"sha256": result.sha256, "submitted_at": result.submitted_at,
                         "source_sha256": result.source_sha256}
    nbformat.validate(nb)
    return nb


def _cell(kind: str, text: str, ident: str, **kwargs):
    """A new cell with a fixed id (the same hand-in always gives the same notebook)."""
    ident = re.sub(r"[^A-Za-z0-9_-]", "-", ident)[:64]
    return (new_code_cell if kind == "code" else new_markdown_cell)(text, id=ident, **kwargs)


def _escape(text: str) -> str:
    """A note as markdown text: its code-like parts in backticks do not need escaping, but a
    stray ``*`` or ``_`` from a file name must not turn into emphasis."""
    return re.sub(r"([*_])", r"\\\1", text)
