"""Names of the built-in mitigation methods; imports nothing.

Read by the command line to refuse an unknown ``--method`` before the methods are imported;
``tests/test_mitigation.py`` checks this list against the registry (:data:`chiralfair.mitigation.METHODS`).
"""

BUILTIN_METHODS: tuple[str, ...] = ("paper", "counterfactual", "unaware", "consistency")
# Not a method class: retrain() tries the methods above at several strengths and picks one on validation rows.
AUTO_METHOD = "auto"
