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

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.locale import get_translation

_ = get_translation("sphinx")  # the Chinese site's words: book/interface.py


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


def setup(app: Sphinx) -> dict:
    app.add_config_value("english_pages", [], "html", types=[list])
    app.connect("html-page-context", _link)
    app.connect("build-finished", _mark_english_parts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
