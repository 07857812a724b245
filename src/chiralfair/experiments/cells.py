"""One cell of an experiment grid: its config, its key, and its folder ``<out>/cells/<key>/``.

The key is a hash of the cell's full config (axis values, random states, parameters): no code version and no
folder (``data_home``, ``cache_dir``) enter it, so a grid resumed after an upgrade or on another machine finds
its cells; the versions go into each result's ``meta`` (:mod:`.manifest`). Every file of a cell folder is
written whole or not at all (a temporary file, then ``os.replace``): ``cell.json`` (the config) when the cell
starts, then ``result.json`` (success) or ``error.json`` (failure). A cell is done when its ``result.json``
holds a JSON object, failed when only its ``error.json`` does, and missing otherwise (never started, killed
mid-way, or **damaged**: a ``result.json`` or ``error.json`` that is empty, cut short or not valid JSON, as a crash
mid-write on a file system without atomic rename, a full disk or a hand edit leave it). A damaged cell is run
again like any missing cell, and :func:`cell_damage` says why it counts as missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..storage import atomic_write_text, canonical_json, json_default

KEY_LENGTH = 16
CELL_NAME, RESULT_NAME, ERROR_NAME, PAIRS_NAME = "cell.json", "result.json", "error.json", "idis.parquet"
STATES = ("done", "failed", "missing")


@dataclass(frozen=True)
class Cell:
    """Everything one cell of a grid runs with (see :class:`~.grid.Grid`).

    Attributes
    ----------
    task : {"search", "seeds", "retrain"}
    dataset : str
    protected : tuple of str
    model : str
    seeds : tuple of str
        One seed strategy; for ``task = "retrain"`` the strategies compared.
    generator : str or None
        None for ``task = "seeds"``.
    max_global, max_local : int
        The search budget (``task = "seeds"``: ``max_global`` seeds are selected).
    random_state : int
        Drives the seeds and the search (and the retraining).
    model_random_state : int
        Drives the split and the training of the model and of its chiral model.
    generator_params : dict
    seed_params : dict of str to dict
        Extra parameters per seed strategy of the cell.
    verdict, save_pairs, diversity : bool
    model_params : dict
        Zoo hyper-parameters of the model (:class:`~chiralfair.models.zoo.ModelSpec` params).
    retrain : dict
        Parameters of :func:`chiralfair.mitigation.retraining.retrain` (retrain cells).
    max_queries : int or None
        The query budget of the seed selection and the search together (rows sent to the model under test, as
        :class:`~chiralfair.models.protocol.CountingModel` counts them); None: none but ``max_global`` and
        ``max_local``. In the key only when given, so the cells without one keep their keys.
    couple : bool
        The dataset's default couplings are on (architecture: counterparts that could exist). False (the default, and
        every cell written before couplings existed) runs uncoupled counterparts; the key holds ``couple`` only when it
        is True, so the keys of uncoupled cells are those they always had.
    own : dict
        For a row of your own data with your model file: the files' SHA-256 (``data_sha256``, ``schema_sha256``,
        ``test_sha256``, ``model_sha256``), ``trust_model_file`` and ``test_size``; in the key (only when given, so
        the benchmark cells keep theirs). Empty for a benchmark.
    paths : dict
        Where those files are (``data``, ``schema``, ``test``, ``model``): not in the key, so a grid folder moved
        with its files elsewhere keeps its cells.
    """

    task: str
    dataset: str
    protected: tuple[str, ...]
    model: str
    seeds: tuple[str, ...]
    generator: str | None
    max_global: int
    max_local: int
    random_state: int
    model_random_state: int
    generator_params: dict[str, Any] = field(default_factory=dict)
    seed_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: bool = False
    save_pairs: bool = False
    diversity: bool = False
    model_params: dict[str, Any] = field(default_factory=dict)
    retrain: dict[str, Any] = field(default_factory=dict)
    couple: bool = False
    own: dict[str, Any] = field(default_factory=dict)
    max_queries: int | None = None
    paths: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def row(self) -> str:
        """``"dataset:protected[,protected2]"``, as in the grid file."""
        return f"{self.dataset}:{','.join(self.protected)}"

    def to_dict(self) -> dict[str, Any]:
        """The full config as JSON-ready values (what the key hashes).

        Returns
        -------
        dict
        """
        return {"task": self.task, "dataset": self.dataset, "protected": list(self.protected), "model": self.model,
                "seeds": list(self.seeds), "generator": self.generator, "max_global": self.max_global,
                "max_local": self.max_local, "random_state": self.random_state,
                "model_random_state": self.model_random_state, "generator_params": self.generator_params,
                "seed_params": self.seed_params, "verdict": self.verdict, "save_pairs": self.save_pairs,
                "retrain": self.retrain, "diversity": self.diversity, "model_params": self.model_params,
                **({"couple": True} if self.couple else {}), **({"own": self.own} if self.own else {}),
                **({"max_queries": self.max_queries} if self.max_queries is not None else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.

        Returns
        -------
        Cell
        """
        return cls(**{**d, "protected": tuple(d["protected"]), "seeds": tuple(d["seeds"])})

    @property
    def key(self) -> str:
        """:func:`cell_key` of this cell."""
        return cell_key(self)


def cell_key(cell: Cell) -> str:
    """Hex SHA-256 prefix (16 characters) of the canonical JSON of the cell's full config.

    Parameters
    ----------
    cell : Cell

    Returns
    -------
    str
    """
    return hashlib.sha256(canonical_json(cell.to_dict()).encode()).hexdigest()[:KEY_LENGTH]


def cell_folder(out: str | os.PathLike, key: str) -> Path:
    """``<out>/cells/<key>``.

    Parameters
    ----------
    out : str or path-like
        The grid folder.
    key : str
        The cell's key (:func:`cell_key`).

    Returns
    -------
    pathlib.Path
    """
    return Path(out) / "cells" / key


def cell_state(folder: Path) -> str:
    """``"done"`` (a readable result.json), ``"failed"`` (only a readable error.json) or ``"missing"``.

    A damaged ``result.json`` or ``error.json`` (:func:`json_damage`) makes the cell missing; :func:`cell_damage`
    says which file and why.

    Parameters
    ----------
    folder : pathlib.Path
        A cell folder.

    Returns
    -------
    {"done", "failed", "missing"}
    """
    if (folder / RESULT_NAME).is_file() and json_damage(folder / RESULT_NAME) is None:
        return "done"
    if (folder / RESULT_NAME).is_file():
        return "missing"
    if (folder / ERROR_NAME).is_file() and json_damage(folder / ERROR_NAME) is None:
        return "failed"
    return "missing"


def cell_damage(folder: Path) -> str | None:
    """Why the cell in ``folder`` counts as missing although it holds a result or an error, else None.

    Parameters
    ----------
    folder : pathlib.Path
        A cell folder.

    Returns
    -------
    str or None
        ``"result.json is empty"``, ``"error.json is not valid JSON (...)"``, ...
    """
    for name in (RESULT_NAME, ERROR_NAME):
        if (folder / name).is_file():
            damage = json_damage(folder / name)
            return None if damage is None else f"{name} {damage}"
    return None


def json_damage(path: Path) -> str | None:
    """What is wrong with the JSON object file ``path``, or None when it reads as a JSON object.

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    str or None
        ``"is empty"``, ``"is not valid JSON (<decoder message>)"``, ``"is not UTF-8 text"``, ``"holds a
        list, not a JSON object"`` or ``"cannot be read (<OS error>)"``.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    except OSError as err:
        return f"cannot be read ({err.strerror or err})"
    if not text.strip():
        return "is empty"
    try:
        value = json.loads(text)
    except ValueError as err:
        return f"is not valid JSON ({err}; {len(text.encode())} bytes: cut short?)"
    if not isinstance(value, dict):
        return f"holds a {type(value).__name__}, not a JSON object"
    return None


def write_json(path: Path, value) -> None:
    """Write indented JSON whole or not at all (:func:`chiralfair.storage.atomic_write_text`).

    Parameters
    ----------
    path : pathlib.Path
    value : object
        JSON-serialisable.
    """
    atomic_write_text(path, json.dumps(value, indent=2, allow_nan=True, default=json_default) + "\n")


def start_cell(folder: Path, cell: Cell) -> None:
    """Create the cell folder and write its ``cell.json``; leftovers of a killed attempt are removed.

    Parameters
    ----------
    folder : pathlib.Path
        The cell folder (:func:`cell_folder`).
    cell : Cell
    """
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)
    write_json(folder / CELL_NAME, cell.to_dict())


def finish_cell(folder: Path, result: dict[str, Any]) -> None:
    """Write ``result.json``, then drop the ``error.json`` of an earlier failed attempt.

    Parameters
    ----------
    folder : pathlib.Path
        The cell folder.
    result : dict
        The cell's figures, summary and manifest.
    """
    write_json(folder / RESULT_NAME, result)
    (folder / ERROR_NAME).unlink(missing_ok=True)


def fail_cell(folder: Path, err: BaseException, seconds: float) -> dict[str, Any]:
    """Write ``error.json`` (type, message, traceback text, seconds) and return its content.

    Parameters
    ----------
    folder : pathlib.Path
        The cell folder.
    err : BaseException
        What the cell raised.
    seconds : float
        Wall seconds until it failed.

    Returns
    -------
    dict
        ``type``, ``message``, ``traceback``, ``seconds``.
    """
    record = {"type": type(err).__name__, "message": str(err),
              "traceback": "".join(traceback.format_exception(err)), "seconds": seconds}
    write_json(folder / ERROR_NAME, record)
    return record


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``.

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    dict

    Raises
    ------
    RunFolderError
        If the file is missing, empty, cut short or not a JSON object; the message names the file and says to
        run the grid again (a damaged cell counts as missing).
    """
    from ..exceptions import RunFolderError

    damage = json_damage(path) if path.is_file() else "does not exist"
    if damage is not None:
        raise RunFolderError(f"{str(path)!r} {damage}: its cell counts as missing; run the grid again "
                             "(chiralfair experiment run) to redo it")
    return json.loads(path.read_text(encoding="utf-8"))
