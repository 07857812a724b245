"""Names of the built-in generators and whether each needs the model's input gradient; imports nothing.

Read by the command line to refuse an unknown generator, or a gradient generator on a model without a gradient,
before the generators are imported. ``tests/test_generators_contract.py`` checks this table against the
registry (:data:`chiralfair.generators.GENERATORS`).
"""

BUILTIN_GENERATORS: dict[str, bool] = {
    "adf": True,
    "aequitas": False,
    "aequitas-fully": False,
    "aequitas-random": False,
    "aequitas-semi": False,
    "eidig": True,
    "eidig-5": True,
    "eidig-inf": True,
    "expga": False,
    "kosei": False,
    "sg": False,
    "themis": False,
}
