"""Names of the built-in seed strategies, and which train a chiral model; imports nothing.

Read by the command line to refuse an unknown strategy before the strategies are imported.
``tests/test_seeds_contract.py`` checks this list against the registry (:data:`chiralfair.seeds.SEED_STRATEGIES`).
"""

BUILTIN_SEED_STRATEGIES: tuple[str, ...] = ("cluster", "data_rows", "expga", "i", "iandd", "random", "rows")

# name -> the module of chiralfair.seeds that registers it: a run imports that module only, not every strategy
# (``tests/test_seeds_contract.py`` checks that each module registers its names).
SEED_STRATEGY_MODULES: dict[str, str] = {"cluster": "cluster", "data_rows": "data_rows", "expga": "expga",
                                         "i": "initial", "iandd": "iandd", "random": "random", "rows": "random"}

# Strategies that train a chiral model and take ``chiral_random_state`` (subclasses of InitialIDISeeds).
CHIRAL_SEED_STRATEGIES: tuple[str, ...] = ("i", "iandd")


def chiral_params(strategy: str, model_random_state: int, cache_dir=None, reference: bool = True) -> dict:
    """Parameters tying a strategy's chiral model to the model under test: its ``random_state`` and cache.

    The chiral model is a property of the model under test (trained like it, on mutated data), so its split,
    mutation and training seed come from the model's ``random_state``, and it is cached in the model's cache
    folder; the selection's own ``random_state`` varies only the selection, and repeats share one chiral model.

    Parameters
    ----------
    strategy : str
        A seed strategy name.
    model_random_state : int
        The model under test's ``random_state``.
    cache_dir : str or path-like, optional
        The model cache folder.
    reference : bool, default=True
        Whether a zoo model's chiral model may be the network shipped with the package (its recipe matching).

    Returns
    -------
    dict
        ``chiral_random_state``, ``chiral_cache_dir`` and ``chiral_reference`` for strategies in
        :data:`CHIRAL_SEED_STRATEGIES`, else empty.
    """
    if strategy not in CHIRAL_SEED_STRATEGIES:
        return {}
    return {"chiral_random_state": model_random_state, "chiral_cache_dir": cache_dir, "chiral_reference": reference}
