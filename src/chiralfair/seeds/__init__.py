"""Seed strategies: random, rows, cluster, I and I&D (design §5).

Names are imported on first use (PEP 562), so that :mod:`chiralfair.seeds.names` can be read without importing
the strategies, e.g. to refuse a bad command-line flag at once.
"""

import importlib

_MODULE_OF = {"SEED_STRATEGIES": "base", "SeedStrategy": "base", "make_seed_strategy": "base",
              "register_seed_strategy": "base"}

__all__ = ["SEED_STRATEGIES", "SeedStrategy", "make_seed_strategy", "register_seed_strategy"]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
