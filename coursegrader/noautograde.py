"""Switches nbgrader's own ``autograde`` off in a course graded by ``make grade``.

The course's ``nbgrader_config.py`` names ``coursegrader.noautograde.refuse`` as
``Autograde.pre_convert_hook``. nbgrader imports it while it builds its ``Autograde``
converter, before it reads or writes any folder, and importing this module raises: ``nbgrader
autograde`` (or formgrader's Autograde button) stops with the message below, and nothing it
would have replaced (the autograded notebooks, the scores ``make grade`` recorded) is touched.
nbgrader's autograde runs the students' code and the hidden tests in one kernel with your
permissions; ``make grade`` runs them apart, sandboxed (docs/instructors.md, "Threat model").

``COURSEGRADER_NBGRADER_AUTOGRADE=1`` lets it through (the benchmark's old grader uses it).
"""
import os

MESSAGE = ("This course is graded by the book's sandboxed grader, not by nbgrader autograde, which "
           "would run students' code unprotected and replace the grades: run `make grade` (or "
           "`python -m coursegrader grade --course COURSE`), see docs/instructors.md.")

if os.environ.get("COURSEGRADER_NBGRADER_AUTOGRADE") != "1":
    # SystemExit with a message: the command line prints it alone (no traceback) and exits with 1;
    # formgrader's Autograde button (nbgrader's capture_log catches everything) shows it as the error
    raise SystemExit(f"error: {MESSAGE}")


def refuse(**_):
    """The hook itself, reached only with ``COURSEGRADER_NBGRADER_AUTOGRADE=1``: does nothing."""
