"""Retraining in the pipeline: IDIs (found now, or read from a run folder) → a fairer model → the retrain folder.

:func:`retrain_inputs` is the one place the retraining step is wired, for benchmarks and for your own model:

1. the IDIs: given (a search result or arrays), or found by a fresh search whose seeds come from the **training
   rows only** (so no held-out individual enters training), written as a run folder under ``out/search``;
2. :func:`chiralfair.mitigation.retrain` labels them, adds them to the training rows and trains the model again;
   every F1 and IDI rate is measured on the held-out rows (``inputs.test_index``);
3. with ``out``: ``retrain.json``, ``report.md`` with the trade-off plot, and the retrained model saved in the
   format the model came in (:func:`chiralfair.models.files.save_model_file`).

:func:`inputs_from_run` rebuilds the inputs of a ``chiralfair run`` folder (benchmark or files) for
``chiralfair retrain --from-run``, and checks that the data and the model are the ones the run tested.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..exceptions import ConfigError
from .inputs import RunInputs
from .steps import SearchPlan

logger = logging.getLogger(__name__)


def retrain_inputs(inputs: RunInputs, *, idis=None, plan: SearchPlan | None = None, random_state: int = 0,
                   out: str | os.PathLike | None = None, cache_dir=None, searched_with: dict | None = None,
                   on_step=None, extra_notes: tuple[str, ...] = (), **params):
    """Retrain the model of ``inputs`` with IDIs and compare before and after on the held-out rows.

    Parameters
    ----------
    inputs : RunInputs
    idis : SearchResult or (numpy.ndarray, numpy.ndarray), optional
        The IDIs; None: search with ``plan`` (seeds from the training rows only).
    plan : SearchPlan, optional
        Needed when ``idis`` is None.
    random_state : int
        Drives the labelling ensemble, the choice of IDIs and the domain draws.
    out : path, optional
        Retrain folder; the fresh search's run folder goes to ``out/search``.
    cache_dir : path, optional
        Model cache (zoo models trained again, chiral models).
    searched_with : dict, optional
        How array IDIs were found (``generator``, ``seed_strategy``, ``params``, ``random_state``).
    on_step : callable, optional
        Called with each step's name.
    extra_notes : tuple of str, default=()
        Notes the result carries after its own (how the given IDIs were found).
    **params
        Of :func:`chiralfair.mitigation.retrain`.

    Returns
    -------
    RetrainResult

    Raises
    ------
    ConfigError
        When there are no IDIs to add, or for a parameter outside its bounds.
    ModelCapabilityError
        For a model chiralfair cannot train again.
    RunFolderError
        If ``out`` cannot receive a retrain folder.
    """
    from ..mitigation.retraining import retrain
    from ..reporting.report import RETRAIN_FILES, check_retrain_folder, write_retrain_folder
    from ..results.run_folder import StagedFolder

    searched = None
    # an earlier retrain in out is replaced only once this one is written whole
    with StagedFolder(out, check=check_retrain_folder, outputs=(*RETRAIN_FILES, "model-*", "search"),
                      what="retrain") as folder:
        if idis is None and _adds_idis(params):
            if plan is None:
                raise ConfigError("retraining needs IDIs: pass idis= or a search plan")
            idis, searched = search_training_rows(inputs, plan,
                                                  out=None if folder.path is None else folder.path / "search",
                                                  cache_dir=cache_dir, on_step=on_step)
        if on_step is not None:
            on_step("retrain")
        trained = inputs.trained if inputs.trained is not None else inputs.model
        result = retrain(trained, inputs.dataset, idis, train_index=inputs.train_index, searched_with=searched_with,
                         cache_dir=cache_dir, random_state=random_state, **params)
        notes = [n for n in result.notes if not (searched and n.startswith("leak-free only if"))]
        leakage = dict(result.leakage)
        if searched:
            notes.append("leak-free: the search drew its seeds from the training rows only, and IDI pairs with a "
                         "held-out row's projection were excluded")
            notes += [n for n in idis.notes if n.startswith("generator auto:")]  # which generator 'auto' ran
            # the search dropped its pairs with a held-out projection before retrain() saw them: count them here
            leakage["n_idis_excluded"] += searched["n_idis_excluded"]
            leakage["n_seeds_excluded"] = searched["n_seeds_excluded"]
        result = replace(result, meta={**result.meta, "test_rows": inputs.test_rows, "source": inputs.source},
                         notes=tuple(inputs.notes) + tuple(notes) + tuple(extra_notes), leakage=leakage)
        if folder.path is not None:
            write_retrain_folder(result, folder.path, like=inputs.source.get("model_file"))
    return result


def _adds_idis(params: dict[str, Any]) -> bool:
    """Whether a method of ``params`` adds IDI pairs (its class's ``needs_idis``), so a search is needed."""
    return bool(_methods_adding_idis(params))


def _methods_adding_idis(params: dict[str, Any]) -> list[str]:
    """The methods of ``params`` that add IDI pairs (their class's ``needs_idis``); the others need none."""
    from ..mitigation.base import method_class
    from ..mitigation.names import DEFAULT_METHOD

    methods = params.get("method", DEFAULT_METHOD)
    methods = [methods] if isinstance(methods, str) else list(methods)
    method_params = params.get("method_params") or {}
    return [str(m) for m in methods if method_class(m).needs_idis(method_params.get(m) or {})]


def search_training_rows(inputs: RunInputs, plan: SearchPlan, *, seeds=None, out=None, cache_dir=None,
                         reuse_seeds=None, on_step=None):
    """Search for IDIs to retrain with, leak-free (architecture: mitigation): seeds from the training rows only.

    The seed strategy (its chiral model, clusters and SHAP background included) sees the training rows alone
    (:meth:`RunInputs.training_rows`); given seeds with a held-out row's non-protected projection are excluded;
    and IDI pairs whose key is a held-out projection (a local phase that walked onto a test individual) are
    removed from the result (:func:`chiralfair.mitigation.leakage.without_test_projections`).

    Parameters
    ----------
    inputs : RunInputs
    plan : SearchPlan
    seeds : SeedReport or array-like of shape (n_seeds, n_features), optional
        Seeds to use instead of selecting them with ``plan.seeds``.
    out : path, optional
        The search's run folder (written whole).
    cache_dir, reuse_seeds, on_step
        As :func:`~chiralfair.pipeline.run_pipeline`.

    Returns
    -------
    result : SearchResult
        The pairs with a held-out projection removed (``n_idis`` counts those kept).
    info : dict
        ``n_seeds``, ``n_seeds_excluded``, ``n_idis_excluded``, ``seed_strategy``.

    Raises
    ------
    ConfigError
        When every given seed is a held-out row's projection.
    """
    from ..mitigation.leakage import HeldOutProjections, without_test_projections
    from ..reporting.report import write_run
    from ..results import SeedReport
    from .run import run_folder_guard, run_pipeline
    from .steps import prepare_search, run_search, with_generator_choice

    domain, X = inputs.domain, inputs.dataset.X
    projections = HeldOutProjections.of(domain, X[inputs.train_index], X[inputs.test_index])
    n_excluded = 0
    if seeds is None:
        with run_folder_guard(out) as folder:
            outcome = run_pipeline(inputs, plan, verdict=False, out=folder.path, on_step=on_step,
                                   cache_dir=cache_dir, reuse_seeds=reuse_seeds, seeds_from_training_rows=True)
            if folder.path is not None:
                write_run(outcome, folder.path)
        found, n_seeds, strategy = folder.moved(outcome.result), outcome.seed_report.n_seeds, plan.seeds
    else:
        strategy = seeds.strategy if isinstance(seeds, SeedReport) else "given"
        X_seeds = seeds.seeds if isinstance(seeds, SeedReport) else domain.validate(seeds, what="seeds")
        planted = projections.hits(domain, X_seeds)
        n_excluded, X_seeds = int(planted.sum()), X_seeds[~planted]
        if len(X_seeds) == 0:
            raise ConfigError(f"every one of the {n_excluded} seeds is a held-out row's projection: no seed is left "
                              "to search from training rows")
        prepared = prepare_search(plan, inputs, cache_dir=cache_dir)
        found, n_seeds = run_search(prepared, inputs, X_seeds), len(X_seeds)
        if prepared.generator_choice is not None:
            found = with_generator_choice(found, prepared.generator_choice)
    kept, n_idis_excluded = without_test_projections(found, projections, domain)
    return kept, {"n_seeds": int(n_seeds), "n_seeds_excluded": n_excluded, "n_idis_excluded": n_idis_excluded,
                  "seed_strategy": strategy}


def inputs_from_run(record: dict[str, Any], *, data=None, model=None, test=None, trust_model_file: bool = False,
                    data_home=None, cache_dir=None, allow_checksum_mismatch: bool = False) -> RunInputs:
    """Rebuild the inputs a run folder was made from, and check they are the same.

    Parameters
    ----------
    record : dict
        :func:`chiralfair.results.run_folder.read_run`.
    data, model, test : path, optional
        For a run made from Python objects (not rebuildable from its folder), or to point at moved files.
    trust_model_file : bool
        Needed again for a pickle or an untrusted skops file.
    data_home, cache_dir, allow_checksum_mismatch
        For a benchmark run.

    Returns
    -------
    RunInputs

    Raises
    ------
    ConfigError
        When the folder's source cannot be rebuilt (a run of Python objects without ``data`` and ``model``), a file
        changed since the run (its SHA-256 differs), or the rebuilt domain is not the run's.
    """
    source = record.get("source") or {}
    config = record["config"]
    where = f"--from-run {record['folder']!r}"
    kind = source.get("kind", "benchmark" if data is None else "files")
    if kind == "benchmark" and data is None and model is None:
        from .config import RunConfig
        from .inputs import inputs_from_names

        run_config = RunConfig(dataset=config["dataset"], protected=tuple(config["protected"]), model=config["model"],
                               random_state=int(config.get("random_state", 0)),
                               model_random_state=source.get("model_random_state", config.get("model_random_state")),
                               model_params=dict(config.get("model_params") or {}), data_home=data_home,
                               cache_dir=cache_dir, allow_checksum_mismatch=allow_checksum_mismatch,
                               couple=config.get("couple"), constraints=tuple(config.get("constraints") or ()),
                               reference=bool(config.get("reference", True)))
        inputs = inputs_from_names(run_config)
    else:
        inputs = _inputs_from_files(source, where, data=data, model=model, test=test, trust=trust_model_file)
    if inputs.domain.to_dict() != record["domain"].to_dict():
        raise ConfigError(f"{where}: the data and model given do not make the run's domain (protected attributes, "
                          "features or their values differ); retrain from the data and model the run tested")
    return inputs


def _inputs_from_files(source: dict[str, Any], where: str, *, data, model, test, trust: bool) -> RunInputs:
    from ..results.provenance import file_sha256
    from .inputs import inputs_from_objects
    from .spec import DataSpec

    data_path = data if data is not None else source.get("data")
    model_path = model if model is not None else source.get("model_file")
    test_path = test if test is not None else source.get("test")
    if data_path is None or model_path is None:
        raise ConfigError(f"{where} was made from Python objects (a DataFrame or a fitted model, not files), so its "
                          "folder cannot rebuild them: pass --data FILE and --model FILE (the data and model it "
                          "tested), or call chiralfair.retrain(model, data, idis=result) in Python")
    for path, key in ((data_path, "data_sha256"), (model_path, "model_sha256"), (test_path, "test_sha256")):
        if path is None or source.get(key) is None:
            continue
        if not Path(path).is_file():
            raise ConfigError(f"{where}: file {str(path)!r} the run tested is gone; pass it with --data/--model/--test")
        if file_sha256(path) != source[key]:
            raise ConfigError(f"{where}: file {str(path)!r} changed since the run (SHA-256 differs); its IDIs are "
                              "another model's or data's")
    settings = DataSpec(label=source.get("label"), positive_class=source.get("positive_class"),
                        favourable=source.get("favourable"), protected=tuple(_tuples(source.get("protected"))),
                        bins=dict(source.get("bins") or {}), couple=source.get("couple"),
                        constraints=tuple(source.get("constraints") or ()),
                        model_output=source.get("model_output"), model_input=source.get("model_input") or "auto")
    return inputs_from_objects(model_path, data_path, settings=settings, test=test_path,
                               test_size=None if test_path is not None else source.get("test_size"),
                               random_state=int(source.get("random_state") or 0),
                               trust_model_file=trust)


def _tuples(protected) -> list:
    """JSON lists back to tuples (one protected attribute over several columns)."""
    return [tuple(p) if isinstance(p, list) else p for p in (protected or [])]


def retrain_benchmark(config, *, out=None, on_step=None, **params):
    """Search with ``config`` (seeds from the training rows), retrain the zoo model, measure on the test split.

    Parameters
    ----------
    config : RunConfig
    out : path, optional
        Retrain folder (the search's run folder in ``out/search``).
    on_step : callable, optional
    **params
        Of :func:`chiralfair.mitigation.retrain`.

    Returns
    -------
    RetrainResult

    Raises
    ------
    ConfigError, DatasetError, ModelCapabilityError, RunFolderError
    """
    from .config import validate_config
    from .inputs import inputs_from_names

    validate_config(config)
    if out is not None:
        from ..reporting.report import check_retrain_folder

        check_retrain_folder(out)  # refused before anything is trained
    inputs = inputs_from_names(config, step=on_step or (lambda name: None))
    plan = SearchPlan(seeds=config.seeds, generator=config.generator, max_global=config.max_global,
                      max_local=config.max_local, random_state=config.random_state,
                      generator_params=dict(config.generator_params), seed_params=dict(config.seed_params))
    return retrain_inputs(inputs, plan=plan, random_state=config.random_state, out=out, cache_dir=config.cache_dir,
                          on_step=on_step, **params)


def retrain_from_run(folder, *, data=None, model=None, test=None, trust_model_file: bool = False, expect=None,
                     out=None, random_state: int = 0, data_home=None, cache_dir=None,
                     allow_checksum_mismatch: bool = False, on_step=None, **params):
    """Retrain with the IDIs of an earlier run folder, on the data and model that run tested.

    Parameters
    ----------
    folder : path
        A finished ``chiralfair run --out`` folder (benchmark or your own files).
    data, model, test : path, optional
        For a run made from Python objects, or files that moved; checked against the run (SHA-256, domain).
    trust_model_file : bool
        Needed again for a pickle or an untrusted skops file.
    expect : dict, optional
        ``dataset``, ``protected``, ``model`` the caller named: each must be the run's (else refused).
    out, random_state, data_home, cache_dir, allow_checksum_mismatch, on_step, **params
        As :func:`retrain_benchmark`.

    Returns
    -------
    RetrainResult

    Raises
    ------
    RunFolderError
        For a folder that is not a finished run with IDIs.
    ConfigError
        When the run's data or model cannot be rebuilt, changed, or differ from ``expect``.
    """
    from ..results.run_folder import read_run

    record = read_run(folder)
    _check_expected(record, expect or {})
    idis = _run_pairs(record, _methods_adding_idis(params))
    if out is not None:
        from ..reporting.report import check_retrain_folder

        check_retrain_folder(out)
    inputs = inputs_from_run(record, data=data, model=model, test=test, trust_model_file=trust_model_file,
                             data_home=data_home, cache_dir=cache_dir, allow_checksum_mismatch=allow_checksum_mismatch)
    config = record["config"]
    # the generator that ran: with --generator auto (the default on your own model), the one auto picked
    searched_with = {"generator": record["generator"], "seed_strategy": config["seeds"],
                     "params": record["generator_params"] or {"max_global": config["max_global"],
                                                              "max_local": config["max_local"]},
                     "random_state": config.get("random_state")}
    choice = record.get("generator_choice")
    notes = () if not choice else (f"generator auto: the run's search ran {choice['generator']} (auto picked it: "
                                   f"{choice.get('reason', 'what the model offers')}); the fresh searches here run "
                                   "it too",)
    return retrain_inputs(inputs, idis=idis, random_state=random_state, out=out, cache_dir=cache_dir,
                          searched_with=searched_with, on_step=on_step, extra_notes=notes, **params)


def _run_pairs(record: dict[str, Any], adding: list[str]):
    """The IDI pairs of a run folder as codes, ``(idis, counterparts)``.

    None when the run found none and no method of ``adding`` (the methods that add IDI pairs) is run.

    Raises
    ------
    RunFolderError
        When the run found no IDIs and a method of ``adding`` is run, or its ``idis.parquet`` cannot be read.
    """
    import pandas as pd

    from ..exceptions import RunFolderError
    from ..mitigation.retraining import idis_from_frame
    from ..results.run_folder import PAIRS_NAME

    folder = Path(record["folder"])
    if record["n_idis"] == 0:
        if not adding:
            return None  # counterfactual augmentation, unawareness, ... draw no IDI pairs
        raise RunFolderError(f"{str(folder)!r}: that run found no IDIs, and method(s) {', '.join(map(repr, adding))} "
                             "retrain with its IDIs, so there is nothing for them to retrain with; methods that "
                             "need no IDIs (e.g. method 'counterfactual' or 'unaware') can retrain from it")
    try:
        frame = pd.read_parquet(folder / PAIRS_NAME)  # a file or a folder of parts
    except (OSError, ValueError) as err:
        raise RunFolderError(f"{str(folder)!r}: cannot read {PAIRS_NAME}: {err}") from None
    return idis_from_frame(frame, record["domain"])


def _check_expected(record: dict[str, Any], expect: dict[str, Any]) -> None:
    config = record["config"]
    where = f"--from-run {record['folder']!r}"
    if expect.get("dataset") is not None and expect["dataset"] != config.get("dataset"):
        raise ConfigError(f"{where} searched dataset {config.get('dataset')!r}, not {expect['dataset']!r}")
    protected = expect.get("protected")
    if protected and list(protected) != list(record["domain"].protected_names):
        raise ConfigError(f"{where} tested protected attribute(s) {','.join(record['domain'].protected_names)}, not "
                          f"{','.join(protected)}")
    if expect.get("model") is not None and expect["model"] != config.get("model"):
        raise ConfigError(f"{where} searched model {config.get('model')!r}, not {expect['model']!r}: its IDIs are "
                          "another model's")
