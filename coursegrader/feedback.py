"""What the instructor reads in formgrader and the student never does: the tracebacks.

The autograded notebook (``autograded.py``) is both what formgrader shows the instructor and what
``nbgrader generate_feedback`` turns into the student's feedback. Under a test cell that failed
it carries, besides the verdict line, an output for the instructor only: the failing test's
traceback (hidden lines included) and the student's, so that the instructor grading in
formgrader reads why right there. Such an output is marked in its metadata (``for_instructor``);
the book's nbgrader settings (``assignments/nbgrader_config.py``) add ``InstructorOnly`` to
``GenerateFeedback``'s preprocessors, which takes every marked output out of the feedback.

The own-work rule's locked cell (some 150 lines of ``ownwork.py``, hidden in the student's
notebook) is tagged ``HIDDEN_INPUT`` in the autograded notebook, and only it (a student's own
cell loses that tag): nbconvert's ``TagRemovePreprocessor``, set up in the same settings, leaves
its input out of formgrader's page and of the feedback.
"""
from __future__ import annotations

from nbconvert.preprocessors import Preprocessor
from nbformat.v4 import new_output
from traitlets import Bool

MARK = "coursegrader"  # output metadata key: {"for": "instructor"}
HEADING = "For the instructor (formgrader only, never in the feedback):"
HIDDEN_INPUT = "grader-hidden-input"  # the tag of the cells whose input formgrader and the feedback leave out


def instructor_output(text: str):
    """A ``display_data`` output holding ``text`` (a traceback) for the instructor only."""
    return new_output("display_data", data={"text/plain": f"{HEADING}\n{text.rstrip()}\n"},
                      metadata={MARK: {"for": "instructor"}})


def for_instructor(output) -> bool:
    meta = output.get("metadata") or {}
    mark = meta.get(MARK) if isinstance(meta, dict) else None
    return isinstance(mark, dict) and mark.get("for") == "instructor"


class InstructorOnly(Preprocessor):
    """Takes the instructor's outputs (``instructor_output``) out of a notebook: the feedback."""

    enabled = Bool(True).tag(config=True)  # nbconvert's preprocessors are off unless enabled

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if not for_instructor(o)]
        return cell, resources
