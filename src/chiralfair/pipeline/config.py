"""What defines one run from names: :class:`RunConfig` (benchmark dataset, zoo model, seeds, generator, budget)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._validation import check_int
from .checks import (
    check_benchmark,
    check_gradient,
    check_max_queries,
    check_probabilities,
    check_search_names,
    check_zoo_model,
    protected_list,
)


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run from names.

    Attributes
    ----------
    dataset : str
        Registered dataset name (``census``, ``compas``, ``bank``, ``german``).
    protected : tuple of str
        Protected attributes under test (one or several); empty: the dataset's first.
    model : str
        Zoo model name (``dnn``, ``lr``, ``svc``, ``dtc``, ``mlp``, ``rf``, ``hgb``).
    seeds : str
        Seed strategy name.
    generator : str
        Generator name.
    max_global, max_local : int
        Budget (architecture: vocabulary).
    random_state : int
        Drives the seeds and the search, and the split and model training unless ``model_random_state`` is given.
    model_random_state : int or None
        Drives the split and the training of the model under test and of its chiral model (None: ``random_state``).
        A grid fixes it to compare repeats of the seeds and the search on one model.
    data_home, cache_dir : str or None
    allow_checksum_mismatch : bool
    model_params : dict
        Zoo hyper-parameters laid over the model's defaults (:class:`~chiralfair.models.zoo.ModelSpec`), e.g.
        ``{"standardize": False}`` for the DNN of the paper's reference code.
    generator_params : dict
        Extra hyper-parameters for the generator.
    seed_params : dict
        Extra parameters for the seed strategy (e.g. ``explainer``).
    verdict : bool
        Also estimate the share of the test split that the model discriminates
        (:func:`chiralfair.verdict.estimate`), with the benchmark's favourable label.
    diversity : bool
        Also measure the diversity of the IDIs found (:func:`chiralfair.seeds.diversity_report.seed_diversity`,
        into ``SearchResult.diversity``); off by default: it reads streamed pairs back into memory.
    couple : mapping, bool or None
        Coupled columns (architecture: counterparts that could exist), as :func:`~chiralfair.datasets.load_dataset`
        takes them: None or True the dataset's own (census: relationship Husband <-> Wife with sex), False none (the I&D
        paper's setting), a mapping replaces them.
    constraints : tuple of str
        Rules every input satisfies (:meth:`Domain.with_constraints <chiralfair.domain.Domain.with_constraints>`).
    plausible_only : bool
        The verdict counts plausible counterparts only (:func:`chiralfair.verdict.estimate`).
    max_queries : int or None
        Query budget of the seeds and the search together, in model queries (:class:`~.steps.SearchPlan`).
    reference : bool
        Use the network shipped with the package (the DNN and its chiral models) when the request matches its
        recipe: a benchmark dataset, the default split, default parameters, ``model_random_state`` 0
        (:mod:`chiralfair.models.reference`), so the figures are the same on every machine. False (CLI
        ``--train-model``) trains them on this machine.
    """

    dataset: str = "census"
    protected: tuple[str, ...] = ("sex",)
    model: str = "dnn"
    seeds: str = "iandd"
    generator: str = "aequitas"
    max_global: int = 100
    max_local: int = 100
    random_state: int = 0
    model_random_state: int | None = None
    data_home: str | None = None
    cache_dir: str | None = None
    allow_checksum_mismatch: bool = False
    model_params: dict[str, Any] = field(default_factory=dict)
    generator_params: dict[str, Any] = field(default_factory=dict)
    seed_params: dict[str, Any] = field(default_factory=dict)
    verdict: bool = True
    diversity: bool = False
    couple: Any = None
    constraints: tuple[str, ...] = ()
    plausible_only: bool = False
    max_queries: int | None = None
    reference: bool = True

    def __post_init__(self):
        object.__setattr__(self, "protected", protected_list(self.protected))
        object.__setattr__(self, "constraints", tuple([self.constraints] if isinstance(self.constraints, str)
                                                      else self.constraints))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters.

        Returns
        -------
        dict
        """
        return {"dataset": self.dataset, "protected": list(self.protected), "model": self.model,
                "seeds": self.seeds, "generator": self.generator, "max_global": self.max_global,
                "max_local": self.max_local, "random_state": self.random_state,
                "model_random_state": self.model_random_state, "generator_params": dict(self.generator_params),
                "seed_params": dict(self.seed_params), "model_params": dict(self.model_params),
                "couple": self.couple, "constraints": list(self.constraints), "plausible_only": self.plausible_only,
                "max_queries": self.max_queries, "reference": self.reference}

    @property
    def dataset_couple(self):
        """``couple`` as :func:`~chiralfair.datasets.load_dataset` takes it (True -> None, the dataset's own)."""
        return None if self.couple is True else self.couple

    @property
    def model_spec(self):
        """The :class:`~chiralfair.models.zoo.ModelSpec` of ``model`` with ``model_params``."""
        from ..models.zoo import ModelSpec

        return ModelSpec(self.model, dict(self.model_params))

    @property
    def resolved_model_random_state(self) -> int:
        """The random state of the split and of the model's (and chiral model's) training."""
        return self.random_state if self.model_random_state is None else self.model_random_state


def validate_config(config: RunConfig, *, search: bool = True) -> None:
    """Check names, budget and random states before any expensive step, so bad input fails at once.

    Imports nothing heavy (see :mod:`chiralfair.pipeline.checks`).

    Parameters
    ----------
    config : RunConfig
    search : bool
        Also check the search's settings (seed strategy, generator, budget, gradient); False for a run that only
        estimates the verdict.

    Raises
    ------
    ConfigError
        For an unknown generator, seed strategy or model, a budget outside its bounds, or a negative random state.
    ModelCapabilityError
        For a gradient generator with a model that has no gradient, or a generator that needs probabilities
        with a labels-only model.
    DatasetError
        For an unknown dataset or protected attribute.
    """
    check_int(config.random_state, "random_state", minimum=0)
    if config.model_random_state is not None:
        check_int(config.model_random_state, "model_random_state", minimum=0)
    check_benchmark(config.dataset, config.protected)
    spec = check_zoo_model(config.model)
    if search:
        check_search_names(seeds=config.seeds, generator=config.generator, max_global=config.max_global,
                           max_local=config.max_local)
        check_max_queries(config.max_queries)
        check_gradient(config.generator, config.model, spec.has_input_gradient)
        check_probabilities(config.generator, config.model, config.model_spec.has_predict_proba)
