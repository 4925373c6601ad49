"""The words of the website's interface, which the Chinese site says in Chinese.

The book's own text comes from the chapters' catalogues; these are the rest: the theme's buttons,
labels and search box, the navigation's captions, the note under a widget's snapshot, the titles
of the pages that stay English. Their Chinese is in the catalogue
``locale/zh_CN/LC_MESSAGES/interface.po`` (``python -m book.i18n update`` keeps it in step with
this list; the tests fail while one is untranslated). Each message's ``msgctxt`` is the domain
that reads it:

* ``sphinx``: read through Sphinx's gettext catalogue "sphinx", by Sphinx itself, by
  pydata-sphinx-theme's templates and by the book's Sphinx extensions (``book/_ext``). The Chinese
  build writes them to ``_locale/zh_CN/LC_MESSAGES/sphinx.mo`` in its source tree and sets
  ``locale_dirs``, which Sphinx reads before its own and the theme's translations: where they
  have a Chinese word (some in Traditional usage), ours wins; where they have none, ours fills.
  The theme's few words written without gettext (``THEME_HARDCODED``), the search box's
  placeholder and the author are in this domain too: ``book/_ext/chinese_interface.py`` translates
  them.
* ``booktheme``: sphinx-book-theme's own catalogue (its buttons' tooltips), put before the theme's.
* ``book``: words the build writes into the Chinese sources (``book.build.stage_zh``).

A word missing from the catalogue stays English on the Chinese site (tests/test_book_zh.py fails
on English interface text).
"""

from __future__ import annotations

from collections.abc import Callable

from book import ROOT
from book._ext.chinese_interface import THEME_HARDCODED
from book._ext.offline_book import SITE_WORDS
from book.chapters import chapters
from book.live import LIVE_WORDS
from book.pages import (
    CHAPTERS_CAPTION,
    REFERENCE_CAPTION,
    bench_page,
    english_only_pages,
    page_title,
)
from book.widgets import EXPLORER, EXPLORER_WORDS, NOTES, STATES, axis_labels, explorer_labels

CATALOGUE = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "interface.po"
AUTHOR = "the authors of the attention textbook"  # book/_config.yml's author
SEARCH_BOX = "Search this book..."  # Jupyter Book's placeholder of the search box
ENGLISH_MARK = "%(title)s (in English)"  # the navigation title of a page that stays English

SPHINX = [
    # pydata-sphinx-theme
    ("Color mode", "the button that switches between light, dark and the system's colours"),
    ("System Settings", "the colour mode that follows the operating system"),
    ("Light", "colour mode"),
    ("Dark", "colour mode"),
    ("Search", "the search button and the search page's title"),
    ("Skip to main content", "the first link a keyboard reaches"),
    ("Back to top", "the button that appears when one scrolls down"),
    ("On this page", "the page's table of contents"),
    ("previous", "the link to the previous page, at the page's foot"),
    ("next", "the link to the next page, at the page's foot"),
    ("© Copyright %(copyright)s.", "the footer; %(copyright)s is the year"),
    # Sphinx: the permalinks next to headings, figures, tables, code and formulas
    ("Link to this heading", "the tooltip of the '#' after a heading"),
    ("Link to this image", "the tooltip of the '#' after a figure's caption"),
    ("Link to this table", "the tooltip of the '#' after a table's caption"),
    ("Link to this code", "the tooltip of the '#' after a code block's caption"),
    ("Link to this equation", "the tooltip of the '#' after a numbered formula"),
    # book/_ext: offline_book.py (the sidebar's toggles), language_switch.py (pages left English)
    ("Sections of %(title)s", "the hidden name of a sidebar toggle; %(title)s is the page"),
    ("Sections", "the hidden name of a sidebar toggle of a page without a title"),
    (SEARCH_BOX, "the search box's placeholder and label (chinese_interface.py)"),
    (AUTHOR, "the author in the footer, book/_config.yml (chinese_interface.py)"),
    ("This page has no Chinese translation: it is shown in English.",
     "the note at the top of a page that stays English (the benchmarks)"),
    *[(word, "book/_js/site.js: the diagram viewer (its name, its close button, the tooltip of a "
             "diagram), the note on the search page of a site opened from disk")
      for word in SITE_WORDS],
    *[(english, "written by the theme without gettext; book/_ext/chinese_interface.py translates it")
      for english in dict.fromkeys(e for _, e in THEME_HARDCODED)],
]

BOOKTHEME = [
    ("Print to PDF", "the tooltip of the print button"),
    ("Download notebook file", "the download menu's item for the chapter's notebook"),
    ("Download source file", "the download menu's item for a page's Markdown"),
    ("Download this page", "the tooltip of the download menu"),
    ("Fullscreen mode", "the tooltip of the full-screen button"),
    ("Contents", "the title of the page's table of contents"),
    ("By", "the footer, before the authors"),
]

def book_messages() -> list[tuple[str, str]]:
    """The ``book`` domain: (English, where) pairs, the English pages' current titles included."""
    found = [
        (CHAPTERS_CAPTION, "the navigation's caption above the chapters"),
        (REFERENCE_CAPTION, "the navigation's caption above the glossary, references and benchmarks"),
        (ENGLISH_MARK, "the navigation title of a page that stays English; %(title)s is its title"),
        *[(note, "the note above a widget's snapshot; keep {settings} and the markup")
          for note in NOTES],
        *[(word, "an interactive figure's note, live status, changing alt text, the name of its "
                 "row of head buttons, and the words naming a heatmap's cell under the pointer (row, "
                 "column, value); keep {settings}, {about} and {control}") for word in EXPLORER_WORDS],
        *[(label, "the label of a control of a chapter's interactive figure")
          for label in explorer_control_labels()],
        *[(word, "the live boxes of chapters 7 and 8 (book/live.py): their notes, labels, status "
                 "and messages; keep {n}, {ms}, {why}, {words}, {max}, {src}, {out}, {kind}, "
                 "{layer}, {head}, {query}, {key}, {w}, {c}, {chars} and <unk>, <eos>")
          for word in LIVE_WORDS.values()],
        *[(label, "the name of a heatmap's axis or colour bar in a chapter's interactive figure, "
                  "said by the readout of the cell under the pointer")
          for label in explorer_axis_labels()],
    ]
    for page, text in english_page_texts().items():
        found.append((page_title(text, page), f"the title of {page}, shown in the navigation"))
    return found


def explorer_control_labels() -> list[str]:
    """The labels of the controls of every chapter's explorers (attnlib.explorer), in order."""
    import json

    labels = []
    for path in chapters():
        nb = json.loads(path.read_text(encoding="utf-8"))
        for cell in nb["cells"]:
            for out in cell.get("outputs", []):
                if EXPLORER in out.get("data", {}):
                    labels += explorer_labels(out["data"][EXPLORER])
    return list(dict.fromkeys(labels))


def explorer_axis_labels() -> list[str]:
    """The heatmaps' axis labels that the explorers' readouts say (book/explorers/, saved states)."""
    import json

    labels = []
    for path in sorted(STATES.glob("*/*.json")):
        labels += axis_labels(json.loads(path.read_text(encoding="utf-8")))
    return list(dict.fromkeys(labels))


def english_page_texts() -> dict[str, str]:
    """The pages the Chinese site keeps in English: name -> their markdown (the page's own)."""
    texts = {}
    for page in english_only_pages():
        if page == "results/bench":
            texts[page] = bench_page()
        else:
            texts[page] = (ROOT / f"{page}.md").read_text(encoding="utf-8")
    return texts


def messages() -> list[tuple[str, str, str]]:
    """Every interface message: (domain, English, where it shows)."""
    return (
        [("sphinx", english, where) for english, where in SPHINX]
        + [("booktheme", english, where) for english, where in BOOKTHEME]
        + [("book", english, where) for english, where in book_messages()]
    )


def sayer(translations: dict[tuple[str, str], str], domain: str = "book") -> Callable[[str], str]:
    """A function giving the translation of an English message of ``domain`` (itself if none)."""
    return lambda english: translations.get((domain, english), english)
