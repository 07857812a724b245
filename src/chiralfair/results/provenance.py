"""What produced a result: library versions, the data files' SHA-256 and the resolved random states.

Stored in a run's and in each grid cell's ``result.json["meta"]``, so a table can say exactly what produced it. The
versions come from the installed packages' metadata (nothing is imported for them); the digests are computed once per
process and file (keyed by path, size and modification time) and reused by the process's later cells.
"""

from __future__ import annotations

import os
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from .. import __version__

# Distribution name -> key in the manifest.
LIBRARIES = {"numpy": "numpy", "pandas": "pandas", "scikit-learn": "scikit-learn", "torch": "torch",
             "shap": "shap", "z3-solver": "z3"}

_digests: dict[tuple[str, int, int], str] = {}


def library_versions() -> dict[str, str]:
    """Versions of Python, chiralfair and the libraries results depend on (``"not installed"`` if absent).

    Returns
    -------
    dict of str to str
        Keys ``python``, ``chiralfair``, ``numpy``, ``pandas``, ``scikit-learn``, ``torch``, ``shap``, ``z3``.
    """
    out = {"python": platform.python_version(), "chiralfair": __version__}
    for dist, key in LIBRARIES.items():
        try:
            out[key] = version(dist)
        except PackageNotFoundError:
            out[key] = "not installed"
    return out


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file, computed once per process while its size and modification time stay the same.

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str
        64 hex digits.
    """
    from ..datasets.home import sha256_of

    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _digests:
        _digests[key] = sha256_of(path)
    return _digests[key]


def manifest(sources: dict[str, str], random_states: dict[str, Any]) -> dict[str, Any]:
    """A cell's ``meta``: versions, data digests and random states.

    Parameters
    ----------
    sources : dict of str to str
        The dataset's raw files (``Dataset.sources``: relative name -> path).
    random_states : dict
        The resolved random states of the cell (e.g. ``random_state``, ``model_random_state``,
        ``chiral_random_state``).

    Returns
    -------
    dict
        ``versions``, ``data`` (relative name -> ``{"sha256", "path"}``), ``random_states``, ``host``
        (``platform.node()``), ``cpu_count``.
    """
    data = {rel: {"sha256": file_sha256(path), "path": str(path)} for rel, path in sorted(sources.items())}
    return {"versions": library_versions(), "data": data, "random_states": dict(random_states),
            "host": platform.node(), "cpu_count": os.cpu_count()}
