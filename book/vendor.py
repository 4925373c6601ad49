"""The two JavaScript packages the site needs, from the npm registry: pinned, hash-checked, fetched
once into ``<sys.prefix>/share/`` (the only time the book's build uses the network).

* MathJax 3 typesets the formulas; the site serves its SVG build (no web fonts, which browsers
  block from ``file://``), and Sphinx's ``mathjax_path`` points at it.
* axe-core is the accessibility rules engine tests/test_book.py runs in every page. It is not
  part of the site: the test injects the cached copy into each page.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

MATHJAX_VERSION = "3.2.2"
MATHJAX_INTEGRITY = (  # the "dist.integrity" of https://registry.npmjs.org/mathjax/3.2.2
    "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/"
    "O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
)
MATHJAX_CACHE = Path(sys.prefix) / "share" / f"mathjax-{MATHJAX_VERSION}"
# The parts of es5/ the SVG build can load: the bundle itself and what it loads on demand
# (TeX extensions via autoload, the menu, accessibility and speech). CHTML fonts are left out.
MATHJAX_KEEP = ("tex-svg.js", "input/", "output/svg", "ui/", "a11y/", "sre/", "adaptors/")

AXE_VERSION = "4.11.4"
AXE_INTEGRITY = (  # the "dist.integrity" of https://registry.npmjs.org/axe-core/4.11.4
    "sha512-KunSNx+TVpkAw/6ULfhnx+HWRecjqZGTOyquAoWHYLRSdK1tB5Ihce1ZW+UY3fj33bYAFWPu7W/"
    "GRSmmrCGuxA=="
)
AXE_CACHE = Path(sys.prefix) / "share" / f"axe-core-{AXE_VERSION}"


def fetch_npm(name: str, version: str, integrity: str, cache: Path, keep) -> Path:
    """Download the npm registry tarball of ``name@version`` once, check its integrity hash and
    unpack into ``cache`` the files whose path inside ``package/`` satisfies ``keep(path)``
    (``package/`` itself is dropped). Returns ``cache``; later calls do not touch the network."""
    done = cache / ".complete"
    if done.exists() and done.read_text() == integrity + "\n":
        return cache
    url = f"https://registry.npmjs.org/{name}/-/{name}-{version}.tgz"
    print(f"fetching {name} {version} from {url}", flush=True)
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as err:
        sys.exit(
            f"error: could not download {name} ({err}). The book needs it once; run "
            f"`make book-deps` with network access, after which builds and tests work offline."
        )
    algo, expected = integrity.split("-", 1)
    got = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if got != expected:
        sys.exit(f"error: {name} tarball integrity mismatch: {algo}-{got} != {integrity}")
    tmp = cache.with_name(cache.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            target = keep(rel) if member.isfile() else None
            if target:
                (tmp / target).parent.mkdir(parents=True, exist_ok=True)
                (tmp / target).write_bytes(tar.extractfile(member).read())
    shutil.rmtree(cache, ignore_errors=True)
    tmp.rename(cache)
    done.write_text(integrity + "\n")
    return cache


def fetch_mathjax() -> Path:
    """The pinned MathJax's es5 build (the parts the site loads), cached; returns its folder."""

    def keep(rel: str) -> str | None:
        if rel == "LICENSE":
            return rel
        if rel.startswith("es5/") and rel[4:].startswith(MATHJAX_KEEP):
            return rel.removeprefix("es5/")
        return None

    return fetch_npm("mathjax", MATHJAX_VERSION, MATHJAX_INTEGRITY, MATHJAX_CACHE, keep)


def fetch_axe() -> Path:
    """The pinned axe-core (``axe.min.js`` and its licence), cached; returns the script's path."""
    cache = fetch_npm(
        "axe-core",
        AXE_VERSION,
        AXE_INTEGRITY,
        AXE_CACHE,
        lambda rel: rel if rel in ("axe.min.js", "LICENSE") else None,
    )
    return cache / "axe.min.js"
