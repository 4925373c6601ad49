"""Chapter 09 diagrams."""

from . import diagram  # noqa: F401
from .draw import Diagram  # noqa: F401
