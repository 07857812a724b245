"""Files written whole, with one file mode, and JSON written the same way everywhere.

- :func:`json_default` is the ``default=`` of every :func:`json.dumps` that writes a file read back later: numpy
  scalars and arrays, pandas values and paths become the JSON values they hold; anything else is refused.
- :func:`canonical_json` is the text hashed into keys (grid cells, shared seed selections, model specs): equal
  values give equal text.
- :func:`folder_beside` and :func:`replace_folder` do the same for a folder (a run folder): it is written beside
  its target and renamed into place only when complete.
- :func:`user_cache_folder` is where a cache of one kind lives (models, parsed datasets, explanations).
- :func:`atomic_path`, :func:`atomic_write_bytes` and :func:`atomic_write_text` write a file whole or not at all:
  a hidden temporary file in the target's folder (``.<name>.<random>.tmp``), then :func:`os.replace`. A reader
  never sees half a file, and a crash leaves the old file (or none) and at most a hidden temporary. There is no
  fsync: the rename is atomic against other processes, not against a power cut (a grid re-runs a damaged cell).

The file mode follows the umask, as a file made by ``open(path, "w")`` does (``0o644`` under the usual umask
``022``): the temporary file is created with mode ``0o666`` and the kernel applies the umask (and a folder's default
ACL). Not a fixed ``0o644``: a user who sets umask ``077`` to keep an audit private (the IDIs are rows of personal
data) must not get world-readable files, and a team sharing a folder with umask ``002`` must get group-writable
ones. Not :func:`tempfile.mkstemp`'s ``0o600`` either: that would hide results from the other users of a shared
folder, which is why the temporary file is made here rather than with :mod:`tempfile`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path, PurePath

import numpy as np


def json_default(value):
    """Turn a value :mod:`json` cannot write into one it can (the ``default=`` of :func:`json.dumps`).

    numpy booleans, integers and floats become ``bool``, ``int`` and ``float``; numpy arrays, pandas Series and
    Index become lists; a pandas Timestamp becomes its ISO 8601 text, ``pandas.NA`` and ``pandas.NaT`` become
    ``null``; a path becomes its text.

    Parameters
    ----------
    value : object
        What :func:`json.dumps` met and cannot write itself.

    Returns
    -------
    object
        A value :func:`json.dumps` can write.

    Raises
    ------
    TypeError
        For any other type (the message names it), as :func:`json.dumps` itself would.
    """
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, PurePath):
        return str(value)
    pd = sys.modules.get("pandas")  # a pandas value exists only once pandas is imported: never import it here
    if pd is not None:
        if value is pd.NA or value is pd.NaT:
            return None
        if isinstance(value, pd.Timestamp):
            return value.isoformat()
        if isinstance(value, pd.Series | pd.Index):
            return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def canonical_json(value) -> str:
    """JSON with sorted keys and no spaces: equal values give equal text (what keys and hashes are made of).

    No :func:`json_default` here: a value that plain JSON cannot hold is refused rather than converted, so that
    a key's text always reads back as the value it was made of. NaN and infinities are refused too.

    Parameters
    ----------
    value : object
        Made of dicts (string keys), lists, tuples, strings, numbers, booleans and None.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        For a value of another type.
    ValueError
        For NaN or an infinity.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without error it replaces ``path``.

    For libraries that write to a path themselves (Parquet, matplotlib, joblib, torch). The temporary file
    exists, empty, with the module's file mode (see the module docstring); a library that opens it with ``"wb"``
    keeps that mode. If the block raises, the temporary file is removed and ``path`` is left as it was.

    Parameters
    ----------
    path : str or path-like
        The file to write; its folder must exist.

    Yields
    ------
    pathlib.Path
        ``<folder>/.<name>.<random>.tmp``: hidden, so that readers of the folder pass over it.

    Raises
    ------
    OSError
        If the folder does not exist or cannot be written.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    # O_EXCL: never write through a file (or link) someone else made; 0o666: the umask decides, as for open().
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (:func:`atomic_path`).

    Parameters
    ----------
    path : str or path-like
        Its folder must exist.
    data : bytes

    Raises
    ------
    OSError
        If the folder does not exist or cannot be written.
    """
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8 (whatever the locale).

    Parameters
    ----------
    path : str or path-like
    text : str

    Raises
    ------
    OSError
        As :func:`atomic_write_bytes`.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def scratch_file():
    """An anonymous scratch file for this process's own use, removed when it is closed (or the process ends).

    Never a result: it has no name, so nothing can read it later, rename it or mistake it for a written file.

    Returns
    -------
    file object
        Open for binary reading and writing.
    """
    import tempfile

    return tempfile.TemporaryFile(prefix="chiralfair-scratch-")


def folder_beside(path: str | os.PathLike, tag: str = "partial") -> Path:
    """Create a new, empty folder beside ``path``: ``<name>.<tag>-<random>``, with the umask's mode.

    Where a folder is written before it replaces ``path`` (:func:`replace_folder`): on the same file system, so
    the replacement is a rename. Not :func:`tempfile.mkdtemp`'s ``0o700``, for the reason the module docstring
    gives for files.

    Parameters
    ----------
    path : str or path-like
        The folder it will replace; its parent must exist.
    tag : str, default="partial"
        Says what the folder is to a reader of the parent folder.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    OSError
        If the parent does not exist or cannot be written.
    """
    path = Path(path)
    while True:
        folder = path.with_name(f"{path.name}.{tag}-{secrets.token_hex(4)}")
        try:
            folder.mkdir(mode=0o777)  # the umask decides, as for a folder made by mkdir
            return folder
        except FileExistsError:
            continue


def replace_folder(new: str | os.PathLike, target: str | os.PathLike, *, keep=lambda name: False) -> None:
    """Put folder ``new`` in the place of folder ``target`` (missing, or whose entries it replaces), by renames.

    ``target`` is renamed aside, ``new`` renamed to ``target``, then the entries of the old folder that ``keep``
    accepts and ``new`` lacks (files a user put beside a run's) are moved in, one rename each, and the old folder
    is removed. A reader sees the old folder or the new one, never a mixture of two runs; between the two renames
    (a moment) ``target`` does not exist, and a crash there leaves the old folder whole in
    ``<name>.replaced-<random>/`` beside it.

    Parameters
    ----------
    new : str or path-like
        The folder to put in place, on the same file system as ``target`` (:func:`folder_beside`).
    target : str or path-like
    keep : callable, optional
        ``keep(name) -> bool``: whether an entry of the old folder is carried over. Default: none.

    Raises
    ------
    OSError
        If a rename fails; ``target`` is then as it was.
    """
    import shutil

    new, target = Path(new), Path(target)
    if not target.exists():
        os.replace(new, target)
        return
    aside = folder_beside(target, "replaced")
    old = aside / target.name
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)
        aside.rmdir()
        raise
    for entry in old.iterdir():
        if keep(entry.name) and not (target / entry.name).exists():
            os.replace(entry, target / entry.name)
    shutil.rmtree(aside, ignore_errors=True)


def user_cache_folder(kind: str) -> Path:
    """The folder of one kind of cache: ``$CHIRALFAIR_CACHE/<kind>``, else ``$XDG_CACHE_HOME/chiralfair/<kind>``.

    Without ``XDG_CACHE_HOME``, ``~/.cache/chiralfair/<kind>``.

    Parameters
    ----------
    kind : str
        ``"models"``, ``"parsed"`` or ``"explanations"``.

    Returns
    -------
    pathlib.Path
        User-expanded; not created here.
    """
    if os.environ.get("CHIRALFAIR_CACHE"):
        return Path(os.environ["CHIRALFAIR_CACHE"]).expanduser() / kind
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "chiralfair" / kind
