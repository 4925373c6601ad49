"""nbval settings for the whole repository.

SVG output embeds dates and random ids and stderr carries library warnings, so
neither is compared (nbval's documented hook). PNGs are not compared by nbval.

``make test`` runs the notebooks in the kernel that ``scripts/kernels.py`` writes (attnlib from its
wheel, the plainest CPU kernels) and names it in ``ATTNBOOK_KERNEL``; without it (``pytest
notebooks/...`` by hand) nbval uses this environment's Python as it is (``--nbval-current-env``).
"""


import os
from pathlib import Path

# The explorers' saved states (docs/book.md): the chapters' kernels, started by nbval from this
# process, check their explorers against them (attnlib.explorer.STATES_ENV).
os.environ.setdefault("ATTNBOOK_STATES", str(Path(__file__).resolve().parent / "book" / "explorers"))


def pytest_configure(config):
    kernel = os.environ.get("ATTNBOOK_KERNEL")
    if kernel and getattr(config.option, "nbval", False):
        config.option.nbval_current_env = False
        config.option.nbval_kernel_name = kernel


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("image/svg+xml", "stderr")


# The scopes that take minutes, longest first (docs/testing.md lists the slowest tests). `make test`
# runs pytest-xdist with --dist loadscope --no-loadscope-reorder: each module (or test class) goes
# whole to one worker, in the order collected, so these go out first and the run does not end
# waiting for one of them while the other workers sit idle.
LONG_SCOPES = (
    "tests/test_course.py",  # a small class through nbgrader's exchange
    "tests/test_lab.py::",  # each chapter group in its own JupyterLab (test classes)
    "tests/test_grading_sandbox.py",
    "notebooks/04_", "notebooks/06_", "notebooks/05_", "notebooks/09_", "notebooks/07_",
    "notebooks/08_",
    "tests/test_book_zh.py", "tests/test_book.py", "tests/test_quality.py",
)


def pytest_collection_modifyitems(config, items):
    def rank(item):
        return next((i for i, scope in enumerate(LONG_SCOPES) if item.nodeid.startswith(scope)),
                    len(LONG_SCOPES))

    items.sort(key=rank)  # stable: every other test keeps its place
