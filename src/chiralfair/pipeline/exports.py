"""What a run hands to the team's tools: a model card file and an MLflow run (``--model-card``, ``--mlflow``).

The command line names the file or asks for tracking; these functions do the rest: :func:`write_model_card`
loads the model file a skops card needs, :func:`track` logs into the active MLflow run
(:mod:`chiralfair.reporting.model_card`, :mod:`chiralfair.reporting.tracking`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..exceptions import ConfigError


def check_model_card_path(path: str | os.PathLike | None, *, model_file=True) -> None:
    """Refuse a model card file of an unknown kind before any work (light: no heavy import).

    Parameters
    ----------
    path : path or None
    model_file : path, bool or None
        The model file a skops card (``.md``) would describe; None: there is none (a benchmark's zoo model), so a
        ``.md`` card is refused. True (default): not known yet.

    Raises
    ------
    ConfigError
        Naming the file and the suffixes taken (``.json``, ``.md``), or a ``.md`` card without a model file.
    """
    if path is None:
        return
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".md"):
        raise ConfigError(f"model card {str(path)!r}: use a .json file (a CycloneDX modelCard) or a .md file (a skops "
                          f"model card of an sklearn model), not {Path(path).suffix or 'no suffix'!r}")
    if suffix == ".md" and model_file is None:
        raise ConfigError(f"a skops model card ({Path(path).name}) describes an sklearn model, and a zoo model is not "
                          "a file; write the CycloneDX card instead (a .json file), or give your sklearn model "
                          "(--data with --model FILE.skops)")


def write_model_card(subject, path: str | os.PathLike, *, model=None, trust_model_file: bool = False) -> Path:
    """Write the model card of ``subject`` (:func:`chiralfair.reporting.model_card.write_model_card`).

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    path : path
        ``.json`` (CycloneDX) or ``.md`` (skops, for an sklearn model).
    model : sklearn estimator or path, optional
        The model a skops card describes; a model file is loaded (:func:`chiralfair.models.files.load_model_file`,
        with ``trust_model_file``). Default: the model of an :class:`~.front.AuditResult`.
    trust_model_file : bool

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ConfigError, ModelFileError
    """
    from ..reporting.model_card import write_model_card as write

    check_model_card_path(path)
    if Path(path).suffix.lower() == ".md":
        model = _sklearn_model(subject, model, trust_model_file)
    return write(subject, path, model=model)


def _sklearn_model(subject, model, trust: bool):
    if isinstance(model, str | os.PathLike) and Path(model).suffix:
        from ..models.files import load_model_file

        return load_model_file(Path(model), trust=trust)
    if model is None and getattr(subject, "inputs", None) is not None:
        return getattr(subject.inputs.model, "estimator", None)
    return model


def track(subject, *, folder=None, files=(), params=None) -> str:
    """Log ``subject`` into the active MLflow run, or a new one (:func:`chiralfair.reporting.tracking.log_to_mlflow`).

    Parameters
    ----------
    subject : AuditResult, RunOutcome, Verdict, GateDecision or RetrainResult
        What a command computed.
    folder : str or path-like, optional
        The run or retrain folder, logged as artifacts under ``chiralfair/``.
    files : sequence of path, default=()
        Further files to log (a model card).
    params : dict, optional
        Parameters of the command, logged with the ``fair_`` prefix.

    Returns
    -------
    str
        The run id.

    Raises
    ------
    MissingDependencyError
        Without MLflow.
    """
    from ..reporting.tracking import log_to_mlflow

    if folder is not None and not Path(folder).is_dir():
        folder = None
    return log_to_mlflow(subject, folder=folder, files=[f for f in files if f is not None], params=params)


__all__ = ["check_model_card_path", "track", "write_model_card"]
