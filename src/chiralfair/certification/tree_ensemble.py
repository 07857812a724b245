"""A tree ensemble read over the domain's integer codes: every leaf as a box of codes, bounded over boxes.

:mod:`.tree_reading` reads a scikit-learn, LightGBM or XGBoost ensemble (through the preprocessing in front of it)
into one :class:`TreeEnsemble`: for each leaf, the set of codes of each domain feature that reach it (an interval
for a split on a monotone column, any set for a one-hot column), and its value. The model's score is ``base`` plus
one leaf value per tree; its label is the class at index 1 of the model's own classes exactly when the score is
above ``threshold``.

Codes may be grouped into **segments**: runs of consecutive codes of one feature on which every split of every tree
decides alike (:mod:`.tree_reading` finds them from the model's own thresholds), so ``reach`` has one column per
segment, not per code. That is exact, not an approximation: two codes of one segment reach the same leaves. A numeric
column of whole numbers spanning a million codes is then a few hundred segments.

The ensemble is constant on every **cell**: a box of codes that no leaf's code set cuts (for every feature, every
leaf either holds all of the box's codes or none). Over a wider box, each tree's value lies between the smallest
and the largest value of the leaves the box reaches (:meth:`TreeEnsemble.bounds`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import ConfigError

# Rows x leaves handled at once when bounding (bounds memory to ~64 MB of booleans).
BLOCK = 1 << 26
# Boxes x segments counted at once when choosing where to split a box (bounds :meth:`TreeEnsemble.leaf_cut`'s memory).
LEAF_CUT_CELLS = 1 << 22
# Below this share of (box, leaf) pairs reached, :meth:`TreeEnsemble.influence` reads the reached pairs alone.
SPARSE = 0.125


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """Leaves as boxes of codes, with their values; the score is ``base`` plus one leaf per tree.

    Parameters
    ----------
    lower, upper : numpy.ndarray of int64, shape (n_features,)
        The domain's code bounds.
    reach : numpy.ndarray of bool, shape (n_leaves, n_segments)
        ``reach[leaf, offset[f] + s]``: whether the codes of segment ``s`` of feature ``f`` can reach ``leaf`` (the
        other features aside); without ``starts``, segment ``s`` is code ``lower[f] + s``.
    value : numpy.ndarray of float64, shape (n_leaves,)
    tree_start : numpy.ndarray of int64, shape (n_trees,)
        The first leaf of each tree (leaves are stored tree by tree).
    base, threshold : float
        The score is ``base + sum of leaves``; index 1 of the model's classes above ``threshold``.
    name : str
        The model, for messages.
    kind : str
        What was read (e.g. ``"HistGradientBoostingClassifier, 100 trees"``).
    starts : tuple of numpy.ndarray, optional
        For each feature, the first code of each of its segments, increasing from ``lower[f]`` (None, or a
        feature's every code: one segment a code).

    Attributes
    ----------
    offset : numpy.ndarray of int64, shape (n_features + 1,)
        Where each feature's segments start in ``reach``'s columns.
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
    starts: tuple | None = None
    offset: np.ndarray = field(init=False)
    leaf_lo: np.ndarray = field(init=False)
    leaf_hi: np.ndarray = field(init=False)
    cuts: list = field(init=False)
    _sets: dict = field(init=False, repr=False)  # feature -> cumulative counts (n_leaves, segments + 1), non-intervals
    _starts: list = field(init=False, repr=False)  # feature -> segment starts (None: one segment a code)
    _read: np.ndarray = field(init=False, repr=False)  # features some leaf does not hold whole

    def __post_init__(self):
        size = (self.upper - self.lower + 1).astype(np.int64)
        d = len(size)
        if self.starts is not None and len(self.starts) != d:
            raise ConfigError(f"starts has {len(self.starts)} features; the domain has {d}")
        starts: list[np.ndarray | None] = [None] * d
        n_segments = size.copy()
        for f in range(d):
            if self.starts is not None and len(self.starts[f]) != size[f]:
                starts[f] = np.asarray(self.starts[f], dtype=np.int64)
                n_segments[f] = len(self.starts[f])
        offset = np.concatenate([[0], np.cumsum(n_segments)]).astype(np.int64)
        if self.reach.shape[1] != offset[-1]:
            raise ConfigError(f"reach has {self.reach.shape[1]} columns; the features have {int(offset[-1])} segments")
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "_starts", starts)
        n_leaves = len(self.value)
        leaf_lo = np.empty((n_leaves, d), dtype=np.int64)
        leaf_hi = np.empty((n_leaves, d), dtype=np.int64)
        sets, cuts, read = {}, [], np.zeros(d, dtype=bool)
        for f in range(d):
            block = self.reach[:, offset[f]:offset[f + 1]]
            m = int(n_segments[f])
            any_in = block.any(axis=1)
            first = np.where(any_in, block.argmax(axis=1), m)
            last = np.where(any_in, m - 1 - block[:, ::-1].argmax(axis=1), -1)
            first_code = self._segment_start(f, np.minimum(first, m - 1))
            last_code = self._segment_end(f, np.maximum(last, 0))
            leaf_lo[:, f] = np.where(any_in, first_code, self.upper[f] + 1)
            leaf_hi[:, f] = np.where(any_in, last_code, self.lower[f] - 1)
            count = block.sum(axis=1)
            if (count != np.maximum(last - first + 1, 0)).any():  # some leaf's set is not an interval
                sets[f] = np.concatenate([np.zeros((n_leaves, 1), np.int32), np.cumsum(block, axis=1, dtype=np.int32)],
                                         axis=1)
            read[f] = bool((count < m).any())
            changes = (block[:, 1:] != block[:, :-1]).any(axis=0) if m > 1 else np.zeros(0, bool)
            cuts.append(self._segment_start(f, 1 + np.flatnonzero(changes)))
        object.__setattr__(self, "leaf_lo", leaf_lo)
        object.__setattr__(self, "leaf_hi", leaf_hi)
        object.__setattr__(self, "cuts", cuts)
        object.__setattr__(self, "_sets", sets)
        object.__setattr__(self, "_read", np.flatnonzero(read))

    # ------------------------------------------------------------------ segments
    def segment(self, feature: int, codes: np.ndarray) -> np.ndarray:
        """The segment of each code of one feature (its index among the feature's segments).

        Parameters
        ----------
        feature : int
        codes : numpy.ndarray of int
            Inside the domain's bounds.

        Returns
        -------
        numpy.ndarray of int64, same shape
        """
        starts = self._starts[feature]
        codes = np.asarray(codes, dtype=np.int64)
        if starts is None:
            return codes - self.lower[feature]
        return np.searchsorted(starts, codes, side="right").astype(np.int64) - 1

    def _segment_start(self, feature: int, index: np.ndarray) -> np.ndarray:
        starts = self._starts[feature]
        index = np.asarray(index, dtype=np.int64)
        return self.lower[feature] + index if starts is None else starts[index]

    def _segment_end(self, feature: int, index: np.ndarray) -> np.ndarray:
        starts = self._starts[feature]
        index = np.asarray(index, dtype=np.int64)
        if starts is None:
            return self.lower[feature] + index
        ends = np.append(starts[1:] - 1, self.upper[feature])
        return ends[index]

    def segment_bounds(self, feature: int) -> tuple[np.ndarray, np.ndarray]:
        """The first and last code of each segment of one feature.

        Parameters
        ----------
        feature : int

        Returns
        -------
        first, last : numpy.ndarray of int64, shape (n_segments,)
        """
        m = int(self.offset[feature + 1] - self.offset[feature])
        index = np.arange(m, dtype=np.int64)
        return self._segment_start(feature, index), self._segment_end(feature, index)

    def _cuts_upto(self, feature: int, codes: np.ndarray) -> np.ndarray:
        """Number of cuts at or below each code of one feature."""
        return np.searchsorted(self.cuts[feature], codes, side="right").astype(np.int64)

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
    def has_sets(self) -> bool:
        """Whether some leaf's codes on some feature are not an interval (a one-hot or categorical split)."""
        return bool(self._sets)

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
                out &= (cum[:, self.segment(f, b[:, 0]) + 1].T - cum[:, self.segment(f, a[:, 0])].T) > 0
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
                    sa, sb = self.segment(f, a), self.segment(f, b)
                    covers = cum[leaf, sb + 1] - cum[leaf, sa] == sb - sa + 1
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
                sa, sb = self.segment(f, a[:, 0]), self.segment(f, b[:, 0])
                held = cum[:, sb + 1].T - cum[:, sa].T
                covers = held == (sb - sa + 1)[:, None]
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
                sa, sb = self.segment(f, a[:, 0]), self.segment(f, b[:, 0])
                held = cum[:, sb + 1].T - cum[:, sa].T
                out &= held == (sb - sa + 1)[:, None]
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
            out[:, i] = self._cuts_upto(f, hi[:, i]) - self._cuts_upto(f, lo[:, i])
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
        m = int(self.offset[feature + 1] - self.offset[feature]) + 1  # an edge is a segment's start (or the end)
        out = np.full(n, -1, dtype=np.int64)
        edges = [np.tile(edge, k) for edge in (self.leaf_lo[:, feature], self.leaf_hi[:, feature] + 1)]
        where = [np.minimum(self.segment(feature, np.clip(edge, self.lower[feature], self.upper[feature])) +
                            (edge > self.upper[feature]), m - 1) for edge in edges]
        step = max(1, LEAF_CUT_CELLS // m)
        for start in range(0, n, step):  # the edges counted per box and segment, a block of boxes at a time
            part = slice(start, min(n, start + step))
            count = np.zeros((part.stop - part.start, m), dtype=np.int64)
            for edge, at in zip(edges, where, strict=True):
                inside = reach[part] & (edge[None] > lo[part, None]) & (edge[None] <= hi[part, None])
                row, leaf = np.nonzero(inside)
                np.add.at(count, (row, at[leaf]), 1)
            total = count.sum(axis=1)
            below = np.cumsum(count, axis=1)
            pick = (below >= ((total + 1) // 2)[:, None]).argmax(axis=1)
            out[part] = np.where(total > 0, self._segment_start(feature, np.minimum(pick, m - 2)) if m > 1 else -1,
                                 -1)
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
        below = self._cuts_upto(feature, lo)
        inside = self._cuts_upto(feature, hi) - below
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
            below = self._cuts_upto(f, lo[:, i])
            inside = self._cuts_upto(f, hi[:, i]) - below
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
