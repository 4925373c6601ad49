"""Sphinx extension: keep every page of the book loadable with no network, and accessible.

* sphinx-thebe (always loaded by Jupyter Book 1) puts the address of its CDN bundle into every
  page, for a "live code" button this book does not use (launch buttons are off). This drops its
  scripts, and warns about any other script or stylesheet that would come from another host.
* The sidebar's expand/collapse toggles (a ``<summary>`` holding only a chevron icon) get a name a
  screen reader can say: "Sections of <page title>" (axe-core's rule ``summary-name``).
* A chapter cell's figure caption (cell metadata ``mystnb.figure.caption``) belongs to the cell's
  image: MyST-NB wraps every displayed output of the cell in a figure, so a cell that also shows a
  table or a widget snapshot's note would repeat the caption. Figures without an image are
  unwrapped before the figures are numbered.
* The theme's header bar is not drawn: pydata-sphinx-theme 0.17 fills its ``navbar_persistent``
  with a search field whenever the site's options do not name it, although sphinx-book-theme
  (which draws its own search field and toggles) leaves it empty. That bar held a second
  "primary" and "secondary" sidebar toggle, first in the page, and both themes' scripts wire only
  the first ``.primary-toggle`` / ``.secondary-toggle`` they find: the visible menu and contents
  buttons opened nothing, at any width (pydata-sphinx-theme issue 2451).
* The words ``_js/site.js`` shows (the diagram viewer, the search note) in the page's language.
* Chinese text in English pages (the glossaries) is marked ``lang="zh-Hans"``, so a screen reader
  reads it as Chinese (WCAG 3.1.2, language of parts). The mark is an inline node that keeps its
  text: a figure whose caption is all Chinese still has a caption to number.
"""

import re

from bs4 import BeautifulSoup
from docutils import nodes
from docutils.transforms import Transform
from sphinx.application import Sphinx
from sphinx.locale import get_translation
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)
_ = get_translation("sphinx")  # the Chinese site's words: book/interface.py


def _is_thebe(asset) -> bool:
    body = asset.attributes.get("body", "") if hasattr(asset, "attributes") else ""
    return "sphinx-thebe" in str(asset.filename or "") or "THEBE_JS_URL" in body


def _offline_assets(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    for key in ("script_files", "css_files"):
        assets = [a for a in context.get(key, []) if not _is_thebe(a)]
        for asset in assets:
            if "://" in str(asset.filename or ""):
                logger.warning("page %s loads %s from the network", pagename, asset.filename)
        context[key] = assets


# MathJax (2 MB of script) is loaded after DOMContentLoaded (_js/formulas.js starts it): deferred,
# as Sphinx writes it, it ran before the page became interactive, though MathJax draws nothing
# before the load event. Its tag stays in the page, not run (a type no browser runs), for
# formulas.js to start; without JavaScript nothing changes (no formula is drawn either way).
MATHJAX_LATER = "text/x-book-after-ready"


def _mathjax_after_ready(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    from sphinx.builders.html._assets import _JavaScript

    files = context.get("script_files", [])
    for i, asset in enumerate(files):
        if isinstance(asset, _JavaScript) and str(asset.filename).endswith(app.config.mathjax_path):
            attributes = {k: v for k, v in asset.attributes.items() if k not in ("defer", "async")}
            files[i] = _JavaScript(asset.filename, priority=asset.priority, **attributes,
                                   type=MATHJAX_LATER)


def name_toc_toggles(html: str) -> str:
    """Give each nameless sidebar ``<summary>`` a visually hidden text naming what it opens."""
    soup = BeautifulSoup(html, "html.parser")
    for summary in soup.select("details > summary"):
        if summary.get_text(strip=True):
            continue
        item = summary.find_parent("li")
        link = item.find("a", recursive=False) if item else None
        title = link.get_text(" ", strip=True) if link else ""
        hidden = soup.new_tag("span", attrs={"class": "visually-hidden"})
        hidden.string = _("Sections of %(title)s") % {"title": title} if title else _("Sections")
        summary.insert(0, hidden)
    return str(soup)


def _named_toc_toggles(app: Sphinx, pagename: str, templatename: str, context: dict, doctree):
    generate = context.get("generate_toctree_html")  # pydata-sphinx-theme's sidebar builder
    if generate is None or getattr(generate, "names_toggles", False):
        return

    def generate_named(*args, **kwargs) -> str:
        return name_toc_toggles(str(generate(*args, **kwargs)))

    generate_named.names_toggles = True
    context["generate_toctree_html"] = generate_named


class UnwrapFiguresWithoutImage(Transform):
    """Keep a cell's caption on its image: unwrap the figures MyST-NB made around outputs that
    offer no image (a table, a widget snapshot's note). Runs when the page is read, before
    Sphinx numbers the figures, so the numbers count only real figures."""

    default_priority = 500

    def apply(self, **kwargs) -> None:
        for figure in list(self.document.findall(nodes.figure)):
            if any(True for _ in figure.findall(nodes.image)) or any(
                str(c.get("mime_type", "")).startswith("image/")
                for c in figure.findall(nodes.container)
            ):
                continue
            kept = [c for c in figure.children if not isinstance(c, (nodes.caption, nodes.legend))]
            if kept:
                figure.replace_self(kept)
            else:
                figure.parent.remove(figure)


# Runs of CJK ideographs with the CJK and full-width punctuation around them (code and math are
# left alone).
CHINESE = re.compile(
    r"[\u3000-\u303f\uff00-\uffef]*[\u3400-\u4dbf\u4e00-\u9fff]"
    r"[\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]*"
)
SKIP = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.title, nodes.comment)


class MarkChinese(SphinxTransform):
    """Wrap each run of Chinese in the running text of an English page in ``<span lang="zh-Hans">``
    (docutils writes a ``language-`` class as the ``lang`` attribute). A Chinese page declares its
    language once, on ``<html>``."""

    default_priority = 510

    def apply(self, **kwargs) -> None:
        if (self.config.language or "en").startswith("zh"):
            return
        for text in list(self.document.findall(nodes.Text)):
            parent = text.parent
            if parent is None or not CHINESE.search(text) or any(
                isinstance(a, SKIP) for a in _ancestors(parent)
            ):
                continue
            pieces, last = [], 0
            for match in CHINESE.finditer(text):
                pieces.append(nodes.Text(text[last:match.start()]))
                pieces.append(nodes.inline(match.group(0), match.group(0), classes=["language-zh-Hans"]))
                last = match.end()
            pieces.append(nodes.Text(text[last:]))
            parent.replace(text, [p for p in pieces if not isinstance(p, nodes.Text) or str(p)])


class LazyImages(Transform):
    """A chapter's figures load as they come near the screen (``loading="lazy"``), so the page's
    load event, and MathJax, which starts at it, wait for no figure the reader has not reached.
    An explorer's figure loads at once: its controls swap it as soon as they move."""

    default_priority = 520

    def apply(self, **kwargs) -> None:
        for image in self.document.findall(nodes.image):
            if str(image.get("uri", "")).startswith("data:"):
                continue  # in the page already (the diagrams)
            cell = next((a for a in _ancestors(image) if isinstance(a, nodes.container)
                         and "cell" in a.get("classes", [])), None)
            if cell is not None and any('class="explorer"' in r.astext()
                                        for r in cell.findall(nodes.raw)):
                continue
            image["loading"] = "lazy"


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


def _no_header_bar(app: Sphinx, config) -> None:
    options = dict(config.html_theme_options or {})
    options.setdefault("navbar_persistent", [])
    config.html_theme_options = options


# The words of _js/site.js (book/interface.py lists them for the Chinese catalogue).
SITE_WORDS = (
    "Diagram, full size",
    "Close",
    "Open the diagram full size",
    "Opened from disk, the search lists the pages without excerpts: a page read from a file may "
    "not read the others. Serve the site (python -m http.server -d build/book) to see them.",
)


def _site_words(app: Sphinx) -> None:
    import json

    words = {w: str(_(w)) for w in SITE_WORDS}
    app.add_js_file(None, body="window.BOOK_WORDS = " + json.dumps(words, ensure_ascii=False) + ";",
                    priority=100)


def setup(app: Sphinx) -> dict:
    app.connect("config-inited", _no_header_bar)
    app.connect("builder-inited", _site_words)
    app.connect("html-page-context", _offline_assets, priority=900)
    app.connect("html-page-context", _named_toc_toggles, priority=900)
    app.connect("html-page-context", _mathjax_after_ready, priority=900)
    app.add_transform(UnwrapFiguresWithoutImage)
    app.add_transform(MarkChinese)
    app.add_transform(LazyImages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
