"""nbval settings for the whole repository.

SVG output embeds dates and random ids and stderr carries library warnings, so
neither is compared (nbval's documented hook). PNGs are not compared by nbval.
"""


import os
from pathlib import Path

# The explorers' saved states (docs/book.md): the chapters' kernels, started by nbval from this
# process, check their explorers against them (attnlib.explorer.STATES_ENV).
os.environ.setdefault("ATTNBOOK_STATES", str(Path(__file__).resolve().parent / "book" / "explorers"))


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("image/svg+xml", "stderr")
