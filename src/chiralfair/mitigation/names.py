"""Names of the built-in mitigation methods; imports nothing.

Read by the command line to refuse an unknown ``--method`` before the methods are imported (with the names of
installed plugins, read from their metadata); ``tests/test_mitigation.py`` checks this list against the registry
(:data:`chiralfair.mitigation.METHODS`). A new built-in method is its class (registered by name in its module,
imported by ``_load_all``) and its name here.
"""

BUILTIN_METHODS: tuple[str, ...] = ("paper", "counterfactual", "unaware", "consistency", "reductions", "auto")
# The method retrain() runs when none is named: the I&D paper's retraining with the IDIs found.
DEFAULT_METHOD = BUILTIN_METHODS[0]
