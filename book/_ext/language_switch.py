"""Sphinx extension: every page with a body (all but the generated index and search pages) links to
the same page in the other language.

The English site is build/book/, the Chinese one build/book/zh/ (same page names; scripts/build_book.py
builds both). The link sits at the top of the page body, with ``hreflang`` and ``lang`` attributes
naming the language it leads to; the build's ``language`` setting says which side a page is on.
"""

from sphinx.application import Sphinx


def _link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "body" not in context:  # generated pages without a body (the index of terms)
        return
    up = "../" * pagename.count("/")
    if (app.config.language or "en").startswith("zh"):
        href, lang, text = f"../{up}{pagename}.html", "en", "English"
    else:
        href, lang, text = f"{up}zh/{pagename}.html", "zh-CN", "中文"
    context["body"] = (
        f'<p class="language-switch"><a href="{href}" hreflang="{lang}" lang="{lang}">{text}</a></p>\n'
        + context["body"]
    )


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _link)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
