"""Importing this module registers every built-in seed strategy."""

from . import cluster, data_rows, expga, iandd, initial, random  # noqa: F401
