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
