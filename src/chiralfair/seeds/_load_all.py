"""Importing this module registers every built-in seed strategy."""

from . import cluster, iandd, initial, random  # noqa: F401
