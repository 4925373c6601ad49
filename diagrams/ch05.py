"""Chapter 05 diagrams."""

from . import diagram  # noqa: F401
from .draw import Diagram  # noqa: F401
