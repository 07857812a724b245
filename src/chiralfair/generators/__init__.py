"""Generators of IDIs: a registry mapping names to classes (design §6).

Names are imported on first use (PEP 562), so that :mod:`chiralfair.generators.names` can be read without
importing the generators, e.g. to refuse a bad command-line flag at once.
"""

from .._lazy import lazy_attributes

_MODULE_OF = {"GENERATORS": "base", "Generator": "base", "make_generator": "base", "register_generator": "base",
              "IDIRecorder": "recorder"}

__all__ = ["GENERATORS", "Generator", "IDIRecorder", "make_generator", "register_generator"]


__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
