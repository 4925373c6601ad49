"""The Chinese website (build/book/zh/), checked in headless Chromium like the English one.

Builds both sites (``python -m book.build``, ``python -m book.i18n generate``, ``python -m book.build
--lang zh``), serves build/book/ and opens every Chinese page: formulas typeset by the site's own
MathJax and none cut off on a narrow screen, images loaded, no console error, no axe-core (WCAG
A/AA) violation, nothing fetched from another host, the page declared Chinese, a link to the same
page in English (and back), Chinese search finding the chapter, and no English prose paragraph left
untranslated on a chapter page (read in the same load as the other checks). A chapter keeps every
formula, image and widget of the English one (the English counts come from its built HTML; the
English page itself is checked in the browser by tests/test_book.py). Every figure has the English
site's number; the interface (the theme's buttons, labels and search box, the navigation) is
Chinese; the pages left in English say so. The browser helpers are tests/test_book.py's.
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
from urllib.parse import urljoin

import pytest
from bs4 import BeautifulSoup
from test_book import (  # noqa: F401 (axe, browser: fixtures)
    EXPLORER_CHAPTERS,
    NOT_PROSE,
    PAGES,
    PHONE,
    SHOTS,
    _QuietHandler,
    _record_timings,
    _soup,
    assert_page_works,
    axe,
    browser,
    build_sites,
    check_explorers,
    explorer_states,
    open_page,
    search_excerpts,
)

from book._ext.chinese_interface import THEME_HARDCODED
from book.pages import english_only_pages

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "book"
CHAPTER_PAGES = [p for p in PAGES if p.startswith("notebooks/")]
ENGLISH_PAGES = english_only_pages()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sites():
    build_sites()
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


def page_counts(html: str) -> dict[str, int]:
    """What a built page holds, counted as open_page's report counts it in the browser: formulas
    (the ``.math`` elements of <main>; MathJax typesets each into one <mjx-container>), images
    (<img>, before the explorers add their heads' thumbnails) and widget snapshots or explorers."""
    soup = BeautifulSoup(html, "html.parser")
    main = soup.select_one("main") or soup.body
    return {"math": len(main.select(".math")), "images": len(soup.find_all("img")),
            "snapshots": len(soup.select(".widget-snapshot, .explorer"))}


def lost_from_english(report: dict, chinese_html: str, english_html: str) -> list[str]:
    """What a Chinese chapter lost against the English one: fewer formulas typeset in the browser
    (``report``, open_page's) than the English page's HTML holds (a translation may add one, never
    drop one), or other images or widgets in its HTML than the English page's."""
    english, chinese = page_counts(english_html), page_counts(chinese_html)
    lost = []
    if report["mjx"] < english["math"]:
        lost.append(f"{report['mjx']} formulas typeset for the English page's {english['math']}")
    for what in ("images", "snapshots"):
        if chinese[what] != english[what]:
            lost.append(f"{chinese[what]} {what} for the English page's {english[what]}")
    return lost


def test_a_chinese_page_that_lost_a_formula_an_image_or_a_widget_is_caught():
    english = ('<main><p><span class="math">\\(x\\)</span> <span class="math">\\(y\\)</span></p>'
               '<img src="a.png" alt="a"><p class="widget-snapshot">s</p><div class="explorer"></div></main>')
    assert page_counts(english) == {"math": 2, "images": 1, "snapshots": 2}
    assert lost_from_english({"mjx": 2}, english, english) == []
    assert lost_from_english({"mjx": 3}, english, english) == []  # a translation's own formula
    assert lost_from_english({"mjx": 1}, english, english) == [
        "1 formulas typeset for the English page's 2"]
    assert lost_from_english({"mjx": 2}, english.replace('<img src="a.png" alt="a">', ""), english) == [
        "0 images for the English page's 1"]
    assert lost_from_english({"mjx": 2}, english.replace('<div class="explorer"></div>', ""), english) == [
        "1 snapshots for the English page's 2"]


# Each Chinese page is opened (and checked by axe) once; the tests that read it share the report.
_REPORTS: dict[str, tuple] = {}
# The chapters' code cells (their highlighted source, the largest part of a chapter's elements and
# most of axe's time on it) are the English page's, element for element, with the same stylesheets
# (test_code_cells_and_stylesheets_are_the_english_sites): axe checks them on the English page
# (tests/test_book.py), and on the Chinese page everything else.
CODE_CELLS = "div.cell_input div.highlight"
CHINESE_AXE_CONTEXT = f"{{exclude: [['{CODE_CELLS}']]}}"


def chinese_page(page: str, server: str, browser, axe) -> tuple:  # noqa: F811
    """open_page's (report, errors, remote) of zh/``page``, with the English prose left on it
    (ENGLISH_PROSE_JS) in the report's "englishProse"; its screenshots saved under SHOTS."""
    if page not in _REPORTS:
        report, errors, remote, shots = open_page(browser, f"{server}/zh/{page}.html", axe,
                                                  scripts={"englishProse": ENGLISH_PROSE_JS},
                                                  axe_context=CHINESE_AXE_CONTEXT)
        SHOTS.mkdir(parents=True, exist_ok=True)
        for suffix, png in shots.items():
            (SHOTS / f"zh__{page.replace('/', '__')}{suffix}.png").write_bytes(png)
        _REPORTS[page] = report, errors, remote
    return _REPORTS[page]


def _code_cells_and_stylesheets(page_file: Path) -> tuple[list[str], list[bytes]]:
    """A built page's code cells (their HTML) and the contents of its stylesheets."""
    soup = _soup(page_file)  # tests/test_book.py's
    return ([str(c) for c in soup.select(CODE_CELLS)],
            [(page_file.parent / link["href"].split("?")[0]).read_bytes()
             for link in soup.select("link[rel=stylesheet]")])


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ("genindex", "search")])
def test_code_cells_and_stylesheets_are_the_english_sites(page, sites):
    """What lets the Chinese pages' axe run leave the code cells to the English pages' run: the
    same cells, the same HTML, styled by stylesheets of the same content."""
    (zh, zh_css), (en, en_css) = (_code_cells_and_stylesheets(sites / lang / f"{page}.html")
                                  for lang in ("zh", ""))
    assert zh == en, f"zh/{page}: its code cells differ from the English page's (axe checks them there)"
    assert page.startswith("notebooks/") <= bool(en), f"{page}: no code cell found ({CODE_CELLS})"
    assert zh_css == en_css, f"zh/{page}: its stylesheets differ from the English page's"


def test_the_chinese_axe_run_leaves_out_the_code_cells_only(tmp_path, browser, axe):  # noqa: F811
    """Faint text in a code cell, which axe finds on a whole page, is not the Chinese run's to find;
    the same text outside a code cell is."""
    faint = '<span style="color: #ddd">{}</span>'.format
    found = []
    for context, outside in (("document", ""), (CHINESE_AXE_CONTEXT, ""),
                             (CHINESE_AXE_CONTEXT, faint("prose"))):
        page = tmp_path / f"page{len(found)}.html"
        code = f'<div class="cell_input"><div class="highlight"><pre>{faint("code")}</pre></div></div>'
        page.write_text(f'<html lang="zh-CN"><head><title>t</title></head><body><main>{code}'
                        f'<p>{outside}</p></main></body></html>')
        report, *_ = open_page(browser, page.as_uri(), axe, layout=False, axe_context=context)
        found.append([n for v in report["axe"] for n in v["nodes"]])
    assert len(found[0]) == 1 and ">code<" in found[0][0], found
    assert found[1] == [], found
    assert len(found[2]) == 1 and ">prose<" in found[2][0], found


@pytest.mark.parametrize("page", PAGES)
def test_chinese_page_renders_offline_in_chromium(page, server, browser, axe):  # noqa: F811
    """assert_page_works on the Chinese page (formulas, images, console, remote hosts, reflow,
    axe on all but the code cells, which are the English page's: CHINESE_AXE_CONTEXT); a chapter
    keeps every formula (typeset), image and widget of the English chapter, whose counts come from
    its HTML (tests/test_book.py checks the English page in the browser)."""
    report, errors, remote = chinese_page(page, server, browser, axe)
    assert_page_works(f"zh/{page}", report, errors, remote)
    if page.startswith("notebooks/"):
        lost = lost_from_english(report, _html(page), _html(page, "en"))
        assert not lost, f"zh/{page} lost what the English page has: {lost}"


def test_an_unchanged_chinese_site_is_not_built_again(sites):
    """Several workers and fixtures ask for the sites: a build that would change nothing is skipped
    (Sphinx alone re-reads every Chinese page, about half a minute of a core). The fixture's own
    build is that second build when the sites were built before (``make test`` builds them first);
    else the Chinese build runs once more here."""
    said = build_sites()
    if "the Chinese book is up to date" not in said:  # the fixture built it: build again
        done = subprocess.run([sys.executable, "-m", "book.build", "--lang", "zh"], cwd=ROOT,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout + done.stderr
        said = done.stdout
    assert "the Chinese book is up to date" in said, said


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ("genindex", "search")])  # no body
def test_each_page_links_to_the_same_page_in_the_other_language(page, sites):
    zh, en = _html(page), _html(page, "en")
    assert re.search(r'<html[^>]*\blang="zh-CN"', zh), "the Chinese page does not declare lang=zh-CN"
    up = "../" * page.count("/")
    assert f'<a href="../{up}{page}.html" hreflang="en" lang="en">English</a>' in zh
    assert f'<a href="{up}zh/{page}.html" hreflang="zh-CN" lang="zh-CN">中文</a>' in en
    assert (SITE / f"{page}.html").is_file() and (SITE / "zh" / f"{page}.html").is_file()


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_no_english_prose_left_on_a_chinese_chapter_page(page, server, browser, axe):  # noqa: F811
    """ENGLISH_PROSE_JS on the page as the browser shows it (read in the same load as the test
    above: chinese_page)."""
    left = chinese_page(page, server, browser, axe)[0]["englishProse"]
    name = page.removeprefix("notebooks/")
    assert not left, (f"zh/{page}: {len(left)} English paragraphs (translate locale/zh_CN/LC_MESSAGES/"
                      f"{name}.po, docs/translating.md): {left[:5]}")


# Compound terms as a Chinese reader types them, without spaces, and a chapter each must find.
SEARCHES = {
    "汇聚": "01_attention_cues",
    "位置编码": "06_self_attention_positional_encoding",
    "注意力汇聚": "02_attention_pooling",
    "核回归": "02_attention_pooling",
    "多头注意力": "05_multihead_attention",
    "旋转位置编码": "06_self_attention_positional_encoding",
    "自注意力": "07_transformer",
}


def _search(tab, url: str) -> list[str]:
    tab.goto(url, wait_until="load")
    tab.wait_for_function("document.querySelector('#search-results .search-summary')?.textContent",
                          timeout=60_000)
    return tab.eval_on_selector_all("#search-results li a", "links => links.map(a => a.href)")


def test_chinese_search_finds_compound_terms_typed_without_spaces(server, sites, browser):  # noqa: F811
    """Sphinx indexes the Chinese words jieba cuts (with the glossary's terms as its dictionary);
    site.js cuts a query into the index's words the same way. From disk the results come without
    excerpts, the page says why, and nothing fails in the console."""
    context = browser.new_context(viewport=PHONE)
    try:
        tab = context.new_page()
        for query, chapter in SEARCHES.items():
            hits = _search(tab, f"{server}/zh/search.html?q={query}")
            assert any(f"notebooks/{chapter}.html" in h for h in hits), (query, hits)
        errors = []
        tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: errors.append(str(e)))
        hits = _search(tab, (sites / "zh" / "search.html").as_uri() + "?q=位置编码")
        assert any("06_self_attention_positional_encoding" in h for h in hits), hits
        tab.wait_for_timeout(500)
        assert tab.locator(".search-file-note").count() == 1
        assert not errors, errors
    finally:
        context.close()


def test_chinese_search_excerpts_are_the_pages_prose(server, browser):  # noqa: F811
    """The Chinese site's excerpts are its pages' prose too: no TeX, no 上一页/下一页, no code."""
    context = browser.new_context(viewport=PHONE)
    try:
        tab = context.new_page()
        excerpts = search_excerpts(tab, f"{server}/zh/search.html?q=缩放点积注意力")
        assert len(excerpts) >= 3, excerpts
        assert not [e for e in excerpts if NOT_PROSE.search(e)], excerpts
        assert sum(bool(re.search(r"[\u3400-\u9fff]{8}", e)) for e in excerpts) >= 3, excerpts
    finally:
        context.close()


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_sections_have_the_english_sites_anchors(page, sites):
    """Switching language keeps the reader's section: a section's anchor is the same in both."""
    def anchors(path: Path) -> list[str]:
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        return [s["id"] for s in soup.select("main section[id]")]

    assert anchors(sites / "zh" / f"{page}.html") == anchors(sites / f"{page}.html")


def test_both_editions_weigh_at_most_75_mb(sites):
    size = sum(f.stat().st_size for f in sites.rglob("*") if f.is_file())
    assert size <= 75e6, f"the two sites weigh {size / 1e6:.1f} MB"


def test_a_chinese_diagram_opens_full_size_with_one_tap(server, browser):  # noqa: F811
    context = browser.new_context(viewport=PHONE, has_touch=True)
    try:
        tab = context.new_page()
        tab.goto(f"{server}/zh/notebooks/07_transformer.html", wait_until="load")
        link = tab.locator("a.diagram-open").first
        link.scroll_into_view_if_needed()
        link.tap()
        tab.wait_for_function("document.querySelector('dialog.diagram-viewer').open")
        assert re.search(r"[\u3400-\u9fff]", tab.locator("dialog.diagram-viewer button").text_content())
        tab.keyboard.press("Escape")
        tab.wait_for_function("!document.querySelector('dialog.diagram-viewer').open")
    finally:
        context.close()


# --------------------------------------------------------------------------- figure numbers
def _figure_numbers(html_file: Path) -> list[tuple[str | None, str | None]]:
    """(image, number) of each figure of a page, in order: the image file names a figure on both
    sites (the same output, the same hashed file), the number is the caption's "Fig. N" / "图 N"."""
    soup = BeautifulSoup(html_file.read_text(encoding="utf-8"), "html.parser")
    found = []
    for figure in soup.select("figure"):
        number = figure.select_one(".caption-number")
        digits = re.search(r"\d+", number.get_text()) if number else None
        found.append((figure.img.get("src") if figure.img else None, digits and digits.group()))
    return found


@pytest.mark.parametrize("page", CHAPTER_PAGES)
def test_every_figure_has_the_english_sites_number(page, sites):
    english, chinese = _figure_numbers(SITE / f"{page}.html"), _figure_numbers(SITE / "zh" / f"{page}.html")
    assert english and all(number for _, number in english), f"{page}: unnumbered English figures"
    wrong = [(i + 1, en, zh) for i, (en, zh) in enumerate(zip(english, chinese, strict=False)) if en != zh]
    assert len(chinese) == len(english) and not wrong, (
        f"zh/{page}: {len(chinese)} figures for the English {len(english)}; figure (position, English "
        f"(image, number), Chinese (image, number)) that differ: {wrong[:5]}"
    )


# --------------------------------------------------------------------------- the interface
# The words of the interface a reader meets on a page once its scripts ran: labels, tooltips and
# placeholders of every element, and the text outside the page's article (navigation, header,
# footer), plus the interface inside it (permalinks, copy buttons, captions' numbers, the pages'
# foot links, widget notes, the search page's messages). Page and section titles are the book's
# text (checked with the catalogues), not the interface: the links of the navigation, the book's
# title and the language link are left out, and so is what is marked English (the pages left in
# English).
INTERFACE_JS = r"""
(() => {
  const article = document.querySelector('article.bd-article');
  const inArticleUi = '.headerlink, .copybtn, .caption-number, .prev-next-subtitle, .widget-snapshot, '
    + '.untranslated-note, #search-results > h2, #search-results > p, button, summary';
  const content = 'nav.bd-docs-nav a, nav.page-toc a, .prev-next-title, .navbar-brand, .language-switch, '
    + '[lang="en"], script, style, pre, code, mjx-container, title, '
    + '#search-results ul';  // the results: each page's title and a snippet of its text
  const out = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest(content)) continue;
    const ui = !(article && article.contains(el)) || el.closest(inArticleUi);
    for (const a of ['aria-label', 'title', 'placeholder', 'data-bs-title', 'data-bs-original-title',
                     'data-tooltip', 'aria-description']) {
      const v = el.getAttribute(a);
      if (v && (ui || a !== 'title')) out.add(`${el.tagName.toLowerCase()}[${a}]: ${v}`);
    }
    if (!ui) continue;
    for (const n of el.childNodes) {
      const t = n.nodeType === Node.TEXT_NODE ? n.textContent.trim() : '';
      if (t) out.add(`${el.tagName.toLowerCase()}: ${t}`);
    }
  }
  return [...out];
})()
"""
ALLOWED_LATIN = re.compile(r"\bCtrl\b|\.(?:ipynb|md|pdf)\b|\bPDF\b|\bK\b")


def english_words(text: str) -> bool:
    """True if ``text`` (one interface string) is English: Latin words and no Chinese."""
    text = ALLOWED_LATIN.sub(" ", text.split(": ", 1)[1])
    return bool(re.search(r"[A-Za-z]{2,}", text)) and not re.search(r"[\u3400-\u9fff]", text)


def test_english_interface_words_are_caught():
    assert english_words("button[title]: Toggle primary sidebar")
    assert english_words("nav[aria-label]: Main")
    assert not english_words("button[title]: 打印为 PDF")
    assert not english_words("kbd: Ctrl") and not english_words("span: .ipynb")


@pytest.mark.parametrize("page", ["intro", CHAPTER_PAGES[0], *ENGLISH_PAGES, "genindex", "search?q=汇聚"])
def test_the_interface_is_in_chinese(page, server, browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        tab = context.new_page()
        path = page.replace("?", ".html?") if "?" in page else f"{page}.html"
        tab.goto(f"{server}/zh/{path}", wait_until="load")
        if "?q=" in page:
            tab.wait_for_selector("#search-results li", timeout=60_000)
        tab.locator("button.theme-switch-button:visible").first.hover()  # tooltips are made on demand
        tab.wait_for_timeout(300)
        words = tab.evaluate(INTERFACE_JS)
    finally:
        context.close()
    english = [w for w in words if english_words(w)]
    assert not english, (f"zh/{page}: English interface words (translate them in locale/zh_CN/"
                         f"LC_MESSAGES/interface.po, or list them in book/interface.py): {english}")
    assert any("搜索本书" in w for w in words), words  # the search box's placeholder


@pytest.mark.parametrize("page", [p for p in PAGES if p not in ("genindex", "search")])
def test_words_the_theme_writes_without_gettext_are_translated(page, sites):
    zh, en = _html(page), _html(page, "en")
    for attribute, english in THEME_HARDCODED:
        written = f'{attribute}="{english}"'
        assert written not in zh, f"zh/{page} still says {written} (book/_ext/chinese_interface.py)"
    assert 'title="Toggle primary sidebar"' in en, "the English site's own words must stay English"


@pytest.mark.parametrize("page", ENGLISH_PAGES)
def test_a_page_left_in_english_says_so(page, sites):
    soup = BeautifulSoup(_html(page), "html.parser")
    note = soup.select_one("article .untranslated-note")
    assert note and re.search(r"[\u3400-\u9fff]", note.get_text()), "no Chinese note that it is English"
    assert note.find_next_sibling("div", lang="en"), "the English text is not marked lang=en"
    for selector in ("#pst-page-toc-nav", "#jb-print-docs-body > h1", "#jb-print-toc nav"):
        assert all(e.get("lang") == "en" for e in soup.select(selector)), f"{selector} not marked lang=en"
    target = f"http://site/zh/{page}.html"
    for here in ("intro", CHAPTER_PAGES[0], page):
        nav = BeautifulSoup(_html(here), "html.parser").select("nav.bd-docs-nav a")
        base = f"http://site/zh/{here}.html"
        links = [a for a in nav if urljoin(base, a.get("href", "")).split("#")[0] == target]
        assert links, f"no link to {page} in the navigation of zh/{here}"
        assert all("英文" in a.get_text() for a in links), \
            f"the navigation of zh/{here} does not mark {page} as English: {links}"


@pytest.mark.parametrize("chapter", [p.stem for p in EXPLORER_CHAPTERS])
def test_chinese_explorers_show_the_saved_states_with_chinese_labels(chapter, sites, server,
                                                                   browser):  # noqa: F811
    """The Chinese chapter's explorers work as the English ones (tests/test_book.py), with the
    control labels of interface.po."""
    nb = json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    states = explorer_states(nb, chapter)
    # The Chinese pages show the English site's images (_static/explorer/, not a second copy).
    # On a phone-sized screen, tapped (the English site's test does the desktop)
    timings, labels = check_explorers(browser, f"{server}/zh/notebooks/{chapter}.html", states, sites,
                                      viewport=PHONE)
    readouts = timings.pop("readouts", [])
    _record_timings(f"zh/notebooks/{chapter} (phone)", timings)
    for text in readouts:  # one language: the readout's words are Chinese (figure titles aside)
        said = text.split(": ", 1)[-1] if text.count(": ") > 1 else text
        assert not re.search(r"\b(quer(y|ies)|keys?|row|column|value|weight|source|output)\b", said), text
    english = [[c["label"] for c in data["controls"]] for data in states]
    assert len(labels) == len(english)
    for zh, en in zip(labels, english, strict=True):
        untranslated = [e for z, e in zip(zh, en, strict=True) if not re.search(r"[\u3400-\u9fff]", z)]
        assert not untranslated, f"zh/{chapter}: control labels left in English: {untranslated}"
