"""A tree ensemble read over the domain's integer codes: every leaf as a box of codes, bounded over boxes.

:mod:`.tree_reading` reads a scikit-learn, LightGBM or XGBoost ensemble (through the preprocessing in front of it)
into one :class:`TreeEnsemble`: for each leaf, the set of codes of each domain feature that reach it (an interval
for a split on a monotone column, any set for a one-hot column), and its value. The model's score is ``base`` plus
one leaf value per tree; its label is the class at index 1 of the model's own classes exactly when the score is
above ``threshold``.

The ensemble is constant on every **cell**: a box of codes that no leaf's code set cuts (for every feature, every
leaf either holds all of the box's codes or none). Over a wider box, each tree's value lies between the smallest
and the largest value of the leaves the box reaches (:meth:`TreeEnsemble.bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Rows x leaves handled at once when bounding (bounds memory to ~64 MB of booleans).
BLOCK = 1 << 26
# Below this share of (box, leaf) pairs reached, :meth:`TreeEnsemble.influence` reads the reached pairs alone.
SPARSE = 0.125


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Leaves as boxes of codes, with their values; the score is ``base`` plus one leaf per tree.

    Parameters
    ----------
    lower, upper : numpy.ndarray of int64, shape (n_features,)
        The domain's code bounds.
    reach : numpy.ndarray of bool, shape (n_leaves, n_codes)
        ``reach[leaf, offset[f] + c - lower[f]]``: whether code ``c`` of feature ``f`` can reach ``leaf`` (the
        other features aside).
    value : numpy.ndarray of float64, shape (n_leaves,)
    tree_start : numpy.ndarray of int64, shape (n_trees,)
        The first leaf of each tree (leaves are stored tree by tree).
    base, threshold : float
        The score is ``base + sum of leaves``; index 1 of the model's classes above ``threshold``.
    name : str
        The model, for messages.
    kind : str
        What was read (e.g. ``"HistGradientBoostingClassifier, 100 trees"``).

    Attributes
    ----------
    offset : numpy.ndarray of int64, shape (n_features + 1,)
        Where each feature's codes start in ``reach``'s columns.
    leaf_lo, leaf_hi : numpy.ndarray of int64, shape (n_leaves, n_features)
        The hull of each leaf's codes per feature (empty sets: ``lo > hi``).
    cuts : list of numpy.ndarray of int64
        For each feature, the codes ``c`` where some leaf holds one of ``c - 1`` and ``c`` but not the other.
    """

    lower: np.ndarray
    upper: np.ndarray
    reach: np.ndarray
    value: np.ndarray
    tree_start: np.ndarray
    base: float
    threshold: float
    name: str = "model"
    kind: str = ""
    offset: np.ndarray = field(init=False)
    leaf_lo: np.ndarray = field(init=False)
    leaf_hi: np.ndarray = field(init=False)
    cuts: list = field(init=False)
    _sets: dict = field(init=False, repr=False)  # feature -> cumulative counts (n_leaves, size + 1), non-intervals
    _cut_count: list = field(init=False, repr=False)  # feature -> cuts at or below each code (size,)
    _read: np.ndarray = field(init=False, repr=False)  # features some leaf does not hold whole

    def __post_init__(self):
        size = (self.upper - self.lower + 1).astype(np.int64)
        offset = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
        object.__setattr__(self, "offset", offset)
        n_leaves, d = len(self.value), len(size)
        leaf_lo = np.empty((n_leaves, d), dtype=np.int64)
        leaf_hi = np.empty((n_leaves, d), dtype=np.int64)
        sets, cuts, cut_count, read = {}, [], [], np.zeros(d, dtype=bool)
        for f in range(d):
            block = self.reach[:, offset[f]:offset[f + 1]]
            any_in = block.any(axis=1)
            first = np.where(any_in, block.argmax(axis=1), size[f])
            last = np.where(any_in, size[f] - 1 - block[:, ::-1].argmax(axis=1), -1)
            leaf_lo[:, f] = self.lower[f] + first
            leaf_hi[:, f] = self.lower[f] + last
            count = block.sum(axis=1)
            if (count != np.maximum(last - first + 1, 0)).any():  # some leaf's set is not an interval
                sets[f] = np.concatenate([np.zeros((n_leaves, 1), np.int32), np.cumsum(block, axis=1, dtype=np.int32)],
                                         axis=1)
            read[f] = bool((count < size[f]).any())
            changes = (block[:, 1:] != block[:, :-1]).any(axis=0) if size[f] > 1 else np.zeros(0, bool)
            cuts.append(self.lower[f] + 1 + np.flatnonzero(changes))
            cut_count.append(np.concatenate([[0], np.cumsum(changes)]).astype(np.int64))
        object.__setattr__(self, "leaf_lo", leaf_lo)
        object.__setattr__(self, "leaf_hi", leaf_hi)
        object.__setattr__(self, "cuts", cuts)
        object.__setattr__(self, "_sets", sets)
        object.__setattr__(self, "_cut_count", cut_count)
        object.__setattr__(self, "_read", np.flatnonzero(read))

    # ------------------------------------------------------------------ sizes
    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return len(self.tree_start)

    @property
    def n_leaves(self) -> int:
        """Number of leaves of all trees."""
        return len(self.value)

    @property
    def n_features(self) -> int:
        """Number of domain features."""
        return len(self.lower)

    # ------------------------------------------------------------------ reaching leaves
    def reached(self, lo: np.ndarray, hi: np.ndarray, *, within: np.ndarray | None = None,
                feature: int | None = None) -> np.ndarray:
        """Which leaves some point of each box of codes reaches.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_features)
            Inclusive code bounds, inside the domain's.
        within : numpy.ndarray of bool, shape (n_boxes, n_leaves), optional
            The leaves a box holding each box reaches, where that box differs from it on ``feature`` alone (a box
            split there): only ``feature`` is then read (the leaves reached are those of ``within`` that some
            code of the narrower range reaches). Overwritten.
        feature : int, optional
            With ``within``.

        Returns
        -------
        numpy.ndarray of bool, shape (n_boxes, n_leaves)
        """
        n = len(lo)
        features: list[int] | np.ndarray
        if within is not None:
            out, features = within, ([int(feature)] if feature is not None and feature in self._read else [])
        else:
            out, features = np.ones((n, self.n_leaves), dtype=bool), self._read
        for f in features:
            a, b = lo[:, f, None], hi[:, f, None]
            if f in self._sets:
                cum = self._sets[f]
                base = self.lower[f]
                out &= (cum[:, (b[:, 0] - base + 1)].T - cum[:, (a[:, 0] - base)].T) > 0
            else:
                out &= (self.leaf_lo[None, :, f] <= b) & (self.leaf_hi[None, :, f] >= a)
        return out

    def influence(self, lo: np.ndarray, hi: np.ndarray, features: np.ndarray,
                  reach: np.ndarray | None = None) -> np.ndarray:
        """How much splitting each box on each of ``features`` may tighten its bounds.

        The sum of ``|value|`` over the leaves the box reaches whose codes on that feature hold part of the box's
        but not all (the leaves a split there can separate).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_features)
        features : numpy.ndarray of int
        reach : numpy.ndarray of bool, shape (n_boxes, n_leaves), optional
            :meth:`reached` of the boxes, when already known.

        Returns
        -------
        numpy.ndarray of float64, shape (n_boxes, len(features))
        """
        if reach is None:
            reach = self.reached(lo, hi)
        out = np.zeros((len(lo), len(features)))
        weight = np.abs(self.value)
        if reach.size and np.count_nonzero(reach) < SPARSE * reach.size:  # few leaves reached: read only those
            row, leaf = np.nonzero(reach)
            for i, f in enumerate(features):
                if f not in self._read:
                    continue
                a, b = lo[row, f], hi[row, f]
                if f in self._sets:
                    cum = self._sets[f]
                    covers = cum[leaf, b - self.lower[f] + 1] - cum[leaf, a - self.lower[f]] == b - a + 1
                else:
                    covers = (self.leaf_lo[leaf, f] <= a) & (self.leaf_hi[leaf, f] >= b)
                out[:, i] = np.bincount(row, weights=np.where(covers, 0.0, weight[leaf]), minlength=len(lo))
            return out
        for i, f in enumerate(features):
            if f not in self._read:
                continue
            a, b = lo[:, f, None], hi[:, f, None]
            if f in self._sets:
                cum = self._sets[f]
                held = cum[:, (b[:, 0] - self.lower[f] + 1)].T - cum[:, (a[:, 0] - self.lower[f])].T
                covers = held == (b - a + 1)
            else:
                covers = (self.leaf_lo[None, :, f] <= a) & (self.leaf_hi[None, :, f] >= b)
            out[:, i] = (reach & ~covers) @ weight
        return out

    def holds(self, lo: np.ndarray, hi: np.ndarray, features: np.ndarray) -> np.ndarray:
        """Which leaves hold every code of each box on all of ``features`` (the other features aside).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_features)
        features : numpy.ndarray of int

        Returns
        -------
        numpy.ndarray of bool, shape (n_boxes, n_leaves)
        """
        out = np.ones((len(lo), self.n_leaves), dtype=bool)
        for f in features:
            if f not in self._read:
                continue
            a, b = lo[:, f, None], hi[:, f, None]
            if f in self._sets:
                cum = self._sets[f]
                held = cum[:, (b[:, 0] - self.lower[f] + 1)].T - cum[:, (a[:, 0] - self.lower[f])].T
                out &= held == (b - a + 1)
            else:
                out &= (self.leaf_lo[None, :, f] <= a) & (self.leaf_hi[None, :, f] >= b)
        return out

    def bounds(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds of the score over each box: per tree, the extreme leaves the box reaches.

        Exact on a cell (the two are equal). Computed in blocks of rows to bound memory.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, n_features)

        Returns
        -------
        lower, upper : numpy.ndarray of float64, shape (n_boxes,)
        """
        n = len(lo)
        lower, upper = np.empty(n), np.empty(n)
        step = max(1, BLOCK // max(1, self.n_leaves))
        for start in range(0, n, step):
            part = slice(start, start + step)
            lower[part], upper[part] = self.bounds_of(self.reached(lo[part], hi[part]))
        return lower, upper

    def bounds_of(self, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`bounds` from the leaves each box reaches.

        Parameters
        ----------
        reach : numpy.ndarray of bool, shape (n_boxes, n_leaves)

        Returns
        -------
        lower, upper : numpy.ndarray of float64, shape (n_boxes,)
        """
        low = np.where(reach, self.value[None], np.inf)
        lower = self.base + np.minimum.reduceat(low, self.tree_start, axis=1).sum(axis=1)
        np.copyto(low, np.where(reach, self.value[None], -np.inf))
        upper = self.base + np.maximum.reduceat(low, self.tree_start, axis=1).sum(axis=1)
        return lower, upper

    def score(self, X: np.ndarray) -> np.ndarray:
        """The score at points of codes (each reaches one leaf per tree).

        Parameters
        ----------
        X : numpy.ndarray of int, shape (n, n_features)

        Returns
        -------
        numpy.ndarray of float64, shape (n,)
        """
        X = np.asarray(X, dtype=np.int64)
        return self.bounds(X, X)[0]

    def leaves_per_tree(self, X: np.ndarray) -> np.ndarray:
        """How many leaves of each tree each point reaches (1 everywhere for a faithful reading).

        Parameters
        ----------
        X : numpy.ndarray of int, shape (n, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n, n_trees)
        """
        X = np.asarray(X, dtype=np.int64)
        return np.add.reduceat(self.reached(X, X).astype(np.int64), self.tree_start, axis=1)

    # ------------------------------------------------------------------ cells
    def cuts_inside(self, lo: np.ndarray, hi: np.ndarray, features: np.ndarray) -> np.ndarray:
        """Number of cuts strictly inside each box (in ``(lo, hi]``) on each of ``features``.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, len(features))
            The boxes' bounds on those features.
        features : numpy.ndarray of int
            Domain features.

        Returns
        -------
        numpy.ndarray of int64, shape (n_boxes, len(features))
        """
        out = np.zeros(lo.shape, dtype=np.int64)
        for i, f in enumerate(features):
            count = self._cut_count[f]
            out[:, i] = count[hi[:, i] - self.lower[f]] - count[lo[:, i] - self.lower[f]]
        return out

    def leaf_cut(self, lo: np.ndarray, hi: np.ndarray, feature: int, reach: np.ndarray) -> np.ndarray:
        """Where to split each box on ``feature``: the median edge, inside it, of the leaves it reaches.

        An edge of a leaf is where its codes start or stop on ``feature``; splitting there separates leaves the box
        reaches (for a single tree, the boxes then follow the tree's own partition). Boxes whose reached leaves
        have no edge inside fall back to :meth:`middle_cut`.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes,)
            The boxes' bounds on ``feature``; each box must hold a cut there.
        feature : int
        reach : numpy.ndarray of bool, shape (n_boxes, n_versions * n_leaves)
            The leaves each box reaches, in one or more versions (its protected combinations, which agree on
            ``feature``), side by side.

        Returns
        -------
        numpy.ndarray of int64, shape (n_boxes,)
            Codes ``c`` with ``lo < c <= hi``.
        """
        n = len(lo)
        k = reach.shape[1] // max(1, self.n_leaves)
        size = int(self.upper[feature] - self.lower[feature] + 2)
        count = np.zeros((n, size), dtype=np.int64)  # edges at each code, per box
        for edge in (self.leaf_lo[:, feature], self.leaf_hi[:, feature] + 1):
            edge = np.tile(edge, k)[None]
            inside = reach & (edge > lo[:, None]) & (edge <= hi[:, None])
            row, leaf = np.nonzero(inside)
            np.add.at(count, (row, edge[0, leaf] - self.lower[feature]), 1)
        total = count.sum(axis=1)
        below = np.cumsum(count, axis=1)
        pick = self.lower[feature] + (below >= ((total + 1) // 2)[:, None]).argmax(axis=1)
        out = np.where(total > 0, pick, -1).astype(np.int64)
        missing = out < 0
        if missing.any():
            out[missing] = self.middle_cut(lo[missing], hi[missing], feature)
        return out

    def middle_cut(self, lo: np.ndarray, hi: np.ndarray, feature: int) -> np.ndarray:
        """The median cut strictly inside ``(lo, hi]`` of each box on one feature (each must hold one).

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes,)
        feature : int

        Returns
        -------
        numpy.ndarray of int64, shape (n_boxes,)
            Codes ``c`` with ``lo < c <= hi``: the box splits into ``[lo, c - 1]`` and ``[c, hi]``.
        """
        count = self._cut_count[feature]
        below = count[lo - self.lower[feature]]
        inside = count[hi - self.lower[feature]] - below
        return self.cuts[feature][below + (inside - 1) // 2]

    def cells(self, lo: np.ndarray, hi: np.ndarray, features: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every cell of each box: the box cut at every cut inside it on each of ``features``.

        Parameters
        ----------
        lo, hi : numpy.ndarray of int, shape (n_boxes, len(features))
        features : numpy.ndarray of int
            Domain features (the boxes' columns); other features must be single codes or uncut.

        Returns
        -------
        lo, hi : numpy.ndarray of int64, shape (n_cells, len(features))
        box : numpy.ndarray of int64, shape (n_cells,)
            The box each cell comes from.
        """
        lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        box = np.arange(len(lo), dtype=np.int64)
        for i, f in enumerate(features):
            cuts = self.cuts[f]
            if not len(cuts):
                continue
            count = self._cut_count[f]
            below = count[lo[:, i] - self.lower[f]]
            inside = count[hi[:, i] - self.lower[f]] - below
            pieces = inside + 1
            rep = np.repeat(np.arange(len(lo)), pieces)
            j = np.arange(len(rep)) - np.repeat(np.cumsum(pieces) - pieces, pieces)  # piece within its box
            b = below[rep]
            last = len(cuts) - 1
            start = np.where(j == 0, lo[rep, i], cuts[np.clip(b + j - 1, 0, last)])
            end = np.where(j == inside[rep], hi[rep, i], cuts[np.clip(b + j, 0, last)] - 1)
            lo, hi, box = lo[rep], hi[rep], box[rep]
            lo[:, i] = start
            hi[:, i] = end
        return lo, hi, box
