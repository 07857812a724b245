"""Generators of IDIs: a registry mapping names to classes (architecture: generators).

Names are imported on first use (PEP 562), so that :mod:`chiralfair.generators.names` can be read without
importing the generators, e.g. to refuse a bad command-line flag at once.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"GENERATORS": "base", "Generator": "base", "make_generator": "base", "register_generator": "base",
              "IDIRecorder": "recorder"}

__all__ = ["GENERATORS", "Generator", "IDIRecorder", "make_generator", "register_generator"]

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .base import GENERATORS, Generator, make_generator, register_generator  # noqa: F401
    from .recorder import IDIRecorder  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
