"""The space certification splits: boxes of integer codes over the non-protected columns, one box per set of keys.

A box holds, for each non-protected column, an interval of codes ``[lo, hi]``; a point of the box is an IDI key
(:meth:`Domain.projection <chiralfair.domain.Domain.projection>`): a coupled column is read as its **role**, the
code it has at the first value of its attribute. Each protected combination ``c`` of the domain
(:attr:`Domain.combinations <chiralfair.domain.Domain.combinations>`) turns a key into one network input ``x_c``:
the protected columns take the combination's values, a coupled column the code its role has at that value (the
couplings of :meth:`Domain.counterparts <chiralfair.domain.Domain.counterparts>`), every other column the key's
own code. So the box's inputs for combination ``c`` are a box of the network's inputs too, and all combinations
share the same intervals on the non-coupled columns: the pair test of :mod:`.decision` relies on that.

A coupled column is always a single role in a box (the initial boxes enumerate its roles), so its code at every
combination is exact. The volume of a box is its number of keys.

Constraints (:mod:`chiralfair.domain.constraints`) are read over a box's inputs for each combination: a combination
is possible everywhere in the box, nowhere, or in part. A key belongs to the domain when some combination of it is
possible (the discrimination check starts from a possible input); :meth:`KeySpace.membership` says which boxes do,
and :meth:`KeySpace.domain_boxes` splits the whole space until every box is inside the domain or outside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..domain.constraints import AtLeast, Excludes

if TYPE_CHECKING:
    from ..domain import Domain

POSSIBLE, IMPOSSIBLE, PARTLY = 0, 1, 2
INSIDE, OUTSIDE = 0, 1


@dataclass(frozen=True, eq=False)
class KeySpace:
    """Boxes of keys of one domain, and the network inputs each protected combination makes of them.

    Parameters
    ----------
    domain : Domain
        With at least one protected attribute.

    Attributes
    ----------
    columns : numpy.ndarray of int64, shape (n_columns,)
        The non-protected columns (:attr:`Domain.non_protected`), in order; a box's coordinates follow them.
    lower, upper : numpy.ndarray of int64, shape (n_columns,)
        Their code bounds.
    coupled : tuple of int
        Positions in ``columns`` of the coupled columns.
    input_position : numpy.ndarray of int64, shape (n_features,)
        For each input column, its position in ``columns`` (0 for protected columns, which boxes do not hold).
    """

    domain: Domain
    columns: np.ndarray = field(init=False)
    lower: np.ndarray = field(init=False)
    upper: np.ndarray = field(init=False)
    coupled: tuple[int, ...] = field(init=False)
    input_position: np.ndarray = field(init=False)
    _code_at: dict = field(init=False, repr=False)
    _template: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        domain = self.domain
        columns = np.asarray(domain.non_protected, dtype=np.int64)
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "lower", domain.lower[columns])
        object.__setattr__(self, "upper", domain.upper[columns])
        position = {int(c): i for i, c in enumerate(columns)}
        coupled = tuple(position[c] for c in domain.coupled_columns)
        object.__setattr__(self, "coupled", coupled)
        combos = domain.combinations
        template = np.tile(domain.lower, (len(combos), 1))
        template[:, list(domain.protected)] = combos
        object.__setattr__(self, "_template", template)
        object.__setattr__(self, "_code_at", {i: self._role_table(int(columns[i])) for i in coupled})
        where = np.full(domain.n_features, 0, dtype=np.int64)
        where[columns] = np.arange(len(columns))
        object.__setattr__(self, "input_position", where)

    def _role_table(self, column: int) -> np.ndarray:
        """``table[c, role - lo]``: the code of a coupled column at combination ``c`` for each role."""
        domain = self.domain
        feature = domain.features[column]
        rows = np.tile(self._template_row(), (feature.size, 1))
        rows[:, column] = np.arange(feature.lo, feature.hi + 1)
        return domain.counterparts(rows)[:, :, column].T.copy()

    def _template_row(self) -> np.ndarray:
        """A domain point at combination 0 (each attribute's first value): its codes are the roles."""
        return self._template[0].copy()

    # ------------------------------------------------------------------ sizes
    @property
    def n_columns(self) -> int:
        """Number of non-protected columns (a box's dimension)."""
        return len(self.columns)

    @property
    def n_combinations(self) -> int:
        """Number of protected combinations."""
        return len(self._template)

    def volume(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Number of keys in each box, shape (n_boxes,), float64 (exact below 2**53 keys).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)

        Returns
        -------
        numpy.ndarray of float64
        """
        return np.prod((hi - lo + 1).astype(np.float64), axis=1)

    def total_volume(self) -> float:
        """Number of keys of the whole space.

        Returns
        -------
        float
            The product of the non-protected columns' sizes.
        """
        return float(np.prod((self.upper - self.lower + 1).astype(np.float64)))

    # ------------------------------------------------------------------ boxes and inputs
    def root_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole space as boxes, one per combination of the coupled columns' roles.

        Returns
        -------
        lo, hi : numpy.ndarray of int64, shape (n_boxes, n_columns)
        """
        grids = [np.arange(self.lower[i], self.upper[i] + 1) for i in self.coupled]
        roles = (np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, len(grids)) if grids
                 else np.zeros((1, 0), dtype=np.int64))
        lo = np.tile(self.lower, (len(roles), 1))
        hi = np.tile(self.upper, (len(roles), 1))
        if self.coupled:
            lo[:, list(self.coupled)] = roles
            hi[:, list(self.coupled)] = roles
        return lo, hi

    def input_boxes(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The network input box of every (box, combination).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)
            Coupled columns must be single roles (``lo == hi`` there).

        Returns
        -------
        lo, hi : numpy.ndarray of int64, shape (n_boxes, n_combinations, n_features)
        """
        n = len(lo)
        out_lo = np.repeat(self._template[None], n, axis=0)
        out_hi = out_lo.copy()
        out_lo[:, :, self.columns] = lo[:, None, :]
        out_hi[:, :, self.columns] = hi[:, None, :]
        for i, table in self._code_at.items():
            column = self.columns[i]
            code = table[:, lo[:, i] - self.lower[i]].T  # (n, k)
            out_lo[:, :, column] = code
            out_hi[:, :, column] = code
        return out_lo, out_hi

    def input_boxes_at(self, lo: np.ndarray, hi: np.ndarray, combination: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`input_boxes` at one combination.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)
            Coupled columns must be single roles.
        combination : int

        Returns
        -------
        lo, hi : numpy.ndarray of int64, shape (n_boxes, n_features)
        """
        out_lo = np.repeat(self._template[combination][None], len(lo), axis=0)
        out_hi = out_lo.copy()
        out_lo[:, self.columns] = lo
        out_hi[:, self.columns] = hi
        for i, table in self._code_at.items():
            code = table[combination, lo[:, i] - self.lower[i]]
            out_lo[:, self.columns[i]] = code
            out_hi[:, self.columns[i]] = code
        return out_lo, out_hi

    def points(self, keys: np.ndarray, combination: np.ndarray) -> np.ndarray:
        """Domain inputs: each key at one combination.

        Parameters
        ----------
        keys : numpy.ndarray of int, shape (n, n_columns)
        combination : numpy.ndarray of int, shape (n,)

        Returns
        -------
        numpy.ndarray of int64, shape (n, n_features)
        """
        keys = np.asarray(keys, dtype=np.int64)
        lo, _ = self.input_boxes(keys, keys)
        return lo[np.arange(len(keys)), np.asarray(combination, dtype=np.int64)]

    def keys_of(self, X) -> np.ndarray:
        """The key of each domain input (its projection, coupled columns as roles), shape (n, n_columns).

        Parameters
        ----------
        X : array-like of int, shape (n, n_features)

        Returns
        -------
        numpy.ndarray of int64
        """
        return self.domain.projection(np.asarray(X, dtype=np.int64))

    # ------------------------------------------------------------------ constraints
    def possibility(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray | None:
        """Whether each combination's input satisfies the constraints in each box: everywhere, nowhere, in part.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)

        Returns
        -------
        numpy.ndarray of int8, shape (n_boxes, n_combinations), or None
            :data:`POSSIBLE`, :data:`IMPOSSIBLE` or :data:`PARTLY`; None when the domain has no constraints
            (every combination is possible everywhere).
        """
        rules = self.domain.constraints
        if not rules:
            return None
        xlo, xhi = self.input_boxes(lo, hi)
        everywhere = np.zeros(xlo.shape[:2], dtype=bool)  # some rule is broken at every point
        somewhere = np.zeros(xlo.shape[:2], dtype=bool)  # some rule may be broken at some point
        for rule in rules:
            always, sometimes = _rule_status(rule, xlo, xhi, self.domain.features)
            everywhere |= always
            somewhere |= sometimes
        out = np.full(xlo.shape[:2], PARTLY, dtype=np.int8)
        out[~somewhere] = POSSIBLE
        out[everywhere] = IMPOSSIBLE
        return out

    def membership(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Whether each box's keys are in the domain: all (:data:`INSIDE`), none (:data:`OUTSIDE`), some (-1).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)

        Returns
        -------
        numpy.ndarray of int8, shape (n_boxes,)
        """
        status = self.possibility(lo, hi)
        if status is None:
            return np.full(len(lo), INSIDE, dtype=np.int8)
        out = np.full(len(lo), -1, dtype=np.int8)
        out[(status == IMPOSSIBLE).all(axis=1)] = OUTSIDE
        out[(status == POSSIBLE).any(axis=1)] = INSIDE
        return out

    def domain_boxes(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The root boxes split until each lies inside the domain or outside it; the inside ones.

        A box partly inside is halved on its widest column read by a constraint (a point is always one or the
        other), so this ends.

        Returns
        -------
        lo, hi : numpy.ndarray of int64, shape (n_boxes, n_columns)
            The boxes inside the domain.
        outside : float
            Number of keys outside it.
        """
        lo, hi = self.root_boxes()
        read = np.zeros(self.n_columns, dtype=bool)
        position = {int(c): i for i, c in enumerate(self.columns)}
        for rule in self.domain.constraints:
            for c in rule.columns:
                if int(c) in position:
                    read[position[int(c)]] = True
        keep_lo, keep_hi, outside = [], [], 0.0
        while len(lo):
            member = self.membership(lo, hi)
            keep_lo.append(lo[member == INSIDE])
            keep_hi.append(hi[member == INSIDE])
            outside += float(self.volume(lo[member == OUTSIDE], hi[member == OUTSIDE]).sum())
            lo, hi = lo[member < 0], hi[member < 0]
            if len(lo):
                width = np.where(read, hi - lo, -1)
                lo, hi = split_boxes(lo, hi, width.argmax(axis=1))
        return np.concatenate(keep_lo), np.concatenate(keep_hi), outside


def split_boxes(lo: np.ndarray, hi: np.ndarray, column: np.ndarray,
                mid: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Split each box in two on one column: ``[lo, mid]`` and ``[mid + 1, hi]`` (integers), lower parts first.

    Parameters
    ----------
    lo, hi : numpy.ndarray of int, shape (n_boxes, n_columns)
    column : numpy.ndarray of int, shape (n_boxes,)
        The column to split in each box; its width must be at least 2.
    mid : numpy.ndarray of int, shape (n_boxes,), optional
        The last code of the lower part, in ``[lo, hi - 1]`` on ``column``; default the middle ``(lo + hi) // 2``.

    Returns
    -------
    lo, hi : numpy.ndarray, shape (2 * n_boxes, n_columns)
        Rows ``i`` and ``n_boxes + i`` are the halves of box ``i``.
    """
    rows = np.arange(len(lo))
    if mid is None:
        mid = (lo[rows, column] + hi[rows, column]) // 2
    low_hi = hi.copy()
    low_hi[rows, column] = mid
    high_lo = lo.copy()
    high_lo[rows, column] = mid + 1
    return np.concatenate([lo, high_lo]), np.concatenate([low_hi, hi])


def _rule_status(rule, lo: np.ndarray, hi: np.ndarray, features) -> tuple[np.ndarray, np.ndarray]:
    """Whether a rule is broken at every point of each input box, and whether at some point (may be).

    ``lo`` and ``hi`` have shape (n_boxes, n_combinations, n_features); the results (n_boxes, n_combinations).
    """
    if isinstance(rule, Excludes):
        a_all, a_any = _codes_in(lo[..., rule.if_column], hi[..., rule.if_column], rule.if_codes,
                                 features[rule.if_column])
        b_all, b_any = _codes_in(lo[..., rule.then_column], hi[..., rule.then_column], rule.then_codes,
                                 features[rule.then_column])
        return a_all & b_all, a_any & b_any
    if isinstance(rule, AtLeast):  # broken where x[left] < x[right] + offset
        always = hi[..., rule.left] < lo[..., rule.right] + rule.offset
        sometimes = lo[..., rule.left] < hi[..., rule.right] + rule.offset
        return always, sometimes
    raise TypeError(f"unknown constraint type {type(rule).__name__}")  # pragma: no cover - the two kinds above


def _codes_in(lo: np.ndarray, hi: np.ndarray, codes, feature) -> tuple[np.ndarray, np.ndarray]:
    """Whether every code of ``[lo, hi]`` is in ``codes``, and whether some is."""
    member = np.zeros(feature.size + 1, dtype=np.int64)
    inside = [c - feature.lo for c in codes if feature.lo <= c <= feature.hi]
    member[np.asarray(inside, dtype=np.int64) + 1] = 1
    count = np.cumsum(member)
    n_in = count[hi - feature.lo + 1] - count[lo - feature.lo]
    return n_in == hi - lo + 1, n_in > 0
