"""Seed strategies: random, rows, cluster, I and I&D, and the data_rows baseline (architecture: seed strategies).

Names are imported on first use (PEP 562), so that :mod:`chiralfair.seeds.names` can be read without importing
the strategies, e.g. to refuse a bad command-line flag at once.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"SEED_STRATEGIES": "base", "SeedStrategy": "base", "make_seed_strategy": "base",
              "register_seed_strategy": "base"}

__all__ = ["SEED_STRATEGIES", "SeedStrategy", "make_seed_strategy", "register_seed_strategy"]

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .base import SEED_STRATEGIES, SeedStrategy, make_seed_strategy, register_seed_strategy  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
