"""Plausibility: do a counterpart's protected and categorical values occur together in the data.

The data's co-occurrence counts of every pair of column codes are computed once, vectorised
(:meth:`Support.from_data`). A row is **plausible** when each of its (protected value, categorical value) pairs is
supported by the data: for each protected column ``p`` and each categorical column ``c`` outside ``p``'s attribute
(the other protected attributes included), the pair ``(x[p], x[c])`` is not *rare against independence*.
See architecture: counterparts that could exist.

A pair ``(a, b)`` is rare when the data had the chance to show it and did not: with ``E = n(a) n(b) / N`` the count
independence predicts, it is rare when ``E >= min_expected`` and ``n(a, b) < min_lift * E``. The literal rule
"the pair occurs in the data" (``n(a, b) > 0``) does not work on real data: census holds 1 ``Female`` ``Husband``
and 2 ``Male`` ``Wife`` rows among 32,561 (recording errors), against 4,350 and 1,050 that independence predicts,
so it would call a female husband plausible; a zero count with ``E`` well below 1 (a country with three rows and no
woman) says nothing, so it is not called rare. Defaults: ``min_lift = 0.01`` and ``min_expected = 5``.

Columns with more than :data:`MAX_CODES` codes are not counted (their pairs are not evaluated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import ConfigError

MAX_CODES = 512
# A protected column of at most this many codes is read through per-column bit masks (Support.plausible).
_MASK_BITS = 64
DEFAULT_MIN_LIFT = 0.01
DEFAULT_MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class Support:
    """Co-occurrence counts of the data's column codes, and which pairs are rare.

    Attributes
    ----------
    offsets : numpy.ndarray of int64, shape (n_features,)
        Position of each column's first code in the flat code space; -1 for a column not counted.
    lower : numpy.ndarray of int64, shape (n_features,)
        Each column's lowest code.
    counts : numpy.ndarray of int64, shape (n_codes, n_codes)
        Rows holding both codes (a column with itself: the diagonal block holds its code counts).
    n_rows : int
        Rows counted.
    min_lift, min_expected : float
        The rarity rule (module docstring).
    """

    offsets: np.ndarray
    lower: np.ndarray
    counts: np.ndarray
    n_rows: int
    min_lift: float = DEFAULT_MIN_LIFT
    min_expected: float = DEFAULT_MIN_EXPECTED
    rare: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        marginal = np.diag(self.counts).astype(float)
        expected = np.outer(marginal, marginal) / max(self.n_rows, 1)
        object.__setattr__(self, "rare", (expected >= self.min_expected) & (self.counts < self.min_lift * expected))

    @classmethod
    def from_data(cls, X, features, *, min_lift: float = DEFAULT_MIN_LIFT,
                  min_expected: float = DEFAULT_MIN_EXPECTED) -> Support:
        """Count every pair of codes of ``X`` (one ``bincount`` per pair of columns).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Encoded data inside the features' bounds.
        features : sequence of Feature
        min_lift : float, default 0.01
        min_expected : float, default 5.0

        Returns
        -------
        Support

        Raises
        ------
        ConfigError
            If ``min_lift`` or ``min_expected`` is negative.
        """
        if min_lift < 0 or min_expected < 0:
            raise ConfigError(f"min_lift and min_expected must be >= 0, got {min_lift} and {min_expected}")
        X = np.asarray(X, dtype=np.int64)
        sizes = np.array([f.size for f in features], dtype=np.int64)
        counted = sizes <= MAX_CODES
        offsets = np.where(counted, np.cumsum(np.where(counted, sizes, 0)) - np.where(counted, sizes, 0), -1)
        lower = np.array([f.lo for f in features], dtype=np.int64)
        total = int(sizes[counted].sum())
        counts = np.zeros((total, total), dtype=np.int64)
        cols = np.flatnonzero(counted)
        codes = X[:, cols] - lower[cols]
        for i, a in enumerate(cols):
            for j in range(i, len(cols)):
                b = cols[j]
                pair = np.bincount(codes[:, i] * sizes[b] + codes[:, j], minlength=sizes[a] * sizes[b])
                block = pair.reshape(sizes[a], sizes[b])
                counts[offsets[a]:offsets[a] + sizes[a], offsets[b]:offsets[b] + sizes[b]] = block
                counts[offsets[b]:offsets[b] + sizes[b], offsets[a]:offsets[a] + sizes[a]] = block.T
        return cls(offsets.astype(np.int64), lower, counts, int(len(X)), float(min_lift), float(min_expected))

    def pair_columns(self, domain) -> np.ndarray:
        """The column pairs ``(protected column, categorical column)`` a row's plausibility reads.

        Parameters
        ----------
        domain : Domain
            The domain the support was counted for.

        Returns
        -------
        numpy.ndarray of int64, shape (n_pairs, 2)
        """
        pairs = []
        for a in domain.attributes:
            own = set(a.columns)
            for p in a.columns:
                for c, f in enumerate(domain.features):
                    if c in own or self.offsets[p] < 0 or self.offsets[c] < 0:
                        continue
                    if f.kind == "categorical" or c in domain.protected:
                        pairs.append((p, c))
        return np.array(pairs, dtype=np.int64).reshape(-1, 2)

    def plausible(self, X, pairs: np.ndarray, counterparts=None, changed=()) -> np.ndarray:
        """Whether no pair of columns ``pairs`` of a row is rare, shape (n_samples,), bool.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.
        pairs : numpy.ndarray of int64, shape (n_pairs, 2)
            :meth:`pair_columns`.
        counterparts : array-like of int, shape (n_samples, n_features), optional
            One counterpart per row, equal to its row outside the columns ``changed``: then whether the row and its
            counterpart are both plausible (a column they share is looked up once for both).
        changed : collection of int, default=()
            The columns where ``counterparts`` may differ from ``X``.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        X = np.asarray(X, dtype=np.int64)
        sides = [X] if counterparts is None else [X, np.asarray(counterparts, dtype=np.int64)]
        if not len(pairs) or not len(X):
            return np.ones(len(X), dtype=bool)
        rare = np.zeros(len(X), dtype=bool)
        wide = []
        for p in np.unique(pairs[:, 0]).tolist():
            others = pairs[pairs[:, 0] == p, 1]
            if self._size(p) > _MASK_BITS:
                wide.append(pairs[pairs[:, 0] == p])
                continue
            # Per column c, a table over c's codes of the bit mask of p's codes rare with it: one lookup per column
            # and row, then the row's own bit of p, instead of a lookup per (row, pair) in the (codes, codes) table.
            bits = [np.zeros(len(X), dtype=np.uint64) for _ in sides]
            for c in others.tolist():
                masks = self._rare_masks(p, c)
                shared = None if c in changed else masks.take(X[:, c] - self.lower[c])
                for side, side_bits in zip(sides, bits, strict=True):
                    side_bits |= masks.take(side[:, c] - self.lower[c]) if shared is None else shared
            for side, side_bits in zip(sides, bits, strict=True):
                rare |= ((side_bits >> (side[:, p] - self.lower[p]).astype(np.uint64)) & np.uint64(1)).astype(bool)
        for block in wide:  # a protected column of more than 64 codes: the (row, pair) lookup
            p, c = block[:, 0], block[:, 1]
            for side in sides:
                rows = side[:, p] - self.lower[p] + self.offsets[p]
                cols = side[:, c] - self.lower[c] + self.offsets[c]
                rare |= self.rare[rows, cols].any(axis=1)
        return ~rare

    def _size(self, column: int) -> int:
        """Codes of a counted column (its diagonal block's width)."""
        start = self.offsets[column]
        later = self.offsets[self.offsets > start]
        return int((later.min() if len(later) else len(self.counts)) - start)

    def _rare_masks(self, p: int, c: int) -> np.ndarray:
        """For each code of column ``c``, the bits of the codes of column ``p`` rare with it, shape (codes of c,)."""
        rows = slice(self.offsets[p], self.offsets[p] + self._size(p))
        block = self.rare[rows, self.offsets[c]:self.offsets[c] + self._size(c)]
        weights = np.left_shift(np.uint64(1), np.arange(block.shape[0], dtype=np.uint64))
        return np.bitwise_or.reduce(np.where(block, weights[:, None], np.uint64(0)), axis=0)

    def rare_pairs(self, domain, pairs: np.ndarray) -> list[dict]:
        """The rare (protected value, categorical value) pairs among ``pairs``, most expected first.

        Both values occur in the data, but hardly ever together: rules a user may declare as a constraint or a
        coupling.

        Parameters
        ----------
        domain : Domain
        pairs : numpy.ndarray of int64, shape (n_pairs, 2)
            :meth:`pair_columns`.

        Returns
        -------
        list of dict
            ``column``, ``value``, ``other``, ``other_value`` (labels), ``count``, ``expected`` and
            ``constraint`` (the rule as :mod:`chiralfair.domain.constraints` text).
        """
        out = []
        marginal = np.diag(self.counts)
        for p, c in pairs.tolist():
            fp, fc = domain.features[p], domain.features[c]
            block = self.rare[self.offsets[p]:self.offsets[p] + fp.size, self.offsets[c]:self.offsets[c] + fc.size]
            for i, j in zip(*np.nonzero(block), strict=True):
                a, b = self.offsets[p] + i, self.offsets[c] + j
                expected = marginal[a] * marginal[b] / self.n_rows
                value, other = fp.label(fp.lo + i), fc.label(fc.lo + j)
                out.append({"column": fp.name, "value": value, "other": fc.name, "other_value": other,
                            "count": int(self.counts[a, b]), "expected": float(expected),
                            "constraint": f"{fp.name}={value} excludes {fc.name}={other}"})
        out.sort(key=lambda r: (-r["expected"], r["constraint"]))
        return out


def suggested_couplings(rare: list[dict], domain) -> list[str]:
    """Swaps the rare pairs suggest for two-valued protected columns, as ``--couple`` text.

    A value ``a`` rarely seen with code ``p``, the other value ``b`` rarely seen with ``q``, while ``a`` is seen with
    ``q`` and ``b`` with ``p``: ``p`` and ``q`` are one role at the two values (census: Husband and Wife).

    Parameters
    ----------
    rare : list of dict
        :meth:`Support.rare_pairs`.
    domain : Domain

    Returns
    -------
    list of str
        E.g. ``["sex:relationship=Husband/Wife"]``.
    """
    by_column: dict[tuple[str, str], dict[str, set]] = {}
    for r in rare:
        by_column.setdefault((r["column"], r["other"]), {}).setdefault(r["value"], set()).add(r["other_value"])
    out = []
    for (column, other), never in by_column.items():
        f = domain.features[domain.index(column)]
        values = [f.label(c) for c in range(f.lo, f.hi + 1)]
        if len(values) != 2 or set(never) != set(values):
            continue
        a, b = values
        swaps = sorted((p, q) for p in never[a] - never[b] for q in never[b] - never[a])
        if len(swaps) == 1:
            out.append(f"{column}:{other}={swaps[0][0]}/{swaps[0][1]}")
    return out
