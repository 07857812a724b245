"""Datasets: the benchmarks built from their raw files, the data home, and the user's own data.

Benchmarks: census, compas, bank, german (:func:`load_dataset`); own data: :func:`from_frame`.

Names are imported on first use (PEP 562), so that :mod:`chiralfair.datasets.published` can be read without
importing pandas, e.g. to refuse a bad command-line flag at once.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

_MODULE_OF = {"Dataset": "base", "DATASETS": "catalog", "dataset_names": "catalog", "dataset_spec": "catalog",
              "describe_datasets": "describe", "load_dataset": "catalog", "from_frame": "frame", "read_frame": "frame",
              "RAW_FILES": "home", "fetch_raw": "home", "resolve_data_home": "home", "user_cache_dir": "home"}

__all__ = ["DATASETS", "RAW_FILES", "Dataset", "dataset_names", "dataset_spec", "describe_datasets",
           "fetch_raw", "from_frame", "load_dataset", "read_frame", "resolve_data_home", "user_cache_dir"]

if TYPE_CHECKING:  # the real names, for type checkers and the API reference (griffe)
    from .base import Dataset  # noqa: F401
    from .catalog import DATASETS, dataset_names, dataset_spec, load_dataset  # noqa: F401
    from .describe import describe_datasets  # noqa: F401
    from .frame import from_frame, read_frame  # noqa: F401
    from .home import RAW_FILES, fetch_raw, resolve_data_home, user_cache_dir  # noqa: F401

if not TYPE_CHECKING:  # type checkers read the imports above, so a name not there is an error, not `object`
    __getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
