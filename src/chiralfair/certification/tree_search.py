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

    Raises
    ------
    ConfigError
        For a bad budget or batch size.
    """

    def __init__(self, *, max_seconds: float | None = 60.0, max_depth: int | None = None,
                 max_boxes: int | None = None, batch_size: int | None = None, cells_per_box: int = 1024,
                 cells_per_batch: int = 65536, focus: float = 2.0, blind: bool = True, regions_per_box: int = 4096):
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

    def params(self) -> dict:
        """The parameters, as given (JSON-ready).

        Returns
        -------
        dict
        """
        return {"engine": "trees", "max_seconds": self.max_seconds, "max_depth": self.max_depth,
                "max_boxes": self.max_boxes, "batch_size": self.batch_size, "cells_per_box": self.cells_per_box,
                "cells_per_batch": self.cells_per_batch, "focus": self.focus, "blind": self.blind,
                "regions_per_box": self.regions_per_box}

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
                 "n_leaves": ensemble.n_leaves}
        frontier = _Frontier(space.n_columns)
        frontier.push(lo.astype(np.int64), hi.astype(np.int64), np.zeros(n_owners, np.int64),
                      np.arange(n_owners, dtype=np.int64), np.arange(n_owners, dtype=np.int64),
                      np.log2(space.volume(lo, hi)))
        self._next_id = n_owners
        self._cache: dict[int, tuple[np.ndarray, int]] = {}  # box id -> its parent's reached leaves (packed), feature
        row_box = np.zeros(0, np.int64) if row_keys is None else (
            np.zeros(n_rows, np.int64) if row_owner is None else np.asarray(row_owner, dtype=np.int64).copy())
        per_batch = self.batch_size or int(np.clip(BLOCK // max(1, space.n_combinations * ensemble.n_leaves), 1,
                                                   MAX_BATCH))
        read = _constraint_columns(space)
        batch = None
        limited: list[tuple] = []
        try:
            while frontier.size:
                if self.max_seconds is not None and time.perf_counter() - started > self.max_seconds:
                    stats["stopped"] = "time"
                    break
                if self.max_boxes is not None and stats["n_boxes"] >= self.max_boxes:
                    stats["stopped"] = "boxes"
                    break
                batch = frontier.pop(per_batch)
                if stop_on_idi:
                    batch = self._drop_decided(batch, tally, stats)
                if len(batch[0]):
                    self._step(batch, ensemble, space, check, frontier, tally, stats, row_box, row_keys, limited,
                               read)
                batch = None
                if on_progress is not None:
                    on_progress({"seconds": time.perf_counter() - started, "certified": float(tally.certified.sum()),
                                 "falsified": float(tally.falsified.sum()), "n_open": frontier.size})
        except KeyboardInterrupt:
            stats["stopped"] = "interrupted"
            logger.warning("certification interrupted: reporting what was proved so far")
        stats["n_reach_cached"] = self._n_cached
        self._cache = {}
        return close_tally(tally, stats, space, [frontier.all(), *limited] + ([batch] if batch is not None else []),
                           started)

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
        lo, hi = b_lo[boxes].astype(narrow), b_hi[boxes].astype(narrow)
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
            for a in range(k):
                reached = box_reach[:, a, first:stop]  # (m, leaves of the tree): the leaves each box reaches
                count = reached.sum(axis=1)
                leaf_of = np.nonzero(reached)[1]  # grouped by box
                begin = np.cumsum(count) - count
                # each region against the leaves of this tree its box reaches (a handful), pair by pair
                n_pairs = count[of]
                region = np.repeat(np.arange(len(lo)), n_pairs)
                within = np.arange(len(region)) - np.repeat(np.cumsum(n_pairs) - n_pairs, n_pairs)
                leaf = leaf_of[begin[of][region] + within]
                # most pairs miss: test them column by column, dropping the misses as they show, then intersect
                for i, c in enumerate(cut):
                    hit = (lo[region, c] <= t_hi[i, leaf]) & (t_lo[i, leaf] <= hi[region, c])
                    region, leaf = region[hit], leaf[hit]
                lo, hi = lo[region], hi[region]
                if len(cut):
                    lo[:, cut] = np.maximum(lo[:, cut], t_lo[:, leaf].T)
                    hi[:, cut] = np.minimum(hi[:, cut], t_hi[:, leaf].T)
                score, of = score[region], of[region]
                score[:, a] += value[first + leaf]
            n_regions += len(lo)
            low, high = score + rest_lo[of, :, j + 1], score + rest_hi[of, :, j + 1]
            above, below = low > threshold + margin, high < threshold - margin
            same = ((above | ~rel[of]).all(axis=1) | (below | ~rel[of]).all(axis=1))
            opposite = (above & ok[of]).any(axis=1) & (below & ok[of]).any(axis=1) & ~same
            last = j == len(order) - 1
            settled = same | opposite | last
            if settled.any():
                done_lo.append(lo[settled])
                done_hi.append(hi[settled])
                done_of.append(of[settled])
                done_near.append(~(same | opposite)[settled])  # near the threshold: the model decides
                done_opposite.append(opposite[settled])
                keep = ~settled
                lo, hi, score, of = lo[keep], hi[keep], score[keep], of[keep]
            count = np.bincount(of, minlength=m)
            over = alive & (count > cap)
            if count.sum() > REGIONS_PER_BATCH:  # the boxes with most regions wait for splitting
                by_size = np.argsort(count, kind="stable")
                over[by_size[np.cumsum(count[by_size]) > REGIONS_PER_BATCH]] = True
            if over.any():
                alive &= ~over
                keep = alive[of]
                lo, hi, score, of = lo[keep], hi[keep], score[keep], of[keep]
            if not alive.any():
                return np.zeros(0, dtype=np.int64)
            if not len(lo):
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
