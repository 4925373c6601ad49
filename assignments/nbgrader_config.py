"""nbgrader settings for the book's assignments (course directory: a copy under build/).

``scripts/assignments.py`` copies this file next to the generated course directory and
passes the course root and gradebook location on the command line, so nothing here
points at a machine-specific path.
"""
import os

c = get_config()  # noqa: F821 - provided by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = "attention-book"

# Each cell of a submission gets at most 30 s (ATTN_CELL_TIMEOUT overrides it); a cell that
# runs longer is interrupted (KeyboardInterrupt in the kernel) and the notebook goes on with
# the next cell, so an infinite loop costs the student that exercise only. The locked setup
# cell only imports torch and attnlib, which can take longer than that on a busy machine,
# so it gets at least 300 s.
SETUP_CELL_TIMEOUT = 300


def cell_timeout(cell):
    per_cell = int(os.environ.get("ATTN_CELL_TIMEOUT", "30"))
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return max(per_cell, SETUP_CELL_TIMEOUT) if grade_id == "setup" else per_cell


c.Execute.timeout = 30
c.Execute.timeout_func = cell_timeout
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0

# What students see in place of a solution.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# The feedback leaves out what the autograded notebook holds for the instructor only (the
# tracebacks formgrader shows under a failing test cell, hidden lines included), and formgrader
# and the feedback leave out the own-work rule's input (150 lines of the checker, hidden in the
# student's notebook too).
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, TagRemovePreprocessor  # noqa: E402
from nbgrader.preprocessors import GetGrades  # noqa: E402

from coursegrader.feedback import HIDDEN_INPUT, InstructorOnly  # noqa: E402 - the course config puts the book on sys.path

c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, TagRemovePreprocessor,
                                   InstructorOnly]
c.TagRemovePreprocessor.remove_input_tags = {HIDDEN_INPUT}

# A deleted test cell is not put back: the exercise scores 0 and the grade table says why.
# (Edited locked cells, test cells included, are always replaced by the originals.)
c.OverwriteCells.add_missing_cells = False
