"""Experiments: grids of runs (of :func:`chiralfair.pipeline.run_experiment`) that resume and scale out on Dask.

Names are imported on first use (PEP 562), so that a grid file can be read and refused without importing the
models, the seed strategies and the generators.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"Grid": "grid", "load_grid": "grid", "Cell": "cells", "cell_key": "cells",
              "run_grid": "execution", "grid_status": "execution", "GridRun": "execution", "GridStatus": "execution",
              "GridInterrupted": "execution", "grid_frame": "tables", "grid_table": "tables",
              "seed_ratios": "tables", "write_tables": "tables", "without_timings": "tables",
              "median_table": "tables"}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .cells import Cell, cell_key  # noqa: F401
    from .execution import GridInterrupted, GridRun, GridStatus, grid_status, run_grid  # noqa: F401
    from .grid import Grid, load_grid  # noqa: F401
    from .tables import grid_frame, grid_table, median_table, seed_ratios, without_timings, write_tables  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
