"""Counting IDIs by the one rule of design §2, shared by every generator.

Every generator sends its candidates through :meth:`IDIRecorder.check`, so that ``n_idis``, ``n_global``,
``n_local``, ``n_tested`` and ``n_queries`` mean the same thing for all of them. The recorder is also where the
domain's rules (design §12) hold for every generator alike: candidates are moved onto the constraints
(:meth:`Domain.repair <chiralfair.domain.Domain.repair>`) before they are checked, the check's counterparts carry
the couplings, and each recorded pair is scored for plausibility (``n_plausible_idis``).

Keys (design §2) are kept as int64 in a few sorted numpy arrays (:class:`SortedKeySet`): 8 bytes per key,
against about 70 bytes per key in a Python set of ints. IDI pairs go to a
:class:`~chiralfair.results.run_folder.PairSink` when one is given (streamed to Parquet, bounded memory), else they
are kept in memory until :meth:`result`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._deadline import check_deadline
from ..domain import Domain
from ..models.protocol import CountingModel
from ..oracle import CheckResult, DiscriminationCheck
from ..results import SearchResult, protected_pair_counts
from ..results.run_folder import PairSink

PHASES = ("global", "local")

# A newer run is merged into the one before it once that one is less than this many times larger, so the set
# holds O(log n) runs and each key is copied O(log n) times in total.
MERGE_RATIO = 4


class SortedKeySet:
    """A set of int64 keys held as a few disjoint sorted numpy arrays (a log-structured merge of runs).

    Adding a batch of ``b`` keys to a set of ``n`` costs O(b log n) plus amortised merges of O(log n) copies
    per key; membership is a binary search in each run.
    """

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key is in the set, shape (n_keys,).

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n_keys,)

        Returns
        -------
        numpy.ndarray of bool, shape (n_keys,)
        """
        keys = np.asarray(keys, dtype=np.int64)
        found = np.zeros(len(keys), dtype=bool)
        for run in self._runs:
            pos = np.minimum(np.searchsorted(run, keys), len(run) - 1)
            found |= run[pos] == keys
        return found

    def add(self, keys: np.ndarray) -> np.ndarray:
        """Add keys; return the mask of first occurrences of keys that were not in the set, shape (n_keys,).

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n_keys,)

        Returns
        -------
        numpy.ndarray of bool, shape (n_keys,)
        """
        keys = np.asarray(keys, dtype=np.int64)
        new = np.zeros(len(keys), dtype=bool)
        if not len(keys):
            return new
        unique, first = np.unique(keys, return_index=True)  # first occurrence of each key in the batch
        fresh = ~self.contains(unique)
        new[first[fresh]] = True
        self._push(unique[fresh])
        return new

    def _push(self, run: np.ndarray) -> None:
        if not len(run):
            return
        self._runs.append(run)
        self._size += len(run)
        while len(self._runs) > 1 and len(self._runs[-2]) < MERGE_RATIO * len(self._runs[-1]):
            last = self._runs.pop()
            # runs are disjoint and sorted: a stable sort (timsort for int64) merges the two runs in linear time
            self._runs[-1] = np.sort(np.concatenate([self._runs[-1], last]), kind="stable")


class ObjectKeySet:
    """The fallback for bytes keys of domains with 2**63 points or more (:meth:`Domain.keys`): a Python set."""

    def __init__(self) -> None:
        self._set: set = set()

    def __len__(self) -> int:
        return len(self._set)

    def contains(self, keys) -> np.ndarray:
        """Whether each key is in the set, shape (n_keys,).

        Parameters
        ----------
        keys : sequence of bytes, length n_keys

        Returns
        -------
        numpy.ndarray of bool, shape (n_keys,)
        """
        return np.fromiter((k in self._set for k in keys), dtype=bool, count=len(keys))

    def add(self, keys) -> np.ndarray:
        """Add keys; return the mask of first occurrences of keys that were not in the set, shape (n_keys,).

        Parameters
        ----------
        keys : sequence of bytes, length n_keys

        Returns
        -------
        numpy.ndarray of bool, shape (n_keys,)
        """
        new = np.zeros(len(keys), dtype=bool)
        seen = self._set
        for i, k in enumerate(keys):
            if k not in seen:
                seen.add(k)
                new[i] = True
        return new


def key_set_for(domain: Domain) -> SortedKeySet | ObjectKeySet:
    """The key set that fits the domain's keys: int64 keys in sorted arrays, bytes keys in a Python set.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    SortedKeySet or ObjectKeySet
    """
    bytes_keys = domain.keys(domain.lower[None, :]).dtype == object
    return ObjectKeySet() if bytes_keys else SortedKeySet()


class IDIRecorder:
    """Runs discrimination checks and records unique IDIs (key = non-protected projection).

    A key first found in the global phase stays global; the local phase only records keys not yet seen as
    IDIs, so ``n_global`` and ``n_local`` are disjoint. Repeated visits count once.

    Parameters
    ----------
    model : CountingModel
    domain : Domain
        With the protected attributes under test.
    sink : PairSink, optional
        Receives the new IDI pairs of every batch (e.g. streamed to ``idis.parquet``); without it the pairs
        are kept in memory and returned by :meth:`result`.
    """

    def __init__(self, model: CountingModel, domain: Domain, sink: PairSink | None = None):
        self.model = model
        self.domain = domain
        self.checker = DiscriminationCheck(model, domain)
        self.sink = sink
        self._tested = key_set_for(domain)
        self._idi_keys = key_set_for(domain)
        self._parts: list[tuple] = []
        self._pair_counts: dict[tuple, int] = {}
        self._label_counts: dict[tuple, int] = {}
        self._n_phase = dict.fromkeys(PHASES, 0)
        self._n_plausible = 0 if domain.support is not None else None
        self.n_checked = dict.fromkeys(PHASES, 0)
        self.n_seed_idis = 0
        self._queries0 = model.n_queries
        self._t0 = time.perf_counter()
        if sink is not None:
            sink.open(domain)

    def check(self, X, phase: str, *, with_proba: bool = False) -> tuple[CheckResult, np.ndarray]:
        """Check a batch of candidates and record the new IDIs among them.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Candidates inside the bounds (callers clip first). A candidate that breaks one of the domain's
            constraints is repaired first (:meth:`Domain.repair`): ``result.X`` holds what was checked, and a
            generator continues from ``result.X``, not from its own proposal.
        phase : {"global", "local"}
        with_proba : bool
            Also return probabilities (see :meth:`DiscriminationCheck.check`).

        Returns
        -------
        result : CheckResult
        new : numpy.ndarray of bool, shape (n_samples,)
            Rows that are IDIs with a key not recorded before (the first row of a key within the batch).
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        check_deadline(f"the {phase} phase of the search")
        X = self._inside_the_domain(X, phase)
        res = self.checker.check(self.domain.repair(X), with_proba=with_proba)
        self.n_checked[phase] += len(res.X)
        keys = self.domain.keys(res.X)
        self._tested.add(keys)
        new = np.zeros(len(keys), dtype=bool)
        idx = np.flatnonzero(res.is_idi)
        if len(idx):
            new[idx[self._idi_keys.add(keys[idx])]] = True
        n_new = int(new.sum())
        if n_new:
            self._n_phase[phase] += n_new
            self._record_pairs(res, new, phase)
        return res, new

    def _inside_the_domain(self, X, phase: str) -> np.ndarray:
        """``X`` as given when it is integer codes inside the bounds; else the DomainError naming the first fault.

        A candidate outside the bounds would be counted as an IDI that no person can be (and, under a coupling,
        fail deep inside the counterpart construction), so it is refused here, at the cost of two comparisons.
        """
        X = np.asarray(X)
        domain = self.domain
        if (X.ndim != 2 or X.shape[1] != domain.n_features or X.dtype.kind not in "iu"
                or (X < domain.lower).any() or (X > domain.upper).any()):
            return domain.validate(X, what=f"{phase} candidates (a generator clips them into the domain first)")
        return X

    def _record_pairs(self, res: CheckResult, new: np.ndarray, phase: str) -> None:
        X, C = res.X[new], res.counterparts(self.domain)[new]
        y, yc = res.labels[new], res.counterpart_label[new]
        pa = list(self.domain.protected)
        for values, count in protected_pair_counts(X[:, pa], C[:, pa]):
            self._pair_counts[values] = self._pair_counts.get(values, 0) + count
        # with the IDI's label, so a report can tell which side is favoured without reading the pairs back
        for values, count in protected_pair_counts(X[:, pa], np.hstack([C[:, pa], y[:, None]])):
            self._label_counts[values] = self._label_counts.get(values, 0) + count
        plausible = self.pair_plausible(X, C)
        if plausible is not None and self._n_plausible is not None:  # both are None when the domain has no support
            self._n_plausible += int(plausible.sum())
        if self.sink is not None:
            self.sink.write(X, C, y, yc, phase, plausible=plausible)
        else:
            self._parts.append((X, C, y, yc, np.full(len(X), phase), plausible))

    def pair_plausible(self, X: np.ndarray, C: np.ndarray) -> np.ndarray | None:
        """Whether each pair is plausible: the IDI and its counterpart both (:meth:`Domain.plausible`).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_pairs, n_features)
            IDIs.
        C : numpy.ndarray of int64, shape (n_pairs, n_features)
            Their counterparts.

        Returns
        -------
        numpy.ndarray of bool, shape (n_pairs,), or None
            None when the domain has no support (it was not built from data).
        """
        own, other = self.domain.plausible(X), self.domain.plausible(C)
        return None if own is None else own & other

    def is_recorded(self, X) -> np.ndarray:
        """Whether each row's key is already a recorded IDI, shape (n_samples,).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        return self._idi_keys.contains(self.domain.keys(X))

    def is_tested(self, X) -> np.ndarray:
        """Whether each row's key was already checked (in either phase), shape (n_samples,).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of bool, shape (n_samples,)
        """
        return self._tested.contains(self.domain.keys(X))

    @property
    def n_idis(self) -> int:
        """Unique IDI keys recorded so far."""
        return len(self._idi_keys)

    @property
    def n_tested(self) -> int:
        """Unique keys checked so far."""
        return len(self._tested)

    @property
    def n_queries(self) -> int:
        """Model queries since this recorder was created."""
        return self.model.n_queries - self._queries0

    @property
    def seconds(self) -> float:
        """Wall seconds since this recorder was created."""
        return time.perf_counter() - self._t0

    def result(self, *, generator: str, seed_strategy: str, n_seeds: int, n_seed_idis: int,
               notes=(), meta=None) -> SearchResult:
        """Freeze what was recorded into a :class:`SearchResult` (closing the sink, if any).

        Parameters
        ----------
        generator : str
            The generator's name, recorded in the result.
        seed_strategy : str
            The seed strategy's name.
        n_seeds : int
            Seeds the search started from.
        n_seed_idis : int
            Of those, the IDIs.
        notes : sequence of str, default=()
        meta : dict, optional
            Parameters, random state, versions.

        Returns
        -------
        SearchResult
        """
        seconds = self.seconds
        counts = sorted(self._pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        k = len(self.domain.protected)
        common: dict[str, Any] = dict(
            generator=generator, seed_strategy=seed_strategy, n_seeds=int(n_seeds),
            n_seed_idis=int(n_seed_idis), n_idis=self.n_idis, n_global=self._n_phase["global"],
            n_local=self._n_phase["local"], n_tested=self.n_tested, n_queries=self.n_queries,
            seconds=seconds, notes=tuple(notes), meta=dict(meta or {}), n_plausible_idis=self._n_plausible,
            pa_pair_counts=np.array([[*values, n] for values, n in counts], dtype=np.int64).reshape(
                len(counts), 2 * k + 1),
            pa_label_counts=np.array([[*values, n] for values, n in sorted(self._label_counts.items())],
                                     dtype=np.int64).reshape(len(self._label_counts), 2 * k + 2))
        if self.sink is not None:
            return SearchResult(**common, pairs_path=str(self.sink.close()))
        d = self.domain.n_features
        if self._parts:
            X, C, y, yc, ph = (np.concatenate(p) for p in list(zip(*self._parts, strict=True))[:5])
            plausible = None if self._n_plausible is None else np.concatenate([p[5] for p in self._parts])
        else:
            X = C = np.zeros((0, d), dtype=np.int64)
            y = yc = np.zeros(0, dtype=np.int64)
            ph = np.zeros(0, dtype="<U6")
            plausible = None if self._n_plausible is None else np.zeros(0, dtype=bool)
        return SearchResult(**common, idis=X, counterparts=C, idi_labels=y, counterpart_labels=yc,
                            phase=ph.astype(str), plausible=plausible)
