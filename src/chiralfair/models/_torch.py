"""torch as an optional dependency: imported only where a torch model needs it, with an install hint if absent."""

from __future__ import annotations

import importlib
import sys

from ..exceptions import MissingDependencyError

INSTALL_HINT = "install torch's CPU build with `pip install torch==2.13.0` (see the README's installation)"


def require_torch(by: str):
    """Import and return the ``torch`` module.

    Parameters
    ----------
    by : str
        What needs torch, for the message (e.g. ``"model 'dnn'"``).

    Returns
    -------
    module
        ``torch``.

    Raises
    ------
    MissingDependencyError
        If torch cannot be imported; the message names ``by`` and says how to install torch.
    """
    try:
        return importlib.import_module("torch")
    except ImportError as err:
        raise MissingDependencyError(f"{by} needs torch, which is not installed ({err}); {INSTALL_HINT}") from err


def is_torch_module(obj) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module``, without importing torch (no torch imported: no module)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)
