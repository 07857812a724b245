"""The front doors of certification: :func:`certify` (your model and data) and :func:`certify_benchmark`.

:func:`certify` is ``chiralfair.certify``; :func:`certify_benchmark` (a benchmark and a zoo model) serves
``chiralfair certify``. Both resolve the inputs as every run does (:func:`~.front.resolve_inputs`,
:func:`~.inputs.inputs_from_names`: the model wrapped and probed, the held-out rows split off), then certify the
domain (shares by volume, and of the held-out rows) and each held-out individual (:mod:`chiralfair.certification`),
and write the run folder.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

logger = logging.getLogger(__name__)


def certify(model, data, *, spec=None, label=None, positive_class=None, protected: str | Sequence | None = None,
            bins: Mapping[str, int | Sequence[float]] | None = None, schema: str | os.PathLike | None = None,
            test=None, test_size: float | None = None, random_state=0, trust_model_file: bool = False,
            model_output: str | None = None, model_input: str = "auto", name: str | None = None, couple=None,
            constraints=None, max_seconds: float | None = 60.0, max_depth: int | None = None,
            max_boxes: int | None = None, bound: str = "crown", split: str = "influence",
            individuals: bool = True, similar: Mapping | None = None, out: str | os.PathLike | None = None,
            on_progress: Callable[[dict], None] | None = None, n_jobs: int | None = None):
    """Prove how much of your model's input domain is fair, and which held-out people are certified unaffected.

    Takes the model and data as :func:`~chiralfair.pipeline.audit` does. The model must be a ReLU network
    certification can read (the paper's DNN, a ``torch.nn.Sequential`` of Linear/ReLU layers, a TorchScript or ONNX
    file of one) or a tree ensemble over the integer codes (scikit-learn, LightGBM, XGBoost:
    :mod:`chiralfair.certification.tree_reading`); any other is refused, naming what is missing.

    Parameters
    ----------
    model, data, spec, label, positive_class, protected, bins, schema, test, test_size, random_state
        As in :func:`~chiralfair.pipeline.audit`.
    trust_model_file, model_output, model_input, name, couple, constraints
        As in :func:`~chiralfair.pipeline.audit`.
    max_seconds : float or None, default=60.0
        Wall-second budget of the searches (None: until they are complete): the domain's branch and bound, and with
        ``similar`` the people's too, sharing it (half for the domain, what is left for the people; the split is
        stated in ``notes`` and ``meta["budget"]``).
    max_depth, max_boxes, bound, split
        Of :class:`~chiralfair.certification.BranchAndBound` (``bound`` and ``split`` apply to networks only).
    individuals : bool, default=True
        Also certify each held-out individual (:func:`~chiralfair.certification.certify_individuals`).
    similar : mapping, optional
        Certify each held-out individual within a neighbourhood: radii in the data's units, e.g.
        ``{"age": 2, "hours_per_week": 4}`` (:mod:`chiralfair.certification.neighbourhood`); default their own row.
        Its search shares ``max_seconds`` with the domain's.
    out : path, optional
        Run folder to write (``result.json``, ``idis.parquet``, ``individuals.parquet``).
    on_progress : callable, optional
        Called after each batch of boxes with ``{"seconds", "certified", "falsified", "n_open"}``.
    n_jobs : int or None, default=None
        Processes a tree ensemble's search shares its boxes among (None: the CPUs this process may run on; 1: this
        process alone); a complete run's answer is the same for every ``n_jobs``
        (:func:`~chiralfair.certification.certify_domain`).

    Returns
    -------
    CertifyResult
        Shares of the domain certified fair, falsified and undecided; the held-out rows' shares; ``individuals``.

    Raises
    ------
    ModelCapabilityError
        For a model that is not a ReLU network or a tree ensemble certification reads.
    ConfigError, DatasetError, DomainError, ModelFileError
        As :func:`~chiralfair.pipeline.audit`.

    Examples
    --------
    >>> result = chiralfair.certify(net, train, test=test, label="y", protected="sex")    # doctest: +SKIP
    >>> f"{result.certified_share:.1%} of the domain certified fair"                      # doctest: +SKIP
    """
    from ..certification.options import check_certify_options
    from .front import resolve_inputs, resolve_seed
    from .run import run_folder_guard

    check_certify_options(bound=bound, split=split, max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes,
                          n_jobs=n_jobs)
    _similar_needs_individuals(individuals, similar)
    seed, random_state_meta = resolve_seed(random_state)
    with run_folder_guard(out) as folder:  # an earlier run in out is replaced only once this one is written whole
        inputs = resolve_inputs(model, data, spec=spec, label=label, positive_class=positive_class,
                                protected=protected, bins=bins, schema=schema, test=test, test_size=test_size,
                                random_state=seed,
                                trust_model_file=trust_model_file, model_output=model_output, model_input=model_input,
                                name=name, couple=couple, constraints=constraints)
        return certify_inputs(inputs, max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes, bound=bound,
                              split=split, individuals=individuals, similar=similar, out=folder.path,
                              on_progress=on_progress, random_state_meta=random_state_meta, n_jobs=n_jobs)


def certify_benchmark(config, *, max_seconds: float | None = 60.0, max_depth: int | None = None,
                      max_boxes: int | None = None, bound: str = "crown", split: str = "influence",
                      individuals: bool = True, similar: Mapping | None = None,
                      out: str | os.PathLike | None = None,
                      on_progress: Callable[[dict], None] | None = None, n_jobs: int | None = None):
    """Certify a zoo model trained (or loaded from the cache) on a benchmark; see :func:`certify`.

    Parameters
    ----------
    config : RunConfig
        The benchmark dataset, the zoo model (``dnn``, or the trees ``dtc``, ``rf``, ``hgb``, ``lightgbm``), the
        protected attributes, couplings, constraints and random state.
    max_seconds, max_depth, max_boxes, bound, split, individuals, similar, out, on_progress, n_jobs
        As in :func:`certify`.

    Returns
    -------
    CertifyResult

    Raises
    ------
    ConfigError, DatasetError
        For a bad name or budget (before anything is loaded).
    ModelCapabilityError
        For a zoo model that is neither a ReLU network nor a tree ensemble, before it is trained.
    """
    from ..certification.options import check_certify_options, check_zoo_model
    from .config import validate_config
    from .inputs import inputs_from_names
    from .run import run_folder_guard

    check_certify_options(bound=bound, split=split, max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes,
                          n_jobs=n_jobs)
    _similar_needs_individuals(individuals, similar)
    validate_config(config, search=False)
    check_zoo_model(config.model)
    with run_folder_guard(out) as folder:
        inputs = inputs_from_names(config)
        return certify_inputs(inputs, max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes, bound=bound,
                              split=split, individuals=individuals, similar=similar, out=folder.path,
                              on_progress=on_progress, random_state_meta={"random_state": config.random_state,
                                                 "resolved_random_state": config.random_state}, n_jobs=n_jobs)


def certify_inputs(inputs, *, max_seconds: float | None = 60.0, max_depth: int | None = None,
                   max_boxes: int | None = None, bound: str = "crown", split: str = "influence",
                   individuals: bool = True, similar: Mapping | None = None,
                   out: str | os.PathLike | None = None, on_progress: Callable[[dict], None] | None = None,
                   random_state_meta: dict[str, Any] | None = None, n_jobs: int | None = None):
    """Certify the resolved inputs of a run: the domain, its held-out rows and (optionally) each held-out person.

    Parameters
    ----------
    inputs : RunInputs
        The model under test on its data, with the held-out rows.
    max_seconds, max_depth, max_boxes, bound, split, individuals, similar, out, on_progress, n_jobs
        As in :func:`certify`.
    random_state_meta : dict, optional
        What to record of the random state (:func:`~.front.resolve_seed`).

    Returns
    -------
    CertifyResult
    """
    from ..certification import certify_domain, certify_individuals
    from ..certification.neighbourhood import check_similar, similar_ranges, similar_ranges_note

    ranges: dict[str, tuple] = {}
    notes: list[str] = []
    if similar is not None:  # refused before the domain's search, naming the feature
        raw = inputs.model.reads_people and inputs.dataset.raw is not None
        checked = check_similar(similar, inputs.dataset.domain, getattr(inputs.dataset, "codec", None), raw=raw)
        ranges = similar_ranges(inputs.dataset, checked, raw=raw)
        if ranges and individuals:  # the output says the range each box was clipped to
            notes.append(similar_ranges_note(checked, ranges))
        if raw and individuals:  # a column of other than whole numbers, a value not in a column: refused now
            from ..certification.people_grid import people_grid

            people_grid(inputs.dataset, inputs.test_index, similar)
    # one budget for the command: with people within a neighbourhood (searched too), half of it for the domain's
    # search and what is left of the whole for the people's (their own rows alone are checked, not searched)
    started = time.perf_counter()
    shared = max_seconds is not None and individuals and similar is not None
    domain_seconds = max_seconds / 2 if shared else max_seconds  # type: ignore[operator]
    result = certify_domain(inputs.model, inputs.dataset, rows=inputs.test_index, rows_name=inputs.test_rows,
                            max_seconds=domain_seconds, max_depth=max_depth, max_boxes=max_boxes, bound=bound,
                            split=split, random_state=inputs.random_state, on_progress=on_progress, n_jobs=n_jobs)
    people = None
    budget: dict[str, Any] = {"max_seconds": max_seconds, "domain_seconds": domain_seconds,
                              "domain_spent": time.perf_counter() - started}
    if individuals:
        people_seconds = None
        if shared:
            people_seconds = max(0.0, max_seconds - (time.perf_counter() - started))  # type: ignore[operator]
            budget["people_seconds"] = people_seconds
        people = certify_individuals(inputs.model, inputs.dataset, inputs.test_index, rows_name=inputs.test_rows,
                                     similar=similar, max_seconds=people_seconds,
                                     random_state=inputs.random_state, n_jobs=n_jobs)
        if shared:
            budget["people_spent"] = float(people.seconds)
            notes.append(f"one budget of {max_seconds:g} s (max_seconds, --max-seconds) for the searches: the "
                         f"domain's got {domain_seconds:g} s and took {budget['domain_spent']:.1f} s, the people's "
                         f"within similar got the {people_seconds:.1f} s left and took {people.seconds:.1f} s "
                         "(reading the trees over the people's values included)")
        people = _in_your_terms(people, inputs, ranges)
        if (inputs.favourable is not None and not people.count("undecided") and people.n_individuals
                and people.witness_labels is not None):
            from ..certification.certificates import people_verdict

            # every person decided (and witnessed: who is harmed is read from the witnesses): the verdict decides
            # their interval and groups, as at every other door
            people = replace(people, verdict=people_verdict(people, inputs.model, inputs.dataset, inputs.favourable))
    meta = {**result.meta, "source": inputs.source, "model_quality": dict(inputs.quality), "budget": budget,
            **(random_state_meta or {})}
    result = replace(result, individuals=people, notes=tuple(inputs.notes) + result.notes + tuple(notes), meta=meta)
    if out is not None:
        from ..datasets.population import population_of
        from ..results.run_folder import fed_codec

        result.write(out, inputs.domain, population_of(inputs.dataset), codec=fed_codec(inputs.model))
    logger.info("certified %.2f%% of the domain in %.1f s (%s)", 100 * result.certified_share, result.seconds,
                result.stopped)
    return result


def _in_your_terms(people, inputs, ranges: dict[str, tuple]):
    """The people's certificates named as you name them.

    Each person's row label in the rows you gave, the model's answers in its own labels, and the range each
    ``similar=`` radius was clipped to (``meta``).
    """
    import numpy as np

    labels = None
    where = "the benchmark's row number"
    if inputs.row_names is not None:
        import pandas as pd

        from ..datasets.frame import ROW_SOURCE

        names = inputs.row_names[people.rows]  # people.rows: the dataset's rows, the names aligned with them
        source = "the rows you gave"
        if isinstance(names, pd.MultiIndex) and names.names[0] == ROW_SOURCE:
            sources = names.get_level_values(0).unique()
            source = str(sources[0]) if len(sources) == 1 else source
            names = names.droplevel(0)
        labels = np.asarray([str(v) if isinstance(v, tuple) else v for v in names], dtype=object)
        where = (f"each person's row in {source}, numbered from 0 below its header"
                 if source.startswith(("data file", "test file")) else f"each person's index label in {source}")
    classes = np.asarray(inputs.model.language.model_labels(np.array([0, 1])), dtype=object)
    answers = tuple(v.item() if isinstance(v, np.generic) else v for v in classes)
    meta = {**people.meta, "row": where}
    if ranges:
        meta["similar_ranges"] = {name: list(span) for name, span in ranges.items()}
    people = replace(people, row_labels=labels, prediction_labels=answers)
    return replace(people, meta={**meta, "prediction": people.answers_text()})


def _similar_needs_individuals(individuals: bool, similar) -> None:
    """Refuse a neighbourhood for the people when the people are turned off (it would be silently ignored)."""
    if similar and not individuals:
        from ..exceptions import ConfigError

        raise ConfigError("similar= certifies each held-out person within a neighbourhood, but individuals=False "
                          "(--no-individuals) turns the people off: drop one of the two")
