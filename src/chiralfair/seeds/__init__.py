"""Seed strategies: random, rows, cluster, I and I&D (design §5)."""

from .base import SEED_STRATEGIES, SeedStrategy, make_seed_strategy, register_seed_strategy

__all__ = ["SEED_STRATEGIES", "SeedStrategy", "make_seed_strategy", "register_seed_strategy"]
