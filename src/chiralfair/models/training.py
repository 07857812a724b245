"""Training a zoo model on a dataset's 60/40 split, with an on-disk cache (architecture: the model under test).

:func:`train_model` trains a :class:`~chiralfair.models.zoo.ModelSpec` on the training rows of a
:class:`~chiralfair.datasets.base.Dataset`, measures F1 and accuracy on the test rows, and stores the fitted
model in a cache folder. The cache key covers everything the fitted weights depend on: the dataset name, a
SHA-256 of the training rows (so a chiral dataset, same name but mutated protected attributes, gets its own
entry), the spec, ``random_state`` and the library versions. A second call with the same inputs loads the
model instead of training it.

Cache folder: the ``cache_dir`` argument, else ``$CHIRALFAIR_CACHE/models``, else
``$XDG_CACHE_HOME/chiralfair/models`` (``~/.cache/chiralfair/models``). Files are written atomically
(temporary file, then ``os.replace``) under a file lock (``filelock``), so that two processes asking for one
entry train it once: the second waits, then loads it. A file that cannot be read is replaced by a fresh
training, with a warning. sklearn models are stored with joblib (a pickle): only point ``cache_dir`` at folders
you trust. The DNN is stored as a torch ``state_dict`` and loaded with ``weights_only=True``.

Bit-identical DNN weights for the same ``random_state`` hold on the same device (CPU type) and library
versions; the DNN trains on one intra-op thread, so the machine's core count does not matter. Across machines
they differ, so the DNNs of the benchmark recipes (and their chiral models) are shipped with the package
(:mod:`chiralfair.models.reference`): a request whose recipe matches one loads it, checksum verified, instead of
training, unless ``reference=False``. ``TrainedModel.network`` says which network was used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
from filelock import FileLock

from .. import __version__
from .._validation import check_int
from ..exceptions import ConfigError
from ..storage import atomic_path
from ._torch import require_torch
from .protocol import CountingModel
from .zoo import ModelSpec, as_spec

logger = logging.getLogger(__name__)

CACHE_FORMAT = 1
TRAINED_HERE = "trained on this machine"


@dataclass(frozen=True, eq=False)  # holds arrays and a model: compared by identity
class TrainedModel:
    """A trained model under test with its test-split scores.

    Attributes
    ----------
    model : CountingModel
        The fitted model, with ``model.spec`` set; its query counter starts at 0.
    spec : ModelSpec
    f1 : float
        F1 score of the positive class (label 1) on the test rows, in [0, 1].
    accuracy : float
        Share of test rows predicted correctly, in [0, 1].
    train_seconds : float
        Wall seconds of the training (for a cached model: of the training that produced the file).
    from_cache : bool
        Whether the model was loaded from the cache instead of trained.
    train_index, test_index : numpy.ndarray of int64
        Row indices of the dataset used for training and for the scores.
    cache_path : pathlib.Path
        File that holds the fitted model.
    dataset : str
        Name of the dataset.
    random_state : int
    network : str
        Which network this is, as the output says it: ``"reference network census-dnn v1, sha256 ..."`` (shipped
        with the package), ``"trained on this machine"`` or ``"trained on this machine (from the model cache)"``.
    reference : ReferenceNetwork or None
        The shipped network that was loaded, if one was.
    recipe_digest : str
        :func:`~chiralfair.models.reference.recipe_digest` of the request (dataset name, training rows, spec,
        ``random_state``): what a reference network is matched on.
    """

    model: CountingModel
    spec: ModelSpec
    f1: float
    accuracy: float
    train_seconds: float
    from_cache: bool
    train_index: np.ndarray
    test_index: np.ndarray
    cache_path: Path
    dataset: str
    random_state: int
    network: str = TRAINED_HERE
    reference: Any = None
    recipe_digest: str = ""


def train_model(dataset, model: str | ModelSpec = "dnn", *, random_state: int = 0, cache_dir=None,
                force: bool = False, train_index=None, reference: bool = True) -> TrainedModel:
    """Train (or load from the cache) a zoo model on a dataset and score it on the held-out rows.

    Parameters
    ----------
    dataset : Dataset
        Encoded data; only its ``name``, ``X``, ``y`` and ``split`` are used.
    model : str or ModelSpec
        A zoo name (``"dnn"``, ``"lr"``, ``"svc"``, ``"dtc"``, ``"mlp"``, ``"rf"``, ``"hgb"``) or a spec.
    random_state : int
        Seeds the split (when ``train_index`` is None) and the training.
    cache_dir : str or os.PathLike, optional
        Cache folder; see the module docstring for the default.
    force : bool
        Retrain and overwrite the cache entry even if it exists (and even if a reference network matches).
    train_index : array-like of int, optional
        Rows to train on; the test rows are all others. Default: the paper's 60/40 stratified split,
        ``dataset.split(random_state)``.
    reference : bool, default=True
        Load the network shipped with the package when the request's recipe (dataset name, training rows,
        spec, ``random_state``) matches one (:mod:`chiralfair.models.reference`); False trains on this machine
        (or loads this machine's cache entry) in any case.

    Returns
    -------
    TrainedModel

    Raises
    ------
    ConfigError
        If the model name is unknown, ``random_state`` is not an int >= 0, or ``train_index`` has duplicates,
        rows out of range, or leaves no test rows.
    MissingDependencyError
        For ``dnn`` when torch is not installed (the message says how to install it).
    ChecksumError
        If the matching reference network's file is damaged or missing (the message names it).

    Warns
    -----
    UserWarning
        If a cache file exists but cannot be read (the model is retrained).
    sklearn.exceptions.ConvergenceWarning
        If an sklearn model did not converge (the message names the model).

    References
    ----------
    Ma et al., arXiv:2209.08321, §4.2 (60/40 split; F1 on the test split).
    """
    spec = as_spec(model)
    if spec.is_torch:
        require_torch(f"model {spec.name!r}")
    random_state = check_int(random_state, "random_state", minimum=0)
    train, test = _resolve_split(dataset, random_state, train_index)
    X_train, y_train = dataset.X[train], dataset.y[train]
    from .reference import find_reference, recipe_digest

    recipe = recipe_digest(dataset.name, X_train, y_train, spec, random_state)
    network = find_reference(recipe) if reference and not force and spec.is_torch else None
    if network is not None:
        return _reference_model(network, dataset, spec, random_state, train, test, recipe)
    key = cache_key(dataset.name, X_train, y_train, spec, random_state)
    path = resolve_cache_dir(cache_dir) / _file_name(dataset.name, spec, key)

    seen = _file_state(path)
    loaded = None if force else _load(path, spec, key)
    trained = None
    if loaded is None:
        # Two processes (e.g. grid workers) wanting one entry: one trains, the other waits and then loads it.
        with FileLock(path.parent / f".{path.name}.lock"):
            if not force and _file_state(path) != seen:
                loaded = _load(path, spec, key)
            if loaded is None:
                start = time.perf_counter()
                trained = spec.fit(X_train, y_train, random_state=random_state)
                train_seconds = time.perf_counter() - start
                _save(path, spec, trained.estimator, key=key, train_seconds=train_seconds)
                logger.info("trained %s on %s (random_state=%d, %d rows) in %.2f s; cached at %s", spec.name,
                            dataset.name, random_state, len(train), train_seconds, path)
    from_cache = trained is None
    if trained is None:  # nothing was trained, so the cache entry was read
        fitted, train_seconds = cast("tuple[Any, float]", loaded)
        trained = spec.wrap(fitted)
        logger.info("loaded %s on %s (random_state=%d) from %s", spec.name, dataset.name, random_state, path)

    f1, accuracy = _scores(trained, dataset.X[test], dataset.y[test])
    trained.reset_queries()
    return TrainedModel(model=trained, spec=spec, f1=f1, accuracy=accuracy,
                        train_seconds=float(train_seconds), from_cache=from_cache, train_index=train,
                        test_index=test, cache_path=path, dataset=dataset.name, random_state=random_state,
                        network=f"{TRAINED_HERE} (from the model cache)" if from_cache else TRAINED_HERE,
                        recipe_digest=recipe)


def _reference_model(network, dataset, spec: ModelSpec, random_state: int, train, test, recipe: str):
    """The shipped ``network`` (its recipe is this request's), checksum verified and scored like a trained one."""
    from .reference import load_reference

    model = spec.wrap(load_reference(network, device=spec.params["device"]))
    f1, accuracy = _scores(model, dataset.X[test], dataset.y[test])
    model.reset_queries()
    logger.info("loaded %s for %s on %s (random_state=%d)", network.describe(), spec.name, dataset.name,
                random_state)
    return TrainedModel(model=model, spec=spec, f1=f1, accuracy=accuracy, train_seconds=0.0, from_cache=False,
                        train_index=train, test_index=test, cache_path=network.file, dataset=dataset.name,
                        random_state=random_state, network=network.describe(), reference=network,
                        recipe_digest=recipe)


def resolve_cache_dir(cache_dir=None) -> Path:
    """Return the model cache folder: ``cache_dir``, ``$CHIRALFAIR_CACHE/models`` or the XDG cache.

    The folder is created if missing.

    Parameters
    ----------
    cache_dir : str or os.PathLike, optional

    Returns
    -------
    pathlib.Path
    """
    from ..storage import user_cache_folder

    folder = Path(cache_dir).expanduser() if cache_dir is not None else user_cache_folder("models")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(f"cannot use model cache folder {str(folder)!r} (--cache-dir / CHIRALFAIR_CACHE): "
                          f"{err.strerror or err}") from err
    return folder


def cache_key(dataset_name: str, X_train, y_train, spec: ModelSpec, random_state: int) -> str:
    """SHA-256 (hex) over dataset name, training rows, spec, ``random_state`` and library versions.

    Parameters
    ----------
    dataset_name : str
    X_train : array-like, shape (n_train, n_features)
        Hashed as float64 values, so int and float copies of the same codes share a key.
    y_train : array-like of int, shape (n_train,)
    spec : ModelSpec
    random_state : int

    Returns
    -------
    str
        64 hexadecimal characters.
    """
    return hashlib.sha256(_key_text(dataset_name, X_train, y_train, spec, random_state).encode()).hexdigest()


def library_versions(spec: ModelSpec | None = None) -> dict[str, str]:
    """Versions that a fitted model depends on: chiralfair, Python, numpy, and torch or sklearn (and lightgbm).

    Read from the installed package metadata, so that loading a cached sklearn model does not import torch.

    Parameters
    ----------
    spec : ModelSpec, optional
        The model: torch's version for the DNN, scikit-learn's for the others (and lightgbm's for ``lightgbm``);
        None: torch's and scikit-learn's.

    Returns
    -------
    dict of str to str
    """
    from importlib.metadata import PackageNotFoundError, version

    versions = {"chiralfair": __version__, "python": platform.python_version(), "numpy": np.__version__}
    if spec is None or spec.is_torch:
        try:
            versions["torch"] = version("torch")
        except PackageNotFoundError:
            if spec is not None:
                raise
            versions["torch"] = "not installed"
    if spec is None or not spec.is_torch:
        versions["sklearn"] = version("scikit-learn")
    if spec is not None and spec.name == "lightgbm":
        versions["lightgbm"] = version("lightgbm")
    return versions


# ---------------------------------------------------------------------------- internals
def _key_text(dataset_name, X_train, y_train, spec: ModelSpec, random_state: int) -> str:
    from .reference import train_rows_sha256

    # Not storage.canonical_json: its compact separators would change every key and orphan every cached model.
    return json.dumps({"format": CACHE_FORMAT, "dataset": str(dataset_name),
                       "train_sha256": train_rows_sha256(X_train, y_train), "spec": json.loads(spec.key()),
                       "random_state": random_state,
                       "versions": library_versions(spec)}, sort_keys=True)


def _file_name(dataset_name: str, spec: ModelSpec, key: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(dataset_name)) or "dataset"
    return f"{safe}-{spec.name}-{key[:24]}{'.pt' if spec.is_torch else '.joblib'}"


def _resolve_split(dataset, random_state: int, train_index) -> tuple[np.ndarray, np.ndarray]:
    if train_index is None:
        return dataset.split(random_state)
    n = dataset.n_samples
    train = np.asarray(train_index)
    if train.ndim != 1 or train.size == 0 or not np.issubdtype(train.dtype, np.integer):
        raise ConfigError(f"train_index must be a non-empty 1-D array of row numbers, "
                          f"got dtype {train.dtype} and shape {train.shape}")
    if train.min() < 0 or train.max() >= n:
        raise ConfigError(f"train_index holds rows outside [0, {n - 1}] of dataset {dataset.name!r}: "
                          f"min {train.min()}, max {train.max()}")
    train = np.sort(train.astype(np.int64))
    if np.any(train[1:] == train[:-1]):
        raise ConfigError("train_index holds duplicate rows")
    test = np.setdiff1d(np.arange(n, dtype=np.int64), train)
    if test.size == 0:
        raise ConfigError(f"train_index covers every row of dataset {dataset.name!r}; no test rows are left "
                          "to score the model (use ModelSpec.fit to train on all rows)")
    return train, test


def _scores(model: CountingModel, X_test, y_test) -> tuple[float, float]:
    from sklearn.metrics import accuracy_score, f1_score

    predicted = model.predict(X_test)
    return (float(f1_score(y_test, predicted, pos_label=1, zero_division=0)),
            float(accuracy_score(y_test, predicted)))


def _file_state(path: Path) -> tuple[int, int] | None:
    """``(mtime_ns, size)`` of a cache file, or None if absent: tells whether another process wrote it."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size


def _save(path: Path, spec: ModelSpec, fitted, *, key: str, train_seconds: float) -> None:
    meta = {"format": CACHE_FORMAT, "key": key, "train_seconds": float(train_seconds)}
    with atomic_path(path) as tmp:
        if spec.is_torch:
            import torch
            state = {k: v.detach().cpu() for k, v in fitted.state_dict().items()}
            torch.save({"meta": meta, "n_features": fitted.n_features, "state_dict": state}, tmp)
        else:
            import joblib
            joblib.dump({"meta": meta, "estimator": fitted}, tmp)


def _load(path: Path, spec: ModelSpec, key: str) -> tuple[Any, float] | None:
    """``(fitted, train_seconds)`` from ``path``, or None if absent; a broken file warns and gives None."""
    if not path.exists():
        return None
    try:
        if spec.is_torch:
            import torch

            from .dnn import PaperDNN
            payload = torch.load(path, map_location="cpu", weights_only=True)
            fitted = PaperDNN(int(payload["n_features"]))
            fitted.load_state_dict(payload["state_dict"])
            fitted = fitted.to(spec.params["device"]).eval()
        else:
            import joblib
            payload = joblib.load(path)
            fitted = payload["estimator"]
        meta = payload["meta"]
        if meta["key"] != key:
            raise ValueError("the file's cache key differs from the requested one")
        return fitted, float(meta["train_seconds"])
    except Exception as err:  # any unreadable file is a cache miss, never a crash
        reason = (str(err).strip().splitlines() or [""])[0]
        message = f"model cache file {path} cannot be used ({type(err).__name__}: {reason}); retraining"
        logger.warning(message)
        warnings.warn(message, UserWarning, stacklevel=3)
        return None
