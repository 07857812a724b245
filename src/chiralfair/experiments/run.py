"""One fairness-testing run from names: load a dataset, train (or load) the model, select seeds, search.

This is the main job behind ``chiralfair run``; experiment grids build on :func:`run_experiment`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from .._deadline import check_deadline
from .._validation import check_int
from ..estimate import FAVOURABLE, estimate
from ..generators import make_generator
from ..results import SearchResult, SeedReport, disfavoured_groups
from ..run_folder import (
    PAIRS_NAME,
    PairSink,
    mark_interrupted,
    mark_partial,
    prepare_run_folder,
    remove_empty_folders,
)
from ..seeds import make_seed_strategy
from ..seeds.names import chiral_params
from ..verdict import Verdict
from .budget import MAX_BUDGET as MAX_BUDGET  # re-exported: chiralfair.experiments.run.MAX_BUDGET
from .budget import budget_error

logger = logging.getLogger(__name__)



@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run.

    Attributes
    ----------
    dataset : str
        Registered dataset name (``census``, ``compas``, ``bank``, ``german``).
    protected : tuple of str
        Protected attributes under test (one or several).
    model : str
        Zoo model name (``dnn``, ``lr``, ``svc``, ``dtc``, ``mlp``, ``rf``, ``hgb``).
    seeds : str
        Seed strategy name.
    generator : str
        Generator name.
    max_global, max_local : int
        Budget (design §1).
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
        (:func:`chiralfair.estimate.estimate`), with the benchmark's favourable label.
    diversity : bool
        Also measure the diversity of the IDIs found (:func:`chiralfair.seeds.diversity_report.seed_diversity`,
        into ``SearchResult.diversity``); off by default: it reads streamed pairs back into memory.
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

    def __post_init__(self):
        object.__setattr__(self, "protected", protected_list(self.protected))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters."""
        return {"dataset": self.dataset, "protected": list(self.protected), "model": self.model,
                "seeds": self.seeds, "generator": self.generator, "max_global": self.max_global,
                "max_local": self.max_local, "random_state": self.random_state,
                "model_random_state": self.model_random_state, "generator_params": dict(self.generator_params),
                "seed_params": dict(self.seed_params), "model_params": dict(self.model_params)}

    @property
    def model_spec(self):
        """The :class:`~chiralfair.models.zoo.ModelSpec` of ``model`` with ``model_params``."""
        from ..models.zoo import ModelSpec

        return ModelSpec(self.model, dict(self.model_params))

    @property
    def resolved_model_random_state(self) -> int:
        """The random state of the split and of the model's (and chiral model's) training."""
        return self.random_state if self.model_random_state is None else self.model_random_state


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced: the search result, the seed report, the model's quality and the timings.

    Attributes
    ----------
    config : RunConfig
    result : SearchResult
    seed_report : SeedReport
    domain : Domain
    model_info : dict
        ``f1``, ``accuracy``, ``train_seconds``, ``from_cache``.
    seconds : dict of str to float
        Wall seconds per step: ``data``, ``model``, ``seeds``, ``search`` (streaming the pairs included),
        ``verdict`` (when estimated), ``total``; the run folder's ``result.json`` adds ``write``, the time of
        ``report.write_run``.
    notes : tuple of str
        About the data: a raw file that is not the published one, a protected attribute outside the dataset's.
    verdict : Verdict or None
        Share of the test split affected, with the harm table (None when not asked for).
    favourable : int or None
        The favourable label (0 or 1), when known: the IDI pairs are then counted by the side it goes to.
    seed_diversity : dict or None
        :meth:`DiversityReport.to_dict <chiralfair.seeds.diversity_report.DiversityReport.to_dict>` of the seeds,
        against the same reference as the IDIs' (``result.diversity``); None unless ``config.diversity``.
    """

    config: RunConfig
    result: SearchResult
    seed_report: SeedReport
    domain: Any
    model_info: dict[str, Any]
    seconds: dict[str, float]
    notes: tuple[str, ...] = ()
    verdict: Verdict | None = None
    favourable: int | None = None
    seed_diversity: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """The figures of result.json: verdict, search summary, direction of the IDI pairs, seeds, model, timings.

        ``verdict`` is :meth:`Verdict.to_json` as an object (or None). ``idi_directions`` (when the favourable
        label is known) holds ``favourable``, ``n_idi_favoured`` and ``n_counterpart_favoured`` (they add up to
        ``n_idis``), ``by_protected_value`` (:meth:`SearchResult.idi_directions` records) and ``disfavoured``
        (:func:`~chiralfair.results.disfavoured_groups` records).
        """
        out = {"verdict": None if self.verdict is None else json.loads(self.verdict.to_json())}
        out.update(self.result.summary())
        out["idi_directions"] = self.idi_directions()
        out["initialization_rate"] = self.seed_report.initialization_rate
        out["seeds"] = {
            "strategy": self.seed_report.strategy, "n_seeds": self.seed_report.n_seeds,
            "initialization_rate": self.seed_report.initialization_rate,
            "n_initial_idis": self.seed_report.n_initial_idis, "n_candidates": self.seed_report.n_candidates,
            "clustering": self.seed_report.clustering, "seconds": self.seed_report.seconds,
            "n_queries": self.seed_report.n_queries, "notes": list(self.seed_report.notes),
            "diversity": self.seed_diversity}
        out["model"] = dict(self.model_info)
        out["seconds_by_step"] = dict(self.seconds)
        out["notes"] = list(self.notes) + list(self.result.notes)
        out["meta"] = {"chiralfair_version": __version__, "config": self.config.to_dict(),
                       "protected": self.domain.protected_names,
                       "generator_params": self.result.meta.get("params"),
                       "domain": self.domain.to_dict()}
        return out

    def idi_directions(self) -> dict[str, Any] | None:
        """Which side of each IDI pair gets the favourable label, counted from the search's aggregates.

        Returns
        -------
        dict or None
            See :meth:`summary`; None when the favourable label is not known.
        """
        if self.favourable is None:
            return None
        table = self.result.idi_directions(self.domain, self.favourable)
        return {"favourable": self.favourable, "n_idi_favoured": int(table["n_idi_favoured"].sum()),
                "n_counterpart_favoured": int(table["n_counterpart_favoured"].sum()),
                "by_protected_value": table.to_dict(orient="records"),
                "disfavoured": disfavoured_groups(table, self.domain.protected_names).to_dict(orient="records")}


def validate_config(config: RunConfig) -> None:
    """Check names and budgets before any expensive step, so bad input fails at once and loses nothing.

    Raises
    ------
    ConfigError
        For an unknown generator, seed strategy or model, or a budget outside its bounds.
    ModelCapabilityError
        For a gradient generator with a model that has no gradient.
    DatasetError
        For an unknown dataset.
    """
    from ..datasets import dataset_names
    from ..exceptions import ConfigError, DatasetError, ModelCapabilityError

    if config.dataset not in dataset_names():
        raise DatasetError(f"unknown dataset {config.dataset!r}; valid: {', '.join(dataset_names())}")
    check_int(config.max_global, "max_global", minimum=1)
    check_int(config.max_local, "max_local", minimum=0)
    check_int(config.random_state, "random_state", minimum=0)
    if config.model_random_state is not None:
        check_int(config.model_random_state, "model_random_state", minimum=0)
    too_large = budget_error(config.max_global, config.max_local)
    if too_large:
        raise ConfigError(too_large)
    generator = make_generator(config.generator, max_global=config.max_global, max_local=config.max_local,
                               **config.generator_params)
    make_seed_strategy(config.seeds, **config.seed_params)
    spec = config.model_spec
    if generator.needs_gradient and not spec.has_input_gradient:
        raise ModelCapabilityError(
            f"generator {config.generator!r} needs input_gradient() but model {config.model!r} does not provide "
            "it; gradient generators run on dnn, lr and mlp, black-box generators (aequitas, sg, themis) on any model")
    if generator.needs_proba and not spec.has_predict_proba:
        raise ModelCapabilityError(
            f"generator {config.generator!r} needs predict_proba() but model {config.model!r} answers labels only; "
            "use a labels-only generator (aequitas, aft, expga, kosei, sg)")


def run_experiment(config: RunConfig, *, on_step: Callable[[str], None] | None = None,
                   out: str | os.PathLike | None = None,
                   reuse_seeds: Callable[[Callable[[], SeedReport]], SeedReport] | None = None) -> RunOutcome:
    """Run one configuration end to end.

    Parameters
    ----------
    config : RunConfig
    on_step : callable, optional
        Called with the name of each step as it starts (``"data"``, ``"model"``, ``"seeds"``, ``"search"``),
        e.g. to drive a progress display; ``"verdict"`` follows when the verdict is estimated.
    out : str or path-like, optional
        Run folder. When given, the search streams its IDI pairs to ``out/idis.parquet`` with bounded memory,
        and ``out/result.json`` says ``"partial": true`` from the start of the search until
        :func:`chiralfair.report.write_run` finishes the folder; the result reads the pairs back lazily.
        Without it the pairs are kept in memory.
    reuse_seeds : callable, optional
        Called with the function that selects the seeds; returns the :class:`SeedReport` to use. An experiment
        grid passes one that returns the report stored by an earlier cell with the same model, seed strategy and
        budget (so generators share one selection), or else calls the function and stores its report. Default:
        select the seeds.

    Returns
    -------
    RunOutcome

    Raises
    ------
    ConfigError, DatasetError, DomainError, DataHomeError, ChecksumError, ModelCapabilityError
        From the steps; names and budgets are checked first (:func:`validate_config`).
    RunFolderError
        If ``out`` cannot receive a run (see :func:`~chiralfair.run_folder.prepare_run_folder`); checked
        before any work.
    TimeLimitError
        Inside :func:`chiralfair._deadline.time_limit`, once the limit has passed (checked before each step and
        at each batch of the search).
    """
    validate_config(config)
    created = prepare_run_folder(out) if out is not None else []
    try:
        return _run_steps(config, _checked_steps(on_step), out, reuse_seeds or (lambda select: select()))
    except BaseException:
        remove_empty_folders(created)
        raise


def _checked_steps(on_step: Callable[[str], None] | None) -> Callable[[str], None]:
    """``on_step`` preceded by a check of the time limit (:func:`chiralfair._deadline.time_limit`), if any."""
    def step(name: str) -> None:
        check_deadline(f"the run, before step {name!r}")
        if on_step is not None:
            on_step(name)
    return step


def _run_steps(config: RunConfig, step: Callable[[str], None], out, reuse_seeds) -> RunOutcome:
    from ..datasets import load_dataset
    from ..models.training import train_model

    seconds: dict[str, float] = {}
    t_all = time.perf_counter()

    step("data")
    t = time.perf_counter()
    dataset = load_dataset(config.dataset, protected=list(config.protected) or None, data_home=config.data_home,
                           allow_checksum_mismatch=config.allow_checksum_mismatch)
    seconds["data"] = time.perf_counter() - t
    notes = _data_notes(config, dataset)

    step("model")
    t = time.perf_counter()
    trained = train_model(dataset, config.model_spec, random_state=config.resolved_model_random_state,
                          cache_dir=config.cache_dir)
    seconds["model"] = time.perf_counter() - t
    model = trained.model
    generator = make_generator(config.generator, max_global=config.max_global, max_local=config.max_local,
                               **config.generator_params)
    generator.require_capabilities(model)
    logger.info("model %s: test F1 %.3f (%s)", config.model, trained.f1,
                "from cache" if trained.from_cache else f"trained in {trained.train_seconds:.1f} s")

    step("seeds")
    t = time.perf_counter()
    # The chiral model belongs to the model under test: seeded by its random_state (seeds/names.py).
    strategy = make_seed_strategy(config.seeds, **config.seed_params,
                                  **chiral_params(config.seeds, config.resolved_model_random_state, config.cache_dir))
    seed_report = reuse_seeds(lambda: strategy.select(model, dataset, config.max_global,
                                                      random_state=config.random_state))
    seconds["seeds"] = time.perf_counter() - t

    step("search")
    t = time.perf_counter()
    sink = None
    if out is not None:
        mark_partial(out, {"chiralfair_version": __version__, "config": config.to_dict(),
                           "protected": dataset.domain.protected_names, "domain": dataset.domain.to_dict()})
        sink = PairSink(Path(out) / PAIRS_NAME)
    try:
        result = generator.run(model, dataset.domain, seed_report, random_state=config.random_state, sink=sink)
    except KeyboardInterrupt:
        if out is not None:  # keep the pairs found so far, readable, and say the run was interrupted
            n_pairs = mark_interrupted(out, sink)
            logger.warning("search interrupted: %d IDI pairs kept in %s (result.json marked partial)", n_pairs,
                           Path(out) / PAIRS_NAME)
        raise
    seconds["search"] = time.perf_counter() - t
    seed_diversity = None
    if config.diversity:
        t = time.perf_counter()
        idi_diversity, seed_diversity = _diversities(model, dataset, result, seed_report, config)
        result = result.with_diversity(idi_diversity)
        seconds["diversity"] = time.perf_counter() - t

    known = FAVOURABLE.get((dataset.name, dataset.positive_class))  # None: a dataset of unknown favourable label
    favourable = None if known is None else known[0]
    verdict = None
    if config.verdict and favourable is not None:
        step("verdict")
        t = time.perf_counter()
        verdict = estimate(trained, dataset, population="test", random_state=config.random_state)
        seconds["verdict"] = time.perf_counter() - t
    seconds["total"] = time.perf_counter() - t_all

    model_info = {"name": config.model, "f1": trained.f1, "accuracy": trained.accuracy,
                  "train_seconds": trained.train_seconds, "from_cache": trained.from_cache}
    return RunOutcome(config, result, seed_report, dataset.domain, model_info, seconds, tuple(notes),
                      verdict=verdict, favourable=favourable, seed_diversity=seed_diversity)


def _diversities(model, dataset, result: SearchResult, seed_report: SeedReport,
                 config: RunConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Diversity of the IDIs found and of the seeds, against one reference per model.

    The reference is seeded by the model's random_state, so every seed strategy and repeat of a fixed model is
    measured against the same clusters and surrogate tree; the sampling of the inputs by the run's random_state.
    """
    from ..seeds.diversity_report import diversity_reference, seed_diversity

    reference = diversity_reference(model, dataset, random_state=config.resolved_model_random_state)
    return (seed_diversity(result.idis, reference, random_state=config.random_state).to_dict(),
            seed_diversity(seed_report.seeds, reference, random_state=config.random_state).to_dict())


def _data_notes(config: RunConfig, dataset) -> list[str]:
    """Notes a reader of the results must see: a raw file that is not the published one, an unusual PA."""
    from ..datasets import dataset_spec
    from ..datasets.home import checksum_mismatch, raw_file

    notes = []
    spec = dataset_spec(config.dataset)
    for rel, path in dataset.sources.items():
        actual = checksum_mismatch(path, raw_file(rel))
        if actual is not None:
            notes.append(f"raw file {path} is not the published {rel} (SHA-256 {actual}); results are not "
                         "comparable with the benchmark")
    others = [p for p in dataset.domain.protected_names if p not in spec.protected]
    if others:
        notes.append(f"{', '.join(others)} tested as protected attribute(s); {spec.name}'s protected attributes "
                     f"are {', '.join(spec.protected)}")
    return notes


def protected_list(text: str | Sequence[str]) -> tuple[str, ...]:
    """Parse ``"race,sex"`` (or a sequence) into a tuple of names; empty items are dropped."""
    items = text.split(",") if isinstance(text, str) else list(text)
    return tuple(s.strip() for s in items if s.strip())
