"""Every check a run makes before it spends anything, written once: names, budgets, protected attributes, gradients.

These checks import nothing heavy (only name tables: :mod:`chiralfair.datasets.published`,
:mod:`chiralfair.generators.names`, :mod:`chiralfair.seeds.names`, :mod:`chiralfair.models.zoo`), so a refused
flag answers before torch, scikit-learn, shap or z3 is imported. A name that is not built in is looked up among
the entry points installed packages declare (``chiralfair.generators``, ``chiralfair.seed_strategies``: their
metadata only) and in its registry (a generator or seed strategy registered in Python), which costs that import.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from .._registry import ENTRY_POINT_GROUPS, installed_entry_points, unknown_name
from .._validation import check_int
from ..exceptions import ConfigError, DatasetError, ModelCapabilityError
from ..mitigation.names import BUILTIN_METHODS as MITIGATION_METHODS
from ..mitigation.names import DEFAULT_METHOD as DEFAULT_MITIGATION_METHOD

__all__ = ["DEFAULT_MITIGATION_METHOD", "MITIGATION_METHODS"]  # re-exported for the command line's help

# Largest max_global x (max_local + 1) accepted by a run. Pairs are streamed to disk when a run folder is given,
# but the recorder keeps every tested key and every IDI key (8 bytes each, plus merge space) for the counting
# rule. Measured at the cap (census / sex / dnn / eidig-inf, 99,999 x 999): 12.0 M tested keys, 10.5 M IDIs,
# peak memory 995-1027 MiB in two runs (benchmarks/results/whole_command.md); a larger budget passes 1 GB.
MAX_BUDGET = 10**8

# Share of the data held out when no test rows are given (a stratified split, as the benchmarks' 60/40).
DEFAULT_TEST_SIZE = 0.4

GRADIENT_HINT = ("gradient generators (adf, eidig) run on models with input_gradient(): dnn, lr and mlp among the "
                 "zoo models; black-box generators (aequitas, sg, expga, kosei, themis) run on any model")


# Joins the columns of one protected attribute spread over several (one-hot) columns in a text spelling
# (``--protected "sex_Female+sex_Male,race"``); a list of names (a schema's, Python's) takes names as they are.
GROUP_SEPARATOR = "+"


def protected_list(text: str | Sequence[str] | None) -> tuple:
    """Parse ``"race,sex"`` (or a sequence of names) into a tuple of attributes; empty items are dropped.

    In text, ``,`` separates attributes and ``+`` joins the columns of one attribute spread over several (one-hot)
    columns: ``"sex_Female+sex_Male,race"`` is ``(("sex_Female", "sex_Male"), "race")``. The items of a sequence
    are taken as they are (a tuple or list of columns is one attribute, a name is a name even if it holds ``+``).

    Parameters
    ----------
    text : str, sequence or None
        ``"race,sex"``, ``"sex_Female+sex_Male"``, ``["race", "sex"]``, ``[("sex_Female", "sex_Male")]``, or None
        (no attribute given).

    Returns
    -------
    tuple
        One item per attribute: a name, or a tuple of the columns of one attribute.

    Raises
    ------
    ConfigError
        For a ``+`` with no column on one side (``"sex_Female+"``), showing the spelling meant.
    """
    if text is None:
        return ()
    if not isinstance(text, str):
        return tuple(s.strip() if isinstance(s, str) else s for s in text if not isinstance(s, str) or s.strip())
    out: list = []
    for item in (s.strip() for s in text.split(",")):
        if not item:
            continue
        if GROUP_SEPARATOR not in item:
            out.append(item)
            continue
        columns = [c.strip() for c in item.split(GROUP_SEPARATOR)]
        named = [c for c in columns if c]
        if len(named) < len(columns) or len(named) < 2:
            right = GROUP_SEPARATOR.join(named) if len(named) >= 2 else f"{named[0] if named else 'a_X'}+..."
            raise ConfigError(
                f"protected attribute {item!r} has a '{GROUP_SEPARATOR}' with no column beside it: "
                f"'{GROUP_SEPARATOR}' joins the columns of one attribute spread over several (one-hot) columns, "
                f"e.g. {right!r}; ',' separates attributes")
        out.append(tuple(named))
    return tuple(out)


def check_protected_given(text: str | None, *, name: str = "protected") -> None:
    """Refuse a ``protected`` value that names no attribute (``" , "``); None means the dataset's default.

    Parameters
    ----------
    text : str or None
        The value given.
    name : str, default="protected"
        The parameter or flag, for the message.

    Raises
    ------
    ConfigError
        Naming ``name`` (the CLI passes ``"--protected"``).
    """
    if text is not None and not protected_list(text):
        raise ConfigError(f"{name} {text!r} names no attribute; give one or several, e.g. race,sex, or leave it "
                          "out for the dataset's first protected attribute")


def held_out_share(test, test_size) -> float | None:
    """The share of the data to hold out: ``test_size`` (default 0.4) without ``test``; None with it.

    ``test`` (rows the model never saw) and ``test_size`` (a split of the data) are two ways to choose the held-out
    rows; given both, one would be ignored without a word.

    Parameters
    ----------
    test : object or None
        The held-out rows given (a path or a frame), or None.
    test_size : float or None
        The share of the data to split off, or None for the default.

    Returns
    -------
    float or None

    Raises
    ------
    ConfigError
        If both are given.
    """
    if test is None:
        return DEFAULT_TEST_SIZE if test_size is None else test_size
    if test_size is not None:
        raise ConfigError(f"test_size={test_size!r} (--test-size) and test= (--test) both choose the held-out rows: "
                          "the test rows are held out as they are, so the split would be ignored; give one of them")
    return None


def check_budget(max_global, max_local) -> tuple[int, int]:
    """Check a search budget: ``max_global >= 1``, ``max_local >= 0``, and their product under :data:`MAX_BUDGET`.

    Parameters
    ----------
    max_global : int
        Seeds / global iterations, >= 1.
    max_local : int
        Local iterations per global IDI, >= 0.

    Returns
    -------
    max_global, max_local : int

    Raises
    ------
    ConfigError
        Naming the parameter and the bound.
    """
    max_global = check_int(max_global, "max_global", minimum=1)
    max_local = check_int(max_local, "max_local", minimum=0)
    size = max_global * (max_local + 1)
    if size > MAX_BUDGET:
        raise ConfigError(f"max_global x (max_local + 1) = {size:,} exceeds {MAX_BUDGET:,}: a run keeps the key of "
                          "every input it tests in memory (about 1 GB at that bound); split it into several runs")
    return max_global, max_local


def check_max_queries(max_queries) -> int | None:
    """Check a query budget of a run: None (no budget) or an int >= 1.

    Parameters
    ----------
    max_queries : int or None
        Model queries (rows sent to the model) the seeds and the search may spend together.

    Returns
    -------
    int or None

    Raises
    ------
    ConfigError
        Naming ``max_queries`` (``--max-queries``) and the value at fault.
    """
    if max_queries is None:
        return None
    if isinstance(max_queries, bool) or not isinstance(max_queries, numbers.Integral):
        raise ConfigError(f"max_queries (--max-queries) must be a whole number of model queries >= 1, got "
                          f"{max_queries!r}")
    if max_queries < 1:
        raise ConfigError(f"max_queries (--max-queries) must be >= 1 model query, got {int(max_queries)}: leave it "
                          "out for no query budget")
    return int(max_queries)


def check_benchmark(dataset: str, protected: Sequence[str] = ()) -> None:
    """Check a benchmark dataset name and the protected attributes asked of it.

    Parameters
    ----------
    dataset : str
        A benchmark dataset name.
    protected : sequence of str, default=()
        Protected attributes asked of it (empty: the dataset's default).

    Raises
    ------
    DatasetError
        For an unknown dataset (lists the valid ones) or a protected attribute the dataset does not have.
    """
    from ..datasets.published import PUBLISHED, unknown_protected_error

    if dataset not in PUBLISHED:
        raise DatasetError(f"unknown dataset {dataset!r}; valid: {', '.join(PUBLISHED)}")
    for name in protected:
        if name not in PUBLISHED[dataset]["attributes"]:
            raise unknown_protected_error(dataset, name)


def check_zoo_model(model):
    """Return the :class:`~chiralfair.models.zoo.ModelSpec` of a zoo model name (or spec).

    Parameters
    ----------
    model : str or ModelSpec

    Returns
    -------
    ModelSpec

    Raises
    ------
    ConfigError
        For an unknown name.
    """
    from ..models.zoo import as_spec

    return as_spec(model)


def installed_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The generator and seed strategy names installed packages add (entry points), sorted; nothing is imported.

    Returns
    -------
    (tuple of str, tuple of str)
    """
    return (tuple(sorted(installed_entry_points(ENTRY_POINT_GROUPS["generator"]))),
            tuple(sorted(installed_entry_points(ENTRY_POINT_GROUPS["seed strategy"]))))


def builtin_names() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The built-in generator and seed strategy names, sorted (for the command line's help).

    Returns
    -------
    (tuple of str, tuple of str)
        Generator names, seed strategy names.
    """
    from ..generators.names import BUILTIN_GENERATORS
    from ..seeds.names import BUILTIN_SEED_STRATEGIES

    return tuple(sorted(BUILTIN_GENERATORS)), tuple(sorted(BUILTIN_SEED_STRATEGIES))


def generator_needs_gradient(name: str) -> bool:
    """Whether generator ``name`` needs the model's ``input_gradient``.

    Parameters
    ----------
    name : str
        A generator name.

    Returns
    -------
    bool

    Raises
    ------
    ConfigError
        For a name that is neither built in nor registered (lists the valid names).
    """
    from ..generators.names import AUTO, BUILTIN_GENERATORS

    if name == AUTO:  # picked by the model (auto_generator): never more than the model offers
        return False
    if name in BUILTIN_GENERATORS:
        return BUILTIN_GENERATORS[name]
    GENERATORS = _registry("generators", "GENERATORS")
    installed = installed_entry_points(ENTRY_POINT_GROUPS["generator"])
    if name not in GENERATORS and name not in installed:
        raise unknown_name("generator", name, {AUTO, *BUILTIN_GENERATORS, *GENERATORS, *installed})
    return bool(getattr(_plugin("generators", "GENERATORS", name), "needs_gradient", False))


def generator_needs_proba(name: str) -> bool:
    """Whether generator ``name`` needs the model's ``predict_proba`` (refused on a labels-only model).

    Parameters
    ----------
    name : str
        A generator name.

    Returns
    -------
    bool

    Raises
    ------
    ConfigError
        For a name that is neither built in nor registered (lists the valid names).
    """
    from ..generators.names import AUTO, NEEDS_PROBABILITIES

    generator_needs_gradient(name)  # refuses an unknown name
    if name == AUTO:
        return False
    if name in NEEDS_PROBABILITIES:
        return True
    from ..generators.names import BUILTIN_GENERATORS

    if name in BUILTIN_GENERATORS:
        return False
    return bool(getattr(_plugin("generators", "GENERATORS", name), "needs_proba", False))


def check_seed_strategy(name: str) -> None:
    """Refuse a seed strategy that is neither built in nor registered.

    Parameters
    ----------
    name : str
        A seed strategy name.

    Raises
    ------
    ConfigError
        Listing the valid names.
    """
    from ..seeds.names import BUILTIN_SEED_STRATEGIES

    if name in BUILTIN_SEED_STRATEGIES:
        return
    SEED_STRATEGIES = _registry("seeds", "SEED_STRATEGIES")
    installed = installed_entry_points(ENTRY_POINT_GROUPS["seed strategy"])
    if name not in SEED_STRATEGIES and name not in installed:
        raise unknown_name("seed strategy", name, {*BUILTIN_SEED_STRATEGIES, *SEED_STRATEGIES, *installed})


def _registry(package: str, name: str):
    """A registry of names, if its module was imported (a user who registered a name imported it); else empty.

    Not importing it keeps a refused typo light: the registry module imports numpy, pandas and the models. The
    names installed packages declare (entry points) are read from their metadata instead
    (:func:`chiralfair._registry.installed_entry_points`).
    """
    import sys

    module = sys.modules.get(f"chiralfair.{package}.base")
    return getattr(module, name, {}) if module is not None else {}


def _plugin(package: str, registry: str, name: str):
    """The class registered as ``name``: registered in Python, or an installed package's entry point (imported)."""
    import importlib

    return getattr(importlib.import_module(f"chiralfair.{package}.base"), registry)[name]


def check_gradient(generator: str, model_name: str, has_gradient: bool) -> None:
    """Refuse a gradient generator for a model without ``input_gradient``.

    Parameters
    ----------
    generator : str
        The generator's name.
    model_name : str
        The model's name, for the message.
    has_gradient : bool
        Whether the model has ``input_gradient``.

    Raises
    ------
    ModelCapabilityError
        Naming the generator, the model and where gradient generators run.
    """
    if generator_needs_gradient(generator) and not has_gradient:
        raise ModelCapabilityError(f"generator {generator!r} needs input_gradient() but model {model_name!r} does not "
                                   f"provide it; {GRADIENT_HINT}")


def check_probabilities(generator: str, model_name: str, has_proba: bool) -> None:
    """Refuse a generator that needs probabilities (MAFT, ADF, EIDIG) for a model that answers labels only.

    Parameters
    ----------
    generator : str
        The generator's name.
    model_name : str
        The model's name, for the message.
    has_proba : bool
        Whether the model has ``predict_proba``.

    Raises
    ------
    ModelCapabilityError
        Naming the generator, the model and the generators that need labels only.
    """
    if generator_needs_proba(generator) and not has_proba:
        raise ModelCapabilityError(f"generator {generator!r} needs predict_proba() but model {model_name!r} answers "
                                   "labels only; labels-only generators: aequitas, aft, expga, kosei, sg, themis")


def check_search_names(*, seeds: str, generator: str, max_global, max_local) -> None:
    """The checks of a search that do not depend on the model: seed strategy, generator, budget.

    Parameters
    ----------
    seeds : str
        A seed strategy name.
    generator : str
        A generator name.
    max_global, max_local : int
        The budget (:func:`check_budget`).

    Raises
    ------
    ConfigError
    """
    check_budget(max_global, max_local)
    check_seed_strategy(seeds)
    generator_needs_gradient(generator)


RETRAIN_CHOICES = {"protocol": ("holdout", "paper", "both"), "pairs": ("both", "idi"),
                   "mode": ("auto", "retrain", "fine-tune")}


def check_retrain_options(*, method, share, protocol="holdout", pairs="both", mode="auto", max_f1_loss=0.01,
                          model: str | None = None, max_group_increase=0.02, spread_seeds=3) -> tuple[str, ...]:
    """Check a retraining's options before any work (light: name tables only).

    Parameters
    ----------
    method : str or sequence of str
        Mitigation methods (:data:`chiralfair.mitigation.names.BUILTIN_METHODS`, registered ones, or installed
        plugins' from the entry-point group ``chiralfair.mitigation_methods``).
    share : sequence of float
        Shares of the IDI pairs added, each in (0, 1].
    protocol, pairs, mode : str
    max_f1_loss : float
        In [0, 1].
    max_group_increase : float
        In [0, 1].
    spread_seeds : int
        >= 0.
    model : str, optional
        A zoo model's name: ``mode="fine-tune"`` needs the DNN, and so does ``consistency`` given alone (given
        beside other methods, it is skipped with a note on another model).

    Returns
    -------
    tuple of str
        The methods.

    Raises
    ------
    ConfigError
        Naming the option and its valid values.
    """
    methods = (method,) if isinstance(method, str) else tuple(method)
    registered = _registry("mitigation", "METHODS")
    installed = installed_entry_points(ENTRY_POINT_GROUPS["mitigation method"])
    known = {*MITIGATION_METHODS, *registered, *installed}
    unknown = [m for m in methods if m not in known]
    if unknown or not methods:
        raise unknown_name("mitigation method", unknown[0] if unknown else "(none)", known)
    for name, value in (("protocol", protocol), ("pairs", pairs), ("mode", mode)):
        if value not in RETRAIN_CHOICES[name]:
            raise ConfigError(f"{name} must be one of {', '.join(RETRAIN_CHOICES[name])}, got {value!r}")
    bad = [s for s in share if not 0 < s <= 1]
    if bad or not share:
        raise ConfigError(f"share values must lie in (0, 1], got {bad or 'none'}")
    if not 0 <= max_f1_loss <= 1:
        raise ConfigError(f"max_f1_loss must lie in [0, 1], got {max_f1_loss}")
    if not 0 <= max_group_increase <= 1:
        raise ConfigError(f"max_group_increase must lie in [0, 1], got {max_group_increase}")
    if isinstance(spread_seeds, bool) or not isinstance(spread_seeds, int) or spread_seeds < 0:
        raise ConfigError(f"spread_seeds must be an int >= 0, got {spread_seeds!r}")
    # The default method trains every zoo model, and every built-in method the DNN: then nothing is imported, so a
    # refused typo stays light.
    if model is not None and model != "dnn" and set(methods) != {DEFAULT_MITIGATION_METHOD}:
        from ..mitigation.base import method_class

        # Refused here only when no method given trains the zoo model: one of several is skipped with a note instead.
        zoo = {m: method_class(m).zoo_models for m in methods}
        if all(z is not None and model not in z for z in zoo.values()):
            name, trains = next(iter(zoo.items()))
            raise ConfigError(f"method {name} trains the zoo {' or '.join(_zoo_words(z) for z in trains or ())} "
                              f"only; model {model!r} is not it (use {', '.join(_others(zoo, model))})")
    if model is not None and model != "dnn":
        if mode == "fine-tune":
            raise ConfigError(f"mode fine-tune continues training the zoo DNN; model {model!r} is retrained from "
                              "scratch (use mode retrain)")
    return methods


def _zoo_words(name: str) -> str:
    return "DNN" if name == "dnn" else repr(name)


def _others(zoo: dict, model: str) -> list[str]:
    """Built-in methods that train ``model`` (for the words of a refusal)."""
    from ..mitigation.base import method_class

    return [m for m in MITIGATION_METHODS if m not in zoo and (method_class(m).zoo_models is None
                                                             or model in (method_class(m).zoo_models or ()))]


def check_card_of_retrained(model_card, *, model_file=None, zoo_model: str | None = None) -> None:
    """Refuse a skops card (``.md``) of a retrained torch network before any training: it describes sklearn models.

    Parameters
    ----------
    model_card : path or None
        ``--model-card``.
    model_file : path, optional
        ``--model FILE`` of your own data.
    zoo_model : str, optional
        The zoo model of a benchmark.

    Raises
    ------
    ConfigError
    """
    from pathlib import Path

    from ..models.files import TORCHSCRIPT_SUFFIXES

    if model_card is None or Path(model_card).suffix.lower() != ".md":
        return
    torch_file = model_file is not None and Path(model_file).suffix.lower() in TORCHSCRIPT_SUFFIXES
    if zoo_model == "dnn" or torch_file:
        raise ConfigError(f"a skops model card ({Path(model_card).name}) describes an sklearn model, and the model "
                          "retrained here is a torch network; write the CycloneDX card instead (--model-card "
                          "FILE.json)")


def counterpart_options(couple: str | None, constraints=None) -> dict:
    """``couple=`` and ``constraints=`` of the library from the command line's --couple and --constraint texts.

    ``couple``: ``"sex:relationship=Husband/Wife"`` (:func:`chiralfair.domain.coupling.parse_couple_text`), ``"none"``
    for no coupling, None for the dataset's default. ``constraints``: rules as text (checked when the domain is
    built).

    Parameters
    ----------
    couple : str or None
        The ``--couple`` text.
    constraints : sequence of str, optional
        The ``--constraint`` texts.

    Returns
    -------
    dict
        ``{"couple": mapping, False or None, "constraints": tuple of str}``.

    Raises
    ------
    ConfigError
        For --couple text that is not attribute:column=a/b (or none).
    """
    from ..domain.coupling import parse_couple_text

    return {"couple": None if couple is None else parse_couple_text(couple), "constraints": tuple(constraints or ())}
