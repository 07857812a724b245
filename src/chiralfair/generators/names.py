"""Names of the built-in generators and the model methods each needs; imports nothing.

Read by the command line and the grid files to refuse an unknown generator, a gradient generator on a model
without a gradient, or a generator that needs probabilities on a labels-only model, before the generators are
imported. The classes' ``needs_gradient`` and ``needs_proba`` are what a run checks; these tables are a light index
of them, not read from the classes because importing any generator module loads pandas and pyarrow (through the
domain and the result records): that would make a refusal such as ``chiralfair run --generator eidig --model dtc``
load pandas, which ``tests/test_light_cli.py`` forbids. ``tests/test_generators_contract.py`` checks these tables
against the registry (:data:`chiralfair.generators.GENERATORS`), so the two cannot drift apart unnoticed.
"""

# name -> whether the generator needs input_gradient (its class's needs_gradient).
BUILTIN_GENERATORS: dict[str, bool] = {
    "adf": True,
    "aequitas": False,
    "aequitas-fully": False,
    "aequitas-random": False,
    "aequitas-semi": False,
    "aft": False,
    "eidig": True,
    "eidig-5": True,
    "eidig-inf": True,
    "expga": False,
    "grft": False,
    "kosei": False,
    "maft": False,
    "sg": False,
    "themis": False,
}

# name -> the module of chiralfair.generators that registers it: a run imports that module only, not every generator
# (``tests/test_generators_contract.py`` checks that each module registers its names).
GENERATOR_MODULES: dict[str, str] = {
    "adf": "adf",
    "aequitas": "aequitas",
    "aequitas-fully": "aequitas",
    "aequitas-random": "aequitas",
    "aequitas-semi": "aequitas",
    "aft": "aft",
    "eidig": "eidig",
    "eidig-5": "eidig",
    "eidig-inf": "eidig",
    "expga": "expga",
    "grft": "grft",
    "kosei": "kosei",
    "maft": "maft",
    "sg": "sg",
    "themis": "themis",
}

# The generators that need predict_proba (their class's needs_proba): refused on a labels-only model.
NEEDS_PROBABILITIES: frozenset[str] = frozenset({"adf", "eidig", "eidig-5", "eidig-inf", "grft", "maft"})

# ``generator="auto"`` (``--generator auto``): the generator is picked by what the model under test offers.
AUTO = "auto"
AUTO_CHOICES: dict[str, tuple[str, str]] = {
    "gradient": ("eidig", "the model has an input gradient: EIDIG follows it (white box)"),
    # Measured (benchmarks/results/blackbox_grid.md: HGB, RandomForest, LightGBM and a raw-frame pipeline; census sex
    # and race, compas race, bank age; cluster and random seeds; 20,000 queries; median of 3 random states): AEQUITAS
    # found the most IDIs in 13 of the 28 cells and never less than 0.68x the most (geometric mean 0.92x); MAFT led
    # in 11 (up to 1.46x AEQUITAS, on census sex) but fell to 0.30x the most elsewhere (geometric mean 0.70x), GRFT
    # led in 3 (0.68x), KOSEI in 1.
    "proba": ("aequitas", "the model gives probabilities but no gradient: AEQUITAS found the most IDIs of the "
                          "black-box generators in 13 of 28 cells at an equal query budget on tree ensembles and "
                          "pipelines, and never less than 0.68x the most (benchmarks/results/blackbox_grid.md)"),
    "labels": ("aequitas", "the model answers labels only: AEQUITAS needs nothing but labels"),
}


def auto_generator(*, has_gradient: bool, has_proba: bool) -> tuple[str, str]:
    """The generator ``"auto"`` stands for on a model, and why.

    Parameters
    ----------
    has_gradient : bool
        Whether the model has ``input_gradient``.
    has_proba : bool
        Whether the model has ``predict_proba``.

    Returns
    -------
    name : str
        A built-in generator name: ``eidig`` (gradient and probabilities) or ``aequitas``.
    reason : str
        One sentence saying why, for the run's notes and ``meta["generator_choice"]``.
    """
    offers = "gradient" if has_gradient and has_proba else "proba" if has_proba else "labels"
    return AUTO_CHOICES[offers]
