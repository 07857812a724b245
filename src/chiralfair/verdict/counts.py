"""The counts a verdict is decided from, batch by batch: they add up exactly, so every split gives one verdict.

:func:`~chiralfair.verdict.estimate` checks its individuals in batches; a streamed verdict
(:mod:`chiralfair.verdict.streaming`) over rows that do not fit in memory, in batches too, on one process or on the
workers of a Dask cluster. Each batch is reduced here to what the :class:`~chiralfair.verdict.Verdict` needs, and
:meth:`VerdictCounts.merge` adds two such reductions:

- the individuals counted, affected and harmed, left out (no counterpart could exist) and unplaced (by attribute);
- per protected group (each value, each combination): individuals, affected, harmed;
- with a support, the plausibility totals (affected through a possible and through a plausible counterpart,
  counterparts, implausible ones, individuals with an implausible one, with no plausible one);
- the probability gap: its histogram (affected or not), and its values, kept for the exact quantiles: in memory,
  or, for a stream, appended to a temporary file read back in bounded memory (:func:`order_statistics`);
- for the rule tree: every individual's non-protected codes and affected flag, packed (14 bytes a person on
  Adult), in memory or, for a stream, appended to a temporary file; the tree is fitted from them level by level,
  from per-node, per-column, per-code (individuals, affected) histograms, which add up
  (:mod:`chiralfair.verdict.rule_tree`).

Every figure of the verdict is decided once from these counts (:mod:`chiralfair.verdict.estimation`), so the
in-memory and the streamed verdict on the same rows are equal, count for count.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from ..datasets.recode import NAMED_VALUES
from ..storage import scratch_file
from .rule_tree import RuleRows

GAP_EDGES = np.linspace(0.0, 1.0, 21)
# Rows of a gap file read back at a time by order_statistics.
CHUNK = 1 << 20


@dataclass
class VerdictCounts:
    """Additive counts of checked individuals (module docstring); ``merge`` adds another batch's.

    Attributes
    ----------
    n, n_affected, n_harmed, n_left_out, n_unplaced : int
    unplaced : dict of str to int
    group_n, group_affected, group_harmed : numpy.ndarray of int64, shape (n_groups,)
        In the order of :func:`~chiralfair.verdict.estimation._group_masks`.
    plausibility : dict of str to int or None
    gap_counts, gap_counts_affected : numpy.ndarray of int64 or None
        Histogram of the gap over :data:`GAP_EDGES`.
    gaps : GapValues or None
    rules : RuleRows or None
        Every individual's non-protected codes and affected flag, for the rule tree.
    confusion : numpy.ndarray of int64, shape (4,), or None
        The model's (true negatives, false positives, false negatives, true positives) over the rows read whose
        label is known and whose own label the model gave (every row sent to it): the model's F1 over every row.
    beyond : dict of str to int
        Rows read after the domain was made holding a number beyond a column's range, by column (used as given).
    new_values : dict of str to dict
        Rows read after the domain was made holding a category the domain never held, by column (used as given):
        ``{"rows": int, "values": list of str}``, the values the first few in sorted order
        (:func:`~chiralfair.datasets.recode.recode`).
    """

    n: int = 0
    n_affected: int = 0
    n_harmed: int = 0
    n_left_out: int = 0
    n_unplaced: int = 0
    unplaced: dict[str, int] = field(default_factory=dict)
    group_n: np.ndarray | None = None
    group_affected: np.ndarray | None = None
    group_harmed: np.ndarray | None = None
    plausibility: dict[str, int] | None = None
    gap_counts: np.ndarray | None = None
    gap_counts_affected: np.ndarray | None = None
    gaps: GapValues | None = None
    rules: RuleRows | None = None
    confusion: np.ndarray | None = None
    beyond: dict[str, int] = field(default_factory=dict)
    new_values: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def of_batch(cls, masks, affected, harmed, gap, Z, *, plausibility=None, n_left_out: int = 0,
                 n_unplaced: int = 0, unplaced=None, gaps: GapValues | None = None,
                 rule_shape: tuple[np.ndarray, np.ndarray] | None = None,
                 rules: RuleRows | None = None, in_rules: np.ndarray | None = None) -> VerdictCounts:
        """The counts of one batch of countable individuals (left-out and unplaced ones only counted).

        Parameters
        ----------
        masks : list of numpy.ndarray of bool, shape (n,)
            Each group's members.
        affected, harmed : numpy.ndarray of bool, shape (n,)
        gap : numpy.ndarray of float, shape (n,), or None
        Z : numpy.ndarray of int64, shape (n, n_non_protected)
            The non-protected codes (for the rule tree).
        plausibility : dict of str to int, optional
        n_left_out, n_unplaced : int
        unplaced : dict of str to int, optional
        gaps : GapValues, optional
            Where to keep the gap values (default: in memory).
        rule_shape : (numpy.ndarray, numpy.ndarray), optional
            Each non-protected column's lowest code and number of codes
            (:func:`~chiralfair.verdict.rule_tree.rule_shape`); without it, no rows are kept for the rule tree.
        rules : RuleRows, optional
            Where to keep them (default: in memory, with the counts).
        in_rules : numpy.ndarray of bool, shape (n,), optional
            The individuals whose codes the rule tree reads (default: all); the others hold a value the domain never
            held, which no rule can read.

        Returns
        -------
        VerdictCounts
        """
        affected = np.asarray(affected, dtype=bool)
        harmed = np.asarray(harmed, dtype=bool)
        out = cls(n=len(affected), n_affected=int(affected.sum()), n_harmed=int(harmed.sum()), n_left_out=n_left_out,
                  n_unplaced=n_unplaced, unplaced=dict(unplaced or {}), plausibility=plausibility)
        out.group_n = np.array([int(m.sum()) for m in masks], dtype=np.int64)
        out.group_affected = np.array([int(affected[m].sum()) for m in masks], dtype=np.int64)
        out.group_harmed = np.array([int(harmed[m].sum()) for m in masks], dtype=np.int64)
        if gap is not None:
            out.gap_counts = np.histogram(gap, GAP_EDGES)[0].astype(np.int64)
            out.gap_counts_affected = np.histogram(gap[affected], GAP_EDGES)[0].astype(np.int64)
            out.gaps = gaps if gaps is not None else GapValues()
            out.gaps.add(gap, affected)
        if rule_shape is not None:
            lo, sizes = rule_shape
            out.rules = rules if rules is not None else RuleRows(sizes)
            if in_rules is None:
                out.rules.add(np.asarray(Z, dtype=np.int64) - lo, affected)
            else:
                out.rules.add(np.asarray(Z, dtype=np.int64)[in_rules] - lo, affected[in_rules])
        return out

    def merge(self, other: VerdictCounts) -> VerdictCounts:
        """Add ``other``'s counts to these (in place; the gap values must be kept in one :class:`GapValues`).

        Parameters
        ----------
        other : VerdictCounts

        Returns
        -------
        VerdictCounts
            ``self``.
        """
        self.n += other.n
        self.n_affected += other.n_affected
        self.n_harmed += other.n_harmed
        self.n_left_out += other.n_left_out
        self.n_unplaced += other.n_unplaced
        for k, v in other.unplaced.items():
            self.unplaced[k] = self.unplaced.get(k, 0) + v
        for k, v in other.beyond.items():
            self.beyond[k] = self.beyond.get(k, 0) + v
        for column, seen in other.new_values.items():
            mine_v = self.new_values.get(column, {"rows": 0, "values": []})
            self.new_values[column] = {"rows": mine_v["rows"] + seen["rows"],
                                       "values": sorted(set(mine_v["values"]) | set(seen["values"]))[:NAMED_VALUES]}
        for name in ("group_n", "group_affected", "group_harmed", "gap_counts", "gap_counts_affected", "confusion"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if theirs is not None:
                setattr(self, name, theirs.copy() if mine is None else mine + theirs)
        if other.plausibility is not None:
            mine_p = self.plausibility or {}
            self.plausibility = {k: mine_p.get(k, 0) + v for k, v in other.plausibility.items()}
        if other.gaps is not None and other.gaps is not self.gaps:
            if self.gaps is None:
                self.gaps = other.gaps
            else:
                self.gaps.extend(other.gaps)
        if other.rules is not None and other.rules is not self.rules:
            if self.rules is None:
                self.rules = other.rules
            else:
                self.rules.extend(other.rules)
        return self


def confusion_counts(y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """(true negatives, false positives, false negatives, true positives) of labels in {0, 1}.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of int, shape (n,)

    Returns
    -------
    numpy.ndarray of int64, shape (4,)
    """
    return np.bincount(2 * np.asarray(y_true, dtype=np.int64) + np.asarray(y_pred, dtype=np.int64),
                       minlength=4).astype(np.int64)


def quality_of(confusion: np.ndarray) -> dict:
    """The model's F1, accuracy and rows from its confusion counts.

    F1 of the positive class, 0 when undefined (scikit-learn's ``zero_division=0``); also the one class the labels
    hold and the one label the model gave (None when both occur).

    Parameters
    ----------
    confusion : numpy.ndarray of int64, shape (4,)
        As :func:`confusion_counts` gives.

    Returns
    -------
    dict
    """
    tn, fp, fn, tp = (int(v) for v in confusion)
    n = tn + fp + fn + tp
    positives, predicted = fn + tp, fp + tp
    return {"f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0, "accuracy": (tp + tn) / n if n else 0.0,
            "n_test": n, "one_class": None if 0 < positives < n else int(positives == n),
            "one_label": None if 0 < predicted < n else int(predicted == n)}


class GapValues:
    """The probability gaps of the individuals counted (all, and the affected ones), for exact quantiles.

    In memory by default; with ``spill=True`` appended to temporary files, so that memory does not grow with the
    rows (:func:`order_statistics` reads them back in chunks). The files are removed by :meth:`close`.
    """

    def __init__(self, spill: bool = False):
        self.spill = spill
        self._parts: list[np.ndarray] = []
        self._affected_parts: list[np.ndarray] = []
        self._files = None
        self.n = self.n_affected = 0
        if spill:
            self._files = [scratch_file() for _ in range(2)]

    def add(self, gap: np.ndarray, affected: np.ndarray) -> None:
        """Keep ``gap`` and the gaps of the ``affected`` ones.

        Parameters
        ----------
        gap : numpy.ndarray of float, shape (n,)
        affected : numpy.ndarray of bool, shape (n,)
        """
        gap = np.ascontiguousarray(gap, dtype=np.float64)
        chosen = np.ascontiguousarray(gap[affected])
        self.n += len(gap)
        self.n_affected += len(chosen)
        if self._files is None:
            self._parts.append(gap)
            self._affected_parts.append(chosen)
        else:
            self._write(0, gap)
            self._write(1, chosen)

    def _write(self, which: int, values: np.ndarray) -> None:
        handle = cast(list, self._files)[which]
        handle.seek(0, os.SEEK_END)  # after a read (chunks), writing goes on at the end
        handle.write(np.ascontiguousarray(values).tobytes())

    def extend(self, other: GapValues) -> None:
        """Keep ``other``'s gaps too (after these), then close it.

        Parameters
        ----------
        other : GapValues
        """
        for which in (False, True):
            for chunk in other.chunks(affected=which):
                if which:
                    self._append_affected(chunk)
                else:
                    self._append_all(chunk)
        other.close()

    def _append_all(self, chunk: np.ndarray) -> None:
        self.n += len(chunk)
        if self._files is None:
            self._parts.append(chunk)
        else:
            self._write(0, chunk)

    def _append_affected(self, chunk: np.ndarray) -> None:
        self.n_affected += len(chunk)
        if self._files is None:
            self._affected_parts.append(chunk)
        else:
            self._write(1, chunk)

    def chunks(self, *, affected: bool):
        """The kept gaps (of the affected only, if ``affected``), in chunks of at most :data:`CHUNK`.

        Parameters
        ----------
        affected : bool

        Yields
        ------
        numpy.ndarray of float64
        """
        if self._files is None:
            yield from (self._affected_parts if affected else self._parts)
            return
        handle = self._files[1 if affected else 0]
        handle.flush()
        handle.seek(0)
        while True:
            data = handle.read(CHUNK * 8)
            if not data:
                break
            yield np.frombuffer(data, dtype=np.float64)

    def quantiles(self, levels, *, affected: bool) -> list[float]:
        """The gaps' quantiles at ``levels``, exactly as :func:`numpy.quantile` (linear) gives them.

        Parameters
        ----------
        levels : sequence of float
        affected : bool
            Of the affected individuals' gaps only.

        Returns
        -------
        list of float
        """
        if self._files is None:
            parts = self._affected_parts if affected else self._parts
            return np.quantile(np.concatenate(parts), levels).tolist()
        n = self.n_affected if affected else self.n
        return exact_quantiles(lambda: self.chunks(affected=affected), n, levels)

    def close(self) -> None:
        """Remove the temporary files (if any)."""
        for handle in self._files or ():
            handle.close()  # an anonymous scratch file: closing removes it
        self._files = None if not self.spill else []

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to clean
            pass


def exact_quantiles(chunks, n: int, levels) -> list[float]:
    """:func:`numpy.quantile` (method ``"linear"``) of ``n`` non-negative values read in chunks, in bounded memory.

    Parameters
    ----------
    chunks : callable
        Returns a fresh iterator over the values' chunks (read once per pass).
    n : int
        How many values.
    levels : sequence of float

    Returns
    -------
    list of float
    """
    q = np.asarray(levels, dtype=np.float64)
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = n - 1
    following[above] = n - 1
    wanted = sorted({int(i) for i in np.concatenate([previous, following])})
    values = dict(zip(wanted, order_statistics(chunks, wanted), strict=True))
    a = np.array([values[int(i)] for i in previous])
    b = np.array([values[int(i)] for i in following])
    gamma = virtual - np.floor(virtual)
    diff = b - a
    out = a + diff * gamma
    np.subtract(b, diff * (1 - gamma), out=out, where=gamma >= 0.5)
    return out.tolist()


def order_statistics(chunks, ranks: list[int]) -> list[float]:
    """The values of rank ``ranks`` (0-based, ascending) among non-negative floats read in chunks.

    A radix selection over the floats' bits (for non-negative IEEE doubles, the order of their bit patterns is the
    order of their values): four passes of 16 bits, each a histogram of the values whose higher bits are the ones
    chosen so far, so memory holds a chunk and a 65,536-bin histogram per rank.

    Parameters
    ----------
    chunks : callable
        Returns a fresh iterator over the values' chunks (numpy.ndarray of float64, every value >= 0).
    ranks : list of int

    Returns
    -------
    list of float
    """
    prefix = [0] * len(ranks)
    left = list(ranks)
    for p in range(4):
        shift = np.uint64(48 - 16 * p)
        hist = np.zeros((len(ranks), 1 << 16), dtype=np.int64)
        for chunk in chunks():
            bits = np.asarray(chunk, dtype=np.float64).view(np.uint64)
            for t in range(len(ranks)):
                chosen = bits if p == 0 else bits[(bits >> (shift + np.uint64(16))) == np.uint64(prefix[t])]
                hist[t] += np.bincount(((chosen >> shift) & np.uint64(0xFFFF)).astype(np.int64), minlength=1 << 16)
        for t in range(len(ranks)):
            cumulative = np.cumsum(hist[t])
            digit = int(np.searchsorted(cumulative, left[t], side="right"))
            left[t] -= int(cumulative[digit - 1]) if digit else 0
            prefix[t] = (prefix[t] << 16) | digit
    return [float(np.array([v], dtype=np.uint64).view(np.float64)[0]) for v in prefix]
