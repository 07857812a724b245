"""DeepLIFT explanations of the zoo's DNN kept on disk, so that a repeated run does not explain the same rows again.

I&D explains its initial IDIs with DeepLIFT (:func:`chiralfair.seeds.explainers.explain`, ``explainer="deep"``), a
pure function of the network, the rows, the background, its weights and the code and libraries that compute it: on
the census DNN about 0.2 s of CPU and the import of shap (with numba, another 0.3 s) in every run of the quick
start, for the same 1,547 rows each time. :func:`load` and :func:`store` keep the values beside the model cache:
``$CHIRALFAIR_CACHE/explanations``, else ``$XDG_CACHE_HOME/chiralfair/explanations``
(``~/.cache/chiralfair/explanations``).

An entry is found by a key (:func:`entry_key`) over everything the values depend on, so a changed input never reads
an old entry:

- the network: only the zoo's DNN (:class:`~chiralfair.models.dnn.PaperDNN`, not a subclass), whose code is ours;
  its layers (each of a class named in :data:`CACHED_LAYERS`, with their plain attributes), every parameter and
  buffer (name, dtype, shape and bytes), and no hook on any module. Any other module (a user's network, whose code
  could change without any value the key can see) is explained every time;
- what is explained: the network's declared output and its positive class;
- the rows explained, the background rows and their weights (dtype, shape and bytes), the pairs per
  shap.DeepExplainer call, and the random state's generator state (a changed ``random_state`` never reads another
  state's entry);
- the source of the modules that compute the values (:data:`CODE`), the versions of torch, shap and numpy, and the
  machine (its architecture and torch's CPU kernels): values are the same bit for bit only on one machine and build
  (architecture: layers and habits).

An entry read back is still checked as every DeepLIFT result is: its attributions must sum to
``P(positive | x) - E P(positive | background)`` on the model under test, which sends those rows to the model. A
cached explanation is charged the queries computing it costs (one a (row, reference) pair, refused past the budget
at the same point), so a run's budget, results and printed queries do not depend on what the cache holds.

Entries are NumPy ``.npz`` files read with ``allow_pickle=False`` (no code runs on loading), holding their key and
checked for it, shape and dtype; one that cannot be read or does not fit is ignored and the rows explained again. A
folder that cannot be written costs only the cache, never the run.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import platform
import sys
from pathlib import Path

import numpy as np

from ..storage import atomic_path

logger = logging.getLogger(__name__)

#: Changed whenever the entries' layout changes.
FORMAT = 1
#: The modules whose source computes the values (relative to the package).
CODE = ("seeds/explainers.py", "seeds/deeplift_views.py", "seeds/shap_outputs.py", "seeds/explanation_cache.py",
        "models/dnn.py", "models/torch_adapter.py", "models/threads.py")
#: The torch layers a cached network may hold besides the zoo's DNN itself (their code is torch's, whose version is
#: in the key).
CACHED_LAYERS = ("Sequential", "Linear", "ReLU")
_PLAIN = (bool, int, float, str, type(None))


def cache_folder() -> Path:
    """The folder of the explanations: ``$CHIRALFAIR_CACHE/explanations``, else the XDG cache's.

    Returns
    -------
    pathlib.Path
        Not created here.
    """
    from ..storage import user_cache_folder

    return user_cache_folder("explanations")


@functools.lru_cache(maxsize=1)
def _code_fingerprint() -> str | None:
    """SHA-256 of the code and libraries that compute the values, and of the machine; None if a source is unread."""
    from importlib.metadata import version

    import torch

    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for name in CODE:
        try:
            source = (package / name).read_bytes()
        except OSError:  # an install without its sources: no key can say which code computed an entry
            return None
        h.update(name.encode() + b"\0" + source + b"\0")
    for library in ("torch", "shap", "numpy"):
        h.update(f"{library} {version(library)}\0".encode())
    h.update(f"{sys.version}\0{platform.machine()}\0{torch.backends.cpu.get_cpu_capability()}\0".encode())
    return h.hexdigest()


def network_fingerprint(module) -> str | None:
    """SHA-256 of everything a zoo DNN's output depends on, or None for a module the key cannot hold whole.

    Parameters
    ----------
    module : torch.nn.Module

    Returns
    -------
    str or None
        None unless ``module`` is a :class:`~chiralfair.models.dnn.PaperDNN` (not a subclass) made only of the
        layers :data:`CACHED_LAYERS`, with plain attributes (no function set on an instance) and no hook.
    """
    import torch

    from ..models.dnn import PaperDNN

    if type(module) is not PaperDNN or _global_hooks(torch):
        return None
    h = hashlib.sha256(repr(module).encode())
    for name, sub in module.named_modules():
        kind = type(sub)
        if sub is not module and not (kind.__module__.startswith("torch.nn.") and kind.__name__ in CACHED_LAYERS
                                      and getattr(torch.nn, kind.__name__) is kind):
            return None
        h.update(f"\0{name}:{kind.__module__}.{kind.__qualname__}".encode())
        for attribute, value in sorted(vars(sub).items()):
            if attribute.startswith("_"):
                if "hooks" in attribute and value:
                    return None  # a hook can change what the module computes
                continue  # torch's own bookkeeping: the parameters, buffers and submodules are read below
            if not isinstance(value, _PLAIN):
                return None  # e.g. a function set on the instance: code the key cannot see
            h.update(f"\0{attribute}={value!r}".encode())
    for name, tensor in module.state_dict().items():
        flat = tensor.detach().cpu().reshape(-1).contiguous()
        h.update(f"\0{name}:{flat.dtype}:{tuple(tensor.shape)}\0".encode())
        h.update(flat.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _global_hooks(torch) -> bool:
    """Whether a hook registered for every module (``torch.nn.modules.module.register_module_forward_hook``) is set."""
    hooks = torch.nn.modules.module
    return any(getattr(hooks, name, None) for name in dir(hooks) if name.startswith("_global_") and "hook" in name)


def _array_digest(h, name: str, array: np.ndarray | None) -> None:
    if array is None:
        h.update(f"\0{name}:none".encode())
        return
    array = np.ascontiguousarray(array)
    h.update(f"\0{name}:{array.dtype.str}:{array.shape}\0".encode())
    h.update(array.tobytes())


def entry_key(module, output: str, positive_index: int, X: np.ndarray, background: np.ndarray,
              weights: np.ndarray | None, rng: np.random.Generator, pairs_per_call: int) -> str | None:
    """The key of the DeepLIFT values of ``module`` for these rows, or None when they are not to be kept.

    Parameters
    ----------
    module : torch.nn.Module
        The network under test (the model wrapper's estimator).
    output : str
        What the network outputs, as declared (``model.language.output``).
    positive_index : int
        Which class is positive (``model.positive_index``).
    X : numpy.ndarray, shape (n_samples, n_features)
        The rows explained.
    background : numpy.ndarray, shape (n_background, n_features)
    weights : numpy.ndarray or None
        The background's weights.
    rng : numpy.random.Generator
        The run's generator; its state (not drawn from) is in the key.
    pairs_per_call : int
        (row, reference) pairs per shap.DeepExplainer call.

    Returns
    -------
    str or None
        64 hexadecimal characters; None for a module :func:`network_fingerprint` refuses, or when the source of
        :data:`CODE` cannot be read (an install without it).
    """
    network, code = network_fingerprint(module), _code_fingerprint()
    if network is None or code is None:
        return None
    h = hashlib.sha256(f"{FORMAT}\0{code}\0{network}\0{output}\0{positive_index}\0"
                       f"{pairs_per_call}\0{rng.bit_generator.state!r}".encode())
    for name, array in (("X", X), ("background", background), ("weights", weights)):
        _array_digest(h, name, array)
    return h.hexdigest()


def entry_path(key: str) -> Path:
    """Where the entry of ``key`` is kept.

    Parameters
    ----------
    key : str
        From :func:`entry_key`.

    Returns
    -------
    pathlib.Path
    """
    return cache_folder() / f"deep-{key[:40]}.npz"


def load(key: str, shape: tuple[int, int]) -> np.ndarray | None:
    """The values kept under ``key``, or None (none kept, or one that does not read or fit).

    Parameters
    ----------
    key : str
    shape : tuple of int
        The values' shape (rows explained, features).

    Returns
    -------
    numpy.ndarray of float64 or None
    """
    path = entry_path(key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as entry:
            values, stored_key = entry["values"], str(entry["key"])
        if stored_key != key or values.dtype != np.float64 or values.shape != tuple(shape):
            raise ValueError(f"an entry of shape {values.shape} and dtype {values.dtype} under another key"
                             if stored_key != key else f"values of shape {values.shape}, dtype {values.dtype}")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("ignoring the explanation cache entry %s (%s); explaining the rows again", path, err)
        return None
    logger.debug("DeepLIFT values of %d rows read from %s", shape[0], path)
    return values


def store(key: str, values: np.ndarray) -> None:
    """Keep ``values`` under ``key`` (nothing happens when the folder cannot be written).

    Parameters
    ----------
    key : str
    values : numpy.ndarray of float64, shape (n_samples, n_features)
    """
    path = entry_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, values=np.asarray(values, dtype=np.float64), key=np.array(key))
    except OSError as err:
        logger.debug("the explanation cache %s cannot be written (%s)", path, err)
