"""Importing this module registers every built-in seed strategy."""

from . import cluster, random  # noqa: F401
