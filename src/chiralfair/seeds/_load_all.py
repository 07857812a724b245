"""Importing this module registers every built-in seed strategy."""

from . import cluster, expga, iandd, initial, random  # noqa: F401
