"""Generators of IDIs: a registry mapping names to classes (design §6)."""

from .base import GENERATORS, Generator, make_generator, register_generator
from .recorder import IDIRecorder

__all__ = ["GENERATORS", "Generator", "IDIRecorder", "make_generator", "register_generator"]
