"""The book as a static website, checked in a real browser (headless Chromium, Playwright).

Builds build/book/ (``python -m book.build``; skipped when its inputs are unchanged), serves it
on a free local port and opens every page: formulas must be typeset by the site's own MathJax,
every image must load, the console must stay free of errors, nothing may be fetched from another
host, and widgets must show a static snapshot instead of an empty box. A screenshot of each page is
saved under build/book-screenshots/.

Accessibility (issue 32): axe-core (pinned, fetched once by ``make book-deps`` into .venv, injected
into each page from there) must find no violation of the WCAG 2.0/2.1 A and AA rules on any page;
every formula keeps MathJax's assistive MathML; every image has a text alternative that is not a
file name, and every figure of a chapter has a caption (both written in the chapters' cell
metadata, see docs/book.md).

Browser: ``$CHROME`` if set, else chromium / google-chrome on PATH (on Debian and Ubuntu
``make test`` installs the ``chromium`` package when run as root), driven by Playwright
(``bench.lab.find_chromium``; Playwright never downloads a browser here).
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from bench.lab import NO_CHROMIUM, find_chromium, launch_chromium
from book import BOOK, build, chapters, figures, pages, vendor, widgets

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "book"
SHOTS = ROOT / "build" / "book-screenshots"
CHAPTERS = sorted(
    ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"), key=lambda p: (int(p.name[:2]), p.name)
)

pytestmark = pytest.mark.slow

PAGES = [
    "intro",
    *[f"notebooks/{p.stem}" for p in CHAPTERS],
    "glossary",
    "references",
    "results/bench",
    *[f"docs/{name}" for name in pages.bench_docs()],
    "genindex",
    "search",
]
# The rule sets axe-core checks: WCAG 2.0 and 2.1, levels A and AA.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


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
    assert chapters.glossary_rows(_nb(ch1)) == [
        ("query", "查询"),
        ("Attention pooling", "注意力汇聚"),
    ]
    assert chapters.glossary_rows(_nb(ch2)) == [
        ("key", "键"),
        ("Query", "查询"),
        ("a | b", "一 | 二"),
    ]
    page = pages.glossary_page(
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
    assert chapters.section(text, "references") == body


def test_bench_page_placeholder_then_results_with_their_method_notes(tmp_path):
    assert "`make bench`" in pages.bench_page(tmp_path)
    assert pages.bench_docs(tmp_path) == []
    (tmp_path / "results").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "bench.md").write_text("# How we measure\n")
    bench = "# Benchmarks\n\nSee [method](../docs/bench.md), [gone](../docs/nope.md).\n\n## CPU\n"
    (tmp_path / "results" / "bench.md").write_text(bench)
    page = pages.bench_page(tmp_path)
    assert page.startswith("# Benchmarks\n") and page.count("\n# ") == 0 and "\n## CPU" in page
    (tmp_path / "results" / "bench.md").write_text("## CPU\n\n```\n# code\n```\n")
    page = pages.bench_page(tmp_path)
    assert page.startswith("# Benchmark results\n") and "\n### CPU" in page and "\n# code" in page
    (tmp_path / "results" / "bench.md").write_text(bench)
    assert pages.bench_docs(tmp_path) == ["bench"]
    assert "sections:\n          - file: docs/bench" in pages.toc([], ["bench"])


def test_toc_in_the_sites_language_marks_the_pages_left_in_english():
    import yaml

    books = [(Path("01_one.ipynb"), {})]
    english = yaml.safe_load(pages.toc(books, ["bench"]))
    assert [part["caption"] for part in english["parts"]] == ["Chapters", "Reference"]
    assert all("title" not in entry for part in english["parts"] for entry in part["chapters"])
    titles = {"results/bench": 'Benchmarks: "attnlib"（英文）', "docs/bench": "方法：make bench（英文）"}
    captions = {"Chapters": "章节", "Reference": "参考资料"}
    chinese = yaml.safe_load(pages.toc(books, ["bench"], captions, titles))
    assert [part["caption"] for part in chinese["parts"]] == ["章节", "参考资料"]
    bench = chinese["parts"][1]["chapters"][2]
    assert bench["file"] == "results/bench" and bench["title"] == titles["results/bench"]
    assert bench["sections"] == [{"file": "docs/bench", "title": titles["docs/bench"]}]
    assert pages.page_title("# Benchmarks (`make bench`)\n\ntext", "x") == "Benchmarks (make bench)"


def test_theme_words_written_without_gettext_are_translated_in_their_attributes_only():
    from book._ext.chinese_interface import translate_hardcoded

    words = {"Toggle primary sidebar": "显示或隐藏章节导航", "Main": "章节导航"}
    page = ('<button title="Toggle primary sidebar" aria-label="Toggle primary sidebar">Main</button>'
            '<nav aria-label="Main"><a title="Main street">Main</a></nav>')
    assert translate_hardcoded(page, lambda w: words.get(w, w)) == (
        '<button title="显示或隐藏章节导航" aria-label="显示或隐藏章节导航">Main</button>'
        '<nav aria-label="章节导航"><a title="Main street">Main</a></nav>'
    )


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
        data = {widgets.WIDGET_VIEW: {"model_id": model_id}, "text/plain": "interactive(...)"}
        return {"output_type": "display_data", "metadata": {}, "data": data}

    cell = {"cell_type": "code", "metadata": {}, "source": "", "outputs": [view("box")]}
    cell["outputs"] += [view("gone"), view("bar")]
    meta = {"widgets": {widgets.WIDGET_STATE: {"state": state}}}
    nb = _nb(cell, metadata=meta)
    assert widgets.static_widgets(nb) == 3
    assert "widgets" not in nb["metadata"]
    note, image, orphan_note, bar = cell["outputs"]
    assert "Static snapshot" in note["data"]["text/html"]
    assert "kernel = box; width = 0.25" in note["data"]["text/html"]
    assert image == png
    assert "An interactive widget" in orphan_note["data"]["text/html"]
    assert bar["text"] == "epochs: 100% 200/200 [00:03<00:00]\n"
    # The Chinese site's note, from the interface catalogue's translation of the English one.
    cell["outputs"] = [view("box")]
    nb = _nb(cell, metadata={"widgets": {widgets.WIDGET_STATE: {"state": state}}})
    zh = {widgets.SNAPSHOT_AT: "<em>交互控件的静态快照</em>（{settings}）。"}
    widgets.static_widgets(nb, lambda english: zh.get(english, english))
    assert cell["outputs"][0]["data"]["text/html"] == (
        '<p class="widget-snapshot"><em>交互控件的静态快照</em>（kernel = box; width = 0.25）。</p>')


def _soup(html_file: Path):
    from bs4 import BeautifulSoup

    return BeautifulSoup(html_file.read_text(encoding="utf-8"), "html.parser")


PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def test_cell_metadata_gives_figures_alt_text_and_captions_widget_snapshots_too(tmp_path):
    """A real (small) build: a plotting cell and a widget cell, each with a caption and alt text in
    its metadata, become <figure>s with <img alt> and <figcaption>; the cell's other outputs (a
    table, the widget snapshot's note) stay outside the figure. A caption written all in Chinese
    is numbered like the others, its Chinese marked as Chinese (the Chinese site's figures lost
    their numbers when the mark was raw HTML, which Sphinx does not count as a caption's text)."""

    def image():
        data = {"image/png": PNG_1PX, "text/plain": "<Figure size 100x100 with 1 Axes>"}
        return {"output_type": "display_data", "metadata": {}, "data": data}

    def texts(n):
        alt = f"Alt text {n}: a heatmap whose diagonal is bright, so each query attends to itself."
        return {"mystnb": {"figure": {"caption": f"Caption {n}, with $x^2$."}, "image": {"alt": alt}}}

    table = {"output_type": "display_data", "metadata": {},
             "data": {"text/html": "<table><tr><td>a table</td></tr></table>", "text/plain": "t"}}
    stream = {"output_type": "stream", "name": "stdout", "text": "printed\n"}
    plot = {"cell_type": "code", "metadata": texts(1), "source": "plot()", "execution_count": 1,
            "outputs": [stream, image(), table]}
    view = {widgets.WIDGET_VIEW: {"model_id": "box"}, "text/plain": "interactive(...)"}
    widget = {"cell_type": "code", "metadata": texts(2), "source": "ui", "execution_count": 2,
              "outputs": [{"output_type": "display_data", "metadata": {}, "data": view}]}
    state = {
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_s", "IPY_MODEL_o"]}},
        "s": {"model_name": "FloatSliderModel", "state": {"description": "width", "value": 0.5}},
        "o": {"model_name": "OutputModel", "state": {"outputs": [image()]}},
    }
    meta = {"widgets": {widgets.WIDGET_STATE: {"state": state}},
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    chinese = {"mystnb": {"figure": {"caption": "注意力权重的热图：每个查询都最关注它自己。"},
                          "image": {"alt": "热图：六个查询（行）对六个键（列）的注意力权重，对角线最亮，"
                                           "说明每个词元都最关注它自己。"}}}
    plot_zh = {"cell_type": "code", "metadata": chinese, "source": "plot()", "execution_count": 3,
               "outputs": [image()]}
    nb = _nb(_md("# 1. Fixture"), plot, widget, plot_zh, metadata=meta)
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"cell-{i}"
    assert figures.notebook_figure_problems(nb) == []
    src = tmp_path / "src"
    for name in ("_config.yml", "intro.md", "favicon.svg"):
        build._write(src / name, (BOOK / name).read_bytes())
    for f in (BOOK / "_ext").glob("*.py"):
        build._write(src / "_ext" / f.name, f.read_bytes())
    widgets.static_widgets(nb)
    build._write(src / "notebooks" / "01_fixture.ipynb", json.dumps(nb))
    build._write(src / "_toc.yml", pages.toc([(Path("01_fixture.ipynb"), nb)]))
    build.sphinx_build(src, tmp_path / "html", tmp_path / "doctrees", fresh=True)

    soup = _soup(tmp_path / "html" / "notebooks" / "01_fixture.html")
    figure_tags = soup.select("figure")
    alts = [texts(n)["mystnb"]["image"]["alt"] for n in (1, 2)] + [chinese["mystnb"]["image"]["alt"]]
    assert [f.img["alt"] for f in figure_tags] == alts
    captions = [f.figcaption.get_text(" ", strip=True) for f in figure_tags]
    assert captions[0].startswith("Fig. 1 Caption 1, with") and "Caption 2" in captions[1], captions
    assert captions[2].startswith("Fig. 3 注意力权重的热图"), captions
    assert figure_tags[2].figcaption.select_one('span[lang="zh-Hans"]'), "Chinese not marked"
    assert figure_tags[0].select_one(".math"), "the caption's formula is typeset like the prose's"
    assert soup.find(string="a table").find_parent("figure") is None
    assert soup.select_one(".widget-snapshot").find_parent("figure") is None


# --------------------------------------------------------------------------- the built site
@pytest.fixture(scope="module")
def site():
    done = subprocess.run(
        [sys.executable, "-m", "book.build"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "from the network" not in done.stderr, done.stderr  # book/_ext/offline_book.py
    return SITE


@functools.cache
def build_sites() -> str:
    """Both editions built (``book.build``, ``book.i18n generate``, ``book.build --lang zh``; a
    build whose inputs are unchanged is skipped), once per test process for the modules that need
    both (tests/test_book_zh.py, tests/test_live.py); returns what the Chinese build printed."""
    for command in (["book.build"], ["book.i18n", "generate"], ["book.build", "--lang", "zh"]):
        done = subprocess.run([sys.executable, "-m", *command], cwd=ROOT, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "from the network" not in done.stderr, done.stderr  # book/_ext/offline_book.py
    return done.stdout


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


@pytest.fixture(scope="module")
def axe():
    """The pinned axe-core that `make book-deps` cached; never fetched here."""
    path = vendor.AXE_CACHE / "axe.min.js"
    if not (vendor.AXE_CACHE / ".complete").exists() or not path.is_file():
        pytest.fail(
            f"axe-core {vendor.AXE_VERSION} is not in {vendor.AXE_CACHE}: run "
            "`make book-deps` once (it fetches it from the npm registry and checks its hash)"
        )
    return path


# Runs in the page once it has loaded: waits for MathJax and the images, then reports.
REPORT_JS = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const where = (e) => (e.closest('p, li, div.math, figcaption, td') || e).textContent.trim().slice(0, 60);
  // Every formula's MathML, what a screen reader reads, is there before the formula is drawn.
  const emptyMathML = [...document.querySelectorAll('mjx-container')]
    .filter(c => !(c.querySelector('mjx-assistive-mml math') || {}).childElementCount).map(where);
  // MathJax draws a formula when it scrolls into view (book/_js/formulas.js), and all of them when
  // the reader prints: at once, before the browser lays the page out for print.
  window.dispatchEvent(new Event('beforeprint'));
  const undrawnAtPrint = [...document.querySelectorAll('.math')]
    .filter(e => !e.querySelector('mjx-container svg')).map(where);
  // A lazy image (an explorer's head thumbnails) loads only near the viewport: load them all now,
  // or the wait below never ends.
  document.querySelectorAll('img[loading="lazy"]').forEach(img => { img.loading = 'eager'; });
  await Promise.all([...document.images].map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done);
    img.addEventListener('error', done);
    setTimeout(done, 30000);  // never wait forever: an image still loading is reported as broken
  })));
  const main = document.querySelector('main') || document.body;
  const text = main.cloneNode(true);
  text.querySelectorAll('pre, code, script, style, mjx-container, .highlight')
    .forEach(e => e.remove());
  const math = [...main.querySelectorAll('.math')];
  return JSON.stringify({
    math: math.length,
    untypeset: math.filter(e => !e.querySelector('mjx-container svg'))
      .map(e => e.textContent.slice(0, 80)),
    emptyMathML, undrawnAtPrint,
    mjx: main.querySelectorAll('mjx-container').length,
    // MathJax's assistive MathML: what a screen reader reads instead of the SVG drawing.
    mjxAll: document.querySelectorAll('mjx-container').length,
    mjxAssistive: [...document.querySelectorAll('mjx-container')]
      .filter(c => c.querySelector('mjx-assistive-mml math')).length,
    texErrors: [...main.querySelectorAll('mjx-container svg [data-mjx-error]')]
      .map(e => e.getAttribute('data-mjx-error')),
    // Delimiters, and TeX commands outside any formula (a `$...$` that Markdown broke apart).
    rawTex: ['$$', '\\(', '\\[', '\\begin{'].filter(s => text.textContent.includes(s))
      .concat((text.textContent.match(/\\[a-zA-Z]{2,}/g) || []).slice(0, 3)),
    images: document.images.length,
    brokenImages: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
      .map(i => i.src),
    widgetViews: document.querySelectorAll('script[type*="widget-view"], .jupyter-widgets').length
                 + (main.textContent.includes('interactive(children=') ? 1 : 0),
    snapshots: document.querySelectorAll('.widget-snapshot, .explorer').length,
    height: Math.ceil(document.documentElement.scrollHeight),
    mode: document.documentElement.dataset.mode || '',
  });
})()
"""


# Screenshots show a tall first screen (and the first widget snapshot): a full-page capture of a
# long chapter costs seconds of re-layout each.
VIEWPORT = {"width": 1280, "height": 2400}
PHONE = {"width": 390, "height": 844}  # a phone held upright (CSS pixels)
REFLOW_WIDTH = 320  # CSS pixels: WCAG 2.1's reflow width, where nothing may scroll sideways
SCROLL_TO_WIDGET_JS = """(() => { const e = document.querySelector('.widget-snapshot');
  if (!e) return false; window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY - 600);
  return true; })()"""
# Formulas (display and inline) of the page's text cut off at a box's edge: walking up from each
# formula's drawing, every box that does not show its overflow must hold the drawing, or scroll
# (then what it shows must be held further up); the last must fit in the window. Returns the cut
# formulas' text. (The sidebars' copies of a heading's formula are navigation, hidden in a drawer
# on a narrow screen: while the drawer slides away they would count as cut.)
CUT_FORMULAS_JS = r"""() => [...(document.querySelector('article.bd-article') || document.body)
    .querySelectorAll('mjx-container')].flatMap(c => {
  const svg = c.querySelector('svg');
  if (!svg) return [];
  let shown = svg.getBoundingClientRect();
  const name = () => (c.closest('p, li, div.math, figcaption, td') || c).textContent.trim().slice(0, 60);
  for (let e = svg.parentElement; e && e !== document.documentElement; e = e.parentElement) {
    const overflow = getComputedStyle(e).overflowX;
    if (overflow === 'visible') continue;
    const box = e.getBoundingClientRect();
    if (shown.left >= box.left - 1 && shown.right <= box.right + 1) continue;
    if (overflow !== 'auto' && overflow !== 'scroll') return [name()];
    shown = box;  // the rest is reachable by scrolling this box
  }
  return shown.right <= document.documentElement.clientWidth + 1 ? [] : [name()];
})"""
# Formulas of the page's text wider than their box without the mark (book/_js/formulas.js) that
# shows a shadow at the edge hiding more of them.
UNMARKED_FORMULAS_JS = r"""() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() =>
  done([...(document.querySelector('article.bd-article') || document.body)
    .querySelectorAll('div.math mjx-container, span.math')]
    .filter(box => box.querySelector('svg') && !box.classList.contains('formula-scrolls')
      && box.querySelector('svg').getBoundingClientRect().width > box.clientWidth + 1)
    .map(box => (box.closest('p, li, div.math, figcaption, td') || box).textContent.trim()
      .slice(0, 60))))))"""


def axe_js(context: str = "document") -> str:
    """A script that runs axe-core (injected from the local copy), the WCAG 2.0/2.1 A and AA rules,
    on ``context`` (a JavaScript expression: the document, or an element and all it holds, whose
    colours axe still reads against the page around it) and returns the violations."""
    return f"""async (tags) => (await axe.run({context}, {{
  runOnly: {{type: 'tag', values: tags}}, resultTypes: ['violations'],
}})).violations.map(v => ({{id: v.id, impact: v.impact, help: v.help,
  nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.html.slice(0, 120))}}))"""


AXE_JS = axe_js()  # the whole page


def open_page(
    browser, url: str, axe: Path | None = None, mode: str = "light", scripts: dict | None = None,
    layout: bool = True, axe_context: str = "document",
) -> tuple[dict, list[str], list[str], dict[str, bytes]]:
    """Load ``url``; return (report, console errors, requests to other hosts, PNG screenshots).
    With ``axe`` (the path of axe.min.js) the report's "axe" lists axe-core's violations.
    ``mode`` is the theme's colour mode ("light" or "dark", the reader's choice on the site).
    ``scripts`` ({name: JavaScript}) run in the page once it has loaded and MathJax is done,
    before axe; the report holds each one's result under its name (so that another check of the
    same page needs no second load). ``layout=False`` leaves out what does not change with the
    colour mode or the address (checked on the light page over http): the screenshots and the
    report's reflowWidth, cutFormulas and unmarkedFormulas. ``axe_context`` is what axe checks
    (axe_js's context; the whole page unless a caller proves the rest is checked elsewhere)."""
    base = url.split("/")[0] + "//" + url.split("/")[2] if url.startswith("http") else "file://"
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    try:
        page = context.new_page()
        page.add_init_script(f"localStorage.setItem('mode', '{mode}')")  # the theme reads it
        errors, remote = [], []
        page.on("console", lambda m: errors.append(f"{m.text} {m.location.get('url', '')}".strip())
                if m.type in ("error", "assert") else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:", "about:"))
                else remote.append(r.url))
        page.goto(url, wait_until="load", timeout=60_000)
        report = json.loads(page.evaluate(REPORT_JS))
        for name, script in (scripts or {}).items():
            report[name] = page.evaluate(script)
        page_errors = errors
        if axe is not None:
            # axe re-fetches the stylesheets to read their rules and resolves the theme's
            # `@import "../basic.css"` against the page rather than the stylesheet: that 404 is
            # axe's, not the site's, so the page's console is read before axe runs.
            page_errors = list(errors)
            # The theme eases colours in over 0.15 s (CSS transitions): axe must read the colours
            # the page settles on, not a frame of the fade, which a busy machine can stretch out.
            # Every section laid out (_css/render.css lays out only those near the screen), so
            # that axe and the reflow check below see the whole page as a reader scrolling does.
            page.add_style_tag(content="*, *::before, *::after { transition: none !important; "
                                       "animation: none !important; content-visibility: visible "
                                       "!important; }")
            page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
            page.add_script_tag(path=str(axe))
            report["axe"] = page.evaluate(axe_js(axe_context), AXE_TAGS)
        if not layout:
            return report, page_errors, remote, {}
        shots = {"": page.screenshot()}
        if page.evaluate(SCROLL_TO_WIDGET_JS):
            shots["__widget"] = page.screenshot()
        # Reflow (WCAG 1.4.10): how wide the page is on a 320 px screen (or at 400 % zoom), every
        # section laid out (a section off screen is not, and would clip what is too wide).
        page.add_style_tag(content="* { content-visibility: visible !important; }")
        page.set_viewport_size({"width": REFLOW_WIDTH, "height": 800})
        report["reflowWidth"] = page.evaluate(
            "new Promise(r => requestAnimationFrame(() => r(document.documentElement.scrollWidth)))"
        )
        report["cutFormulas"] = page.evaluate(CUT_FORMULAS_JS)
        report["unmarkedFormulas"] = page.evaluate(UNMARKED_FORMULAS_JS)
        return report, page_errors, remote, shots
    finally:
        context.close()


def _axe_summary(violations: list[dict]) -> str:
    return "\n".join(
        f"  {v['id']} ({v['impact']}): {v['help']}\n" + "\n".join(f"    {n}" for n in v["nodes"][:5])
        for v in violations
    )


def assert_page_works(page, report, errors, remote):
    """What every page of both editions must show in the browser (``open_page``'s report)."""
    assert not errors, f"console errors on {page}: {errors}"
    assert not remote, f"{page} fetched from other hosts: {remote}"
    assert not report["untypeset"] and not report["rawTex"], f"raw TeX left on {page}: {report}"
    assert report["mjx"] >= report["math"], report
    assert not report["texErrors"], f"TeX errors on {page}: {report['texErrors']}"
    assert not report["emptyMathML"], (
        f"{page}: formulas without MathML for a screen reader until drawn: {report['emptyMathML'][:5]}"
    )
    assert not report["undrawnAtPrint"], (
        f"{page}: formulas not drawn at once for printing: {report['undrawnAtPrint'][:5]}"
    )
    assert not report["brokenImages"], (
        f"images that did not load on {page}: {report['brokenImages']}"
    )
    assert report["widgetViews"] == 0, f"live widget views (empty boxes) left on {page}"
    assert report["reflowWidth"] <= REFLOW_WIDTH, (
        f"{page} is {report['reflowWidth']} px wide on a {REFLOW_WIDTH} px screen: it scrolls "
        "sideways (WCAG 1.4.10)"
    )
    assert not report["cutFormulas"], (
        f"{page}: formulas cut off at a box's edge on a {REFLOW_WIDTH} px screen (they must scroll "
        f"in their own box, book/_css/accessible.css): {report['cutFormulas'][:5]}"
    )
    assert not report["unmarkedFormulas"], (
        f"{page}: formulas that scroll on a {REFLOW_WIDTH} px screen without the shadow that says so "
        f"(book/_js/formulas.js): {report['unmarkedFormulas'][:5]}"
    )
    assert not report["axe"], f"axe-core found WCAG A/AA violations on {page}:\n" + _axe_summary(
        report["axe"]
    )


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_offline_in_chromium(page, server, browser, axe):
    report, errors, remote, shots = open_page(browser, f"{server}/{page}.html", axe)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for suffix, png in shots.items():
        (SHOTS / f"{page.replace('/', '__')}{suffix}.png").write_bytes(png)
    assert_page_works(page, report, errors, remote)
    assert report["mjxAssistive"] == report["mjxAll"], (
        f"{page}: only {report['mjxAssistive']} of {report['mjxAll']} formulas carry assistive "
        "MathML for screen readers"
    )
    if page.startswith("notebooks/"):
        nb = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))
        has_math = "$" in chapters.markdown_text(nb)
        has_widget = any(
            widgets.WIDGET_VIEW in o.get("data", {})
            for c in nb["cells"]
            for o in c.get("outputs", [])
        )
        has_image = any(
            "image/png" in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", [])
        )
        assert not has_math or report["mjx"] > 0, f"{page} has formulas but none were typeset"
        assert not has_widget or report["snapshots"] > 0, f"{page} lost its widget snapshot"
        assert not has_image or report["images"] > 0, f"{page} lost its figures"


@pytest.mark.parametrize("page", PAGES)
def test_images_have_text_alternatives_and_chapter_figures_captions(page, site):
    """Every <img> says what it shows (not its file name, Sphinx's default alt); every image a
    chapter's cell shows (a widget snapshot's too) is a <figure> with a <figcaption>."""
    problems = []
    for img in _soup(site / f"{page}.html").find_all("img"):
        why = figures.text_problem(img.get("alt"), 1)
        if why:
            problems.append(f"<img src={img.get('src')!r}>: its alt text {why}")
        if img.find_parent(class_="cell_output") is not None:
            figure = img.find_parent("figure")
            caption = figure.find("figcaption") if figure else None
            if caption is None or not caption.get_text(strip=True):
                problems.append(f"<img src={img.get('src')!r}>: no caption (<figcaption>)")
    assert not problems, (
        f"{page}: {len(problems)} image problems (write each figure's caption and alt text in "
        "its cell's metadata, see docs/book.md):\n" + "\n".join(problems)
    )


@pytest.mark.parametrize("page", PAGES)
def test_chinese_text_is_marked_as_chinese(page, site):
    """The glossaries' Chinese sits in elements with lang="zh-Hans", so a screen reader switches
    to Chinese for it (WCAG 3.1.2); code and program output are left as they are."""
    soup = _soup(site / f"{page}.html")
    unmarked = [
        str(text).strip()
        for text in soup.find_all(string=re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]"))
        if not text.find_parent(["script", "style", "pre", "code", "title"])
        and not text.find_parent(lang=re.compile(r"^zh"))
    ]
    assert not unmarked, f"{page}: Chinese without lang: {unmarked[:10]}"


def test_dark_mode_has_no_axe_violations(server, browser, axe):
    """The theme's dark mode (one click away on every page) has its own colours: axe (every WCAG
    A/AA rule, contrast above all) on the last chapter and the glossary in dark mode. What the
    colour mode does not change (screenshots, reflow) is left to the light pages' test."""
    for page in [p for p in PAGES if p.startswith("notebooks/")][-1:] + ["glossary"]:
        report, *_ = open_page(browser, f"{server}/{page}.html", axe, mode="dark", layout=False)
        assert report["mode"] == "dark", report["mode"]
        assert not report["axe"], f"axe-core found violations on {page} in dark mode:\n" + (
            _axe_summary(report["axe"])
        )


def test_a_chapter_renders_from_disk(site, browser):
    """Opened from file:// (a reader's downloaded copy): no console error, nothing from another
    host, every formula typeset and every image loaded."""
    page = f"notebooks/{CHAPTERS[0].stem}" if CHAPTERS else "intro"
    report, errors, remote, _ = open_page(browser, (site / f"{page}.html").as_uri(), layout=False)
    assert not errors and not remote, (errors, remote)
    assert not report["untypeset"] and not report["brokenImages"], report


def test_formulas_are_drawn_as_they_scroll_into_view(server, browser):
    """MathJax draws a long chapter's formulas lazily (book/_js/formulas.js): on a phone-wide
    screen the last display formula is not drawn when the page opens, but its MathML (for screen
    readers) is there; scrolled into view, it is drawn and, wider than the screen, marked as one
    that scrolls."""
    chapter = [p for p in PAGES if p.startswith("notebooks/")][-1]
    context = browser.new_context(viewport={"width": REFLOW_WIDTH, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{server}/{chapter}.html", wait_until="load", timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        last = page.locator("article.bd-article div.math mjx-container").last
        assert last.evaluate("c => c.querySelector('mjx-assistive-mml math').childElementCount") > 0
        assert last.locator("svg").count() == 0, "the page's last formula was drawn before it was seen"
        last.scroll_into_view_if_needed()
        last.locator("svg").first.wait_for(state="attached", timeout=10_000)
        page.wait_for_function("""(c) => c.querySelector('svg').getBoundingClientRect().width
            > c.clientWidth + 1 && c.classList.contains('formula-scrolls')""",
                               arg=last.element_handle(), timeout=10_000)
    finally:
        context.close()


# What a chapter page does before it is interactive, and what it leaves for later (docs/book.md,
# "Speed"), read in the page once it has loaded.
SPEED_JS = r"""() => {
  const article = document.querySelector('article.bd-article');
  const boxes = [...article.querySelectorAll('section > section, section > div.cell')];
  const below = boxes.filter(b => b.getBoundingClientRect().top > 3 * innerHeight);
  // A box skipped is drawn as an empty box of its estimated size: what it holds is not laid out.
  const laidOut = (b) => b.firstElementChild.checkVisibility({contentVisibilityAuto: true});
  const figures = [...article.querySelectorAll('img')].filter(img =>
    !img.src.startsWith('data:') && !img.closest('.cell')?.querySelector('.explorer'));
  const fetched = new Set(performance.getEntriesByType('resource').map(r => r.name));
  return {
    boxes: boxes.length,
    notSkippable: boxes.filter(b => getComputedStyle(b).contentVisibility !== 'auto').length,
    below: below.length,
    laidOutBelow: below.filter(laidOut).length,
    firstShown: boxes.length > 0 && laidOut(boxes[0]),
    figures: figures.length,
    eagerFigures: figures.filter(img => img.loading !== 'lazy').map(img => img.src),
    figuresBelowFetched: figures.filter(img => img.getBoundingClientRect().top > 4 * innerHeight
                                        && fetched.has(img.src)).map(img => img.src),
    drawnBelow: [...article.querySelectorAll('div.math')].filter(m =>
      m.getBoundingClientRect().top > 3 * innerHeight && m.querySelector('svg')).length,
  };
}"""


@pytest.mark.parametrize("viewport", [PHONE, {"width": 1280, "height": 900}], ids=["phone", "desktop"])
def test_a_chapter_page_lays_out_loads_and_draws_only_what_is_near_the_screen(server, browser, viewport):
    """What makes a long chapter interactive soon (never a wall-clock time, which a busy machine
    changes): every section and cell is skippable (``content-visibility: auto``) and those far
    below the screen are not laid out at load, the chapter's figures there are not fetched before
    the reader comes near them (``loading="lazy"``; an explorer's figure loads at once), no
    formula there is drawn (MathJax's ui/lazy), and MathJax's script runs only after
    DOMContentLoaded."""
    chapter = max((p for p in PAGES if p.startswith("notebooks/")),
                  key=lambda p: (SITE / f"{p}.html").stat().st_size)
    context = browser.new_context(viewport=viewport, device_scale_factor=1)
    try:
        page = context.new_page()
        # MathJax's 2 MB script runs after DOMContentLoaded, not before (formulas.js starts it)
        page.add_init_script("document.addEventListener('DOMContentLoaded', () => {"
                             " window.mathjaxAtReady = Boolean(window.MathJax && MathJax.startup); },"
                             " {capture: true})")
        page.goto(f"{server}/{chapter}.html", wait_until="load", timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        assert page.evaluate("window.mathjaxAtReady") is False, "MathJax ran before DOMContentLoaded"
        page.wait_for_timeout(500)  # a frame or two: what is near the screen is laid out
        got = page.evaluate(SPEED_JS)
        assert got["boxes"] > 20 and got["notSkippable"] == 0, got
        assert got["firstShown"], got
        assert got["below"] > 10 and got["laidOutBelow"] == 0, got
        assert got["figures"] > 3 and not got["eagerFigures"], got
        assert not got["figuresBelowFetched"], got
        assert got["drawnBelow"] == 0, got
    finally:
        context.close()


# The excerpts under a search's results (Sphinx's search page, its ``.context`` paragraphs).
SUMMARIES_JS = "() => [...document.querySelectorAll('#search-results li p.context')].map(p => p.textContent)"
# What an excerpt must not show: TeX, the page's header and footer, code.
NOT_PROSE = re.compile(r"\\[A-Za-z]+|\\[()\[\]]|\$|\.ipynb|\b(previous|next)\s+\d+\.|>>>|import "
                       r"|上一页|下一页")


def search_excerpts(tab, url: str) -> list[str]:
    tab.goto(url, wait_until="load")
    tab.wait_for_function("document.querySelector('#search-results .search-summary')?.textContent",
                          timeout=60_000)
    tab.wait_for_function(f"({SUMMARIES_JS})().length >= 3", timeout=30_000)
    tab.wait_for_timeout(1000)  # the last pages' excerpts
    return tab.evaluate(SUMMARIES_JS)


def test_search_excerpts_are_the_pages_prose(server, browser):
    """A result's excerpt is read from the article's prose: no formula's TeX (an inline formula
    reads as plain symbols), no header or footer of the page (download menu, previous/next), no
    code."""
    context = browser.new_context(viewport=PHONE)
    try:
        tab = context.new_page()
        excerpts = search_excerpts(tab, f"{server}/search.html?q=softmax")
        assert len(excerpts) >= 5, excerpts
        assert not [e for e in excerpts if NOT_PROSE.search(e)], excerpts
        assert any("softmax" in e.lower() for e in excerpts), excerpts
        # the formulas of a sentence read as symbols
        plain = tab.evaluate(r"""() => window.bookExcerptText(
          '<main role="main"><article class="bd-article"><p class="language-switch">中文</p>'
          + '<h1>Title<a class="headerlink">#</a></h1><p>Keys <span class="math notranslate nohighlight">'
          + '\\(\\mathbf{x}_1, \\ldots, \\mathbf{x}_n \\in \\mathbb{R}^d\\)</span> and '
          + '<span class="math">\\(\\mathbf{q}^\\top \\mathbf{k} / \\sqrt{d}\\)</span>.</p>'
          + '<div class="math">\\[x\\]</div><div class="cell"><div class="cell_input">import torch'
          + '</div></div></article><footer>previous 4. Bahdanau</footer></main>')""")
        assert plain == "Title Keys x_1, …, x_n ∈ R^d and qᵀ k / √d.", plain
    finally:
        context.close()


def test_a_formula_drawn_as_it_takes_the_focus_keeps_it(server, browser):
    """A formula not yet drawn takes the keyboard focus (each formula is focusable, and the arrow
    keys scroll a wide one); drawing it replaces its <mjx-container>, and the focus moves to the
    drawn one instead of falling back to the page. A formula the focus left before it was drawn
    does not take it back."""
    chapter = [p for p in PAGES if p.startswith("notebooks/")][2]  # many display formulas
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(f"{server}/{chapter}.html", wait_until="load", timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        undrawn = page.locator("article.bd-article div.math mjx-container:has(mjx-lazy)")
        assert undrawn.count() > 2, "no undrawn formula below the first screen"
        left, box = (undrawn.nth(k).element_handle().evaluate_handle("c => c.parentNode")
                     for k in (undrawn.count() - 1, undrawn.count() // 2))
        # Focused, then left (blur) before it is drawn: drawn later, it does not take the focus.
        left.evaluate("box => { const c = box.querySelector('mjx-container'); c.focus({preventScroll: true});"
                      " c.blur(); }")
        left.evaluate("box => box.scrollIntoView()")
        page.wait_for_function("(box) => box.querySelector('mjx-container svg') !== null",
                               arg=left, timeout=10_000)
        page.wait_for_timeout(200)
        assert page.evaluate("() => document.activeElement === document.body")
        # Focused while undrawn: drawn, it keeps the focus.
        box.evaluate("box => box.querySelector('mjx-container').focus()")
        page.wait_for_function("(box) => box.querySelector('mjx-container svg') !== null",
                               arg=box, timeout=10_000)
        page.wait_for_function("(box) => document.activeElement === box.querySelector('mjx-container')",
                               arg=box, timeout=5_000)
    finally:
        context.close()


def test_the_browser_check_catches_a_broken_page(tmp_path, browser, axe):
    page = tmp_path / "broken.html"
    page.write_text(
        '<html><body><main><p><span class="math">\\(x^2\\)</span> and $$y$$</p>'
        '<p>the score $\\mathbf{v}^\\top</p><ul><li>+ W$</li></ul>'
        '<p><code>FraEngData(**attnlib.presets.REAL_DATA_DEFAULTS_AND_MORE)</code></p>'
        '<p>a <span class="math" style="display:inline-block;overflow:hidden;width:40px">'
        '<mjx-container><svg width="300" height="10"></svg></mjx-container></span> cut formula</p>'
        # a formula left undrawn (MathJax's lazy placeholder) with empty MathML, and a TeX error
        '<p><span class="math"><mjx-container><mjx-lazy></mjx-lazy><mjx-assistive-mml><math>'
        '</math></mjx-assistive-mml></mjx-container></span>z</p>'
        '<p><span class="math" style="display:inline-block"><mjx-container><svg width="10" height="10">'
        '<g data-mjx-error="Missing close brace"></g>'
        '</svg><mjx-assistive-mml><math><mi>a</mi></math></mjx-assistive-mml></mjx-container>'
        '</span>an error</p>'
        '<img src="missing.png"><script>console.error("boom")</script>'
        '<script src="http://cdn.invalid/mathjax.js"></script></main></body></html>'
    )
    report, errors, remote, _ = open_page(browser, page.as_uri(), axe)
    assert any("boom" in e for e in errors)
    assert remote == ["http://cdn.invalid/mathjax.js"]
    assert report["untypeset"] == ["\\(x^2\\)", ""]
    assert report["undrawnAtPrint"] == ["\\(x^2\\) and $$y$$", "z"]
    assert report["emptyMathML"] == ["a  cut formula", "z"]
    assert report["texErrors"] == ["Missing close brace"]
    assert report["rawTex"] == ["$$", "\\(", "\\mathbf", "\\top"]
    assert report["reflowWidth"] > REFLOW_WIDTH  # unbreakable code widens the page
    assert len(report["brokenImages"]) == 1 and report["mjx"] == 3  # only the hand-made formulas
    assert report["cutFormulas"] == report["unmarkedFormulas"] == ["a  cut formula"]
    # axe sees the image without a text alternative and the page without a language.
    assert {"image-alt", "html-has-lang"} <= {v["id"] for v in report["axe"]}, report["axe"]


# --------------------------------------------------------------------------- the explorers
def explorer_states(nb: dict, chapter: str) -> list[dict]:
    """The saved states (book/explorers/, attnlib.explorer) of a notebook's explorers, in page
    order; an explorer whose states are missing or stale is left out (the site shows a snapshot,
    and tests/test_explorer.py fails)."""
    found = []
    for index, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            if widgets.EXPLORER in out.get("data", {}):
                data, _ = widgets.saved_states(nb, index, out["data"][widgets.EXPLORER], chapter)
                if data is not None:
                    found.append(data)
    return found


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


EXPLORER_CHAPTERS = [p for p in CHAPTERS if explorer_states(_notebook(p), p.stem)]
TIMINGS = ROOT / "build" / "book-screenshots" / "explorer-timings.json"

# What one explorer shows now: its state, images (src, loaded), alt texts, printed text, status.
EXPLORER_VIEW_JS = """(i) => { const box = document.querySelectorAll('.explorer')[i];
  const cell = box.closest('.cell_output') || box.parentElement;
  const imgs = [...cell.querySelectorAll('img')].filter(m => !m.closest('.explorer-heads'));
  return {state: Number(box.dataset.state), src: imgs.map(m => m.getAttribute('src')),
          loaded: imgs.map(m => m.complete && m.naturalWidth > 0), alt: imgs.map(m => m.alt),
          text: (cell.querySelector('pre.explorer-text') || {}).textContent || '',
          status: box.querySelector('.explorer-status').textContent,
          labels: [...box.querySelectorAll('.explorer-control > span')].map(s => s.textContent),
          heads: [...box.querySelectorAll('.explorer-heads button')].map(b => b.textContent)}; }"""


def _state_index(data: dict, idx: list[int]) -> int:
    k = 0
    for c, i in zip(data["controls"], idx, strict=True):
        k = k * len(c["values"]) + i
    return data["states"][k]


def _set_controls(page, n: int, data: dict, idx: list[int]) -> None:
    """Move explorer ``n``'s controls to the value indices ``idx``, as a reader would."""
    box = page.locator(".explorer").nth(n)
    for j, (c, i) in enumerate(zip(data["controls"], idx, strict=True)):
        control = box.locator(f"[data-control='{j}']")
        if c["kind"] == "select":
            control.select_option(str(i))
        elif c["kind"] == "checkbox":
            control.set_checked(bool(i))
        else:  # a range input: as dragging it does, set the value and send "input"
            control.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', "
                             "{bubbles: true})); }", str(i))


def _wait_for_state(page, n: int, view_index: int) -> dict:
    page.wait_for_function(
        "([i, k]) => { const box = document.querySelectorAll('.explorer')[i];"
        " return box.dataset.state === String(k) && [...(box.closest('.cell_output') || document)"
        ".querySelectorAll('img')].filter(m => !m.closest('.explorer-heads'))"  # lazy thumbnails
        ".every(m => m.complete); }", arg=[n, view_index])
    return page.evaluate(EXPLORER_VIEW_JS, n)


def _two_settings(data: dict) -> tuple[list[int], list[int]]:
    """Two settings that show different figures: every control at its first value and every one
    at its last, else the widget's own setting and the last."""
    first = [c["index"] for c in data["controls"]]
    last = [len(c["values"]) - 1 for c in data["controls"]]
    low = [0] * len(first)
    return (low, last) if _state_index(data, low) != _state_index(data, last) else (first, last)


# Where the readout of a heatmap's cell lies, against the window, the page and the cell's mark.
READOUT_JS = """() => { const tip = [...document.querySelectorAll('.explorer-tip')].find(t => !t.hidden);
  if (!tip) return null;
  const mark = tip.parentElement.querySelector('.explorer-mark').getBoundingClientRect();
  const r = tip.getBoundingClientRect();
  return {text: tip.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom,
          covers: r.left < mark.right - 1 && mark.left + 1 < r.right && r.top < mark.bottom - 1
                  && mark.top + 1 < r.bottom,
          width: innerWidth, pageWidth: document.documentElement.scrollWidth}; }"""
CAPTION_JS = """(i) => { const box = document.querySelectorAll('.explorer')[i];
  const c = (box.closest('.cell_output') || box.parentElement).querySelector('figcaption .caption-text');
  return c ? c.textContent : null; }"""
# A function's return value as Python prints it, which the text under a widget must not be.
RAW_REPR = re.compile(r"^\s*(tensor\(|[A-Z]\w*\(\w+=)")


def _check_readout(page, img, h: dict, touch: bool) -> str:
    """Point at (or tap) the last cell of heatmap ``h`` in ``img``: its readout must lie inside the
    window without widening the page, not cover the cell, and go on Escape (WCAG 1.4.13)."""
    img.scroll_into_view_if_needed()
    box = img.bounding_box()
    x0, y0, x1, y1 = h["box"]
    cw, ch = (x1 - x0) / h["n"][1], (y1 - y0) / h["n"][0]
    where = {"x": (x1 - cw / 2) * box["width"], "y": (y1 - ch / 2) * box["height"]}
    if touch:  # a tap's click comes after its touch events: wait for it, so that it cannot show
        # the readout again after the Escape below (a race a busy machine lost once)
        img.evaluate("el => { el.tapped = new Promise(r => el.addEventListener('click', r, "
                     "{once: true})); }")
        img.tap(position=where)
        img.evaluate("el => el.tapped.then(() => true)")
    else:
        img.hover(position=where)
    got = page.evaluate(READOUT_JS)
    assert got, "no readout for the heatmap's last cell"
    assert 0 <= got["left"] and got["right"] <= got["width"], f"readout off the window: {got}"
    assert got["pageWidth"] <= got["width"], f"the readout widens the page: {got}"
    assert not got["covers"], f"the readout covers the cell it names: {got}"
    page.keyboard.press("Escape")
    assert page.evaluate(READOUT_JS) is None, "Escape leaves the readout shown"
    return got["text"]


def check_explorers(browser, url: str, states: list[dict], site_root: Path,
                    viewport: dict = VIEWPORT) -> tuple[dict, list]:
    """Open a chapter page and operate each explorer: for two settings the page must show the
    saved state (the images byte for byte the saved ones, the same printed text and status), the
    keyboard must move the first explorer's first slider, a head's button must select that head,
    and pointing at a heatmap's cell (or moving the keyboard's cursor onto it) must name its query,
    key and weight. After every move the caption says what the figure shows, the status line has
    one full stop, and the text under the figure is no raw repr. The readout of a cell stays inside
    the window and off its cell and goes on Escape (``_check_readout``; on a phone-sized
    ``viewport`` it is tapped), a drop-down fits the window, and a figure with cells too small to
    point at can be enlarged until they are 14 px wide. Returns the page's timings (milliseconds
    from navigation: DOM ready, explorers operable, load event) and each explorer's control
    labels."""
    touch = viewport["width"] < 600
    context = browser.new_context(viewport=viewport, device_scale_factor=1, has_touch=touch)
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url, wait_until="load", timeout=60_000)
        page.wait_for_function("document.documentElement.dataset.explorersReady !== undefined")
        # Every section laid out at once (_css/render.css lays out only those near the screen;
        # a test of its own checks that): a section laid out while the pointer rests on a heatmap
        # moves the page under it, and its scroll hides the readout (seen on a busy machine).
        page.add_style_tag(content="* { content-visibility: visible !important; }")
        timings = page.evaluate("""() => ({
          dom: Math.round(performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd),
          load: Math.round(performance.getEntriesByType('navigation')[0].loadEventEnd),
          explorers: Number(document.documentElement.dataset.explorersReady)})""")
        labels = [page.evaluate(EXPLORER_VIEW_JS, n)["labels"] for n in range(len(states))]
        assert page.locator(".explorer").count() == len(states)
        for n, data in enumerate(states):
            shown = []
            first_caption = page.evaluate(CAPTION_JS, n)
            first = _state_index(data, [c["index"] for c in data["controls"]])
            for idx in _two_settings(data):
                _set_controls(page, n, data, idx)
                view_index = _state_index(data, idx)
                view = data["views"][view_index]
                got = _wait_for_state(page, n, view_index)
                assert len(got["src"]) >= len(view["figures"]), (url, n, got["src"])
                for f, src, loaded in zip(view["figures"], got["src"], got["loaded"], strict=False):
                    assert src.endswith(f"_static/{widgets.EXPLORER_DIR}/{f['img']}.webp"), (src, f)
                    assert loaded, src
                    on_disk = site_root / "_static" / widgets.EXPLORER_DIR / f"{f['img']}.webp"
                    assert on_disk.read_bytes() == (widgets.STATES / "img" / f"{f['img']}.webp").read_bytes()
                assert got["text"] == widgets.reader_text(view["text"]), (got["text"], view["text"])
                assert not RAW_REPR.match(got["text"]), got["text"]
                caption = page.evaluate(CAPTION_JS, n)
                for c, i in zip(data["controls"], idx, strict=True):
                    assert c["labels"][i] in got["status"], got["status"]
                    if view_index != first and caption is not None:
                        assert str(c["labels"][i]) in caption, (caption, c["labels"][i])
                if view_index != first and caption is not None:
                    assert caption != first_caption, f"{url}: the caption still names the first view"
                assert not re.search(r"\.[.。]$", got["status"]), got["status"]
                shown.append(got["src"])
            assert shown[0] != shown[1], f"{url}: explorer {n} shows the same figure for two settings"
        # Keyboard: the first explorer's first slider (or first control), moved by an arrow key.
        data = states[0]
        kinds = [c["kind"] for c in data["controls"]]
        j = kinds.index("slider") if "slider" in kinds else 0
        _set_controls(page, 0, data, [0] * len(kinds))
        page.locator(".explorer").first.locator(f"[data-control='{j}']").focus()
        page.keyboard.press("ArrowRight" if kinds[j] == "slider" else "ArrowDown")
        _wait_for_state(page, 0, _state_index(data, [int(i == j) for i in range(len(kinds))]))
        # A head is one click (or Enter) away: its button selects it and nothing else.
        for n, data in enumerate(states):
            names = [c["name"] for c in data["controls"]]
            if "head" not in names:
                continue
            h = names.index("head")
            idx = [c["index"] for c in data["controls"]]
            _set_controls(page, n, data, idx)
            heads = page.locator(".explorer").nth(n).locator(".explorer-heads button")
            assert heads.count() == len(data["controls"][h]["values"])
            last = heads.count() - 1
            heads.nth(last).click()
            _wait_for_state(page, n, _state_index(data, idx[:h] + [last] + idx[h + 1:]))
            assert heads.nth(last).get_attribute("aria-pressed") == "true"
            heads.nth(0).focus()
            page.keyboard.press("Enter")
            got = _wait_for_state(page, n, _state_index(data, idx[:h] + [0] + idx[h + 1:]))
            assert got["heads"][0].endswith(data["controls"][h]["labels"][0]), got["heads"]
        # Pointing at a heatmap's cell, and the keyboard's cursor on a focused heatmap.
        readouts = []
        for n, data in enumerate(states):
            got = page.evaluate(EXPLORER_VIEW_JS, n)
            view = data["views"][got["state"]]
            for f_index, f in enumerate(view["figures"]):
                if not f["heat"]:
                    continue
                h = f["heat"][0]
                img = page.locator(".explorer").nth(n).locator(
                    "xpath=ancestor::div[contains(@class,'cell_output')]"
                    "//img[not(ancestor::*[contains(@class,'explorer-heads')])]").nth(f_index)
                img.scroll_into_view_if_needed()
                box = img.bounding_box()
                x0, y0, x1, y1 = h["box"]
                cw, ch = (x1 - x0) / h["n"][1], (y1 - y0) / h["n"][0]
                position = {"x": (x0 + cw / 2) * box["width"], "y": (y0 + ch / 2) * box["height"]}
                img.tap(position=position) if touch else img.hover(position=position)
                tip = page.locator(".explorer-tip").locator("visible=true").first
                text = tip.text_content()
                assert str(h["v"][0]) in text, (text, h["v"][0])  # the weight
                for name in (h["rows"] or [None])[:1] + (h["cols"] or [None])[:1]:
                    assert name is None or name in text, (text, name)  # the query and key tokens
                img.focus()
                page.keyboard.press("ArrowRight")
                value = h["v"][1] if h["n"][1] > 1 else h["v"][0]
                assert str(value) in tip.text_content(), (tip.text_content(), value)
                img.blur()
                readouts.append(_check_readout(page, img, f["heat"][-1], touch))
                break
        # Every drop-down fits the window; a figure with tiny cells can be enlarged.
        for right in page.eval_on_selector_all(".explorer select",
                                               "els => els.map(e => e.getBoundingClientRect().right)"):
            assert right <= viewport["width"], f"{url}: a drop-down runs past the window ({right} px)"
        zoom = page.locator(".explorer-zoom-button")
        tiny = [data["name"] for data in states if any(
            (h["box"][2] - h["box"][0]) / h["n"][1] < 0.03
            for v in data["views"] for f in v["figures"] for h in f["heat"] or [])]
        assert zoom.count() == len(tiny), f"{url}: no way to enlarge the tiny cells of {tiny}"
        for n in range(zoom.count()):
            zoom.nth(n).click()
            cell = page.evaluate("""(n) => { const b = document.querySelectorAll('.explorer-zoom-button')[n];
              const box = b.closest('.explorer'); const data = box.explorer;
              const img = box.closest('.cell_output').querySelector('.explorer-figure img');
              const fig = data.views[Number(img.dataset.view)].figures[Number(img.dataset.figure)];
              const w = img.getBoundingClientRect().width;
              return {cell: Math.min(...fig.heat.map(h => (h.box[2] - h.box[0]) / h.n[1] * w)),
                      page: document.documentElement.scrollWidth}; }""", n)
            assert cell["cell"] >= 14, f"{url}: enlarged, a heatmap's cells are {cell['cell']:.1f} px"
            assert cell["page"] <= viewport["width"], f"{url}: the enlarged figure widens the page"
        if readouts:
            timings["readouts"] = readouts
        assert not errors, errors
        return timings, labels
    finally:
        context.close()


def _record_timings(page: str, timings: dict) -> None:
    """Keep and print a page's time to interactive (reported, never asserted)."""
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    known = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    known[page] = timings
    TIMINGS.write_text(json.dumps(known, indent=1, sort_keys=True))
    print(f"{page}: DOM ready {timings['dom']} ms, explorers operable {timings['explorers']} ms, "
          f"load {timings['load']} ms")


@pytest.mark.parametrize("chapter", [p.stem for p in EXPLORER_CHAPTERS])
def test_explorers_show_the_saved_states_and_work_by_keyboard(chapter, site, server, browser):
    nb = _notebook(ROOT / "notebooks" / f"{chapter}.ipynb")
    states = explorer_states(nb, chapter)
    timings, labels = check_explorers(browser, f"{server}/notebooks/{chapter}.html", states, site)
    readouts = timings.pop("readouts", [])
    _record_timings(f"notebooks/{chapter}", timings)
    assert labels == [[c["label"] for c in data["controls"]] for data in states]
    # From disk, on a phone-sized screen (tapped, not pointed at)
    disk, _ = check_explorers(browser, (site / "notebooks" / f"{chapter}.html").as_uri(), states, site,
                              viewport=PHONE)
    readouts += disk.pop("readouts", [])
    _record_timings(f"notebooks/{chapter} (file://, phone)", disk)
    for text in readouts:
        assert not re.search(r"\b(Queries|Keys|queries|keys)\b", text), f"one naming: query, key: {text}"


def test_every_chapter_widget_is_an_explorer_on_the_site():
    """No chapter widget is left a static snapshot: each has current saved states."""
    for chapter in CHAPTERS:
        nb = _notebook(chapter)
        views = sum(widgets.WIDGET_VIEW in o.get("data", {}) for c in nb["cells"]
                    for o in c.get("outputs", []))
        assert len(explorer_states(nb, chapter.stem)) == views, chapter.name


# --------------------------------------------------------------------------- phone, print, dark
DIAGRAM_TEXT_JS = """() => { const img = document.querySelector('dialog.diagram-viewer[open] img');
  return img && img.complete ? {shown: img.getBoundingClientRect().width, natural: img.naturalWidth}
                             : null; }"""


def test_on_a_phone_the_menus_diagrams_language_link_print_and_dark_mode_work(server, browser):
    """One chapter on a 390 x 844 screen: the menu button opens the chapter list and the contents
    button the page's contents; a diagram opens full size with one tap (its smallest labels, 8.5
    units of a drawing 720 units wide, at 9 CSS px or more) and Escape or Back closes it; the
    language link goes to the section being read. At 1280 px the menu button hides the sidebar.
    Printed, code wraps and the widget is its figure, caption and setting without its controls.
    A reader whose system is dark gets the dark theme."""
    url = f"{server}/notebooks/07_transformer.html"
    context = browser.new_context(viewport=PHONE, has_touch=True)
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url, wait_until="load")
        for toggle, dialog in (("primary", "#pst-primary-sidebar-modal"),
                               ("secondary", "#pst-secondary-sidebar-modal")):
            page.locator(f".{toggle}-toggle").locator("visible=true").first.tap()
            page.wait_for_function(f"document.querySelector('{dialog}').open", timeout=5000)
            assert page.locator(f"{dialog} a").locator("visible=true").count() > 3, toggle
            page.keyboard.press("Escape")
            page.wait_for_function(f"!document.querySelector('{dialog}').open", timeout=5000)
        # A diagram, full size: one tap; Escape or Back closes it.
        link = page.locator("a.diagram-open").first
        link.scroll_into_view_if_needed()
        for close in ("Escape", "Back"):
            link.tap()
            page.wait_for_function("document.querySelector('dialog.diagram-viewer').open")
            page.wait_for_function(f"({DIAGRAM_TEXT_JS})() !== null")
            size = page.evaluate(DIAGRAM_TEXT_JS)
            assert size["shown"] * 8.5 / 720 >= 9, f"the enlarged diagram's labels are small: {size}"
            page.keyboard.press("Escape") if close == "Escape" else page.go_back()
            page.wait_for_function("!document.querySelector('dialog.diagram-viewer').open")
            assert page.url.startswith(url), page.url
        # The language link keeps the section being read.
        page.evaluate("document.getElementById('the-encoder-block').scrollIntoView()")
        link = page.locator(".language-switch a")
        link.dispatch_event("focus")
        assert link.get_attribute("href").endswith("07_transformer.html#the-encoder-block")
        # Printed: code wraps, the widget is its figure and caption, its controls are gone.
        page.locator(".explorer select").first.select_option("1")
        page.emulate_media(media="print")
        printed = page.evaluate("""() => ({
          code: getComputedStyle(document.querySelector('div.highlight pre')).whiteSpace,
          controls: [...document.querySelectorAll('.explorer-control, .explorer-heads')]
            .filter(e => e.getBoundingClientRect().height > 0).length,
          caption: document.querySelector('.explorer').closest('.cell_output')
            .querySelector('figcaption').textContent})""")
        assert printed["code"] == "pre-wrap", printed
        assert printed["controls"] == 0, printed
        assert "i'm home" not in printed["caption"], printed  # the first view's caption
        assert page.pdf()[:4] == b"%PDF"
        page.emulate_media(media="screen")
        # At 1280 px the menu button hides and shows the sidebar.
        page.set_viewport_size({"width": 1280, "height": 900})
        page.locator(".primary-toggle").locator("visible=true").first.click()
        assert page.evaluate("document.getElementById('pst-primary-sidebar').classList"
                             ".contains('pst-sidebar-hidden')")
        assert not errors, errors
    finally:
        context.close()
    context = browser.new_context(viewport=PHONE, color_scheme="dark")
    try:
        page = context.new_page()
        page.goto(f"{server}/intro.html", wait_until="load")
        assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    finally:
        context.close()


def test_back_after_moving_a_control_shows_what_the_controls_say(site, browser):
    """From disk (no back-forward cache restores the page), Back to a chapter whose controls the
    reader moved: the browser restores the controls, and the figure and status follow them."""
    chapter = (site / "notebooks" / "05_multihead_attention.html").as_uri()
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        page.goto(chapter, wait_until="load")
        page.locator(".explorer select").first.select_option("2")
        page.locator(".explorer-heads button").last.click()
        status = page.locator(".explorer-status").first.text_content()
        state = page.locator(".explorer").first.get_attribute("data-state")
        page.goto((site / "intro.html").as_uri(), wait_until="load")
        page.go_back(wait_until="load")
        page.wait_for_function("document.querySelector('.explorer')?.dataset.ready === 'true'")
        page.wait_for_timeout(200)
        assert page.locator(".explorer-status").first.text_content() == status
        assert page.locator(".explorer").first.get_attribute("data-state") == state
    finally:
        context.close()


TOP_BLOCK = """() => {
  const line = Math.max(0, ...[...document.querySelectorAll('.bd-header, .bd-header-article')]
    .filter((e) => ['sticky', 'fixed'].includes(getComputedStyle(e).position))
    .map((e) => e.offsetHeight)) + 1;
  const box = document.querySelector('article.bd-article').getBoundingClientRect();
  const hit = document.elementFromPoint(box.left + box.width / 4, line + 8);
  const block = hit && hit.closest('article.bd-article section[id] > *:not(section)');
  return block && [block.parentElement.id, [...block.parentElement.children].indexOf(block),
                   Math.round(line - block.getBoundingClientRect().top)];
}"""


@pytest.mark.parametrize("lang", ["", "zh/"], ids=["en", "zh"])
def test_back_returns_to_the_paragraph_the_reader_left(site, browser, lang):
    """From disk (no back-forward cache), on a phone, deep in chapter 7: Back shows the block the
    reader left at the same place under the header. The browser's own pixel offset landed
    thousands of pixels off, the sections far from the screen taking estimated heights."""
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        page.goto((site / f"{lang}notebooks/07_transformer.html").as_uri(), wait_until="load")
        page.evaluate("document.querySelector('#attention-on-real-sentences-after-a-short-run').scrollIntoView()")
        page.evaluate("window.scrollBy(0, 600)")
        page.wait_for_timeout(1500)
        left = page.evaluate(TOP_BLOCK)
        assert left and left[0] != "the-transformer"  # deep in the chapter, not at its top
        page.goto((site / f"{lang}notebooks/09_attention_at_scale.html").as_uri(), wait_until="load")
        page.go_back(wait_until="load")
        page.wait_for_timeout(4500)  # the page puts the block back for 4 s as the page settles
        back = page.evaluate(TOP_BLOCK)
        assert back[:2] == left[:2] and abs(back[2] - left[2]) <= 2, (left, back)
    finally:
        context.close()
