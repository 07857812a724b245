"""The benchmark datasets' encoded arrays kept on disk, so that a command does not parse the same raw file again.

Parsing census's ``adult.data`` (32,561 lines of text) into codes took about a tenth of a second of every command,
the quick start's included, for a file that never changes. :func:`load` and :func:`store` keep what
:meth:`DatasetSpec.encode_file <chiralfair.datasets._spec.DatasetSpec.encode_file>` returns (the codes, the labels,
the names and kinds of the features) beside the model cache: ``$CHIRALFAIR_CACHE/parsed``, else
``$XDG_CACHE_HOME/chiralfair/parsed`` (``~/.cache/chiralfair/parsed``).

An entry is found by a key over the raw file's SHA-256 (its bytes, not its name or time), the dataset's name and the
source of the code that encodes it (every module of :mod:`chiralfair.datasets`), so a changed file or a changed
encoder never reads an old entry: it parses again and writes a new one. Entries are NumPy ``.npz`` files read with
``allow_pickle=False`` (no code runs on loading) and checked for shape and dtype; one that cannot be read or does not
fit is ignored, the file parsed again. A folder that cannot be written costs only the cache, never the command.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path

import numpy as np

from ..storage import atomic_path
from ._spec import Encoded

logger = logging.getLogger(__name__)

#: Changed whenever the entries' layout changes.
FORMAT = 1


def cache_folder() -> Path:
    """The folder of the parsed datasets: ``$CHIRALFAIR_CACHE/parsed``, else the XDG cache's ``chiralfair/parsed``.

    Returns
    -------
    pathlib.Path
        Not created here.
    """
    from ..storage import user_cache_folder

    return user_cache_folder("parsed")


@functools.lru_cache(maxsize=1)
def _encoder_fingerprint() -> str:
    """SHA-256 of the source of every module of :mod:`chiralfair.datasets` (the code that encodes a raw file)."""
    h = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        h.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return h.hexdigest()


def entry_path(name: str, file_sha256: str) -> Path:
    """Where the entry of dataset ``name`` encoded from a raw file of digest ``file_sha256`` is kept.

    Parameters
    ----------
    name : str
        The benchmark dataset.
    file_sha256 : str
        The raw file's SHA-256 (hex).

    Returns
    -------
    pathlib.Path
    """
    key = hashlib.sha256(f"{FORMAT}\0{name}\0{file_sha256}\0{_encoder_fingerprint()}".encode()).hexdigest()
    return cache_folder() / f"{name}-{key[:32]}.npz"


def load(name: str, file_sha256: str) -> Encoded | None:
    """The encoded dataset kept for this raw file and this encoder, or None (none kept, or one that does not read).

    Parameters
    ----------
    name : str
    file_sha256 : str

    Returns
    -------
    Encoded or None
    """
    path = entry_path(name, file_sha256)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as entry:
            X, y = entry["X"], entry["y"]
            meta = json.loads(str(entry["meta"]))
        names, kinds = tuple(meta["names"]), tuple(meta["kinds"])
        labels = {column: {int(code): str(text) for code, text in codes.items()}
                  for column, codes in meta["labels"].items()}
        if (X.dtype != np.int64 or y.dtype != np.int64 or X.ndim != 2 or y.shape != (len(X),)
                or X.shape[1] != len(names) or len(kinds) != len(names)):
            raise ValueError(f"arrays of shapes {X.shape} and {y.shape} for {len(names)} features")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        logger.warning("ignoring the parsed-data cache entry %s (%s); parsing the raw file", path, err)
        return None
    return Encoded(X, y, names, kinds, labels)


def store(name: str, file_sha256: str, encoded: Encoded) -> None:
    """Keep ``encoded`` for this raw file and this encoder (nothing happens when the folder cannot be written).

    Parameters
    ----------
    name : str
    file_sha256 : str
    encoded : Encoded
    """
    path = entry_path(name, file_sha256)
    meta = json.dumps({"names": list(encoded.names), "kinds": list(encoded.kinds),
                       "labels": {column: {str(code): text for code, text in codes.items()}
                                  for column, codes in encoded.labels.items()}})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.savez(fh, X=np.asarray(encoded.X, dtype=np.int64), y=np.asarray(encoded.y, dtype=np.int64),
                     meta=np.array(meta))
    except OSError as err:
        logger.debug("the parsed-data cache %s cannot be written (%s)", path, err)
