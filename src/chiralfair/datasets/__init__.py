"""Datasets: the benchmarks built from their raw files, the data home, and the user's own data.

Benchmarks: census, compas, bank, german (:func:`load_dataset`); own data: :func:`from_frame`.
"""

from .base import Dataset
from .catalog import DATASETS, dataset_names, dataset_spec, describe_datasets, load_dataset
from .frame import from_frame
from .home import RAW_FILES, fetch_raw, resolve_data_home, user_cache_dir

__all__ = ["DATASETS", "RAW_FILES", "Dataset", "dataset_names", "dataset_spec", "describe_datasets",
           "fetch_raw", "from_frame", "load_dataset", "resolve_data_home", "user_cache_dir"]
