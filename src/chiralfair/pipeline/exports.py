"""What a run hands to the team's tools: a model card, a BOM, an MLflow run (``--model-card``, ``--bom``, ``--mlflow``).

The command line names the file or asks for tracking; these functions do the rest: :func:`write_model_card`
loads the model file a skops card needs, :func:`write_bom` hashes the model and data files into a CycloneDX BOM,
:func:`track` logs into the active MLflow run (:mod:`chiralfair.reporting.model_card`,
:mod:`chiralfair.reporting.tracking`). The checks (:func:`check_model_card_path`, :func:`check_bom_path`,
:func:`check_tracking`) run before any work, so that a file chiralfair would not overwrite or a store MLflow cannot
open is refused at once, not after a search.
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
        new ``.md`` card is refused (an existing Markdown file with chiralfair's section needs no model). True
        (default): not known yet.

    Raises
    ------
    ConfigError
        Naming the file and the suffixes taken (``.json``, ``.md``), a ``.md`` card without a model file, or a file
        chiralfair did not write (:func:`chiralfair.reporting.model_card.check_card_file`).
    """
    from ..reporting.model_card import check_card_file

    if path is None:
        return
    suffix = Path(path).suffix.lower()
    if suffix not in (".json", ".md"):
        raise ConfigError(f"model card {str(path)!r}: use a .json file (a CycloneDX modelCard) or a .md file (a skops "
                          f"model card of an sklearn model), not {Path(path).suffix or 'no suffix'!r}")
    if suffix == ".md" and model_file is None and not Path(path).exists():
        raise ConfigError(f"a skops model card ({Path(path).name}) describes an sklearn model, and a zoo model is not "
                          "a file; write the CycloneDX card instead (a .json file), or give your sklearn model "
                          "(--data with --model FILE.skops)")
    check_card_file(path)


def check_bom_path(path: str | os.PathLike | None) -> None:
    """Refuse a BOM file that is not ``.json`` or that chiralfair did not write, before any work.

    Parameters
    ----------
    path : path or None

    Raises
    ------
    ConfigError
    """
    from ..reporting.model_card import check_card_file

    if path is None:
        return
    if Path(path).suffix.lower() != ".json":
        raise ConfigError(f"BOM {str(path)!r}: a CycloneDX BOM is a .json file, not "
                          f"{Path(path).suffix or 'no suffix'!r}")
    check_card_file(path)


def write_bom(subject, path: str | os.PathLike, *, model=None, data_files=None) -> Path:
    """Write the CycloneDX 1.6 BOM of the model with the card of ``subject``.

    See :func:`chiralfair.reporting.model_card.write_bom`.

    Parameters
    ----------
    subject : Verdict, AuditResult, RunOutcome, GateDecision or RetrainResult
    path : path
        A ``.json`` file.
    model : str or path, optional
        A model file (hashed, named by its file name) or a zoo model's name; default ``"model"``.
    data_files : mapping of str to path, optional
        ``{"data": ..., "test": ...}``: the data files, hashed; None values are left out.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ConfigError
    """
    from ..reporting.model_card import write_bom as write

    check_bom_path(path)
    is_file = isinstance(model, str | os.PathLike) and Path(model).is_file()
    name = Path(model).name if is_file else str(model or "model")
    files = {role: f for role, f in (data_files or {}).items() if f is not None}
    return write(subject, path, name=name, model_file=model if is_file else None, data_files=files)


def check_tracking() -> str:
    """Refuse, before any work, an MLflow store the installed MLflow cannot open.

    See :func:`chiralfair.reporting.tracking.check_tracking_store`.

    Returns
    -------
    str
        The tracking URI.

    Raises
    ------
    MissingDependencyError, ConfigError
    """
    from ..reporting.tracking import check_tracking_store

    return check_tracking_store()


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
    if Path(path).suffix.lower() == ".md" and not Path(path).exists():
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


__all__ = ["check_bom_path", "check_model_card_path", "check_tracking", "track", "write_bom", "write_model_card"]
