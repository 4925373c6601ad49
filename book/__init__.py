"""The book's website, in English and in Chinese, and the Chinese edition's catalogues.

    python -m book.build                  # the English site, build/book/
    python -m book.build --lang zh        # the Chinese site, build/book/zh/ (after book.i18n generate)
    python -m book.build --deps-only      # fetch MathJax and axe-core once (the only network use)
    python -m book.i18n update|check|generate   # the catalogues locale/zh_CN/LC_MESSAGES/*.po

Modules, each importing only those above it (no circle):

* ``chapters``: the chapter notebooks, their markdown, sections and glossary tables;
* ``pages``: the pages made from the chapters (glossary, references, benchmarks) and the table of
  contents;
* ``widgets``: saved widget views turned into static snapshots;
* ``figures``: what a figure's caption and text alternative must be;
* ``vendor``: MathJax and axe-core from the npm registry, pinned and hash-checked;
* ``interface``: the website's interface words the Chinese site translates (theme, navigation);
* ``i18n``: the gettext catalogues and the Chinese notebooks made from them;
* ``build``: stages the Jupyter Book source and builds both sites with Sphinx.

The Jupyter Book configuration (``_config.yml``), the front page (``intro.md``), the Sphinx
extensions (``_ext/``) and the stylesheet (``_css/``) live beside them; docs/book.md and
docs/translating.md describe the whole.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the repository
BOOK = ROOT / "book"
