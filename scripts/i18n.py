"""Moved: the Chinese edition's catalogues are ``book/i18n.py`` (``python -m book.i18n ...``).

This forwarder keeps two callers working until they name ``book.i18n``: ``scripts/assignments.py``
(``import i18n``, for ``generate --lang zh``) and the Makefile's ``assignments`` target. Importing it
gives the module ``book.i18n`` itself; running it runs ``python -m book.i18n``. Delete it then.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import book.i18n  # noqa: E402

if __name__ == "__main__":
    sys.exit(book.i18n.main())
sys.modules[__name__] = book.i18n
