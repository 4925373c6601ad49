"""Sphinx extension: every page with a body (all but the generated index and search pages) links to
the same page in the other language.

The English site is build/book/, the Chinese one build/book/zh/ (same page names; ``book.build``
builds both). The link sits at the top of the page body, with ``hreflang`` and ``lang`` attributes
naming the language it leads to; the build's ``language`` setting says which side a page is on.

A page of the Chinese site that no catalogue translates (``english_pages``: the benchmarks) says so
in Chinese at its top, and its body and the list of its sections are marked ``lang="en"`` so that
a screen reader reads them as English (WCAG 3.1.2); the navigation marks its title as English
(``book.build.stage_zh``).
"""

import pickle
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.locale import get_translation
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

_ = get_translation("sphinx")  # the Chinese site's words: book/interface.py
logger = logging.getLogger(__name__)


def _chinese(app: Sphinx) -> bool:
    return (app.config.language or "en").startswith("zh")


def _link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "body" not in context:  # generated pages without a body (the index of terms)
        return
    up = "../" * pagename.count("/")
    body = context["body"]
    if _chinese(app):
        href, lang, text = f"../{up}{pagename}.html", "en", "English"
        if pagename in app.config.english_pages:
            note = _("This page has no Chinese translation: it is shown in English.")
            body = f'<p class="untranslated-note">{note}</p>\n<div lang="en">\n{body}</div>\n'
    else:
        href, lang, text = f"{up}zh/{pagename}.html", "zh-CN", "中文"
    context["body"] = (
        f'<p class="language-switch"><a href="{href}" hreflang="{lang}" lang="{lang}">{text}</a></p>\n'
        + body
    )


# What the theme shows of an English page outside its body: the list of its sections, and the title
# and contents of its printed version.
ENGLISH_PARTS = ("#pst-page-toc-nav", "#jb-print-docs-body > h1", "#jb-print-toc nav")


def _mark_english_parts(app: Sphinx, exception) -> None:
    if exception is not None or not _chinese(app) or app.builder.format != "html":
        return
    from bs4 import BeautifulSoup

    for page in app.config.english_pages:
        path = Path(app.outdir) / f"{page}.html"
        if not path.is_file():
            continue
        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        parts = [e for selector in ENGLISH_PARTS for e in soup.select(selector) if e.get("lang") != "en"]
        for element in parts:
            element["lang"] = "en"
        if parts:
            path.write_text(str(soup), encoding="utf-8")


class EnglishSectionIds(SphinxTransform):
    """On the Chinese site, each section takes the anchor of the English section at the same
    place (its id in the English site's doctree, ``english_doctrees``), ahead of its own: a
    Chinese heading gives docutils no letters to make an id of ("#id11", which moves whenever a
    section is added), and the language link (``_js/site.js``) keeps the reader's section only if
    both editions name it alike. A page whose sections do not pair up keeps its own ids."""

    default_priority = 890

    def apply(self, **kwargs) -> None:
        folder = self.config.english_doctrees
        if not folder or not _chinese(self.app):
            return
        path = Path(folder) / f"{self.env.docname}.doctree"
        if not path.is_file():
            return
        with path.open("rb") as f:
            english = pickle.load(f)
        names = [s["ids"][0] for s in english.findall(nodes.section) if s["ids"]]
        sections = [s for s in self.document.findall(nodes.section) if s["ids"]]
        if len(names) != len(sections):
            logger.warning("%s: %d sections, the English page has %d: its anchors stay its own",
                           self.env.docname, len(sections), len(names))
            return
        for section, name in zip(sections, names, strict=True):
            if section["ids"][0] == name or name in self.document.ids:
                continue
            section["ids"].insert(0, name)
            self.document.ids[name] = section


def setup(app: Sphinx) -> dict:
    app.add_config_value("english_pages", [], "html", types=[list])
    app.add_config_value("english_doctrees", "", "env", types=[str])
    app.add_transform(EnglishSectionIds)
    app.connect("html-page-context", _link)
    app.connect("build-finished", _mark_english_parts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
