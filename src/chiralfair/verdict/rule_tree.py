"""Who is harmed, in rules: a depth-3 tree over the non-protected codes, fitted level by level from histograms.

The verdict's rules are the leaves of a classification tree (affected or not, Gini impurity, best split) richer in
affected individuals than the whole. The tree is fitted here from additive counts, so that a verdict over 50 million
streamed rows fits the same tree as the in-memory verdict on the same rows, in memory bounded by the domain, not by
the rows:

- every counted individual's non-protected codes (each column offset to start at 0, packed in the smallest unsigned
  type that holds the largest code) and affected flag are kept in a :class:`RuleRows`: in memory for an in-memory
  verdict, appended to an anonymous temporary file for a streamed one (14 bytes a person on Adult);
- level by level, one pass over those rows adds up, for every node of the level, every feature and every code, the
  (individuals, affected) counts: a histogram of ``nodes x codes x 2`` per feature. Each node's best split (the one
  with the lowest weighted Gini impurity of its two children, over every feature and every cut between two codes
  the node holds) is read from its histograms' cumulative sums. A depth-3 tree takes three passes.

Counts are integers and a histogram does not depend on the order of the rows nor on how they were split into
batches, partitions or workers, so the in-memory and the streamed verdict get the same tree, leaf for leaf. The
split rule is scikit-learn's ``DecisionTreeClassifier`` (Gini, best splitter, every row weighted one); where two
splits are exactly as good, the first feature (in the domain's order) and then the lowest cut are taken, where
scikit-learn draws one at random.

Why not scikit-learn's tree on a table of the distinct (codes, affected) rows with their counts, which is what the
verdict did before: on data with continuous columns nearly every row is distinct (197,270 distinct rows in 200,000
rows of jittered Adult), so that table, and the tree fitted on it, grew with the rows (1,602 MiB at 5 million rows,
``benchmarks/results/scale.md``). Coarser bins for the rules would bound it by the product of the bins, which for
a dozen columns is no bound at all, and would change the rules.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..storage import scratch_file

# Rows of a RuleRows read back at a time (bounded memory while fitting).
CHUNK_ROWS = 1 << 18


def rule_shape(domain) -> tuple[np.ndarray, np.ndarray]:
    """Each non-protected column's lowest code and number of codes, in the domain's order.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    lo, sizes : numpy.ndarray of int64
    """
    cols = [int(c) for c in domain.non_protected]
    return (np.array([domain.features[c].lo for c in cols], dtype=np.int64),
            np.array([domain.features[c].size for c in cols], dtype=np.int64))


class RuleRows:
    """Every counted individual's non-protected codes (from 0) and affected flag, packed, for :func:`fit_rule_tree`.

    In memory by default; with ``spill=True`` appended to an anonymous temporary file (removed by :meth:`close`),
    so that memory does not grow with the rows.

    Parameters
    ----------
    sizes : numpy.ndarray of int64
        Number of codes of each non-protected column (:func:`rule_shape`).
    spill : bool, default False
    """

    def __init__(self, sizes, spill: bool = False):
        self.sizes = np.asarray(sizes, dtype=np.int64)
        top = int(self.sizes.max()) if len(self.sizes) else 1
        self.dtype = np.dtype(np.uint8 if top <= 1 << 8 else np.uint16 if top <= 1 << 16 else np.uint32)
        self.width = len(self.sizes) + 1
        self.n = 0
        self.spill = spill
        self._parts: list[np.ndarray] = []
        self._file = scratch_file() if spill else None

    def add(self, Z: np.ndarray, affected: np.ndarray) -> None:
        """Keep the rows ``Z`` (codes offset to 0, shape (n, n_columns)) and their ``affected`` flags.

        Parameters
        ----------
        Z : numpy.ndarray of int, shape (n, n_columns)
        affected : numpy.ndarray of bool, shape (n,)
        """
        packed = np.empty((len(affected), self.width), dtype=self.dtype)
        packed[:, :-1] = Z
        packed[:, -1] = affected
        self._append(packed)

    def _append(self, packed: np.ndarray) -> None:
        self.n += len(packed)
        if self._file is None:
            self._parts.append(packed)
        else:
            self._file.seek(0, os.SEEK_END)  # after a read (chunks), writing goes on at the end
            self._file.write(np.ascontiguousarray(packed).tobytes())

    def extend(self, other: RuleRows) -> None:
        """Keep ``other``'s rows too (after these), then close it.

        Parameters
        ----------
        other : RuleRows
        """
        for chunk in other.chunks():
            self._append(chunk.astype(self.dtype, copy=False))
        other.close()

    def chunks(self) -> Iterator[np.ndarray]:
        """The kept rows, in chunks of at most :data:`CHUNK_ROWS` (the last column is the affected flag).

        Yields
        ------
        numpy.ndarray, shape (m, n_columns + 1)
        """
        if self._file is None:
            for part in self._parts:
                for s in range(0, len(part), CHUNK_ROWS):
                    yield part[s:s + CHUNK_ROWS]
            return
        self._file.flush()
        self._file.seek(0)
        size = CHUNK_ROWS * self.width * self.dtype.itemsize
        while True:
            data = self._file.read(size)
            if not data:
                break
            yield np.frombuffer(data, dtype=self.dtype).reshape(-1, self.width)

    def close(self) -> None:
        """Remove the temporary file (if any) and forget the rows."""
        if self._file is not None:
            self._file.close()  # an anonymous scratch file: closing removes it
            self._file = None
        self._parts = []

    def __getstate__(self):  # sent back from a Dask worker: the rows travel, not the file handle
        if self._file is not None:
            raise TypeError("a spilled RuleRows stays on its process; send an in-memory one")
        return self.__dict__

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to clean
            pass


@dataclass(frozen=True)
class Leaf:
    """A leaf of the rule tree: the code range [lo, hi] (from 0) its path allows per column, and its counts.

    Attributes
    ----------
    bounds : tuple of (int, int)
    n, n_affected : int
    """

    bounds: tuple[tuple[int, int], ...]
    n: int
    n_affected: int


def fit_rule_tree(chunks: Callable[[], Iterator[np.ndarray]], sizes, depth: int) -> list[Leaf]:
    """The leaves of a depth-``depth`` Gini tree over packed (codes, affected) rows, one pass a level.

    Parameters
    ----------
    chunks : callable
        Returns a fresh iterator over the rows' chunks (:meth:`RuleRows.chunks`), read once per level.
    sizes : numpy.ndarray of int64
        Number of codes of each column.
    depth : int

    Returns
    -------
    list of Leaf
        In the order of a depth-first walk, left before right; empty when there are no rows or no columns.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if not len(sizes):
        return []
    n_nodes = (1 << (depth + 1)) - 1  # heap numbering: node i's children are 2i + 1 and 2i + 2
    feature = np.full(n_nodes, -1, dtype=np.int64)
    cut = np.zeros(n_nodes, dtype=np.int64)
    counts = np.zeros((n_nodes, 2), dtype=np.int64)  # (individuals, affected)
    level = [0]
    for d in range(depth):
        hist = _level_histograms(chunks, sizes, feature, cut, level, d)
        if d == 0:
            by_flag = hist[0][0].sum(axis=0)  # (not affected, affected) over the root's rows
            counts[0] = (by_flag.sum(), by_flag[1])
        following = []
        for i, node in enumerate(level):
            n, a = int(counts[node, 0]), int(counts[node, 1])
            if n == 0 or a in (0, n):
                continue
            best = _best_split([h[i] for h in hist], n, a)
            if best is None:
                continue
            j, t, left = best
            feature[node], cut[node] = j, t
            counts[2 * node + 1] = left
            counts[2 * node + 2] = (n - left[0], a - left[1])
            following += [2 * node + 1, 2 * node + 2]
        level = following
        if not level:
            break
    if counts[0, 0] == 0:
        return []
    leaves: list[Leaf] = []
    stack = [(0, [(0, int(s) - 1) for s in sizes])]
    while stack:
        node, bounds = stack.pop()
        j = int(feature[node])
        if j < 0:
            leaves.append(Leaf(tuple(bounds), int(counts[node, 0]), int(counts[node, 1])))
            continue
        below, above = list(bounds), list(bounds)
        below[j] = (bounds[j][0], int(cut[node]))
        above[j] = (int(cut[node]) + 1, bounds[j][1])
        stack.append((2 * node + 2, above))
        stack.append((2 * node + 1, below))
    return leaves


def _level_histograms(chunks, sizes: np.ndarray, feature: np.ndarray, cut: np.ndarray, level: list[int],
                      d: int) -> list[np.ndarray]:
    """Per column, the (nodes of ``level``, codes, affected) counts of the rows that reach those nodes."""
    position = np.full(len(feature), -1, dtype=np.int64)
    position[level] = np.arange(len(level))
    hist = [np.zeros(len(level) * int(s) * 2, dtype=np.int64) for s in sizes]
    for chunk in chunks():
        Z = chunk[:, :-1]
        affected = chunk[:, -1].astype(np.int64)
        node = np.zeros(len(chunk), dtype=np.int64)
        for _ in range(d):  # route each row down the splits made so far; rows at a leaf stop there
            j = feature[node]
            inner = j >= 0
            value = np.take_along_axis(Z, np.maximum(j, 0)[:, None], axis=1)[:, 0].astype(np.int64)
            node = np.where(inner, 2 * node + 1 + (value > cut[node]), node)
        where = position[node]  # -1 for a row that stopped at a leaf above this level
        keep = where >= 0
        if not keep.all():
            Z, affected, where = Z[keep], affected[keep], where[keep]
        for c, s in enumerate(sizes):
            hist[c] += np.bincount((where * int(s) + Z[:, c]) * 2 + affected, minlength=len(hist[c]))
    return [h.reshape(len(level), int(s), 2) for h, s in zip(hist, sizes, strict=True)]


def _best_split(hist: list[np.ndarray], n: int, a: int) -> tuple[int, int, tuple[int, int]] | None:
    """The split of a node (its per-column (codes, 2) counts) with the lowest weighted Gini impurity, or None.

    Returns the column, the cut (codes <= cut go left, the highest code the left child holds) and the left child's
    (individuals, affected); None when no column takes two codes in the node.
    """
    best: tuple[float, int, int, tuple[int, int]] | None = None
    for j, h in enumerate(hist):
        total = h.sum(axis=1)
        present = np.flatnonzero(total)
        if len(present) < 2:
            continue
        n_left = np.cumsum(total)[present[:-1]]
        a_left = np.cumsum(h[:, 1])[present[:-1]]
        n_right, a_right = n - n_left, a - a_left
        # n x Gini of a child = 2 a (m - a) / m: the weighted impurity up to a constant factor
        score = a_left * (n_left - a_left) / n_left + a_right * (n_right - a_right) / n_right
        k = int(np.argmin(score))
        if best is None or score[k] < best[0]:
            best = (float(score[k]), j, int(present[k]), (int(n_left[k]), int(a_left[k])))
    if best is None:
        return None
    return best[1], best[2], best[3]


def fitted_leaves(rows: RuleRows | None, depth: int) -> list[Leaf]:
    """:func:`fit_rule_tree` over ``rows`` (none when there are no rows).

    Parameters
    ----------
    rows : RuleRows or None
    depth : int

    Returns
    -------
    list of Leaf
    """
    if rows is None or rows.n == 0:
        return []
    return fit_rule_tree(rows.chunks, rows.sizes, depth)
