"""The book's course tools used to live here; they are the package ``coursegrader`` now.

    python scripts/assignments.py ARGS   is   python -m coursegrader ARGS

(kept so that scripts and habits that call this file keep working; docs/instructors.md).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: coursegrader

from coursegrader.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
