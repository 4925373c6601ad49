"""The Chinese website (build/book/zh/), checked in headless Chromium like the English one.

Builds both sites (``scripts/build_book.py``, ``scripts/i18n.py generate``, ``scripts/build_book.py
--lang zh``), serves build/book/ and opens every Chinese page: formulas typeset by the site's own
MathJax, images loaded, no console error, no axe-core (WCAG A/AA) violation, nothing fetched from
another host, the page declared Chinese, a link to the same page in English (and back), Chinese
search finding the chapter, and no English prose paragraph left untranslated on a chapter page.
The browser helpers are tests/test_book.py's.
"""

from __future__ import annotations

import functools
import http.server
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from test_book import (  # noqa: F401 (axe, browser: fixtures)
    PAGES,
    SHOTS,
    _QuietHandler,
    assert_page_works,
    axe,
    browser,
    open_page,
)

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "book"
CHAPTER_PAGES = [p for p in PAGES if p.startswith("notebooks/")]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sites():
    for args in ([], None, ["--lang", "zh"]):
        command = [str(ROOT / "scripts" / "i18n.py"), "generate"] if args is None else \
            [str(ROOT / "scripts" / "build_book.py"), *args]
        done = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "from the network" not in done.stderr, done.stderr  # book/_ext/offline_book.py
    return SITE


@pytest.fixture(scope="module")
def server(sites):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                            functools.partial(_QuietHandler, directory=str(sites)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# Paragraphs, list items, headings and captions of the page's prose (not code, outputs, formulas,
# the glossary table or the citations of the references section) that hold no Chinese character.
ENGLISH_PROSE_JS = r"""
(() => {
  const main = document.querySelector('main') || document.body;
  const out = [];
  for (const el of main.querySelectorAll('p, li, h1, h2, h3, h4, figcaption, th')) {
    const skip = '.cell_output, pre, .highlight, table, .language-switch, nav, footer, .prev-next-area';
    if (el.closest(skip)) continue;
    const section = el.closest('section');
    const heading = section && section.querySelector(':scope > h2, :scope > h1');
    if (heading && /参考文献|References/.test(heading.textContent)) continue;
    const copy = el.cloneNode(true);
    copy.querySelectorAll('code, .math, mjx-container, ul, ol, a.headerlink').forEach(e => e.remove());
    const text = copy.textContent.replace(/\s+/g, ' ').trim();
    if (!/[\u3400-\u9fff]/.test(text) && (text.match(/[A-Za-z]{2,}/g) || []).length >= 4) out.push(text);
  }
  return out;
})()
"""


def _html(page: str, lang: str = "zh") -> str:
    return (SITE / ("zh" if lang == "zh" else "") / f"{page}.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("page", PAGES)
def test_chinese_page_renders_offline_in_chromium(page, server, browser, axe):  # noqa: F811
    report, errors, remote, shots = open_page(browser, f"{server}/zh/{page}.html", axe)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for suffix, png in shots.items():
        (SHOTS / f"zh__{page.replace('/', '__')}{suffix}.png").write_bytes(png)
    assert_page_works(f"zh/{page}", report, errors, remote)
    if page.startswith("notebooks/"):
        english, _, _, _ = open_page(browser, f"{server}/{page}.html")
        assert report["mjx"] >= english["mjx"], "the Chinese page lost formulas the English one typesets"
        assert report["images"] == english["images"] and report["snapshots"] == english["snapshots"]


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ("genindex", "search")])  # no body
def test_each_page_links_to_the_same_page_in_the_other_language(page, sites):
    zh, en = _html(page), _html(page, "en")
    assert re.search(r'<html[^>]*\blang="zh-CN"', zh), "the Chinese page does not declare lang=zh-CN"
    up = "../" * page.count("/")
    assert f'<a href="../{up}{page}.html" hreflang="en" lang="en">English</a>' in zh
    assert f'<a href="{up}zh/{page}.html" hreflang="zh-CN" lang="zh-CN">中文</a>' in en
    assert (SITE / f"{page}.html").is_file() and (SITE / "zh" / f"{page}.html").is_file()


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_no_english_prose_left_on_a_chinese_chapter_page(page, server, browser):  # noqa: F811
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"{server}/zh/{page}.html", wait_until="load")
        left = tab.evaluate(ENGLISH_PROSE_JS)
    finally:
        context.close()
    name = page.removeprefix("notebooks/")
    assert not left, (f"zh/{page}: {len(left)} English paragraphs (translate locale/zh_CN/LC_MESSAGES/"
                      f"{name}.po, docs/translating.md): {left[:5]}")


def test_chinese_search_finds_the_chapter(server, browser):  # noqa: F811
    # Sphinx indexes Chinese words cut by jieba; its search box does not cut a query, so a reader
    # types words (汇聚, or 注意力 汇聚 with a space), not a whole phrase.
    context = browser.new_context()
    try:
        tab = context.new_page()
        tab.goto(f"{server}/zh/search.html?q=汇聚", wait_until="load")
        tab.wait_for_selector("#search-results li", timeout=60_000)
        hits = tab.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")
    finally:
        context.close()
    assert any("notebooks/01_attention_cues.html" in h for h in hits), hits
