"""Importing this module registers every built-in generator."""

from . import aequitas  # noqa: F401
from . import sg  # noqa: F401
