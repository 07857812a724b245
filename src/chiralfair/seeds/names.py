"""Names of the built-in seed strategies; imports nothing.

Read by the command line to refuse an unknown strategy before the strategies are imported.
``tests/test_seeds_contract.py`` checks this list against the registry (:data:`chiralfair.seeds.SEED_STRATEGIES`).
"""

BUILTIN_SEED_STRATEGIES: tuple[str, ...] = ("cluster", "i", "iandd", "random", "rows")
