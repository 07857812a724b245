"""Constraints over the domain: simple rules that every input and every counterpart satisfies.

See architecture: counterparts that could exist. Two kinds of rule, written as text and parsed against the domain's
features (labels or codes):

- **exclusion** ``"sex=Female excludes relationship=Husband"`` (several values with ``|``:
  ``"relationship=Husband|Wife excludes marital_status=Never-married"``): no input holds both;
- **ordering** ``"age >= education + 1"`` over codes (``>=``, ``>``, ``<=``, ``<``; an integer offset with ``+``
  or ``-``), normalised to ``left >= right + offset``.

Generators never spend queries on an input that breaks a rule: every proposal goes through
:meth:`~chiralfair.domain.Domain.repair`, which moves a violating row to a nearby row that satisfies every rule
by changing non-protected columns (an exclusion moves the excluded column to its nearest allowed code, an ordering
raises the smaller side, else lowers the larger). Counterparts are never repaired: one that breaks a rule is
impossible, is not sent to the model and cannot make an input an IDI (:class:`~chiralfair.oracle.CheckResult`
``possible``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..exceptions import DomainError

# Up to this many codes on a side of an exclusion, a row is tested with one comparison per code.
FEW_CODES = 8

_ORDER = re.compile(r"^\s*(?P<left>[^<>=]+?)\s*(?P<op>>=|<=|>|<)\s*(?P<right>[^<>=+]+?)\s*"
                    r"(?:(?P<sign>[+-])\s*(?P<offset>\d+))?\s*$")


@dataclass(frozen=True)
class Excludes:
    """No input has ``if_column`` in ``if_codes`` and ``then_column`` in ``then_codes``.

    Attributes
    ----------
    if_column, then_column : int
        Column indices.
    if_codes, then_codes : tuple of int
        Codes of each side, sorted.
    text : str
        The rule as written (normalised: labels, single spaces).
    """

    if_column: int
    if_codes: tuple[int, ...]
    then_column: int
    then_codes: tuple[int, ...]
    text: str

    @property
    def columns(self) -> tuple[int, int]:
        """The two columns the rule reads."""
        return self.if_column, self.then_column

    def violated(self, X: np.ndarray) -> np.ndarray:
        """Rows holding both sides, shape (n_samples,), bool.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        return _holds(X[:, self.if_column], self.if_codes) & _holds(X[:, self.then_column], self.then_codes)

    def repair(self, X: np.ndarray, movable: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Move violating rows in place: the excluded column to its nearest allowed code (ties: the lower code).

        When that column may not move (it is protected, or every code is excluded), the ``if`` column moves
        instead; when neither may, the row is left (a rule over protected columns only, see
        :meth:`Domain.repair <chiralfair.domain.Domain.repair>`).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes, changed in place.
        movable : numpy.ndarray of bool, shape (n_features,)
            Columns a repair may change (protected columns may not).
        lower, upper : numpy.ndarray of int64, shape (n_features,)
            The domain's bounds.
        """
        bad = self.violated(X)
        if not bad.any():
            return
        for column, codes in ((self.then_column, self.then_codes), (self.if_column, self.if_codes)):
            nearest = _nearest_allowed(X[bad, column], codes, lower[column], upper[column])
            if movable[column] and nearest is not None:
                X[bad, column] = nearest
                return


@dataclass(frozen=True)
class AtLeast:
    """Every input has ``x[left] >= x[right] + offset`` (codes).

    Attributes
    ----------
    left, right : int
        Column indices.
    offset : int
    text : str
        The rule as written (normalised).
    """

    left: int
    right: int
    offset: int
    text: str

    @property
    def columns(self) -> tuple[int, int]:
        """The two columns the rule reads."""
        return self.left, self.right

    def violated(self, X: np.ndarray) -> np.ndarray:
        """Rows with ``x[left] < x[right] + offset``, shape (n_samples,), bool.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        return X[:, self.left] < X[:, self.right] + self.offset

    def repair(self, X: np.ndarray, movable: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Raise ``left`` to ``right + offset`` (within its bounds), then lower ``right`` if still needed, in place.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes, changed in place.
        movable : numpy.ndarray of bool, shape (n_features,)
            Columns a repair may change.
        lower, upper : numpy.ndarray of int64, shape (n_features,)
            The domain's bounds.
        """
        bad = np.flatnonzero(self.violated(X))
        if not len(bad):
            return
        if movable[self.left]:
            X[bad, self.left] = np.minimum(X[bad, self.right] + self.offset, upper[self.left])
        if movable[self.right]:
            still = bad[X[bad, self.left] < X[bad, self.right] + self.offset]
            X[still, self.right] = np.maximum(X[still, self.left] - self.offset, lower[self.right])


Constraint = Excludes | AtLeast

# Rules whose columns take at most this many joint values (times the counterparts per row) are tabulated.
MAX_TABLE_CELLS = 1 << 16


@dataclass(frozen=True)
class JointCodes:
    """The joint codes of a few columns as one index (mixed radix), for tables of what the rules allow.

    The rules of a search read a few small columns (census: ``sex`` and ``relationship``, 12 joint codes), so one
    table lookup per row replaces two comparisons per code per rule; that lookup runs on every proposal and
    counterpart of a search.

    Attributes
    ----------
    columns : numpy.ndarray of int64, shape (n_columns,)
        Column indices, sorted.
    lower : numpy.ndarray of int64, shape (n_columns,)
        Their lower bounds.
    sizes, strides : numpy.ndarray of int64, shape (n_columns,)
        Codes per column, and the weight of each column in the index.
    """

    columns: np.ndarray
    lower: np.ndarray
    sizes: np.ndarray
    strides: np.ndarray

    @classmethod
    def over(cls, columns, lower: np.ndarray, upper: np.ndarray, *, per_code: int = 1) -> JointCodes | None:
        """The joint codes of ``columns`` within the bounds; None if a table over them would be too large.

        Parameters
        ----------
        columns : sequence of int
            Column indices (repeats allowed).
        lower, upper : numpy.ndarray of int64, shape (n_features,)
            The domain's bounds.
        per_code : int
            Table entries per joint value (the table holds more than :data:`MAX_TABLE_CELLS` entries: None).

        Returns
        -------
        JointCodes or None
        """
        columns = np.unique(np.asarray(columns, dtype=np.int64))
        sizes = upper[columns] - lower[columns] + 1
        if int(np.prod(sizes.astype(object))) * per_code > MAX_TABLE_CELLS:
            return None
        strides = np.cumprod(np.concatenate([[1], sizes[:-1]])).astype(np.int64)
        return cls(columns, lower[columns].copy(), sizes, strides)

    @property
    def size(self) -> int:
        """Number of joint values."""
        return int(np.prod(self.sizes))

    def rows(self, base: np.ndarray) -> np.ndarray:
        """One row per joint value, in index order: ``base`` with the columns set to it.

        Parameters
        ----------
        base : numpy.ndarray of int64, shape (n_features,)
            The values of the other columns.

        Returns
        -------
        numpy.ndarray of int64, shape (size, n_features)
        """
        grid = np.indices(tuple(self.sizes[::-1])).reshape(len(self.columns), -1)[::-1].T + self.lower
        out = np.tile(base, (len(grid), 1))
        out[:, self.columns] = grid
        return out

    def index(self, X: np.ndarray, *, inside: bool = False) -> np.ndarray | None:
        """Each row's joint index; None if a row lies outside the bounds of the columns.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.
        inside : bool, default=False
            Every row lies inside the columns' bounds already (a search's clipped proposals), so they are not
            compared. Not checked: a row outside them gets another row's index.

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,), or None
        """
        index = None
        for column, lo, size, stride in self._spec:
            offset = X[:, column] if lo == 0 else X[:, column] - lo  # one numpy call fewer for a column from 0
            if not inside and len(offset) and offset.view(np.uint64).max() >= size:  # negative offsets wrap high
                return None
            if index is None:
                index = offset * stride if stride != 1 else offset.copy()
            else:
                index += offset * stride if stride != 1 else offset
        return index

    def strides_by_column(self, n_features: int) -> np.ndarray:
        """Each column's weight in the index, 0 for the columns not joined, shape (n_features,).

        A row that changes one joined column by ``d`` changes its index by ``d`` times that column's stride.

        Parameters
        ----------
        n_features : int
            The width of the rows indexed.

        Returns
        -------
        numpy.ndarray of int64, shape (n_features,)
        """
        out = np.zeros(n_features, dtype=np.int64)
        out[self.columns] = self.strides
        return out

    @functools.cached_property
    def _spec(self) -> list[tuple[int, int, int, int]]:
        return list(zip(self.columns.tolist(), self.lower.tolist(), self.sizes.tolist(), self.strides.tolist(),
                        strict=True))


def parse_constraints(rules, features) -> tuple[Constraint, ...]:
    """Parse rules written as text (or already parsed) against the domain's features.

    Parameters
    ----------
    rules : str, Constraint or sequence of them, or None
    features : sequence of Feature

    Returns
    -------
    tuple of Constraint

    Raises
    ------
    DomainError
        Naming the rule and what is wrong: an unknown column (with the valid names), a value the column does
        not have, a rule of neither form, or an ordering no value pair inside the bounds satisfies.
    """
    if rules is None:
        return ()
    if isinstance(rules, str | Excludes | AtLeast):
        rules = [rules]
    out = []
    for rule in rules:
        if isinstance(rule, Excludes | AtLeast):
            out.append(rule)
        elif isinstance(rule, str):
            out.append(parse_constraint(rule, features))
        else:
            raise DomainError(f"a constraint must be text such as 'sex=Female excludes relationship=Husband' or "
                              f"'age >= education + 1', got {rule!r}")
    return tuple(out)


def parse_constraint(text: str, features) -> Constraint:
    """Parse one rule (see the module docstring).

    Parameters
    ----------
    text : str
        One rule: ``"A=value excludes B=value"`` or ``"left >= right + offset"`` (codes).
    features : sequence of Feature
        The domain's features, to resolve names and labels.

    Returns
    -------
    Excludes or AtLeast

    Raises
    ------
    DomainError
        As :func:`parse_constraints`.
    """
    names = [f.name for f in features]
    if " excludes " in text:
        sides = (part.strip() for part in text.split(" excludes ", 1))
        (c1, codes1), (c2, codes2) = (_condition(side, text, features, names) for side in sides)
        if c1 == c2:
            raise DomainError(f"constraint {text!r}: both sides name column {names[c1]!r}; an exclusion relates "
                              "two columns")
        shown = " excludes ".join(_condition_text(features[c], codes) for c, codes in ((c1, codes1), (c2, codes2)))
        return Excludes(c1, codes1, c2, codes2, shown)
    match = _ORDER.match(text)
    if match is None:
        raise DomainError(f"constraint {text!r} is neither 'column=value excludes column=value' nor an ordering "
                          "'column >= column + k' (also >, <=, <)")
    left, right = (_column(match[k], text, names) for k in ("left", "right"))
    offset = int(match["offset"] or 0) * (-1 if match["sign"] == "-" else 1)
    op = match["op"]
    if op in ("<=", "<"):  # a <= b + k  is  b >= a - k
        left, right, offset = right, left, -offset
    if op in (">", "<"):
        offset += 1
    if left == right:
        raise DomainError(f"constraint {text!r}: both sides name column {names[left]!r}")
    fl, fr = features[left], features[right]
    if fl.hi < fr.lo + offset:
        raise DomainError(f"constraint {text!r} holds for no input: {fl.name!r} is at most {fl.hi} and "
                          f"{fr.name!r} + {offset} at least {fr.lo + offset}")
    sign = f" + {offset}" if offset > 0 else (f" - {-offset}" if offset < 0 else "")
    return AtLeast(left, right, offset, f"{fl.name} >= {fr.name}{sign}")


def _column(name: str, text: str, names: Sequence[str]) -> int:
    name = name.strip()
    if name not in names:
        raise DomainError(f"constraint {text!r}: unknown column {name!r}; valid names: "
                          f"{', '.join(map(repr, names))}")
    return names.index(name)


def _condition(side: str, text: str, features, names) -> tuple[int, tuple[int, ...]]:
    column, sep, values = side.partition("=")
    if not sep or not values.strip():
        raise DomainError(f"constraint {text!r}: {side!r} is not column=value (several values: column=a|b)")
    c = _column(column, text, names)
    f = features[c]
    codes = []
    for value in (v.strip() for v in values.split("|")):
        code = next((int(k) for k, label in (f.labels or {}).items() if label == value), None)
        if code is None and value.lstrip("-").isdigit() and f.lo <= int(value) <= f.hi:
            code = int(value)
        if code is None:
            valid = (", ".join(map(repr, f.labels.values())) if f.labels else f"codes {f.lo}..{f.hi}")
            raise DomainError(f"constraint {text!r}: column {f.name!r} has no value {value!r}; valid: {valid}")
        codes.append(code)
    return c, tuple(sorted(set(codes)))


def _condition_text(feature, codes) -> str:
    return f"{feature.name}=" + "|".join(feature.label(c) for c in codes)


def _holds(values: np.ndarray, codes: tuple[int, ...]) -> np.ndarray:
    """Whether each value is one of ``codes``, shape (n,): a comparison per code for a few codes, else ``isin``.

    ``np.isin`` sorts or builds a table on every call, which costs far more than the two comparisons a rule such
    as ``sex=Female excludes relationship=Husband`` needs on the batches of a search.
    """
    if not codes or len(codes) > FEW_CODES:
        return np.isin(values, codes)
    out = values == codes[0]
    for code in codes[1:]:
        out |= values == code
    return out


def _nearest_allowed(values: np.ndarray, excluded: Sequence[int], lo: int, hi: int) -> np.ndarray | None:
    """For each of ``values``, the nearest code of lo..hi not in ``excluded`` (ties: the lower); None if all are.

    Allowed values stay; each excluded code's nearest allowed code is worked out once per rule side
    (:func:`_nearest_of_excluded`), so repairing a batch costs one search of the excluded codes.
    """
    nearest = _nearest_of_excluded(tuple(int(c) for c in excluded), int(lo), int(hi))
    if nearest is None:
        return None
    codes, replacement = nearest
    values = np.asarray(values, dtype=np.int64)
    at = np.minimum(np.searchsorted(codes, values), len(codes) - 1)
    return np.where(codes[at] == values, replacement[at], values)


@functools.lru_cache(maxsize=256)
def _nearest_of_excluded(excluded: tuple[int, ...], lo: int, hi: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The excluded codes inside lo..hi (sorted) and the nearest allowed code of each; None if every code is excluded.

    The nearest allowed code of an excluded one lies next to an excluded code (the codes between are excluded), so
    only those neighbours are candidates: a column of 10**6 codes costs what a column of ten does.
    """
    codes = np.unique(np.asarray(excluded, dtype=np.int64))
    codes = codes[(codes >= lo) & (codes <= hi)]
    if len(codes) == hi - lo + 1:
        return None
    candidates = np.unique(np.concatenate([codes - 1, codes + 1]))
    allowed = candidates[(candidates >= lo) & (candidates <= hi) & ~np.isin(candidates, codes)]
    replacement = allowed[np.abs(codes[:, None] - allowed[None, :]).argmin(axis=1)]
    codes.setflags(write=False)
    replacement.setflags(write=False)
    return codes, replacement
