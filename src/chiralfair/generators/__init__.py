"""Generators of IDIs: a registry mapping names to classes (design §6).

Names are imported on first use (PEP 562), so that :mod:`chiralfair.generators.names` can be read without
importing the generators, e.g. to refuse a bad command-line flag at once.
"""

import importlib

_MODULE_OF = {"GENERATORS": "base", "Generator": "base", "make_generator": "base", "register_generator": "base",
              "IDIRecorder": "recorder"}

__all__ = ["GENERATORS", "Generator", "IDIRecorder", "make_generator", "register_generator"]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
