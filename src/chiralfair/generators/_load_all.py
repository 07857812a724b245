"""Importing this module registers every built-in generator."""

# One line per module, so that branches adding generators merge cleanly.
# ruff: noqa: I001
from . import adf  # noqa: F401
from . import aft  # noqa: F401
from . import aequitas  # noqa: F401
from . import eidig  # noqa: F401
from . import expga  # noqa: F401
from . import grft  # noqa: F401
from . import kosei  # noqa: F401
from . import maft  # noqa: F401
from . import sg  # noqa: F401
from . import themis  # noqa: F401
