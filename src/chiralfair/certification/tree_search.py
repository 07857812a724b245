"""Branch and bound for tree ensembles: bound each box by its leaves, split on the ensemble's own cuts, exact on cells.

Each step takes the largest open boxes of keys and bounds the ensemble's score at every protected combination
(:meth:`TreeEnsemble.bounds <chiralfair.certification.tree_ensemble.TreeEnsemble.bounds>`: per tree, the extreme
leaves the box reaches). A box is **certified** when every combination that can exist there is provably on the same
side of the decision threshold everywhere in it, and **falsified** when two combinations possible everywhere in it are
provably on opposite sides. Otherwise it is split at the median cut of the key column with most cuts inside it, so
boxes soon become **cells**, on which the ensemble is constant per combination: a cell is decided by the model's own
discrimination check at one of its points (:class:`~chiralfair.oracle.DiscriminationCheck`), exactly, and a falsified
cell yields a concrete IDI re-queried through the model. A cell only partly inside the constraints is split on a
column a constraint reads until each combination is possible everywhere in it or nowhere.

A box whose trees reach few leaves (at most ``regions_per_box`` leaf combinations) is instead cut into its
**regions**: the parts on which every tree reaches one leaf per combination, found tree by tree by intersecting the
box with each leaf it reaches (a leaf is a box of codes when every split is an interval), so far fewer than its
cells when the cuts of the leaves it does not reach cross it. The score is constant on a region per combination:
a region all of whose possible combinations are clear of the threshold on one side is certified, one clear of it on
opposite sides at two possible combinations is falsified (the model confirming one such region a box, as it confirms
a box falsified by its bounds), and one within the margin of the threshold is decided by the model's own
discrimination check at one of its points, as a cell is.

So, given the time, the search is exact: it stops with nothing undecided. It is anytime like the network's
(:class:`~.branch_and_bound.BranchAndBound`): at the time or box budget, or on ``KeyboardInterrupt``, it reports what
it proved, and returns the same :class:`~.branch_and_bound.Tally`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import numpy as np

from .._validation import check_float, check_int
from .branch_and_bound import CERTIFIED, FALSIFIED, UNDECIDED, Tally, _Frontier, _move_rows, _Plan, close_tally
from .key_space import IMPOSSIBLE, PARTLY, POSSIBLE, KeySpace, split_boxes
from .options import check_certify_options
from .tree_ensemble import BLOCK, TreeEnsemble

logger = logging.getLogger(__name__)

# Margin kept around the decision threshold by the bounds (scores are read in float64; the libraries sum in
# float32 or float64): a box whose bound is within it of the threshold is split down to cells, which the model decides.
DECISION_MARGIN = 1e-5
# Most boxes in one batch (the time budget is read between batches).
MAX_BATCH = 4096
# Regions (a box's parts on which every tree reaches one leaf per combination) held at once while a batch's boxes are
# cut into them; a box whose regions would pass this is split instead.
REGIONS_PER_BATCH = 1 << 17
# Boxes each process bounds in one round of a run shared among processes (then the open boxes are dealt out again).
ROUND_BOXES = 16384
# Most bytes of reached leaves (the cache below) sent with a share of a round; the rest are read again there.
SHIP_CACHE_BYTES = 32 << 20
# Memory kept for the leaves the open boxes' parents reach (a split box's children read only the split feature).
CACHE_BYTES = 256 << 20


class TreeBranchAndBound:
    """Batched branch and bound over boxes of keys for a :class:`~.tree_ensemble.TreeEnsemble` (anytime, exact).

    Parameters
    ----------
    max_seconds : float or None, default=60.0
        Wall-second budget (None: until every box is decided).
    max_depth : int or None, default=None
        Splits below an initial box after which a box is left undecided (None: none).
    max_boxes : int or None, default=None
        Boxes bounded before the run stops (None: no limit); the same on every machine.
    batch_size : int or None, default=None
        Boxes bounded together (None: as many as keep boxes x combinations x leaves near 2**26, at most
        :data:`MAX_BATCH`).
    cells_per_box : int, default=1024
        A box of at most this many cells is not split further: the model decides each of its cells at one point.
    cells_per_batch : int, default=65536
        Cells decided that way in one batch (the rest are split).
    focus : float, default=2.0
        Order of the open boxes: largest first, with a box whose bounds lie mostly on one side of the threshold
        moved ahead as if it were ``gap ** -focus`` times larger; 0 orders by volume alone.
    blind : bool, default=True
        Certify a box where every leaf reached holds every protected combination's codes on the protected and
        coupled columns (the ensemble cannot tell the combinations apart there, whatever its score); False: only
        the score's bounds decide (for measuring what this adds).
    regions_per_box : int, default=4096
        A box whose trees reach leaves giving at most this many regions is decided region by region (0: never;
        read only when every leaf is an interval of codes on every feature).
    n_jobs : int or None, default=None
        Processes sharing the work (None: the CPUs this process may run on; 1: this process alone). The first
        ``parallel_after`` boxes are bounded here; the open boxes are then dealt out in rounds (:meth:`_rounds`).
        A complete run's shares are the same for every ``n_jobs``.
    parallel_after : int, default=8192
        Boxes bounded in this process before the work is shared (a run that ends sooner starts no process).

    Raises
    ------
    ConfigError
        For a bad budget or batch size.
    """

    def __init__(self, *, max_seconds: float | None = 60.0, max_depth: int | None = None,
                 max_boxes: int | None = None, batch_size: int | None = None, cells_per_box: int = 1024,
                 cells_per_batch: int = 65536, focus: float = 2.0, blind: bool = True, regions_per_box: int = 4096,
                 n_jobs: int | None = None, parallel_after: int = 8192):
        checked = check_certify_options(max_seconds=max_seconds, max_depth=max_depth, max_boxes=max_boxes,
                                        batch_size=1 if batch_size is None else batch_size)
        self.focus = check_float(focus, "focus", minimum=0.0)
        self.cells_per_box = check_int(cells_per_box, "cells_per_box", minimum=1)
        self.cells_per_batch = check_int(cells_per_batch, "cells_per_batch", minimum=1)
        self.blind = bool(blind)
        self.regions_per_box = check_int(regions_per_box, "regions_per_box", minimum=0)
        self.max_seconds = checked["max_seconds"]
        self.max_depth = checked["max_depth"]
        self.max_boxes = checked["max_boxes"]
        self.batch_size = None if batch_size is None else checked["batch_size"]
        self.n_jobs = available_cpus() if n_jobs is None else check_int(n_jobs, "n_jobs", minimum=1)
        self.parallel_after = check_int(parallel_after, "parallel_after", minimum=0)

    def params(self) -> dict:
        """The parameters, as given (JSON-ready).

        Returns
        -------
        dict
        """
        return {"engine": "trees", "max_seconds": self.max_seconds, "max_depth": self.max_depth,
                "max_boxes": self.max_boxes, "batch_size": self.batch_size, "cells_per_box": self.cells_per_box,
                "cells_per_batch": self.cells_per_batch, "focus": self.focus, "blind": self.blind,
                "regions_per_box": self.regions_per_box, "n_jobs": self.n_jobs,
                "parallel_after": self.parallel_after}

    def run(self, ensemble: TreeEnsemble, space: KeySpace, check, lo: np.ndarray, hi: np.ndarray, *,
            row_keys: np.ndarray | None = None, row_owner: np.ndarray | None = None,
            on_progress: Callable[[dict], None] | None = None, stop_on_idi: bool = False) -> Tally:
        """Certify the boxes ``[lo, hi]`` (each its own owner) as far as the budget allows.

        Parameters
        ----------
        ensemble : TreeEnsemble
            The model under test's trees (:func:`~chiralfair.certification.tree_reading.read_tree_ensemble`).
        space : KeySpace
        check : DiscriminationCheck
            On the model under test: decides cells.
        lo, hi : numpy.ndarray of int64, shape (n_owners, n_columns)
            The initial boxes, disjoint and inside the domain; coupled columns single roles.
        row_keys, row_owner : numpy.ndarray, optional
            Data rows to track, as in :meth:`BranchAndBound.run
            <chiralfair.certification.branch_and_bound.BranchAndBound.run>`.
        on_progress : callable, optional
            Called after each batch with ``{"seconds", "certified", "falsified", "n_open"}``.
        stop_on_idi : bool, default=False
            Drop an owner's open boxes once one of its keys is proven an IDI (per-person certificates: that
            person is affected whatever the rest of the box holds).

        Returns
        -------
        Tally
            Its ``stats`` also say the processes used (``n_jobs``: 1 when the run ended before its work was shared),
            the rounds, and the CPU seconds and peak memory (MiB) of the other processes' shares
            (``shared_cpu_seconds``, ``shared_peak_rss_mib``), which this process's own counters do not include.
        """
        started = time.perf_counter()
        self._n_cached = 0
        n_owners = len(lo)
        n_rows = 0 if row_keys is None else len(row_keys)
        tally = Tally(certified=np.zeros(n_owners), falsified=np.zeros(n_owners),
                      row_status=np.full(n_rows, UNDECIDED, dtype=np.int8))
        stats = {"n_boxes": 0, "n_decided_by_bounds": 0, "n_blind": 0, "n_cells": 0, "n_region_boxes": 0,
                 "n_regions": 0, "n_splits": 0, "max_depth": 0,
                 "n_depth_limited": 0, "n_dropped": 0, "stopped": "complete", "n_trees": ensemble.n_trees,
                 "n_leaves": ensemble.n_leaves, "n_jobs": 1, "n_rounds": 0, "shared_cpu_seconds": 0.0}
        frontier = _Levels(space.n_columns)
        frontier.push(lo.astype(np.int64), hi.astype(np.int64), np.zeros(n_owners, np.int64),
                      np.arange(n_owners, dtype=np.int64), np.arange(n_owners, dtype=np.int64),
                      np.log2(space.volume(lo, hi)))
        self._next_id = n_owners
        self._cache: dict[int, tuple[np.ndarray, int]] = {}  # box id -> its parent's reached leaves (packed), feature
        row_box = np.zeros(0, np.int64) if row_keys is None else (
            np.zeros(n_rows, np.int64) if row_owner is None else np.asarray(row_owner, dtype=np.int64).copy())
        limited: list[tuple] = []
        deadline = None if self.max_seconds is None else started + self.max_seconds
        loop = _Loop(self, ensemble, space, check, frontier, tally, stats, row_box, row_keys, limited, deadline,
                     stop_on_idi, on_progress, started)
        try:
            if self.n_jobs > 1:  # the first boxes here, then rounds over n_jobs processes once there is work to share
                loop.run(until=self.parallel_after // 2)
                if frontier.size and stats["stopped"] == "complete":  # the other processes start meanwhile
                    _executor(self.n_jobs).submit(int)
                    loop.run(until=self.parallel_after)
                if frontier.size and stats["stopped"] == "complete":
                    self._rounds(loop)
            else:
                loop.run()
        except KeyboardInterrupt:
            stats["stopped"] = "interrupted"
            logger.warning("certification interrupted: reporting what was proved so far")
        stats["n_reach_cached"] = self._n_cached
        self._cache = {}
        return close_tally(tally, stats, space, [frontier.all(), *limited]
                           + ([loop.batch] if loop.batch is not None else []), started)

    def _rounds(self, loop: _Loop) -> None:
        """Share the open boxes among ``n_jobs`` processes, round after round, until none is left or a budget is spent.

        Each round deals the open boxes out in order of priority (the first to this process, the next to the first
        other process, ...), with the rows they hold and their parents' reached leaves; every share bounds, decides
        and splits at most :data:`ROUND_BOXES` boxes (this process its own, in the meantime); their tallies, rows
        and open boxes come back and are merged. Who gets which box depends only on the boxes, so the same inputs
        give the same result (up to the time budget); a complete run's shares are exact, as on one process.
        """
        frontier, stats, tally = loop.frontier, loop.stats, loop.tally
        n_jobs = self.n_jobs
        stats["n_jobs"] = n_jobs
        executor = _executor(n_jobs)
        params = {**self.params(), "n_jobs": 1, "max_seconds": None, "max_boxes": None}  # the round sets both
        params.pop("engine")
        static = (params, loop.ensemble, loop.space, loop.check)
        while frontier.size:
            if loop.spent():
                return
            per_share = ROUND_BOXES if self.max_boxes is None else max(
                1, min(ROUND_BOXES, -(-(self.max_boxes - stats["n_boxes"]) // n_jobs)))
            lo, hi, depth, ident, owner, level = frontier.take_all()
            order = np.argsort(-level, kind="stable")
            span = 2 * (per_share + MAX_BATCH) + 2  # ids a share may give the children it splits
            futures: list[tuple] = []
            for j in range(1, n_jobs):
                part = order[j::n_jobs]
                if not len(part):
                    continue
                box_ids = ident[part]
                rows = (np.flatnonzero(np.isin(loop.row_box, box_ids)) if len(loop.row_box)
                        else np.zeros(0, np.int64))
                cache = {}
                for i in map(int, box_ids):
                    entry = self._cache.pop(i, None)
                    if entry is not None:
                        cache[i] = entry
                share = {"boxes": (lo[part], hi[part], depth[part], box_ids, owner[part], level[part]),
                         "rows": rows, "row_box": loop.row_box[rows],
                         "row_keys": None if loop.row_keys is None else loop.row_keys[rows],
                         "cache": cache, "next_id": self._next_id + j * span,
                         "falsified": tally.falsified.copy() if loop.stop_on_idi else None,
                         "n_owners": len(tally.certified), "stop_on_idi": loop.stop_on_idi}
                seconds = None if loop.deadline is None else max(0.0, loop.deadline - time.perf_counter())
                futures.append((executor.submit(_share, static, share, per_share, seconds), share["boxes"]))
            mine = order[0::n_jobs]
            frontier.push(lo[mine], hi[mine], depth[mine], ident[mine], owner[mine], level[mine].astype(np.float64))
            self._next_id += n_jobs * span
            first_id = self._next_id - n_jobs * span
            saved, self._next_id = self._next_id, first_id  # this process's share takes the first ids of the round
            try:
                loop.run(until=stats["n_boxes"] + per_share)
                self._next_id = saved
                while futures:
                    self._merge(loop, futures[0][0].result())
                    futures.pop(0)
            except KeyboardInterrupt:  # the shares not merged are reported open, as given out
                for future, (b_lo, b_hi, b_depth, b_ident, b_owner, b_level) in futures:
                    future.cancel()
                    frontier.push(b_lo, b_hi, b_depth, b_ident, b_owner, b_level.astype(np.float64))
                raise
            stats["n_rounds"] += 1
            loop.progress()
            if stats["stopped"] != "complete":
                return

    def _merge(self, loop: _Loop, done: dict) -> None:
        """Add one share's round to this run: its tally, rows, open boxes, statistics and the model's counts."""
        tally, stats = loop.tally, loop.stats
        tally.certified += done["certified"]
        tally.falsified += done["falsified"]
        for name in ("idis", "counterparts", "labels", "counterpart_labels"):
            getattr(tally, name).extend(done[name])
        rows = done["rows"]
        if len(rows):
            loop.row_box[rows] = done["row_box"]
            tally.row_status[rows] = done["row_status"]
        lo, hi, depth, ident, owner, level = done["open"]
        loop.frontier.push(lo, hi, depth, ident, owner, level.astype(np.float64))
        loop.limited.extend(done["limited"])
        self._cache.update(done["cache"])
        for key, value in done["stats"].items():
            if key == "max_depth":
                stats[key] = max(stats[key], value)
            elif key == "stopped":
                if value != "complete":
                    stats[key] = value
            elif isinstance(value, int | float) and key in stats and key not in ("n_trees", "n_leaves", "n_jobs",
                                                                                 "n_rounds", "shared_cpu_seconds",
                                                                                 "shared_peak_rss_mib"):
                stats[key] += value
        self._n_cached += done["stats"].get("n_reach_cached", 0)
        stats["shared_cpu_seconds"] = stats.get("shared_cpu_seconds", 0.0) + done["cpu_seconds"]
        stats["shared_peak_rss_mib"] = max(stats.get("shared_peak_rss_mib", 0.0), done["peak_rss_mib"])
        model = loop.check.model
        model.n_queries += done["n_queries"]
        model.n_rows += done["n_rows"]

    def _reach(self, ensemble: TreeEnsemble, lo: np.ndarray, hi: np.ndarray, ident: np.ndarray, k: int) -> np.ndarray:
        """The leaves each (box, combination) reaches: a split box's from its parent's, on the split feature alone."""
        n_leaves = ensemble.n_leaves
        parent = [self._cache.pop(int(i), None) for i in ident]
        known = np.array([p is not None for p in parent], dtype=bool)
        reach = np.empty((len(lo), n_leaves), dtype=bool)
        fresh = np.repeat(~known, k)
        if fresh.any():
            reach[fresh] = ensemble.reached(lo[fresh], hi[fresh])
        if known.any():
            feature = np.array([-1 if p is None else p[1] for p in parent], dtype=np.int64)
            for f in np.unique(feature[known]):
                which = np.flatnonzero(known & (feature == f))
                packed = np.stack([parent[j][0] for j in which])  # type: ignore[index]
                within = np.unpackbits(packed, axis=1, count=k * n_leaves).view(bool).reshape(len(which) * k, -1)
                rows = (which[:, None] * k + np.arange(k)).reshape(-1)
                reach[rows] = ensemble.reached(lo[rows], hi[rows], within=within, feature=int(f))
        return reach

    def _remember(self, reach: np.ndarray, halve: np.ndarray, child_id: np.ndarray, feature: np.ndarray,
                  ensemble: TreeEnsemble, k: int) -> None:
        """Keep each split box's reached leaves (packed bits) for its two children, within :data:`CACHE_BYTES`."""
        m = len(halve)
        if not m:
            return
        row_bytes = (k * ensemble.n_leaves + 7) // 8
        room = CACHE_BYTES // max(1, row_bytes) - len(self._cache)
        keep = min(m, max(0, room // 2))
        if not keep:
            return
        packed = np.packbits(reach[halve[:keep]], axis=1)
        for j in range(keep):
            row = packed[j].copy()  # its own array: freed once both children are popped
            f = int(feature[j])
            self._cache[int(child_id[j])] = (row, f)
            self._cache[int(child_id[m + j])] = (row, f)
        self._n_cached += 2 * keep

    @staticmethod
    def _blind(ensemble: TreeEnsemble, space: KeySpace, xlo: np.ndarray, xhi: np.ndarray, reach: np.ndarray, n: int,
               k: int) -> np.ndarray:
        """Boxes where the ensemble cannot tell the protected combinations apart: certified whatever the threshold.

        A box is blind when every leaf some combination reaches in it holds every combination's codes on the
        protected and coupled columns. Then at each point of the box every combination reaches the same leaf of
        each tree (a leaf reached at ``(x, a)`` holds ``x``'s other codes, shared by ``(x, b)``, and ``b``'s
        protected and coupled codes; a tree's leaves partition its inputs), so every combination gets the same
        score and label: no point of the box is an IDI, although its score may cross the threshold.
        """
        columns = np.unique(np.concatenate([np.asarray(space.domain.protected, dtype=np.int64),
                                            np.asarray(space.domain.coupled_columns, dtype=np.int64)]))
        # the protected and coupled codes of every combination: few patterns (a coupled column's role), read once each
        pattern = np.concatenate([xlo[:, :, columns], xhi[:, :, columns]], axis=2).reshape(n, -1)
        unique, which = np.unique(pattern, axis=0, return_inverse=True)
        first = np.unique(np.asarray(which).reshape(-1), return_index=True)[1]
        rows = (first[:, None] * k + np.arange(k)).reshape(-1)
        held = np.asarray(ensemble.holds(xlo.reshape(n * k, -1)[rows], xhi.reshape(n * k, -1)[rows], columns)
                          .reshape(len(unique), k, -1).all(axis=1))
        reached = np.asarray(reach.reshape(n, k, -1).any(axis=1))
        return np.asarray(~(reached & ~held[np.asarray(which).reshape(-1)]).any(axis=1))

    @staticmethod
    def _drop_decided(batch: tuple, tally: Tally, stats: dict) -> tuple:
        owner = batch[4]
        keep = tally.falsified[owner] == 0
        stats["n_dropped"] += int((~keep).sum())
        return tuple(part[keep] for part in batch)

    def _step(self, batch, ensemble: TreeEnsemble, space: KeySpace, check, frontier: _Frontier, tally: Tally,
              stats: dict, row_box: np.ndarray, row_keys, limited: list, read: np.ndarray) -> None:
        """Bound, decide and split one batch of boxes."""
        b_lo, b_hi, depth, b_id, owner = batch
        n, k = len(b_lo), space.n_combinations
        stats["n_boxes"] += n
        stats["max_depth"] = max(stats["max_depth"], int(depth.max()))
        xlo, xhi = space.input_boxes(b_lo, b_hi)
        reach = self._reach(ensemble, xlo.reshape(n * k, -1), xhi.reshape(n * k, -1), b_id, k)  # (n * k, n_leaves)
        lower, upper = ensemble.bounds_of(reach)
        lower, upper = lower.reshape(n, k), upper.reshape(n, k)
        possibility = space.possibility(b_lo, b_hi)
        relevant = np.ones((n, k), bool) if possibility is None else possibility != IMPOSSIBLE
        sure = np.ones((n, k), bool) if possibility is None else possibility == POSSIBLE
        margin = DECISION_MARGIN * (1.0 + abs(ensemble.threshold))
        above = lower > ensemble.threshold + margin
        below = upper < ensemble.threshold - margin
        verdict = np.full(n, UNDECIDED, dtype=np.int8)
        same = (above | ~relevant).all(axis=1) | (below | ~relevant).all(axis=1)
        if self.blind and k > 1:  # every leaf the box reaches ignores the protected (and coupled) columns there
            blind = self._blind(ensemble, space, xlo, xhi, reach, n, k) & ~same
            stats["n_blind"] = stats.get("n_blind", 0) + int(blind.sum())
            same |= blind
        verdict[same] = CERTIFIED
        opposite = (above & sure).any(axis=1) & (below & sure).any(axis=1)
        verdict[opposite & ~same] = FALSIFIED
        stats["n_decided_by_bounds"] += int((verdict != UNDECIDED).sum())
        cuts = ensemble.cuts_inside(b_lo, b_hi, space.columns)
        partly = np.zeros(n, bool) if possibility is None else (possibility == PARTLY).any(axis=1)
        # a box where every combination reaches one leaf per tree (or leaves of one value) is one cell however
        # many cuts of other leaves cross it: the ensemble is constant there
        constant = ((lower == upper) | ~relevant).all(axis=1)
        n_cells = np.where(constant, 1.0, np.prod((cuts + 1).astype(np.float64), axis=1))
        small = (verdict == UNDECIDED) & ~partly & (n_cells <= self.cells_per_box)
        small &= np.cumsum(np.where(small, n_cells, 0)) <= max(self.cells_per_batch, self.cells_per_box)
        proven = np.flatnonzero(verdict == FALSIFIED)
        if len(proven):  # every key of these is an IDI by the bounds: the model confirms one point of each
            confirmed = self._check_cells(space, check, b_lo[proven], tally)
            verdict[proven[~confirmed]] = UNDECIDED
            small[proven[~confirmed]] = False  # split on: the model is the authority
        volume = space.volume(b_lo, b_hi)
        np.add.at(tally.certified, owner[verdict == CERTIFIED], volume[verdict == CERTIFIED])
        np.add.at(tally.falsified, owner[verdict == FALSIFIED], volume[verdict == FALSIFIED])
        if small.any():  # few cells: the model decides each at one point, exactly
            self._enumerate(np.flatnonzero(small), constant, ensemble, space, check, b_lo, b_hi, b_id, owner,
                            verdict, tally, stats, row_box, row_keys)
        regional = (verdict == UNDECIDED) & ~partly & ~small
        if self.regions_per_box and not ensemble.has_sets and regional.any():
            # few leaf combinations: cut into regions (one leaf per tree and combination), decided exactly
            leaves = np.add.reduceat(reach.astype(np.int32), ensemble.tree_start, axis=1).reshape(n, k, -1)
            combos = np.prod(leaves.max(axis=1).astype(np.float64), axis=1)
            regional &= combos <= self.regions_per_box
            if regional.any():
                done = self._by_regions(np.flatnonzero(regional), ensemble, space, check, b_lo, b_hi, b_id, owner,
                                        relevant, sure, reach, verdict, tally, stats, row_box, row_keys)
                small[done] = True
        open_box = np.flatnonzero((verdict == UNDECIDED) & ~small)
        deep = depth[open_box] >= self.max_depth if self.max_depth is not None else np.zeros(len(open_box), bool)
        if deep.any():
            stats["n_depth_limited"] += int(deep.sum())
            limited.append((b_lo[open_box[deep]], b_hi[open_box[deep]]))
        halve = open_box[~deep]
        plan = _Plan.bisect(n)
        score = np.zeros((n, space.n_columns))
        if len(halve):
            m = len(halve)  # every combination's leaves count: the box is open because of one of them
            rows = (halve[:, None] * k + np.arange(k)).reshape(-1)
            score[halve] = ensemble.influence(xlo[halve].reshape(m * k, -1), xhi[halve].reshape(m * k, -1),
                                              space.columns, reach[rows]).reshape(m, k, -1).sum(axis=1)
        self._plan(plan, halve, ensemble, space, b_lo, b_hi, np.where(cuts > 0, score + cuts * 1e-9, 0.0), read,
                   reach.reshape(n, -1))
        c_lo, c_hi = split_boxes(b_lo[halve], b_hi[halve], plan.column[halve], plan.mid[halve])
        m = len(halve)
        child_id = np.arange(self._next_id, self._next_id + 2 * m, dtype=np.int64)
        self._next_id += 2 * m
        if len(row_box):
            _move_rows(row_box, row_keys, tally.row_status, b_id, verdict, halve, plan, b_lo, b_hi, child_id,
                       np.full(2 * m, UNDECIDED, dtype=np.int8), open_box[deep])
        stats["n_splits"] += m
        self._remember(reach.reshape(n, -1), halve, child_id, space.columns[plan.column[halve]], ensemble, k)
        # largest first, and nearer to decided first: a box whose bounds are mostly on one side comes earlier
        spread = np.maximum(upper.max(axis=1) - lower.min(axis=1), 1e-12)
        t = ensemble.threshold
        need = np.minimum(t + margin - lower.min(axis=1), upper.max(axis=1) - t + margin)
        gap = np.clip(need / spread, 2.0**-16, 1.0)
        priority = np.log2(space.volume(c_lo, c_hi)) - self.focus * np.log2(np.tile(gap[halve], 2))
        frontier.push(c_lo, c_hi, np.tile(depth[halve] + 1, 2), child_id, np.tile(owner[halve], 2), priority)

    def _enumerate(self, boxes: np.ndarray, constant: np.ndarray, ensemble: TreeEnsemble, space: KeySpace, check,
                   b_lo, b_hi, b_id, owner, verdict, tally: Tally, stats: dict, row_box: np.ndarray,
                   row_keys) -> None:
        """Decide ``boxes`` cell by cell; a box all of one answer takes it, the rows of a mixed one are checked.

        A ``constant`` box is one cell; the others are cut at every cut inside them.
        """
        whole = boxes[constant[boxes]]
        cut = boxes[~constant[boxes]]
        c_lo, c_hi, which = ensemble.cells(b_lo[cut], b_hi[cut], space.columns)
        c_lo = np.concatenate([b_lo[whole], c_lo])
        c_hi = np.concatenate([b_hi[whole], c_hi])
        which = np.concatenate([np.arange(len(whole)), len(whole) + which])
        boxes = np.concatenate([whole, cut])
        idi = self._check_cells(space, check, c_lo, tally)
        stats["n_cells"] += len(c_lo)
        self._account(boxes, c_lo, c_hi, which, idi, space, check, b_id, owner, verdict, tally, row_box, row_keys)

    def _account(self, boxes: np.ndarray, c_lo: np.ndarray, c_hi: np.ndarray, which: np.ndarray, idi: np.ndarray,
                 space: KeySpace, check, b_id, owner, verdict, tally: Tally, row_box: np.ndarray, row_keys) -> None:
        """Boxes cut into parts each decided whole (cells, regions): their volumes tallied, their rows placed."""
        volume = space.volume(c_lo, c_hi)
        bad = np.bincount(which, weights=np.where(idi, volume, 0.0), minlength=len(boxes))
        good = np.bincount(which, weights=np.where(idi, 0.0, volume), minlength=len(boxes))
        np.add.at(tally.falsified, owner[boxes], bad)
        np.add.at(tally.certified, owner[boxes], good)
        verdict[boxes[bad == 0]] = CERTIFIED
        verdict[boxes[good == 0]] = FALSIFIED
        mixed = boxes[(bad > 0) & (good > 0)]
        if len(row_box) and len(mixed):  # each tracked row in a mixed box: its own key's cell decides it
            rows = np.flatnonzero(np.isin(row_box, b_id[mixed]))
            if len(rows):
                answer = self._check_cells(space, check, row_keys[rows], None)
                tally.row_status[rows] = np.where(answer, FALSIFIED, CERTIFIED)
                row_box[rows] = -1

    def _by_regions(self, boxes: np.ndarray, ensemble: TreeEnsemble, space: KeySpace, check, b_lo, b_hi, b_id, owner,
                    relevant, sure, reach, verdict, tally: Tally, stats: dict, row_box: np.ndarray,
                    row_keys) -> np.ndarray:
        """Decide ``boxes`` region by region; returns those decided (the others had too many regions).

        Tree by tree (the trees whose leaves in the box differ most first) and combination by combination, each
        region is cut by the leaves of that tree its input at that combination reaches (a leaf of intervals: the
        region intersected with it; only leaves the box reaches are tried), adding the leaf's value to that
        combination's score. A leaf that holds every combination's protected and coupled codes is reached alike by
        all of them, so such a tree cuts a region once. After each tree a region whose score, with the trees not
        yet read bounded by the extreme leaves the box reaches, is on one side of the threshold at every possible
        combination is certified, and one on opposite sides at two combinations possible there is an IDI everywhere
        (the model confirms one such region a box, as it confirms a box falsified by its bounds; a box it does not
        confirm is split instead). A region left at the end within the margin of the threshold is decided by the
        model's discrimination check at one of its points, as a cell is.
        """
        k = space.n_combinations
        cap = self.regions_per_box
        m = len(boxes)
        box_reach = reach.reshape(len(b_lo), k, -1)[boxes]  # (m, k, n_leaves)
        value = ensemble.value
        starts = ensemble.tree_start
        t_min = np.minimum.reduceat(np.where(box_reach, value, np.inf), starts, axis=2)  # (m, k, n_trees)
        t_max = np.maximum.reduceat(np.where(box_reach, value, -np.inf), starts, axis=2)
        order = np.argsort(-(t_max - t_min).mean(axis=(0, 1)), kind="stable")
        rest_lo = np.concatenate([np.cumsum(t_min[:, :, order[::-1]], axis=2)[:, :, ::-1], np.zeros((m, k, 1))], axis=2)
        rest_hi = np.concatenate([np.cumsum(t_max[:, :, order[::-1]], axis=2)[:, :, ::-1], np.zeros((m, k, 1))], axis=2)
        # the regions' codes in the narrowest integers holding every leaf's hull (copied tree after tree: memory bound)
        narrow = _code_dtype(ensemble)
        # column by column (lo[c]: every region's lower end on key column c), so a column is read contiguously
        lo: np.ndarray = np.ascontiguousarray(b_lo[boxes].T, dtype=narrow)
        hi: np.ndarray = np.ascontiguousarray(b_hi[boxes].T, dtype=narrow)
        of = np.arange(m, dtype=np.int64)
        score = np.full((m, k), ensemble.base)
        alive = np.ones(m, dtype=bool)
        plain = np.ones(space.n_columns, dtype=bool)
        plain[list(space.coupled)] = False
        plain_at = np.flatnonzero(plain)  # key columns that are not coupled: a box's codes are the input's
        plain_features = space.columns[plain_at]
        rel, ok = relevant[boxes], sure[boxes]
        margin = DECISION_MARGIN * (1.0 + abs(ensemble.threshold))
        threshold = ensemble.threshold
        done_lo, done_hi, done_of, done_near, done_opposite = [], [], [], [], []
        n_regions = 0
        for j, t in enumerate(map(int, order)):
            first = int(starts[t])
            stop = int(starts[t + 1]) if t + 1 < ensemble.n_trees else ensemble.n_leaves
            # the key columns this tree's leaves cut (a protected or coupled column is single in a box: whether a
            # leaf holds its code there is in the box's reached leaves already)
            narrower = ((ensemble.leaf_lo[first:stop][:, plain_features] > ensemble.lower[plain_features])
                        | (ensemble.leaf_hi[first:stop][:, plain_features] < ensemble.upper[plain_features]))
            cut = plain_at[narrower.any(axis=0)]
            # (cut columns, leaves): read a column at a time
            t_lo: np.ndarray = np.ascontiguousarray(ensemble.leaf_lo[first:stop][:, space.columns[cut]].T, dtype=narrow)
            t_hi: np.ndarray = np.ascontiguousarray(ensemble.leaf_hi[first:stop][:, space.columns[cut]].T, dtype=narrow)
            first_leaf = np.zeros(0, dtype=np.int64)  # each region's leaf at the first combination
            for a in range(k):
                reached = box_reach[:, a, first:stop]  # (m, leaves of the tree): the leaves each box reaches
                tested = None
                if a:
                    # a region lies inside its leaf at the first combination on every key column; where combination
                    # a reaches that leaf in its box too, the leaf holds a's protected and coupled codes, so a reaches
                    # that leaf alone there (a tree's leaves partition its inputs): no pair to test
                    alike = reached[of, first_leaf]
                    if alike.all():
                        score[:, a] += value[first + first_leaf]
                        continue
                    tested = np.flatnonzero(~alike)
                    kept = np.flatnonzero(alike)
                count = reached.sum(axis=1)
                leaf_of = np.nonzero(reached)[1]  # grouped by box
                begin = np.cumsum(count) - count
                # each region against the leaves of this tree its box reaches (a handful), pair by pair
                region_of = of if tested is None else of[tested]
                n_pairs = count[region_of]
                pair = np.repeat(np.arange(len(region_of)), n_pairs)
                within = np.arange(len(pair)) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
                leaf = leaf_of[begin[region_of][pair] + within]
                region = pair if tested is None else tested[pair]
                # most pairs miss: test them column by column, those that drop most pairs first (measured on a
                # sample of the pairs), dropping the misses as they show, then intersect
                columns: np.ndarray = np.arange(len(cut))
                if len(cut) > 1 and len(region) > 4096:
                    sample = np.arange(0, len(region), len(region) // 2048)
                    rs, ls = region[sample], leaf[sample]
                    rate = [((lo[c][rs] <= t_hi[i, ls]) & (t_lo[i, ls] <= hi[c][rs])).mean() for i, c in enumerate(cut)]
                    columns = np.argsort(rate, kind="stable")
                for i in columns:
                    c = cut[i]
                    hit = (lo[c][region] <= t_hi[i, leaf]) & (t_lo[i, leaf] <= hi[c][region])
                    region, leaf = region[hit], leaf[hit]
                new_lo, new_hi = lo[:, region], hi[:, region]
                if len(cut):
                    new_lo[cut] = np.maximum(new_lo[cut], t_lo[:, leaf])
                    new_hi[cut] = np.minimum(new_hi[cut], t_hi[:, leaf])
                new_score, new_of = score[region], of[region]
                new_score[:, a] += value[first + leaf]
                new_first = leaf if tested is None else first_leaf[region]
                if tested is not None and len(kept):
                    kept_score = score[kept]
                    kept_score[:, a] += value[first + first_leaf[kept]]
                    new_lo = np.concatenate([lo[:, kept], new_lo], axis=1)
                    new_hi = np.concatenate([hi[:, kept], new_hi], axis=1)
                    new_score = np.concatenate([kept_score, new_score])
                    new_of = np.concatenate([of[kept], new_of])
                    new_first = np.concatenate([first_leaf[kept], new_first])
                lo, hi, score, of, first_leaf = new_lo, new_hi, new_score, new_of, new_first
            n_regions += lo.shape[1]
            low, high = score + rest_lo[of, :, j + 1], score + rest_hi[of, :, j + 1]
            above, below = low > threshold + margin, high < threshold - margin
            same = ((above | ~rel[of]).all(axis=1) | (below | ~rel[of]).all(axis=1))
            opposite = (above & ok[of]).any(axis=1) & (below & ok[of]).any(axis=1) & ~same
            last = j == len(order) - 1
            settled = same | opposite | last
            if settled.any():
                done_lo.append(lo[:, settled].T)
                done_hi.append(hi[:, settled].T)
                done_of.append(of[settled])
                done_near.append(~(same | opposite)[settled])  # near the threshold: the model decides
                done_opposite.append(opposite[settled])
                keep = ~settled
                lo, hi, score, of = lo[:, keep], hi[:, keep], score[keep], of[keep]
            count = np.bincount(of, minlength=m)
            over = alive & (count > cap)
            if count.sum() > REGIONS_PER_BATCH:  # the boxes with most regions wait for splitting
                by_size = np.argsort(count, kind="stable")
                over[by_size[np.cumsum(count[by_size]) > REGIONS_PER_BATCH]] = True
            if over.any():
                alive &= ~over
                keep = alive[of]
                lo, hi, score, of = lo[:, keep], hi[:, keep], score[keep], of[keep]
            if not alive.any():
                return np.zeros(0, dtype=np.int64)
            if not len(of):
                break
        c_lo, c_hi = np.concatenate(done_lo).astype(np.int64), np.concatenate(done_hi).astype(np.int64)
        c_of, near, opposite = np.concatenate(done_of), np.concatenate(done_near), np.concatenate(done_opposite)
        keep = alive[c_of]
        c_lo, c_hi, c_of, near, opposite = c_lo[keep], c_hi[keep], c_of[keep], near[keep], opposite[keep]
        # an IDI by the leaves (clear of the margin at two possible combinations): the model confirms one a box,
        # as it confirms a box falsified by its bounds; a box it does not confirm is split instead
        idi = opposite.copy()
        witness = np.flatnonzero(opposite)[np.unique(c_of[opposite], return_index=True)[1]]
        if len(witness):
            confirmed = self._check_cells(space, check, c_lo[witness], tally)
            alive[c_of[witness[~confirmed]]] = False
        if near.any():
            idi[near] = self._check_cells(space, check, c_lo[near], tally)
        keep = alive[c_of]
        c_lo, c_hi, c_of, idi = c_lo[keep], c_hi[keep], c_of[keep], idi[keep]
        stats["n_region_boxes"] += int(alive.sum())
        stats["n_regions"] += n_regions
        decided = boxes[alive]
        which = np.searchsorted(np.flatnonzero(alive), c_of)
        self._account(decided, c_lo, c_hi, which, idi, space, check, b_id, owner, verdict, tally, row_box, row_keys)
        return decided

    @staticmethod
    def _plan(plan: _Plan, halve: np.ndarray, ensemble: TreeEnsemble, space: KeySpace, lo: np.ndarray,
              hi: np.ndarray, cuts: np.ndarray, read: np.ndarray, reach: np.ndarray) -> None:
        """Where each open box splits: its key column of most influence, at the leaves' median edge there.

        The edge is :meth:`TreeEnsemble.leaf_cut`; a box with no cut left is halved on a column a constraint reads.
        """
        if not len(halve):
            return
        count = cuts[halve]
        column = count.argmax(axis=1)
        has_cut = count.max(axis=1) > 0
        width = np.where(read[None], hi[halve] - lo[halve], -1)
        column = np.where(has_cut, column, width.argmax(axis=1))
        plan.column[halve] = column
        mid = (lo[halve, column] + hi[halve, column]) // 2
        for c in np.unique(column[has_cut]):
            sel = has_cut & (column == c)
            feature = int(space.columns[c])
            mid[sel] = ensemble.leaf_cut(lo[halve[sel], c], hi[halve[sel], c], feature, reach[halve[sel]]) - 1
        plan.mid[halve] = mid

    @staticmethod
    def _check_cells(space: KeySpace, check, keys: np.ndarray, tally: Tally | None) -> np.ndarray:
        """The discrimination check at one possible input of each key; whether each is an IDI (recorded)."""
        possibility = space.possibility(keys, keys)
        combination = (np.zeros(len(keys), dtype=np.int64) if possibility is None
                       else (possibility == POSSIBLE).argmax(axis=1))
        result = check.check(space.points(keys, combination))
        if tally is not None and result.is_idi.any():
            idi = result.is_idi
            tally.idis.append(result.X[idi])
            tally.counterparts.append(result.counterparts(check.domain)[idi])
            tally.labels.append(result.labels[idi])
            tally.counterpart_labels.append(result.counterpart_label[idi])
        return result.is_idi


def _executor(n_jobs: int):
    """The other ``n_jobs - 1`` processes (loky's, reused between runs; each stops after a minute idle)."""
    from joblib.externals.loky import get_reusable_executor

    return get_reusable_executor(max_workers=n_jobs - 1, timeout=60)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system says it, else the machine's count).

    Returns
    -------
    int
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on every system
        return max(1, os.cpu_count() or 1)


class _Levels(_Frontier):
    """The open boxes, each kept with its level (the power of two of its priority) so they can be dealt out."""

    def take_all(self) -> tuple:
        """Every open box, emptied out: ``(lo, hi, depth, ident, owner, level)``."""
        parts, levels = [], []
        for level, chunks in self.buckets.items():
            for chunk in chunks:
                parts.append(chunk)
                levels.append(np.full(len(chunk[0]), level, dtype=np.int64))
        self.buckets, self.size = {}, 0
        if not parts:
            e = np.zeros((0, self.width), dtype=np.int64)
            z = np.zeros(0, np.int64)
            return e, e, z, z, z, z
        return (*(np.concatenate([p[i] for p in parts]) for i in range(5)), np.concatenate(levels))


class _Loop:
    """One process's batches: pop the largest open boxes, bound, decide and split them, until a budget is spent."""

    def __init__(self, engine: TreeBranchAndBound, ensemble: TreeEnsemble, space: KeySpace, check,
                 frontier: _Levels, tally: Tally, stats: dict, row_box: np.ndarray, row_keys, limited: list,
                 deadline: float | None, stop_on_idi: bool, on_progress, started: float):
        self.engine, self.ensemble, self.space, self.check = engine, ensemble, space, check
        self.frontier, self.tally, self.stats, self.row_box, self.row_keys = frontier, tally, stats, row_box, row_keys
        self.limited, self.deadline, self.stop_on_idi = limited, deadline, stop_on_idi
        self.on_progress, self.started = on_progress, started
        self.per_batch = engine.batch_size or int(np.clip(BLOCK // max(1, space.n_combinations * ensemble.n_leaves),
                                                          1, MAX_BATCH))
        self.read = _constraint_columns(space)
        self.batch: tuple | None = None

    def spent(self) -> bool:
        """Whether the time or box budget is spent (recorded in ``stats["stopped"]``)."""
        if self.deadline is not None and time.perf_counter() > self.deadline:
            self.stats["stopped"] = "time"
            return True
        if self.engine.max_boxes is not None and self.stats["n_boxes"] >= self.engine.max_boxes:
            self.stats["stopped"] = "boxes"
            return True
        return False

    def progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress({"seconds": time.perf_counter() - self.started,
                              "certified": float(self.tally.certified.sum()),
                              "falsified": float(self.tally.falsified.sum()), "n_open": self.frontier.size})

    def run(self, until: int | None = None) -> None:
        """Batches until no box is open, a budget is spent, or ``until`` boxes have been bounded in all."""
        while self.frontier.size and (until is None or self.stats["n_boxes"] < until):
            if self.spent():
                return
            batch = self.frontier.pop(self.per_batch)
            if self.stop_on_idi:
                batch = self.engine._drop_decided(batch, self.tally, self.stats)
            self.batch = batch
            if len(batch[0]):
                self.engine._step(batch, self.ensemble, self.space, self.check, self.frontier, self.tally,
                                  self.stats, self.row_box, self.row_keys, self.limited, self.read)
            self.batch = None
            self.progress()


def _share(static: tuple, share: dict, n_boxes: int, seconds: float | None) -> dict:
    """One process's share of a round (:meth:`TreeBranchAndBound._rounds`): at most ``n_boxes`` boxes bounded.

    Returns what the round proved there (the tally's additions, the rows' places), the boxes left open with their
    reached leaves, and the model's query and row counts spent on it.
    """
    params, ensemble, space, check = static
    engine = TreeBranchAndBound(**params)
    started, cpu = time.perf_counter(), _cpu_seconds()
    engine._n_cached = 0
    engine._next_id = share["next_id"]
    engine._cache = share["cache"]
    n_owners = share["n_owners"]
    base = share["falsified"]
    rows = share["rows"]
    tally = Tally(certified=np.zeros(n_owners), falsified=np.zeros(n_owners) if base is None else base.copy(),
                  row_status=np.full(len(rows), UNDECIDED, dtype=np.int8))
    stats = {"n_boxes": 0, "n_decided_by_bounds": 0, "n_blind": 0, "n_cells": 0, "n_region_boxes": 0,
             "n_regions": 0, "n_splits": 0, "max_depth": 0, "n_depth_limited": 0, "n_dropped": 0,
             "stopped": "complete"}
    frontier = _Levels(space.n_columns)
    lo, hi, depth, ident, owner, level = share["boxes"]
    frontier.push(lo, hi, depth, ident, owner, level.astype(np.float64))
    row_box = np.asarray(share["row_box"], dtype=np.int64).copy()
    limited: list[tuple] = []
    model = check.model
    queries, model_rows = model.n_queries, model.n_rows
    loop = _Loop(engine, ensemble, space, check, frontier, tally, stats, row_box, share["row_keys"], limited,
                 None if seconds is None else started + seconds, share["stop_on_idi"], None, started)
    loop.run(until=n_boxes)
    left = frontier.take_all()
    cache, size = {}, 0
    for i in map(int, left[3]):  # the open boxes' parents' reached leaves, as many as fit
        entry = engine._cache.get(i)
        if entry is not None and size + entry[0].nbytes <= SHIP_CACHE_BYTES:
            cache[i] = entry
            size += entry[0].nbytes
    stats["n_reach_cached"] = engine._n_cached
    return {"certified": tally.certified, "falsified": tally.falsified - (0.0 if base is None else base),
            "idis": tally.idis, "counterparts": tally.counterparts, "labels": tally.labels,
            "counterpart_labels": tally.counterpart_labels, "rows": rows, "row_box": row_box,
            "row_status": tally.row_status, "open": left, "limited": limited, "cache": cache, "stats": stats,
            "n_queries": int(model.n_queries - queries), "n_rows": int(model.n_rows - model_rows),
            "cpu_seconds": _cpu_seconds() - cpu, "peak_rss_mib": _peak_mib()}


def _cpu_seconds() -> float:
    """User + system CPU seconds of the process calling it."""
    import resource

    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _peak_mib() -> float:
    """Peak resident memory of the process calling it, in MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _code_dtype(ensemble: TreeEnsemble) -> type:
    """The narrowest signed integer holding every code and every leaf's hull (an empty hull is one past a bound)."""
    low = int(ensemble.lower.min(initial=0)) - 1
    high = int(ensemble.upper.max(initial=0)) + 1
    for kind in (np.int16, np.int32):
        if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max:
            return kind
    return np.int64


def _constraint_columns(space: KeySpace) -> np.ndarray:
    """Which key columns some constraint reads."""
    read = np.zeros(space.n_columns, dtype=bool)
    position = {int(c): i for i, c in enumerate(space.columns)}
    for rule in space.domain.constraints:
        for c in rule.columns:
            if int(c) in position:
                read[position[int(c)]] = True
    return read
