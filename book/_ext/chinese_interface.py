"""Sphinx extension: on the Chinese site, the website's interface in Simplified Chinese.

With ``language = "zh_CN"`` Sphinx and the theme translate their own words where they have a
translation. The book's interface catalogue (``locale/zh_CN/LC_MESSAGES/interface.po``; the list of
words is ``book/interface.py``) is compiled by the build into ``_locale/`` of the Chinese source
tree, which ``locale_dirs`` names, so Sphinx reads it before its own and the theme's catalogues:
the book's words override theirs (some of the theme's are Traditional Chinese) and fill the gaps.
This extension does the rest, on Chinese pages only:

* sphinx-book-theme registers its own catalogue ("booktheme") before this extension loads; the
  book's copy of that domain is put in front of it;
* the search box's placeholder and the author are configuration values: translated once the
  configuration is read;
* the theme writes a few words into its templates without gettext (``THEME_HARDCODED``): they are
  translated in the written pages.

Only the standard library is imported at the top: ``book.interface`` reads ``THEME_HARDCODED``.
"""

import html
import re
from pathlib import Path

# (attribute, English) the theme writes without gettext (sphinx-book-theme 1.3's templates).
THEME_HARDCODED = [
    ("title", "Toggle primary sidebar"),  # the button left of the header: the chapters
    ("aria-label", "Toggle primary sidebar"),
    ("title", "Toggle secondary sidebar"),  # the button that opens the page's contents
    ("aria-label", "Toggle secondary sidebar"),
    ("aria-label", "Main"),  # the <nav> of the chapters
    ("aria-label", "Page"),  # the <nav> of the page's sections
]
CONFIG_WORDS = ("author", "search_bar_text")  # translated configuration values


def _chinese(config) -> bool:
    return (config.language or "en").startswith("zh")


def _translate_config(app, config) -> None:
    if not _chinese(config):
        return
    from sphinx.locale import get_translation

    _ = get_translation("sphinx")
    config.author = str(_(config.author))
    options = dict(config.html_theme_options or {})
    if "search_bar_text" in options:
        options["search_bar_text"] = str(_(options["search_bar_text"]))
    config.html_theme_options = options


def _prefer_book_catalogue(app) -> None:
    """Put the book's "booktheme" catalogue in front of sphinx-book-theme's own."""
    if not _chinese(app.config):
        return
    import gettext

    from sphinx.locale import translators

    for folder in app.config.locale_dirs:
        try:
            mine = gettext.translation("booktheme", str(Path(app.srcdir, folder)),
                                       languages=[app.config.language])
        except OSError:
            continue
        theirs = translators.get(("general", "booktheme"))
        if theirs is not None and theirs is not mine:
            mine.add_fallback(theirs)
        translators[("general", "booktheme")] = mine
        return


def translate_hardcoded(page: str, translate) -> str:
    """``page`` (HTML) with the theme's hard-coded attribute words replaced by ``translate(word)``."""
    for attribute, english in THEME_HARDCODED:
        chinese = translate(english)
        if chinese != english:
            page = re.sub(rf'(\s{attribute}=")' + re.escape(html.escape(english)) + '"',
                          lambda m, c=chinese: m.group(1) + html.escape(c) + '"', page)
    return page


def _translate_pages(app, exception) -> None:
    if exception is not None or not _chinese(app.config) or app.builder.format != "html":
        return
    from sphinx.locale import get_translation

    _ = get_translation("sphinx")
    for path in Path(app.outdir).rglob("*.html"):
        page = path.read_text(encoding="utf-8")
        new = translate_hardcoded(page, lambda english: str(_(english)))
        if new != page:
            path.write_text(new, encoding="utf-8")


def setup(app) -> dict:
    app.connect("config-inited", _translate_config)
    app.connect("builder-inited", _prefer_book_catalogue)
    app.connect("build-finished", _translate_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
