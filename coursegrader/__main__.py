"""``python -m coursegrader``: see ``coursegrader/cli.py``."""
import sys

from coursegrader.cli import main

sys.exit(main())
