"""Reference networks: the paper's DNN and its chiral models, trained once and shipped with the package.

The DNN is trained with float32 reductions whose order depends on the CPU and the torch build, so a network
trained on one machine differs slightly from one trained on another, and every figure that rests on it (the
share affected, F1, the IDIs found) differs with it. The networks of the benchmark recipes are therefore
shipped in this folder, trained once, and loaded instead of trained whenever a request matches one of their
recipes (:func:`~chiralfair.models.training.train_model`): the same figures on every machine.

A **recipe** is what the weights depend on apart from the machine: the dataset's name, a SHA-256 of its training
rows and labels (the benchmark encoding and the split, or a chiral model's mutated rows), the model spec (name
and every hyper-parameter) and the training ``random_state`` (:func:`recipe_digest`). Anything else (other
parameters, another seed, other data, another split, a raw file that is not the published one) has another
recipe and is trained on the machine, as before. ``reference=False`` (CLI ``--train-model``) trains anew even
when a recipe matches.

Files: ``manifest.json`` lists each network (its name, e.g. ``census-dnn``, version, file, the file's SHA-256,
the recipe and its digest, the test-set F1 measured when it was trained, the library versions that trained it)
and each network is a ``.npz`` of plain arrays (the module's ``state_dict`` and ``n_features``), read with
``allow_pickle=False``. A file whose SHA-256 differs from the manifest's is refused
(:class:`~chiralfair.exceptions.ChecksumError` naming the file), never silently retrained.
``benchmarks/train_reference.py`` regenerates the files and the manifest.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...exceptions import ChecksumError, ConfigError

FOLDER = Path(__file__).parent
MANIFEST = "manifest.json"
RECIPE_FORMAT = 1


@dataclass(frozen=True)
class ReferenceNetwork:
    """One shipped network, as its manifest entry describes it.

    Attributes
    ----------
    name : str
        E.g. ``census-dnn`` or ``census-chiral-sex-dnn``.
    version : int
    file : pathlib.Path
        The ``.npz`` file of its weights.
    sha256 : str
        Hex SHA-256 the file must have.
    recipe : dict
        Dataset, split, protected attributes (chiral models), spec, ``random_state``.
    recipe_digest : str
        :func:`recipe_digest` of the recipe: what a request is matched on.
    f1 : float
        Test-set F1 of class 1 measured when it was trained (NaN for a chiral model, which has no test set).
    versions : dict
        Library versions that trained it (torch, numpy, python, chiralfair).
    """

    name: str
    version: int
    file: Path
    sha256: str
    recipe: dict[str, Any]
    recipe_digest: str
    f1: float
    versions: dict[str, str]

    def describe(self) -> str:
        """``reference network census-dnn v1, sha256 <first 12 hex>``: what the output says was used.

        Returns
        -------
        str
        """
        return f"reference network {self.name} v{self.version}, sha256 {self.sha256[:12]}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record (recorded in ``result.json``).

        Returns
        -------
        dict
        """
        return {"name": self.name, "version": self.version, "file": self.file.name, "sha256": self.sha256,
                "recipe_digest": self.recipe_digest, "f1": self.f1, "trained_with": dict(self.versions)}


def train_rows_sha256(X_train, y_train) -> str:
    """SHA-256 of training rows and labels, as float64 codes and int64 labels (int and float copies agree).

    Parameters
    ----------
    X_train : array-like, shape (n_train, n_features)
    y_train : array-like of int, shape (n_train,)

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    X = np.ascontiguousarray(X_train, dtype=np.float64)
    y = np.ascontiguousarray(y_train, dtype=np.int64)
    data = hashlib.sha256()
    data.update(json.dumps([list(X.shape), list(y.shape)]).encode())
    data.update(X.tobytes())
    data.update(y.tobytes())
    return data.hexdigest()


def recipe_digest(dataset_name: str, X_train, y_train, spec, random_state: int) -> str:
    """SHA-256 of a training request without the machine: dataset name, training rows, spec and seed.

    Parameters
    ----------
    dataset_name : str
    X_train : array-like, shape (n_train, n_features)
    y_train : array-like of int, shape (n_train,)
    spec : ModelSpec
    random_state : int

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    text = json.dumps({"format": RECIPE_FORMAT, "dataset": str(dataset_name),
                       "train_sha256": train_rows_sha256(X_train, y_train), "spec": json.loads(spec.key()),
                       "random_state": int(random_state)}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def reference_networks(folder: str | Path | None = None) -> tuple[ReferenceNetwork, ...]:
    """The networks listed in the manifest of ``folder`` (default: the shipped one).

    Parameters
    ----------
    folder : str or path-like, optional

    Returns
    -------
    tuple of ReferenceNetwork
        Empty when the folder holds no manifest.

    Raises
    ------
    ConfigError
        If the manifest cannot be read (the message names it).
    """
    return _read_manifest(str(Path(folder) if folder is not None else FOLDER))


def find_reference(digest: str, folder: str | Path | None = None) -> ReferenceNetwork | None:
    """The shipped network whose recipe has ``digest`` (:func:`recipe_digest`), or None.

    Parameters
    ----------
    digest : str
    folder : str or path-like, optional
        Default: the shipped folder.

    Returns
    -------
    ReferenceNetwork or None
    """
    for network in reference_networks(folder):
        if network.recipe_digest == digest:
            return network
    return None


def load_reference(network: ReferenceNetwork, *, device: str = "cpu"):
    """The network's torch module, after checking the file's SHA-256 against the manifest.

    Parameters
    ----------
    network : ReferenceNetwork
    device : str
        Where to put the module.

    Returns
    -------
    PaperDNN
        In evaluation mode.

    Raises
    ------
    ChecksumError
        If the file is missing or its SHA-256 differs from the manifest's (the message names the file and both
        digests); the network is never silently retrained in its place.
    """
    from ..dnn import PaperDNN

    try:
        data = network.file.read_bytes()
    except OSError as err:
        raise ChecksumError(f"reference network {network.name}: file {network.file} cannot be read "
                            f"({err.strerror or err}); reinstall chiralfair, or pass reference=False "
                            "(--train-model) to train the network on this machine") from err
    actual = hashlib.sha256(data).hexdigest()
    if actual != network.sha256:
        raise ChecksumError(f"reference network {network.name}: file {network.file} has SHA-256 {actual}, the "
                            f"manifest {network.file.parent / MANIFEST} says {network.sha256}; the file is damaged "
                            "or was replaced: reinstall chiralfair, or pass reference=False (--train-model) to train "
                            "the network on this machine")
    import io

    import torch

    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        n_features = int(arrays["n_features"])
        state = {k: torch.from_numpy(arrays[k].copy()) for k in arrays.files if k != "n_features"}
    module = PaperDNN(n_features)
    module.load_state_dict(state)
    return module.to(device).eval()


def save_network(module, path: str | Path) -> str:
    """Write a :class:`~chiralfair.models.dnn.PaperDNN` as a ``.npz`` of plain arrays; return its SHA-256.

    Parameters
    ----------
    module : PaperDNN
    path : str or path-like

    Returns
    -------
    str
        Hex SHA-256 of the written file.
    """
    import io
    import zipfile

    arrays = {"n_features": np.int64(module.n_features),
              **{k: v.detach().cpu().numpy() for k, v in module.state_dict().items()}}
    buffer = io.BytesIO()
    # np.savez's format with a fixed date in each entry, so the same weights always give the same bytes and digest
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(arrays):
            array_bytes = io.BytesIO()
            np.lib.format.write_array(array_bytes, np.asarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, array_bytes.getvalue())
    data = buffer.getvalue()
    Path(path).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


@functools.lru_cache(maxsize=8)
def _read_manifest(folder: str) -> tuple[ReferenceNetwork, ...]:
    path = Path(folder) / MANIFEST
    if not path.exists():
        return ()
    try:
        entries = json.loads(path.read_text())["networks"]
        return tuple(ReferenceNetwork(name=e["name"], version=int(e["version"]), file=Path(folder) / e["file"],
                                      sha256=e["sha256"], recipe=dict(e["recipe"]),
                                      recipe_digest=e["recipe_digest"], f1=float(e["f1"]),
                                      versions=dict(e["trained_with"]))
                     for e in entries)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(f"reference network manifest {path} cannot be read ({type(err).__name__}: {err}); "
                          "reinstall chiralfair, or regenerate it with benchmarks/train_reference.py") from err
