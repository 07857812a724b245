"""One family's name table: classes registered by name, built by name, a misspelt name refused with the valid ones.

Generators, seed strategies and mitigation methods (style: one family, one verb, one registry) each keep one
:class:`Registry`. It reads like a dict (``name in GENERATORS``, ``GENERATORS[name]``, ``sorted(GENERATORS)``)
and is written only through :meth:`Registry.add`, which refuses a name registered twice.

An installed package adds generators, seed strategies and mitigation methods through the entry-point groups of
:data:`ENTRY_POINT_GROUPS` (``chiralfair.generators``, ``chiralfair.seed_strategies``,
``chiralfair.mitigation_methods``), in its ``pyproject.toml``::

    [project.entry-points."chiralfair.generators"]
    nudge = "mypackage.nudge:Nudge"

Their names are known without importing anything (:func:`installed_entry_points` reads the installed packages'
metadata with :mod:`importlib.metadata`), so the command line lists and checks them as it does the built-in ones;
the class is imported the first time its name is looked up, and registered under that name.

References
----------
.. [1] Python Packaging User Guide, "Entry points specification".
   https://packaging.python.org/en/latest/specifications/entry-points/
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Generic, TypeVar

from .exceptions import ConfigError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T", bound=Callable)

# The entry-point group through which installed packages add to each family, by the family's noun.
ENTRY_POINT_GROUPS = {"generator": "chiralfair.generators", "seed strategy": "chiralfair.seed_strategies",
                      "mitigation method": "chiralfair.mitigation_methods"}


def installed_entry_points(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group`` that installed packages declare, by name (nothing is imported).

    Parameters
    ----------
    group : str
        E.g. ``"chiralfair.generators"``.

    Returns
    -------
    dict of str to importlib.metadata.EntryPoint
        The first package on ``sys.path`` that declares a name wins, as :func:`importlib.metadata.entry_points`
        orders them.
    """
    from importlib.metadata import entry_points

    out: dict[str, EntryPoint] = {}
    for point in entry_points(group=group):
        out.setdefault(point.name, point)
    return out


class Registry(Mapping[str, T], Generic[T]):
    """The registered names of one family and their classes (or factories returning an instance).

    Parameters
    ----------
    kind : str
        The family's noun in messages: ``"generator"``, ``"seed strategy"``, ``"mitigation method"``.
    entry_point_group : str, optional
        The entry-point group installed packages add to this family through; default the kind's in
        :data:`ENTRY_POINT_GROUPS` (none for other families).
    """

    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group or ENTRY_POINT_GROUPS.get(kind)
        self._entries: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        if name not in self._entries:
            point = self.installed().get(name)
            if point is None:
                raise KeyError(name)
            self._load(name, point)
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries or (isinstance(name, str) and name in self.installed())

    def __iter__(self) -> Iterator[str]:
        return iter([*self._entries, *(n for n in self.installed() if n not in self._entries)])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(sorted(self))})"

    def installed(self) -> dict[str, EntryPoint]:
        """The entry points installed packages declare for this family (:func:`installed_entry_points`).

        Returns
        -------
        dict of str to importlib.metadata.EntryPoint
        """
        return installed_entry_points(self.entry_point_group) if self.entry_point_group else {}

    def _load(self, name: str, point: EntryPoint) -> None:
        """Import the entry point's object and register it under ``name`` (unless importing it registered it)."""
        where = f"entry point {point.name} = {point.value} (group {point.group}"
        where += f", package {point.dist.name} {point.dist.version})" if point.dist is not None else ")"
        try:
            entry = point.load()
        except Exception as err:  # an installed package's import error: name it, not a deep traceback
            raise ConfigError(f"{self.kind} {name!r} cannot be loaded from {where}: {type(err).__name__}: "
                              f"{err}") from err
        if name in self._entries:
            return
        if not callable(entry):
            raise ConfigError(f"{self.kind} {name!r}: {where} names a {type(entry).__name__}, not a class or a "
                              "function returning an instance")
        self._entries[name] = entry

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
        if name not in self:
            raise unknown_name(self.kind, name, self)

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
            If ``name`` is not registered (listing the valid names), if a parameter is not one the entry takes
            (listing those it takes), or as the entry raises.
        """
        self.check_parameters(name, params)
        return self[name](**params)

    def check_parameters(self, name: str, params) -> None:
        """Refuse a name that is not registered, or a parameter the entry does not take.

        Parameters
        ----------
        name : str
        params : mapping
            The keyword arguments it would be built with.

        Raises
        ------
        ConfigError
            Listing the valid names, or the parameters the entry takes.
        """
        self.check(name)
        accepted = accepted_parameters(self[name])
        unknown = sorted(set(params) - set(accepted)) if accepted is not None else []
        if unknown:
            raise ConfigError(f"{self.kind} {name!r} takes no parameter {', '.join(map(repr, unknown))}; its "
                              f"parameters: {', '.join(sorted(accepted or ())) or 'none'}")


def accepted_parameters(entry) -> tuple[str, ...] | None:
    """The keyword parameters ``entry`` takes, following ``**params`` that a class passes on to its base classes.

    A class whose ``__init__`` takes ``**params`` passes them to the next ``__init__`` in its method resolution
    order, so its parameters are its own and those; the family's base class keeps what it is given (``**params``
    only), which adds none. A function with ``**params`` may take anything: None (not checked).

    Parameters
    ----------
    entry : callable
        A registered class or function.

    Returns
    -------
    tuple of str or None
        In the order of the signatures, the class's own first.
    """
    import inspect

    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    if not inspect.isclass(entry):
        parameters = list(inspect.signature(entry).parameters.values())
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            return None
        return tuple(p.name for p in parameters if p.kind in keyword)
    names: list[str] = []
    for cls in entry.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None or cls is object:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]
        names += [p.name for p in parameters if p.kind in keyword and p.name not in names]
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return tuple(names)


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
