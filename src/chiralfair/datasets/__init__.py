"""Datasets: the benchmarks built from their raw files, the data home, and the user's own data.

Benchmarks: census, compas, bank, german (:func:`load_dataset`); own data: :func:`from_frame`.

Names are imported on first use (PEP 562), so that :mod:`chiralfair.datasets.published` can be read without
importing pandas, e.g. to refuse a bad command-line flag at once.
"""

import importlib

_MODULE_OF = {"Dataset": "base", "DATASETS": "catalog", "dataset_names": "catalog", "dataset_spec": "catalog",
              "describe_datasets": "describe", "load_dataset": "catalog", "from_frame": "frame",
              "RAW_FILES": "home", "fetch_raw": "home", "resolve_data_home": "home", "user_cache_dir": "home"}

__all__ = ["DATASETS", "RAW_FILES", "Dataset", "dataset_names", "dataset_spec", "describe_datasets",
           "fetch_raw", "from_frame", "load_dataset", "resolve_data_home", "user_cache_dir"]


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted({*globals(), *__all__})
