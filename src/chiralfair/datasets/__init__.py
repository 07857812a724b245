"""Datasets: the benchmarks built from their raw files, the data home, and the user's own data.

Benchmarks: census, compas, bank, german (:func:`load_dataset`); own data: :func:`from_frame`.

Names are imported on first use (PEP 562), so that :mod:`chiralfair.datasets.published` can be read without
importing pandas, e.g. to refuse a bad command-line flag at once.
"""

from .._lazy import lazy_attributes

_MODULE_OF = {"Dataset": "base", "DATASETS": "catalog", "dataset_names": "catalog", "dataset_spec": "catalog",
              "describe_datasets": "describe", "load_dataset": "catalog", "from_frame": "frame", "read_frame": "frame",
              "RAW_FILES": "home", "fetch_raw": "home", "resolve_data_home": "home", "user_cache_dir": "home"}

__all__ = ["DATASETS", "RAW_FILES", "Dataset", "dataset_names", "dataset_spec", "describe_datasets",
           "fetch_raw", "from_frame", "load_dataset", "read_frame", "resolve_data_home", "user_cache_dir"]


__getattr__, __dir__ = lazy_attributes(__name__, _MODULE_OF, globals())
