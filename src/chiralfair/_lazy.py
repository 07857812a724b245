"""Package attributes imported on first use (PEP 562), so that importing a package stays light."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_attributes(package: str, module_of: Mapping[str, str],
                    namespace: dict) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return a package's ``__getattr__`` and ``__dir__`` that import each name from its module on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    module_of : mapping of str to str
        Attribute name → its module, relative to ``package`` (e.g. ``"base"``).
    namespace : dict
        The package's ``globals()``: an imported value is stored there, so the next access costs nothing.

    Returns
    -------
    __getattr__, __dir__ : callable
    """
    def __getattr__(name: str):
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
