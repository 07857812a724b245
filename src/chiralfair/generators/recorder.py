"""Counting IDIs by the one rule of architecture: the counting rule, shared by every generator.

Every generator sends its candidates through :meth:`IDIRecorder.check`, so that ``n_idis``, ``n_global``,
``n_local``, ``n_tested`` and ``n_queries`` mean the same thing for all of them. The recorder is also where the
domain's rules (architecture: counterparts that could exist) hold for every generator alike: candidates are moved onto
the constraints (:meth:`Domain.repair <chiralfair.domain.Domain.repair>`) before they are checked, the check's
counterparts carry the couplings, and each recorded pair is scored for plausibility (``n_plausible_idis``).

Keys (architecture: the counting rule) are kept once, in one :mod:`~chiralfair.generators.key_table` (an int64 key
and a byte of flags saying whether it was tested and whether it is a recorded IDI: about 45 bytes a key while the keys
met lately fit its hash table, 10 once they have moved on into its sorted runs). IDI pairs go to a
:class:`~chiralfair.results.run_folder.PairSink` when one is given (streamed to Parquet, bounded memory), else they
are kept in memory until :meth:`result`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .._deadline import check_deadline
from ..domain import Domain
from ..models.protocol import CountingModel
from ..oracle import CheckResult, DiscriminationCheck
from ..results import SearchResult, protected_pair_counts
from ..results.run_folder import PairSink
from .key_table import RECORDED, TESTED, KeyLocation, key_table_for

PHASES = ("global", "local")
#: New IDIs wait in the recorder until this many (or until the sink's part is due), then their counterparts, counts
#: and plausibility are made in one batch, not in a few numpy calls at every check batch of the local walk.
PENDING_PAIRS = 1 << 14
_IDI_BITS, _TESTED_BIT = np.uint8(TESTED | RECORDED), np.uint8(TESTED)


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
        #: Every key checked, with its flags (:data:`~.key_table.TESTED`, :data:`~.key_table.RECORDED`, and the
        #: bits a local walk borrows for what it knows, :class:`~.gradient_steps.KnownOutcomes`).
        self.key_table = key_table_for(domain)
        self._lower, self._upper = domain.lower, domain.upper
        self._protected = list(domain.protected)
        self._parts: list[tuple] = []
        self._pending: list[tuple] = []
        self._n_pending = 0
        self._label_counts: dict[tuple, int] = {}
        self._n_phase = dict.fromkeys(PHASES, 0)
        self._n_plausible = 0 if domain.support is not None else None
        self.n_checked = dict.fromkeys(PHASES, 0)
        self.n_seed_idis = 0
        self._queries0 = model.n_queries
        self._t0 = time.perf_counter()
        if sink is not None:
            sink.open(domain)

    def check(self, X, phase: str, *, with_proba: bool = False, located: KeyLocation | None = None,
              satisfying: bool = False, also_mark: Callable[[np.ndarray], np.ndarray] | None = None,
              own: np.ndarray | None = None, inside: bool = False) -> tuple[CheckResult, np.ndarray]:
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
        located : KeyLocation, optional
            Where the rows' keys sit in :attr:`key_table`, when the caller located them (its last
            :meth:`~.key_table.IntKeyTable.locate`); used only if no candidate needed a repair.
        satisfying : bool, default=False
            The candidates satisfy the domain's constraints already (the generator repaired its proposals with
            :meth:`Domain.repair`), so they are not repaired again. Not checked: a generator that says so of a
            row that breaks a rule would have it counted.
        also_mark : callable, optional
            ``also_mark(is_idi) -> bits``, uint8 per checked row: flag bits of the caller's own (a local walk's
            :class:`~.gradient_steps.KnownOutcomes`) set on the rows' keys in the same pass as the recorder's.
            ``is_idi`` holds the rows checked, the leading rows of ``X`` (fewer only when a query budget cuts the
            check).
        own : numpy.ndarray of int64, shape (n_samples,), optional
            The rows' own PA combinations (:meth:`DiscriminationCheck.own_combination`), when the caller has them;
            used only if no candidate needed a repair.
        inside : bool, default=False
            The candidates are int64 codes inside the bounds already (a local walk's: inputs it checked, one
            column moved and clipped), so the bounds are not compared again. Not checked.

        Returns
        -------
        result : CheckResult
        new : numpy.ndarray of bool, shape (n_samples,)
            Rows that are IDIs with a key not recorded before (the first row of a key within the batch).
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        check_deadline(f"the {phase} phase of the search")
        if not inside:
            X = self._inside_the_domain(X, phase)
        repaired = X if satisfying else self.domain.repair(X)
        affordable, next_cost = self._rows_affordable(repaired, self.calls_per_query(with_proba))
        if affordable < len(repaired):  # the last check a query budget allows: what fits, then stop
            repaired, located = repaired[:affordable], None
        if own is not None and (repaired is not X or len(own) != len(X)):
            own = None
        # rows given inside stay so unless a repair (rule by rule, without a table) moved some
        res = self.checker.check(repaired, with_proba=with_proba, satisfying=True, own=own,
                                 inside=inside and (repaired is X or self.domain.repairs_stay_inside()))
        self.n_checked[phase] += len(res.X)
        if located is None or repaired is not X or len(located.keys) != len(X):
            located = self.key_table.locate(self.domain.keys(res.X))
        new = self._mark(located, res.is_idi, None if also_mark is None else also_mark(res.is_idi))
        n_new = int(new.sum())
        if n_new:
            self._n_phase[phase] += n_new
            self._record_pairs(res, new, phase)
        if next_cost:
            raise self.model.over_budget(next_cost)
        return res, new

    def check_first(self, X, first, phase: str) -> tuple[CheckResult, np.ndarray]:
        """Check candidates trying one counterpart per row first, the other combinations only if it does not flip.

        The check is the one of :meth:`check` (an input is an IDI when some counterpart gets another label) made
        in two steps: each row and its counterpart ``first[i]`` (say, the one that flipped at the IDI the row was
        proposed from) go to the model first; a row whose label that counterpart changes is an IDI at two
        queries, and only the other rows have their remaining counterparts sent. A local walk whose proposals are
        mostly IDIs so checks one at about two queries instead of one per combination. Labels only; with two
        combinations, a row that cannot lead (outside the PA domains, ``first[i]`` its own combination, -1, or
        impossible under the constraints), or a query budget the worst case might pass, this is :meth:`check`.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Candidates inside the bounds (repaired onto the constraints here, as by :meth:`check`).
        first : numpy.ndarray of int64, shape (n_samples,)
            Index into :attr:`Domain.combinations` of the counterpart to try first, or -1.
        phase : {"global", "local"}

        Returns
        -------
        result : CheckResult
            As :meth:`check`'s, except that ``counterpart_labels`` holds the input's own label where a counterpart
            was not sent (the other combinations of a row whose first counterpart flipped), and
            ``counterpart_index`` of an IDI is the first counterpart found to flip.
        new : numpy.ndarray of bool, shape (n_samples,)
        """
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
        k = self.checker.n_combinations
        remaining = self.model.remaining_queries
        X = self._inside_the_domain(X, phase)
        repaired = self.domain.repair(X)
        first = np.asarray(first, dtype=np.int64)
        own = self.checker.own_combination(repaired)
        lead = (own >= 0) & (first >= 0) & (first != own)
        if k <= 2 or not lead.any() or (remaining is not None and len(repaired) * (k + 1) > remaining):
            return self.check(repaired, phase, satisfying=True)
        check_deadline(f"the {phase} phase of the search")
        n, d = repaired.shape
        possible = None
        if self.domain.constraints:
            possible = self.domain.possible_counterparts(repaired, satisfying=True)
            lead &= possible[np.arange(n), np.maximum(first, 0)]
        labels = np.empty(n, dtype=np.int64)
        counterpart_labels = np.empty((n, k), dtype=np.int64)
        index = np.full(n, -1, dtype=np.int64)
        rows = np.flatnonzero(lead)
        pair = self.model.predict(np.concatenate([repaired[rows], self.domain.counterpart_rows(repaired[rows],
                                                                                               first[rows])]))
        labels[rows], flipped = pair[:len(rows)], pair[:len(rows)] != pair[len(rows):]
        counterpart_labels[rows] = labels[rows, None]
        counterpart_labels[rows, first[rows]] = pair[len(rows):]
        index[rows[flipped]] = first[rows[flipped]]
        self._rest_of_the_check(repaired, rows[~flipped], first, own, possible, labels, counterpart_labels, index)
        others = np.flatnonzero(~lead)
        if len(others):
            full = self.checker.check(repaired[others], satisfying=True)
            labels[others], counterpart_labels[others] = full.labels, full.counterpart_labels
            index[others] = full.counterpart_index
        res = CheckResult(repaired, labels, counterpart_labels, index >= 0, index, possible=possible)
        self.n_checked[phase] += n
        new = self._mark(self.key_table.locate(self.domain.keys(repaired)), res.is_idi)
        n_new = int(new.sum())
        if n_new:
            self._n_phase[phase] += n_new
            self._record_pairs(res, new, phase)
        return res, new

    def _rest_of_the_check(self, X: np.ndarray, rows: np.ndarray, first: np.ndarray, own: np.ndarray,
                           possible: np.ndarray | None, labels: np.ndarray, counterpart_labels: np.ndarray,
                           index: np.ndarray) -> None:
        """Send the counterparts of ``rows`` other than their own and ``first`` (possible ones only); fill in place.

        ``index`` gets the first combination (in :attr:`Domain.combinations` order) whose label differs.
        """
        if not len(rows):
            return
        k, d = self.checker.n_combinations, self.domain.n_features
        send = np.ones((len(rows), k), dtype=bool)
        send[np.arange(len(rows)), own[rows]] = False
        send[np.arange(len(rows)), first[rows]] = False
        if possible is not None:
            send &= possible[rows]
        counterparts = self.domain.counterparts(X[rows])
        answers = self.model.predict(counterparts[send].reshape(-1, d))
        block = counterpart_labels[rows]
        block[send] = answers
        counterpart_labels[rows] = block
        differs = block != labels[rows, None]
        index[rows] = np.where(differs.any(axis=1), differs.argmax(axis=1), -1)

    def calls_per_query(self, with_proba: bool) -> int:
        """Queries each row sent by a check costs: 2 when probabilities come from a call of their own, else 1.

        Labels and probabilities of the same rows are two queries unless one call of the model returns both
        (:attr:`CountingModel.one_pass <chiralfair.models.protocol.CountingModel.one_pass>`).

        Parameters
        ----------
        with_proba : bool
            Whether the check asks for probabilities too.

        Returns
        -------
        int
        """
        return 2 if with_proba and not self.model.one_pass else 1

    def _rows_affordable(self, X: np.ndarray, calls: int = 1) -> tuple[int, int]:
        """How many leading rows of ``X`` the query budget lets the check send, and the cost of the next (0: all).

        A row costs ``calls`` queries per counterpart sent (:class:`~chiralfair.oracle.DiscriminationCheck`: every
        combination, its own included, one more outside the PA domains, none for an impossible counterpart;
        :meth:`calls_per_query`). Only a batch that might not fit is costed row by row.
        """
        remaining = self.model.remaining_queries
        k = self.checker.n_combinations
        if remaining is None or len(X) * (k + 1) * calls <= remaining:
            return len(X), 0
        head = X[:remaining + 1]  # every row costs at least one query
        own = self.checker.own_combination(head)
        cost = np.full(len(head), k, dtype=np.int64) + (own < 0)
        if self.domain.constraints:
            ok = self.domain.possible_counterparts(head, satisfying=True)
            inside = np.flatnonzero(own >= 0)
            ok[inside, own[inside]] = True
            cost = ok.sum(axis=1) + (own < 0)
        cost = cost * calls
        fits = int(np.searchsorted(np.cumsum(cost), remaining, side="right"))
        return (len(X), 0) if fits >= len(X) else (fits, int(cost[fits]))

    def _inside_the_domain(self, X, phase: str) -> np.ndarray:
        """``X`` as given when it is integer codes inside the bounds; else the DomainError naming the first fault.

        A candidate outside the bounds would be counted as an IDI that no person can be (and, under a coupling,
        fail deep inside the counterpart construction), so it is refused here, at the cost of two comparisons.
        """
        X = np.asarray(X)
        domain = self.domain
        if (X.ndim != 2 or X.shape[1] != domain.n_features or X.dtype.kind not in "iu"
                or (X < self._lower).any() or (X > self._upper).any()):
            return domain.validate(X, what=f"{phase} candidates (a generator clips them into the domain first)")
        return X

    def _mark(self, located: KeyLocation, is_idi: np.ndarray, extra: np.ndarray | None = None) -> np.ndarray:
        """Mark the checked keys tested and the IDIs' keys recorded; the rows that are new IDIs, shape (n,).

        A new IDI is the first IDI row of a key that was not recorded before this batch. ``extra``: a caller's own
        bits per row, set in the same pass.
        """
        table = self.key_table
        before = table.flags_at(located)
        bits = np.where(is_idi, _IDI_BITS, _TESTED_BIT)  # uint8 scalars: uint8 bits without a cast
        table.mark_at(located, bits if extra is None else bits | extra)
        new = np.zeros(len(is_idi), dtype=bool)
        idx = (is_idi & (before & RECORDED == 0)).nonzero()[0]
        if len(idx) > 1 and located.repeats:  # a key met twice in the batch is new once, at its first IDI row
            idx = idx[np.sort(np.unique(located.inverse[idx], return_index=True)[1])]
        new[idx] = True
        return new

    def _record_pairs(self, res: CheckResult, new: np.ndarray, phase: str) -> None:
        """Keep the new IDIs of a batch (codes, counterpart index, labels); complete them once enough wait."""
        rows = new.nonzero()[0]
        X, index = res.X[rows], res.counterpart_index[rows]
        # a new row is an IDI, so its counterpart index is >= 0: its label is read there (res.counterpart_label of
        # these rows, without making it for every row checked)
        self._pending.append((X, index, res.labels[rows], res.counterpart_labels[rows, index], PHASES.index(phase)))
        self._n_pending += len(X)
        if self._n_pending >= PENDING_PAIRS or (self.sink is not None and self.sink.due):
            self.complete_pending()

    def complete_pending(self) -> None:
        """Complete the IDIs found but not yet recorded as pairs, and hand them to the sink (or keep them).

        New IDIs wait until :data:`PENDING_PAIRS` of them (or the sink's part is due): their counterparts,
        protected-value counts and plausibility are then made in one batch. :meth:`result` calls this; a search
        stopped by an exception (Ctrl-C, a deadline) calls it too, so that the sink holds every pair found.
        """
        if not self._pending:
            return
        # Everything is made before anything is changed, and the waiting pairs are let go only once handed on: an
        # exception on the way (Ctrl-C) leaves them waiting for the next call, none lost, none counted twice.
        X, index, y, yc = (np.concatenate(p) for p in list(zip(*self._pending, strict=True))[:4])
        phase_code = np.repeat(np.array([p[4] for p in self._pending], dtype=np.int8),
                               [len(p[0]) for p in self._pending])
        C = self.domain.counterpart_rows(X, index)  # an IDI's index is its counterpart's
        pa = self._protected
        # with the IDI's label, so a report can tell which side is favoured without reading the pairs back (the
        # pair counts are their sums over the label, :meth:`result`)
        counts = protected_pair_counts(X[:, pa], np.hstack([C[:, pa], y[:, None]]))
        plausible = self.pair_plausible(X, C)
        if self.sink is not None:
            self.sink.write(X, C, y, yc, np.asarray(PHASES)[phase_code], plausible=plausible)
        else:
            self._parts.append((X, C, y, yc, phase_code, plausible))
        self._pending, self._n_pending = [], 0
        for values, count in counts:
            self._label_counts[values] = self._label_counts.get(values, 0) + count
        if plausible is not None and self._n_plausible is not None:  # both are None when the domain has no support
            self._n_plausible += int(plausible.sum())

    @property
    def buffered_nbytes(self) -> int:
        """Bytes of the IDI pairs held for writing: those waiting here and those buffered in the sink (if any)."""
        waiting = sum(a.nbytes for batch in self._pending for a in batch[:4])
        return waiting + (self.sink.buffered_nbytes if self.sink is not None else 0)

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
        if self.domain.support is None:
            return None
        return self.domain.plausible(X, C)

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
        return self.key_table.flags(self.domain.keys(X)) & RECORDED != 0

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
        return self.key_table.flags(self.domain.keys(X)) & TESTED != 0

    @property
    def n_idis(self) -> int:
        """Unique IDI keys recorded so far."""
        return self.key_table.count(RECORDED)

    @property
    def n_tested(self) -> int:
        """Unique keys checked so far."""
        return self.key_table.count(TESTED)

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
        self.complete_pending()
        seconds = self.seconds
        pair_counts: dict[tuple, int] = {}
        for values, n in self._label_counts.items():
            pair_counts[values[:-1]] = pair_counts.get(values[:-1], 0) + n
        counts = sorted(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))
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
            ph = np.zeros(0, dtype=np.int8)
            plausible = None if self._n_plausible is None else np.zeros(0, dtype=bool)
        return SearchResult(**common, idis=X, counterparts=C, idi_labels=y, counterpart_labels=yc,
                            phase=np.asarray(PHASES)[ph], plausible=plausible)
