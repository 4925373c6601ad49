"""nbval settings for the whole repository.

SVG output embeds dates and random ids and stderr carries library warnings, so
neither is compared (nbval's documented hook). PNGs are not compared by nbval.
"""


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("image/svg+xml", "stderr")
