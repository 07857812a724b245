"""One cell of an experiment grid: its config, its key, and its folder ``<out>/cells/<key>/``.

The key is a hash of the cell's full config (axis values, random states, parameters): no code version and no
folder (``data_home``, ``cache_dir``) enter it, so a grid resumed after an upgrade or on another machine finds
its cells; the versions go into each result's ``meta`` (:mod:`.manifest`). Every file of a cell folder is
written whole or not at all (a temporary file, then ``os.replace``): ``cell.json`` (the config) when the cell
starts, then ``result.json`` (success) or ``error.json`` (failure). A cell is done when its ``result.json``
exists, failed when only its ``error.json`` does, and missing otherwise (never started, or killed mid-way).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    couple : bool
        The dataset's default couplings are on (design §12). False (the default, and every cell written before
        couplings existed) runs uncoupled counterparts; the key holds ``couple`` only when it is True, so the
        keys of uncoupled cells are those they always had.
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

    @property
    def row(self) -> str:
        """``"dataset:protected[,protected2]"``, as in the grid file."""
        return f"{self.dataset}:{','.join(self.protected)}"

    def to_dict(self) -> dict[str, Any]:
        """The full config as JSON-ready values (what the key hashes)."""
        return {"task": self.task, "dataset": self.dataset, "protected": list(self.protected), "model": self.model,
                "seeds": list(self.seeds), "generator": self.generator, "max_global": self.max_global,
                "max_local": self.max_local, "random_state": self.random_state,
                "model_random_state": self.model_random_state, "generator_params": self.generator_params,
                "seed_params": self.seed_params, "verdict": self.verdict, "save_pairs": self.save_pairs,
                "retrain": self.retrain, "diversity": self.diversity, "model_params": self.model_params,
                **({"couple": True} if self.couple else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Cell:
        """Inverse of :meth:`to_dict`."""
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


def canonical_json(value) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def cell_folder(out: str | os.PathLike, key: str) -> Path:
    """``<out>/cells/<key>``."""
    return Path(out) / "cells" / key


def cell_state(folder: Path) -> str:
    """``"done"`` (result.json), ``"failed"`` (only error.json) or ``"missing"``."""
    if (folder / RESULT_NAME).is_file():
        return "done"
    if (folder / ERROR_NAME).is_file():
        return "failed"
    return "missing"


def write_atomically(path: Path, data: bytes | str) -> None:
    """Write ``path`` whole or not at all: a temporary file in the same folder, then ``os.replace``."""
    payload = data.encode() if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide results from the other users of a shared folder
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, value) -> None:
    """:func:`write_atomically` of indented JSON."""
    write_atomically(path, json.dumps(value, indent=2, allow_nan=True, default=_plain) + "\n")


def start_cell(folder: Path, cell: Cell) -> None:
    """Create the cell folder and write its ``cell.json``; leftovers of a killed attempt are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)
    write_json(folder / CELL_NAME, cell.to_dict())


def finish_cell(folder: Path, result: dict[str, Any]) -> None:
    """Write ``result.json``, then drop the ``error.json`` of an earlier failed attempt."""
    write_json(folder / RESULT_NAME, result)
    (folder / ERROR_NAME).unlink(missing_ok=True)


def fail_cell(folder: Path, err: BaseException, seconds: float) -> dict[str, Any]:
    """Write ``error.json`` (type, message, traceback text, seconds) and return its content."""
    record = {"type": type(err).__name__, "message": str(err),
              "traceback": "".join(traceback.format_exception(err)), "seconds": seconds}
    write_json(folder / ERROR_NAME, record)
    return record


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``."""
    return json.loads(path.read_text(encoding="utf-8"))


def _plain(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple | set):
        return list(o)
    raise TypeError(f"cannot write {type(o).__name__} to JSON")
