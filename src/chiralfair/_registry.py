"""One family's name table: classes registered by name, built by name, a misspelt name refused with the valid ones.

Generators, seed strategies and mitigation methods (style: one family, one verb, one registry) each keep one
:class:`Registry`. It reads like a dict (``name in GENERATORS``, ``GENERATORS[name]``, ``sorted(GENERATORS)``)
and is written only through :meth:`Registry.add`, which refuses a name registered twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from .exceptions import ConfigError

T = TypeVar("T", bound=Callable)


class Registry(Mapping[str, T], Generic[T]):
    """The registered names of one family and their classes (or factories returning an instance).

    Parameters
    ----------
    kind : str
        The family's noun in messages: ``"generator"``, ``"seed strategy"``, ``"mitigation method"``.
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(sorted(self._entries))})"

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` under ``name``.

        Parameters
        ----------
        name : str
            The name it is built by.
        entry : callable
            A class, or a function returning an instance (a preset).

        Returns
        -------
        callable
            ``entry`` itself, so that a class decorator can return it.

        Raises
        ------
        ConfigError
            If ``name`` is already registered.
        """
        if name in self._entries:
            raise ConfigError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def check(self, name: str) -> None:
        """Refuse a name that is not registered.

        Parameters
        ----------
        name : str

        Raises
        ------
        ConfigError
            Listing the valid names.
        """
        if name not in self._entries:
            raise unknown_name(self.kind, name, self._entries)

    def make(self, name: str, **params):
        """Build the entry registered as ``name`` with ``params``.

        Parameters
        ----------
        name : str
        **params
            Keyword arguments of the entry.

        Returns
        -------
        object
            What the entry returns: an instance of the family.

        Raises
        ------
        ConfigError
            If ``name`` is not registered (listing the valid names), or as the entry raises.
        """
        self.check(name)
        return self._entries[name](**params)


def unknown_name(kind: str, name: str, valid: Iterable[str]) -> ConfigError:
    """The error for a name of a family that is not one of ``valid`` (the same words wherever it is refused).

    Parameters
    ----------
    kind : str
        The family's noun, e.g. ``"generator"``.
    name : str
        The name given.
    valid : iterable of str
        The valid names; listed sorted.

    Returns
    -------
    ConfigError
        ``unknown <kind> '<name>'; valid: <names>``.
    """
    return ConfigError(f"unknown {kind} {name!r}; valid: {', '.join(sorted(valid))}")
