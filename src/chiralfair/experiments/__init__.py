"""Experiments: one run from names (:mod:`.run`) and grids of runs that resume and scale out on Dask.

Names are imported on first use (PEP 562), so that a grid file can be read and refused without importing the
models, the seed strategies and the generators.
"""

from .._lazy import lazy_attributes

_MODULE_OF = {"MAX_BUDGET": "budget", "RunConfig": "run", "RunOutcome": "run", "protected_list": "run",
              "run_experiment": "run", "validate_config": "run"}

__all__ = sorted(_MODULE_OF)


__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
