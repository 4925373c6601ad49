# Jupyter server settings for reading the book in JupyterLab (`make lab` passes
# --config=book/lab_config.py). nbgrader's server extensions (formgrader, assignment lists,
# validation) are for instructors' courses, which docs/instructors.md runs with make assignments
# and make grade; loaded here they only log "No nbgrader_config.py file found" twice.
c = get_config()  # noqa: F821 - provided by traitlets when it loads this file
c.ServerApp.jpserver_extensions.update({
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.validate_assignment": False,
    "nbgrader.server_extensions.assignment_list": False,
    "nbgrader.server_extensions.course_list": False,
})

# The explorers' saved states (docs/book.md): kernels inherit this server's environment, so each
# chapter's hidden check of its explorer compares with them (attnlib.explorer.STATES_ENV).
import os  # noqa: E402
from pathlib import Path  # noqa: E402

os.environ.setdefault("ATTNBOOK_STATES", str(Path(__file__).resolve().parent / "explorers"))
