"""The book as a static website, checked in a real browser (headless Chromium, Playwright).

Builds build/book/ (``scripts/build_book.py``; skipped when its inputs are unchanged), serves it
on a free local port and opens every page: formulas must be typeset by the site's own MathJax,
every image must load, the console must stay free of errors, nothing may be fetched from another
host, and widgets must show a static snapshot instead of an empty box. A screenshot of each page is
saved under build/book-screenshots/.

Browser: ``$CHROME`` if set, else chromium / google-chrome on PATH (on Debian and Ubuntu
``make test`` installs the ``chromium`` package when run as root), driven by Playwright
(``bench.lab.find_chromium``; Playwright never downloads a browser here).
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.lab import NO_CHROMIUM, find_chromium, launch_chromium

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "book"
SHOTS = ROOT / "build" / "book-screenshots"
CHAPTERS = sorted(
    ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), key=lambda p: (int(p.name[:2]), p.name)
)
PAGES = [
    "intro",
    *[f"notebooks/{p.stem}" for p in CHAPTERS],
    "glossary",
    "references",
    "results/bench",
]

pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("build_book", ROOT / "scripts" / "build_book.py")
build_book = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_book)


# --------------------------------------------------------------------------- pure functions
def _nb(*cells, metadata=None):
    return {"cells": list(cells), "metadata": metadata or {}, "nbformat": 4, "nbformat_minor": 5}


def _md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def test_glossary_tables_are_parsed_merged_and_sorted(tmp_path):
    ch1 = _md(
        "# 1. One\n\n## Glossary\n\n| English | 中文 |\n|---|---|\n| query | 查询 |\n"
        "| Attention pooling | 注意力汇聚 |\n\n## After\n\n| not | glossary |\n|---|---|\n| x | y |"
    )
    ch2 = _md(
        "# 2. Two\n\n### Glossary (术语)\n\n| 中文 | English |\n|:--|:--|\n| 键 | key |\n"
        "| 查询 | Query |\n| 一 \\| 二 | a \\| b |"
    )
    assert build_book.glossary_rows(_nb(ch1)) == [
        ("query", "查询"),
        ("Attention pooling", "注意力汇聚"),
    ]
    assert build_book.glossary_rows(_nb(ch2)) == [
        ("key", "键"),
        ("Query", "查询"),
        ("a | b", "一 | 二"),
    ]
    page = build_book.glossary_page(
        [(tmp_path / "01_one.ipynb", _nb(ch1)), (tmp_path / "02_two.ipynb", _nb(ch2))]
    )
    rows = [line for line in page.splitlines() if line.startswith("| ") and "English" not in line]
    assert [r.split(" | ")[0] for r in rows] == [
        "| a \\| b",
        "| Attention pooling",
        "| key",
        "| query",
    ]
    # One row per term across chapters (case-insensitive), listing both chapters.
    assert "[1](notebooks/01_one.ipynb), [2](notebooks/02_two.ipynb)" in rows[-1]


def test_references_stop_at_the_next_heading():
    body = "* Paper A.\n\n```\n# not a heading\n```\n\n### Books\n\n* B."
    text = f"# T\n\n## References\n\n{body}\n\n## Glossary\n\n| a | b |\n"
    assert build_book.section(text, "references") == body


def test_bench_page_placeholder_then_results_with_their_method_notes(tmp_path):
    assert "`make bench`" in build_book.bench_page(tmp_path)
    assert build_book.bench_docs(tmp_path) == []
    (tmp_path / "results").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bench.md").write_text("# How we measure\n")
    bench = "# Benchmarks\n\nSee [method](../docs/bench.md), [gone](../docs/nope.md).\n\n## CPU\n"
    (tmp_path / "results" / "bench.md").write_text(bench)
    page = build_book.bench_page(tmp_path)
    assert page.startswith("# Benchmarks\n") and page.count("\n# ") == 0 and "\n## CPU" in page
    (tmp_path / "results" / "bench.md").write_text("## CPU\n\n```\n# code\n```\n")
    page = build_book.bench_page(tmp_path)
    assert page.startswith("# Benchmark results\n") and "\n### CPU" in page and "\n# code" in page
    (tmp_path / "results" / "bench.md").write_text(bench)
    assert build_book.bench_docs(tmp_path) == ["bench"]
    assert "sections:\n          - file: docs/bench" in build_book.toc([], ["bench"])


def test_widget_views_become_a_static_snapshot():
    def model(name, **state):
        return {"model_name": name, "state": state}

    png = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR"}}
    state = {
        "box": model("VBoxModel", children=["IPY_MODEL_drop", "IPY_MODEL_slide", "IPY_MODEL_out"]),
        "drop": model("DropdownModel", description="kernel", index=1, _options_labels=["a", "box"]),
        "slide": model("FloatSliderModel", description="width", value=0.25),
        "out": model("OutputModel", outputs=[png]),
        "bar": model("HBoxModel", children=["IPY_MODEL_l", "IPY_MODEL_p", "IPY_MODEL_r"]),
        "l": model("HTMLModel", value="epochs: 100%"),
        "p": model("FloatProgressModel", value=200.0, max=200.0),
        "r": model("HTMLModel", value=" 200/200 [00:03&lt;00:00]"),
    }

    def view(model_id):
        data = {build_book.WIDGET_VIEW: {"model_id": model_id}, "text/plain": "interactive(...)"}
        return {"output_type": "display_data", "metadata": {}, "data": data}

    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [view("box")]}
    cell["outputs"] += [view("gone"), view("bar")]
    meta = {"widgets": {build_book.WIDGET_STATE: {"state": state}}}
    nb = _nb(cell, metadata=meta)
    assert build_book.static_widgets(nb) == 3
    assert "widgets" not in nb["metadata"]
    note, image, orphan_note, bar = cell["outputs"]
    assert "Static snapshot" in note["data"]["text/html"]
    assert "kernel = box; width = 0.25" in note["data"]["text/html"]
    assert image == png
    assert "An interactive widget" in orphan_note["data"]["text/html"]
    assert bar["text"] == "epochs: 100% 200/200 [00:03<00:00]\n"


# --------------------------------------------------------------------------- the built site
@pytest.fixture(scope="module")
def site():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_book.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "from the network" not in done.stderr, done.stderr  # book/_ext/offline_book.py
    return SITE


def test_no_page_refers_to_remote_scripts_or_styles(site):
    remote = re.compile(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]+", re.I)
    for page in site.rglob("*.html"):
        assert not remote.findall(page.read_text(encoding="utf-8")), page
    assert (site / "_static" / "mathjax" / "tex-svg.js").is_file()


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    executable = find_chromium()
    if executable is None:
        pytest.fail(NO_CHROMIUM)
    with sync_playwright() as pw:
        chromium = launch_chromium(pw, executable)
        yield chromium
        chromium.close()


# Runs in the page once it has loaded: waits for MathJax and the images, then reports.
REPORT_JS = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  await Promise.all([...document.images].map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done);
    img.addEventListener('error', done);
  })));
  const main = document.querySelector('main') || document.body;
  const text = main.cloneNode(true);
  text.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
    .forEach(e => e.remove());
  const math = [...main.querySelectorAll('.math')];
  return JSON.stringify({
    math: math.length,
    untypeset: math.filter(e => !e.querySelector('mjx-container'))
      .map(e => e.textContent.slice(0, 80)),
    mjx: main.querySelectorAll('mjx-container').length,
    texErrors: [...main.querySelectorAll('mjx-merror')].map(e => e.getAttribute('data-mjx-error')),
    rawTex: ['$$', '\\(', '\\[', '\\begin{'].filter(s => text.textContent.includes(s)),
    images: document.images.length,
    brokenImages: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
      .map(i => i.src),
    widgetViews: document.querySelectorAll('script[type*="widget-view"], .jupyter-widgets').length
                 + (main.textContent.includes('interactive(children=') ? 1 : 0),
    snapshots: document.querySelectorAll('.widget-snapshot').length,
    height: Math.ceil(document.documentElement.scrollHeight),
  });
})()
"""


# Screenshots show a tall first screen (and the first widget snapshot): a full-page capture of a
# long chapter costs seconds of re-layout each.
VIEWPORT = {"width": 1280, "height": 2400}
SCROLL_TO_WIDGET_JS = """(() => { const e = document.querySelector('.widget-snapshot');
  if (!e) return false; window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 600);
  return true; })()"""


def open_page(browser, url: str) -> tuple[dict, list[str], list[str], dict[str, bytes]]:
    """Load ``url``; return (report, console errors, requests to other hosts, PNG screenshots)."""
    base = url.split("/")[0] + "//" + url.split("/")[2] if url.startswith("http") else "file://"
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    try:
        page = context.new_page()
        errors, remote = [], []
        page.on("console", lambda m: errors.append(f"{m.text} {m.location.get('url', '')}".strip())
                if m.type in ("error", "assert") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:", "about:"))
                else remote.append(r.url))
        page.goto(url, wait_until="load", timeout=60_000)
        report = json.loads(page.evaluate(REPORT_JS))
        shots = {"": page.screenshot()}
        if page.evaluate(SCROLL_TO_WIDGET_JS):
            shots["__widget"] = page.screenshot()
        return report, errors, remote, shots
    finally:
        context.close()


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline_in_chromium(page, server, browser):
    report, errors, remote, shots = open_page(browser, f"{server}/{page}.html")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for suffix, png in shots.items():
        (SHOTS / f"{page.replace('/', '__')}{suffix}.png").write_bytes(png)
    assert not errors, f"console errors on {page}: {errors}"
    assert not remote, f"{page} fetched from other hosts: {remote}"
    assert not report["untypeset"] and not report["rawTex"], f"raw TeX left on {page}: {report}"
    assert report["mjx"] >= report["math"], report
    assert not report["texErrors"], f"TeX errors on {page}: {report['texErrors']}"
    assert not report["brokenImages"], (
        f"images that did not load on {page}: {report['brokenImages']}"
    )
    assert report["widgetViews"] == 0, f"live widget views (empty boxes) left on {page}"
    if page.startswith("notebooks/"):
        nb = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))
        has_math = "$" in build_book.markdown_text(nb)
        has_widget = any(
            build_book.WIDGET_VIEW in o.get("data", {})
            for c in nb["cells"]
            for o in c.get("outputs", [])
        )
        has_image = any(
            "image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])
        )
        assert not has_math or report["mjx"] > 0, f"{page} has formulas but none were typeset"
        assert not has_widget or report["snapshots"] > 0, f"{page} lost its widget snapshot"
        assert not has_image or report["images"] > 0, f"{page} lost its figures"


def test_a_chapter_renders_from_disk(site, browser):
    page = f"notebooks/{CHAPTERS[0].stem}" if CHAPTERS else "intro"
    report, errors, remote, _ = open_page(browser, (site / f"{page}.html").as_uri())
    assert not errors and not remote, (errors, remote)
    assert not report["untypeset"] and not report["brokenImages"], report


def test_the_browser_check_catches_a_broken_page(tmp_path, browser):
    page = tmp_path / "broken.html"
    page.write_text(
        '<html><body><main><p><span class="math">\\(x^2\\)</span> and $$y$$</p>'
        '<img src="missing.png"><script>console.error("boom")</script>'
        '<script src="http://cdn.invalid/mathjax.js"></script></main></body></html>'
    )
    report, errors, remote, _ = open_page(browser, page.as_uri())
    assert any("boom" in e for e in errors)
    assert remote == ["http://cdn.invalid/mathjax.js"]
    assert report["untypeset"] == ["\\(x^2\\)"] and report["rawTex"] == ["$$", "\\("]
    assert len(report["brokenImages"]) == 1 and report["mjx"] == 0
