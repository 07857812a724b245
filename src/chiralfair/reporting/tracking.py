"""Experiment tracking: a run's parameters, verdict, search figures and folder logged into the active MLflow run.

:func:`log_to_mlflow` logs into the run that is active (``mlflow.start_run()`` in your script, or the one named
by ``MLFLOW_RUN_ID``), or starts one and ends it again. Every key is prefixed ``fair_`` so that it never clashes
with the run's own keys:

- parameters: the run's configuration (dataset, protected attributes, model, generator - the one that ran, with
  ``generator_asked`` when ``auto`` picked it -, seeds, budget, random state) and the verdict's (population,
  confidence, margin, method, favourable label);
- metrics: the share affected (``fair_share_affected``), its interval for the people the model will meet as the
  verdict decided it (``fair_share_affected_people_lower``, ``..._upper``; a sampled verdict's own interval, which
  is also ``fair_share_affected_lower``, ``..._upper``: an exact share has no interval of its own), per group
  ``fair_group/<group>/share_harmed``, ``.../share_affected``, ``.../people_harmed_lower``, ``..._upper`` and
  ``.../too_small`` (1 or 0), with the worst group and the groups too small to tell as the parameters
  ``fair_worst_group`` and ``fair_too_small`` (``<group>`` is the group's name with
  every character but letters, digits, ``_``, ``-`` and spaces written ``.XX``, its UTF-8 bytes in hex: ``sex=f``
  is ``sex.3Df``, ``age<40`` is ``age.3C40``; :func:`group_key` and its inverse :func:`group_name`), the search's
  figures
  (``fair_n_idis``, ``fair_n_queries``, ``fair_success_rate``, ``fair_initialization_rate``, ...), the model's
  ``fair_model_f1`` on the held-out rows, and, when measured, each group's ``selection_rate``, ``tpr``, ``fpr``;
  for a gate (``chiralfair check``), ``fair_gate_exit_code``, the interval it decided on (``fair_gate_lower``,
  ``fair_gate_upper``, in its reading) and ``fair_gate_n_untested``; for a retraining,
  ``fair_retrain/<stage>/<figure>`` per model;
- artifacts: the run folder (``result.json``, the report, ...) under ``chiralfair/``, or, without a folder, the
  figures as ``chiralfair/<name>.json``.

MLflow is an optional extra: ``pip install 'chiralfair[mlflow]'`` brings ``mlflow-skinny`` with SQLAlchemy and
Alembic, which MLflow's default local store (``sqlite:///mlflow.db`` in the working folder, artifacts in
``./mlruns``) needs. :func:`check_tracking_store` refuses, in one line naming MLflow's rule and the fix, a store the
installed MLflow cannot open (the SQLite store without SQLAlchemy, a ``file:`` store without
``MLFLOW_ALLOW_FILE_STORE=true``), so that the command line can say so before any work.

References
----------
.. [1] MLflow Tracking, "Backend stores". https://mlflow.org/docs/latest/self-hosting/architecture/backend-store/
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from typing import Any

from ..exceptions import MissingDependencyError

logger = logging.getLogger(__name__)

PREFIX = "fair_"
ARTIFACT_PATH = "chiralfair"
# MLflow keys may hold letters, digits, "_", "-", ".", " ", "/" (and ":" but not on Windows).
_NOT_IN_KEY = re.compile(r"[^\w\-. /]")
# A group's name in a key keeps these characters; every other one (".", "/", "=", "<", ...) is written ".XX".
_KEPT_IN_GROUP = re.compile(r"[A-Za-z0-9_\- ]")
_ESCAPED = re.compile(r"\.([0-9A-F]{2})")
# Schemes of MLflow's SQLAlchemy stores, and the packages they need beside mlflow-skinny.
SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
SQL_PACKAGES = ("sqlalchemy", "alembic")
SEARCH_FIGURES = ("n_idis", "n_global", "n_local", "n_tested", "n_queries", "success_rate", "seconds",
                  "initialization_rate", "n_seeds", "n_seed_idis")
CONFIG_KEYS = ("dataset", "protected", "model", "generator", "seeds", "max_global", "max_local", "random_state")
VERDICT_PARAMS = ("population", "confidence", "margin", "max_queries", "method", "gamma", "favourable")


def log_to_mlflow(subject, *, folder: str | os.PathLike | None = None, params: dict[str, Any] | None = None,
                  files=(), run_name: str | None = None) -> str:
    """Log ``subject``'s parameters and figures (prefixed ``fair_``) and its folder into the active MLflow run.

    Parameters
    ----------
    subject : AuditResult, RunOutcome, Verdict, GateDecision or RetrainResult
        What to log (see the module docstring for the keys).
    folder : path, optional
        A run or retrain folder, logged as artifacts under ``chiralfair/``. Without it the figures are logged as
        ``chiralfair/result.json`` (``verdict.json``, ``retrain.json``).
    params : dict, optional
        More parameters (prefixed ``fair_`` too).
    files : sequence of path
        More files to log under ``chiralfair/`` (a model card).
    run_name : str, optional
        Name of the run started when none is active.

    Returns
    -------
    str
        The MLflow run id.

    Raises
    ------
    MissingDependencyError
        When MLflow is not installed.
    """
    mlflow = _mlflow()
    logged_params, metrics, name, document = figures_of(subject)
    logged_params.update({k: v for k, v in (params or {}).items()})
    started = mlflow.active_run() is None
    run = mlflow.active_run() or mlflow.start_run(run_name=run_name)
    try:
        mlflow.log_params({key(k): _param_text(v) for k, v in logged_params.items()})
        mlflow.log_metrics({key(k): float(v) for k, v in metrics.items()})
        mlflow.set_tag(key("chiralfair_version"), _version())
        if folder is not None:
            mlflow.log_artifacts(str(folder), artifact_path=ARTIFACT_PATH)
        else:
            mlflow.log_dict(document, f"{ARTIFACT_PATH}/{name}.json")
        for f in files:
            mlflow.log_artifact(str(f), artifact_path=ARTIFACT_PATH)
        run_id = run.info.run_id
        logger.info("logged %d parameters and %d metrics into MLflow run %s", len(logged_params), len(metrics), run_id)
    finally:
        if started:
            mlflow.end_run()
    return run_id


def key(name: str) -> str:
    """``fair_`` + ``name``, with the characters MLflow refuses in keys replaced by ``_``.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    return PREFIX + _NOT_IN_KEY.sub("_", name)


def group_key(group: str) -> str:
    """A group's name as one part of an MLflow key: reversible, so two groups never share a key.

    Letters, digits, ``_``, ``-`` and spaces stay; every other character is written ``.XX`` per byte of its UTF-8
    encoding (``.`` itself is ``.2E``), so the part holds only characters MLflow takes on every system and no
    ``/`` that would read as another level of the key. ``<40`` and ``>40`` give ``.3C40`` and ``.3E40``.

    Parameters
    ----------
    group : str
        A group's name, e.g. ``"sex=f"`` or ``"race=b, sex=m"``.

    Returns
    -------
    str
        E.g. ``"sex.3Df"``; :func:`group_name` gives ``group`` back.
    """
    return "".join(c if _KEPT_IN_GROUP.fullmatch(c) else "".join(f".{b:02X}" for b in c.encode())
                   for c in group)


def group_name(part: str) -> str:
    """The group's name a key part of :func:`group_key` stands for (its inverse).

    Parameters
    ----------
    part : str
        E.g. ``"sex.3Df"``.

    Returns
    -------
    str
        E.g. ``"sex=f"``.
    """
    out = bytearray()
    i = 0
    while i < len(part):
        escaped = _ESCAPED.match(part, i)
        if escaped:
            out.append(int(escaped.group(1), 16))
            i = escaped.end()
        else:
            out += part[i].encode()
            i += 1
    return out.decode()


def check_tracking_store() -> str:
    """The tracking URI MLflow will log to, or a one-line refusal when the installed MLflow cannot open its store.

    With no tracking URI set (``MLFLOW_TRACKING_URI``, :func:`mlflow.set_tracking_uri`), MLflow 3 logs to
    ``sqlite:///mlflow.db`` in the working folder, whose store needs SQLAlchemy and Alembic (the ``mlflow`` extra
    brings them; ``mlflow-skinny`` alone does not), or to ``./mlruns`` when that folder already holds runs of the
    file store, which MLflow opens only with ``MLFLOW_ALLOW_FILE_STORE=true``.

    Returns
    -------
    str
        The tracking URI.

    Raises
    ------
    MissingDependencyError
        Without MLflow, or for a SQL store without SQLAlchemy and Alembic.
    ConfigError
        For a ``file:`` store (or a plain path) without ``MLFLOW_ALLOW_FILE_STORE=true``.
    """
    import importlib.util

    from ..exceptions import ConfigError

    mlflow = _mlflow()
    uri = mlflow.get_tracking_uri()
    scheme = uri.partition(":")[0].partition("+")[0].lower() if "://" in uri or uri.startswith("file:") else ""
    if scheme in SQL_SCHEMES:
        missing = [p for p in SQL_PACKAGES if importlib.util.find_spec(p) is None]
        if missing:
            raise MissingDependencyError(
                f"MLflow's tracking store {uri} needs {' and '.join(missing)}, which mlflow-skinny does not bring: "
                "pip install 'chiralfair[mlflow]' (or set MLFLOW_TRACKING_URI to a tracking server, http://...)")
    elif scheme in ("", "file"):
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE

        if not MLFLOW_ALLOW_FILE_STORE.get():
            raise ConfigError(
                f"MLflow opens the file store {uri} only with MLFLOW_ALLOW_FILE_STORE=true (MLflow 3 keeps it in "
                "maintenance mode): set that variable, or set MLFLOW_TRACKING_URI=sqlite:///mlflow.db (MLflow's "
                "default, with pip install 'chiralfair[mlflow]') or a tracking server")
    return uri


def figures_of(subject) -> tuple[dict[str, Any], dict[str, float], str, dict[str, Any]]:
    """(parameters, metrics, document name, document) of what :func:`log_to_mlflow` logs, keys without the prefix.

    Metrics that are undefined (None, NaN) are left out; parameters keep None as ``"None"``.

    Parameters
    ----------
    subject : AuditResult, RunOutcome, Verdict, GateDecision or RetrainResult

    Returns
    -------
    params : dict
    metrics : dict of str to float
    name : str
        The document's file name (``verdict.json``, ``retrain.json``, ...).
    document : dict
    """
    if hasattr(subject, "rows") and hasattr(subject, "protocol"):
        return _retrain_figures(subject)
    if hasattr(subject, "outcome") and hasattr(subject, "to_dict") and hasattr(subject, "inputs"):
        return _run_figures(subject.to_dict())
    if hasattr(subject, "summary") and hasattr(subject, "seed_report"):
        return _run_figures(subject.summary())
    if hasattr(subject, "max_share") and hasattr(subject, "verdict"):
        params, metrics, _, _ = _verdict_figures(subject.verdict)
        params.update(max_share=subject.max_share, gate_reading=subject.reading, gate_outcome=subject.outcome)
        metrics.update(gate_exit_code=subject.exit_code, gate_lower=subject.lower, gate_upper=subject.upper,
                       gate_n_untested=len(subject.untested))
        return params, metrics, "check", subject.to_dict()
    if hasattr(subject, "groups") and hasattr(subject, "share"):
        return _verdict_figures(subject)
    raise TypeError(f"cannot log a {type(subject).__name__} to MLflow: give an AuditResult, RunOutcome, Verdict, "
                    "GateDecision or RetrainResult")


def _run_figures(summary: dict[str, Any]):
    cfg = summary["meta"]["config"]
    params = {k: cfg.get(k) for k in CONFIG_KEYS}
    if summary.get("generator") and summary["generator"] != cfg.get("generator"):  # "auto": the one it picked
        params.update(generator=summary["generator"], generator_asked=cfg.get("generator"))
    metrics = {k: summary.get(k) for k in SEARCH_FIGURES}
    metrics.update(model_f1=summary["model"].get("f1"), model_accuracy=summary["model"].get("accuracy"))
    if summary.get("verdict"):
        v = summary["verdict"]
        params.update(_verdict_params(v))
        metrics.update(_verdict_metrics(v))
    if summary.get("group_metrics"):
        metrics.update(_group_metric_metrics(summary["group_metrics"]))
    return params, _defined(metrics), "result", summary


def _verdict_figures(verdict):
    v = json.loads(verdict.to_json())
    params = {"dataset": v["meta"].get("dataset"), "model": v["meta"].get("model"), "protected": v["protected"],
              "random_state": v["meta"].get("random_state")}
    params.update(_verdict_params(v))
    metrics = _verdict_metrics(v)
    metrics.update(model_f1=v["meta"].get("model_f1"), model_accuracy=v["meta"].get("model_accuracy"))
    return params, _defined(metrics), "verdict", v


def _verdict_metrics(v: dict[str, Any]) -> dict[str, Any]:
    """The verdict's figures as it decided them (an exact share has no interval of its own, only the people's)."""
    from .report import as_verdict

    verdict = as_verdict(v)
    out = {"share_affected": verdict.share, "share_affected_people_lower": verdict.people_lower,
           "share_affected_people_upper": verdict.people_upper, "n_individuals": verdict.n_individuals,
           "n_affected": verdict.n_affected, "n_harmed": verdict.n_harmed, "n_left_out": verdict.n_left_out,
           "n_unplaced": verdict.n_unplaced,
           "verdict_queries": verdict.n_queries, "verdict_exact": int(bool(verdict.exact))}
    if not verdict.exact:
        out.update(share_affected_lower=verdict.lower, share_affected_upper=verdict.upper)
    for g in verdict.groups:
        figures = ["share_harmed", "share_affected", "people_harmed_lower", "people_harmed_upper"]
        if not verdict.exact:
            figures += ["share_harmed_lower", "share_harmed_upper"]
        for figure in figures:
            out[f"group/{group_key(g['group'])}/{figure}"] = g.get(figure)
        if g["n"]:
            out[f"group/{group_key(g['group'])}/too_small"] = int(g["too_small"])
    return out


def _verdict_params(v: dict[str, Any]) -> dict[str, Any]:
    """The verdict's parameters and the groups it decided on: the worst group, those too small to tell."""
    from .report import as_verdict

    verdict = as_verdict(v)
    out = {f"verdict_{k}": v["meta"].get("params", {}).get(k) for k in VERDICT_PARAMS}
    out.update(worst_group=verdict.worst_group, too_small=list(verdict.too_small),
               people_interval=None if verdict.people_method is None else
               f"{verdict.people_confidence:.6g} {verdict.people_method}")
    return out


def _group_metric_metrics(gm: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for r in [gm["overall"], *gm["groups"]]:
        for figure in ("selection_rate", "tpr", "fpr", "idi_rate"):
            out[f"group/{group_key(r['group'])}/{figure}"] = r.get(figure)
    return out


def _retrain_figures(result) -> tuple[dict[str, Any], dict[str, float], str, dict[str, Any]]:
    params = {"protocol": result.protocol, "pairs": result.pairs, "mode": result.mode, "how": result.how,
              "dataset": result.meta.get("dataset"), "model": result.meta.get("model")}
    metrics: dict[str, Any] = {"retrain_n_idis": result.n_idis}
    for row in result.rows:
        stage = "before" if row["stage"] == "before" else (f"after_{row.get('method') or 'retrain'}"
                                                            + ("" if row["share"] is None else f"_{row['share']:g}"))
        for figure in ("f1", "accuracy", "test_idi_rate", "test_idi_lower", "test_idi_upper", "domain_idi_rate",
                       "demographic_parity_difference", "equalized_odds_difference", "remaining_idis"):
            metrics[f"retrain/{stage}/{figure}"] = row.get(figure)
    return params, _defined(metrics), "retrain", json.loads(result.to_json())


def _defined(metrics: dict[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if v is None or isinstance(v, bool | str):
            continue
        v = float(v)
        if not math.isnan(v):
            out[k] = v
    return out


def _param_text(value) -> str:
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    return str(value)


def _version() -> str:
    from .. import __version__

    return __version__


def _mlflow():
    try:
        import mlflow
    except ImportError as err:
        raise MissingDependencyError("MLflow is needed to log to an MLflow run: pip install 'chiralfair[mlflow]' "
                                     "(it brings mlflow-skinny)") from err
    return mlflow


__all__ = ["check_tracking_store", "figures_of", "group_key", "group_name", "key", "log_to_mlflow"]
