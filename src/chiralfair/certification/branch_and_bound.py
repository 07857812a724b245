"""Branch and bound over boxes of keys: bound every protected combination, decide, split what is left, anytime.

Each step takes the largest undecided boxes (a batch of ``batch_size`` network rows: boxes times protected
combinations), bounds the network at every
protected combination of each (interval propagation first, then CROWN for the boxes it leaves open), and decides
them (:mod:`.decision`). A box left open is split in two on one column (:func:`~.key_space.split_boxes`): the one
that loosens its bounds most (``split="influence"``) or the widest (``split="widest"``); a column one code wide is
a point there and is never split. Before it is split, the box's candidate point is checked on the model with the
discrimination check, so the IDIs found are real and counted by the usual rule (unique keys). A box that is one key
is decided by that check alone: certified or an IDI, exactly. A box the bounds prove to hold only IDIs is confirmed
on the model at one point (recorded as its concrete IDI; left open and split if the model disagrees), so every
falsified box carries a concrete IDI inside it.

The run stops when no box is left, at the time budget, or on ``KeyboardInterrupt``, and reports what it proved up to
then: the volume (number of keys) certified fair and falsified, per initial box (its *owner*), and for each tracked
data row whether the box holding it was certified, falsified, or is still undecided. Boxes deeper than
``max_depth`` splits are left undecided.

References
----------
.. [1] Bunel et al. "Branch and bound for piecewise linear neural network verification." JMLR 21, 2020.
.. [2] Wang et al. "Beta-CROWN." NeurIPS 2021; Xu et al. "Fast and complete: enabling complete neural network
   verification with rapid and massively parallel incomplete verifiers." ICLR 2021 (batched input splitting).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..models.threads import single_intra_op_thread
from .crown import LinearBounds, crown_bounds
from .decision import Carve, Decision, carve, decide
from .ibp import interval_bounds
from .key_space import IMPOSSIBLE, POSSIBLE, KeySpace, split_boxes
from .options import STAGES, check_certify_options

logger = logging.getLogger(__name__)

# Smallest share of a box that a certified slab must hold to be carved off (else the box is halved).
CARVE_MIN = 0.1
CERTIFIED, FALSIFIED, UNDECIDED = 0, 1, 2


@dataclass
class Tally:
    """What a branch and bound run proved (mutable while it runs).

    Attributes
    ----------
    certified, falsified : numpy.ndarray of float64, shape (n_owners,)
        Keys proven fair, and proven IDIs, inside each initial box.
    row_status : numpy.ndarray of int8, shape (n_rows,)
        :data:`CERTIFIED`, :data:`FALSIFIED` or :data:`UNDECIDED` for each tracked row.
    idis, counterparts : list of numpy.ndarray of int64, shape (n, n_features)
        Concrete IDIs found, and the counterpart that gets the other label.
    labels, counterpart_labels : list of numpy.ndarray of int64, shape (n,)
    boxes : list of (numpy.ndarray, numpy.ndarray, numpy.ndarray)
        With ``keep_boxes``: every decided box, as ``(lo, hi, verdict)`` of shapes (n, n_columns), (n, n_columns),
        (n,); empty otherwise.
    stats : dict
        ``n_boxes`` (bounded), ``n_decided_by_ibp``, ``n_decided_by_crown``, ``n_splits``, ``n_points``
        (one-key boxes checked exactly), ``n_candidates`` (candidate points checked), ``max_depth``,
        ``n_open`` and ``open_volume`` (undecided boxes left), ``stopped`` (``"complete"``, ``"time"``,
        ``"interrupted"``).
    """

    certified: np.ndarray
    falsified: np.ndarray
    row_status: np.ndarray
    idis: list = field(default_factory=list)
    counterparts: list = field(default_factory=list)
    labels: list = field(default_factory=list)
    counterpart_labels: list = field(default_factory=list)
    boxes: list = field(default_factory=list)
    stats: dict = field(default_factory=dict)


@dataclass
class _Plan:
    """How each box of a batch is split: on which key column, where, and whether one part is already certified."""

    column: np.ndarray  # key column (position in KeySpace.columns)
    mid: np.ndarray  # parts [lo, mid] and [mid + 1, hi]
    carved: np.ndarray  # -1: halved; 0: the lower part is certified; 1: the upper part
    share: np.ndarray  # the certified part's share of the box (0 when halved)

    @classmethod
    def bisect(cls, n: int) -> _Plan:
        return cls(np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, -1, np.int8), np.zeros(n))

    def take(self, boxes: np.ndarray, slab: Carve, position: np.ndarray) -> None:
        """Adopt the slabs of ``boxes`` holding at least :data:`CARVE_MIN` of their box."""
        use = slab.share >= CARVE_MIN
        b = boxes[use]
        self.column[b] = position[slab.column[use]]
        self.mid[b] = slab.mid[use]
        self.carved[b] = np.where(slab.high[use], 1, 0)
        self.share[b] = slab.share[use]

    def bisect_on(self, boxes: np.ndarray, column: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        """Halve ``boxes`` on ``column`` (one per box of the batch) at the middle code."""
        c = column[boxes]
        self.column[boxes] = c
        self.mid[boxes] = (lo[boxes, c] + hi[boxes, c]) // 2
        self.carved[boxes] = -1


@dataclass(frozen=True)
class _Inputs:
    """The network inputs of a batch: (box, combination) rows, box-major, and what the decisions read."""

    lo: Any  # torch.Tensor (n_boxes * n_combinations, n_inputs), float64
    hi: Any
    radius: Any  # (n_boxes, n_inputs)
    centre: Any  # (n_boxes, n_inputs)
    possibility: np.ndarray | None
    relevant: np.ndarray
    n_combinations: int

    def rows(self, boxes: np.ndarray) -> tuple:
        import torch

        k = self.n_combinations
        index = torch.as_tensor((boxes[:, None] * k + np.arange(k)[None]).reshape(-1))
        return self.lo[index], self.hi[index]


def _as_double(bounds: LinearBounds) -> LinearBounds:
    return LinearBounds(*(x.double() for x in (bounds.lower_coef, bounds.lower_const, bounds.upper_coef,
                                               bounds.upper_const, bounds.lower, bounds.upper)))


def _merge(quick: Decision, checked: Decision, claim: np.ndarray) -> Decision:
    """``quick``'s decisions with the claimed boxes' replaced by ``checked`` (their float64 decisions)."""
    merged = {}
    for name in ("certified", "falsified", "candidate_high", "candidate_combination", "influence", "gap"):
        value = getattr(quick, name).copy()
        value[claim] = getattr(checked, name)
        merged[name] = value
    return Decision(**merged)


def _merge_slab(quick: Carve | None, checked: Carve | None, claim: np.ndarray, n: int) -> Carve | None:
    if quick is None or checked is None:
        return None
    merged = [getattr(quick, name).copy() for name in ("column", "mid", "high", "share")]
    for value, name in zip(merged, ("column", "mid", "high", "share"), strict=True):
        value[claim] = getattr(checked, name)
    merged[3][~claim] = 0.0  # a float32 slab is never carved unchecked
    return Carve(*merged)


def close_tally(tally: Tally, stats: dict, space: KeySpace, left: list, started: float) -> Tally:
    """End a branch and bound: record what is left open (boxes and their volume) and the wall seconds.

    Parameters
    ----------
    tally : Tally
    stats : dict
        The search's statistics so far; ``n_open``, ``open_volume`` and ``seconds`` are added.
    space : KeySpace
    left : list of tuple
        The parts still open (the frontier, boxes over a limit, a batch interrupted), each ``(lo, hi, ...)``.
    started : float
        ``time.perf_counter()`` at the search's start.

    Returns
    -------
    Tally
        ``tally`` with ``stats`` set.
    """
    left_lo = np.concatenate([part[0] for part in left])
    left_hi = np.concatenate([part[1] for part in left])
    stats["n_open"] = int(len(left_lo))
    stats["open_volume"] = float(space.volume(left_lo, left_hi).sum())
    stats["seconds"] = time.perf_counter() - started
    tally.stats = stats
    return tally


class _Frontier:
    """Open boxes in buckets by the power of two of their volume; the largest come out first."""

    def __init__(self, width: int):
        self.width = width
        self.buckets: dict[int, list[tuple]] = {}
        self.size = 0

    def push(self, lo, hi, depth, ident, owner, priority) -> None:
        if not len(lo):
            return
        level = np.floor(priority).astype(np.int64)
        for e in np.unique(level):
            take = level == e
            self.buckets.setdefault(int(e), []).append((lo[take], hi[take], depth[take], ident[take], owner[take]))
        self.size += len(lo)

    def pop(self, n: int) -> tuple:
        parts = []
        taken = 0
        while taken < n and self.buckets:
            top = max(self.buckets)
            chunks = self.buckets[top]
            lo, hi, depth, ident, owner = chunks.pop()
            if not chunks:
                del self.buckets[top]
            room = n - taken
            if len(lo) > room:
                chunks = self.buckets.setdefault(top, [])
                chunks.append((lo[room:], hi[room:], depth[room:], ident[room:], owner[room:]))
                lo, hi, depth, ident, owner = lo[:room], hi[:room], depth[:room], ident[:room], owner[:room]
            parts.append((lo, hi, depth, ident, owner))
            taken += len(lo)
        self.size -= taken
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(5))

    def all(self) -> tuple:
        parts = [c for chunks in self.buckets.values() for c in chunks]
        if not parts:
            e = np.zeros((0, self.width), dtype=np.int64)
            return e, e, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(5))


class BranchAndBound:
    """Batched branch and bound over boxes of keys, with a time and depth budget (anytime).

    Parameters
    ----------
    max_seconds : float or None, default=60.0
        Wall-second budget (None: until every box is decided).
    max_depth : int or None, default=None
        Splits below an initial box after which a box is left undecided (None: down to single keys).
    max_boxes : int or None, default=None
        Boxes bounded before the run stops (None: no limit). Unlike the time budget, the same on every machine:
        the same budget gives the same result.
    batch_size : int, default=2048
        Network rows bounded together: a batch holds ``batch_size // n_combinations`` boxes (at least one).
    bound : {"crown", "symbolic", "ibp"}, default="crown"
        ``"crown"``: interval propagation, then CROWN with back-substituted hidden-layer bounds for the boxes it
        leaves open; ``"symbolic"``: interval propagation, then CROWN over hidden-layer bounds from symbolic
        intervals (:mod:`.symbolic`; cheaper, looser); ``"ibp"``: interval propagation only (:data:`STAGES`).
    split : {"influence", "widest"}, default="influence"
        The column a box is halved on: the one contributing most to the looseness of its linear bounds, or the one
        with most codes.
    carve : bool, default=True
        Where a box's linear bounds already certify a slab of at least :data:`CARVE_MIN` of it along one column
        (:func:`~.decision.carve`), split there and count the slab at once, instead of halving.
    focus : float, default=2.0
        Order of the open boxes: largest first, with a box whose bounds lie mostly on one side of 0 moved ahead as
        if it were ``gap ** -focus`` times larger (``gap`` of :class:`~.decision.Decision`); 0 orders by volume
        alone. Measured on the census DNN (50,000 boxes): 13.0% certified at 0, 15.4% at 1, 16.0% at 2, 14.5% at 4.
    device : str, default="cpu"
        Where the bounds are computed (torch).

    Raises
    ------
    ConfigError
        For a bad budget, batch size, bound or split name.
    """

    def __init__(self, *, max_seconds: float | None = 60.0, max_depth: int | None = None,
                 max_boxes: int | None = None, batch_size: int = 2048,
                 bound: str = "crown", split: str = "influence", carve: bool = True, focus: float = 2.0,
                 device: str = "cpu"):
        checked = check_certify_options(bound=bound, split=split, max_seconds=max_seconds, max_depth=max_depth,
                                        max_boxes=max_boxes, batch_size=batch_size, focus=focus)
        self.max_seconds = checked["max_seconds"]
        self.max_depth = checked["max_depth"]
        self.max_boxes = checked["max_boxes"]
        self.batch_size = checked["batch_size"]
        self.bound = bound
        self.split = split
        self.carve = bool(carve)
        self.focus = checked["focus"]
        self.device = device

    def params(self) -> dict:
        """The parameters, as given (JSON-ready).

        Returns
        -------
        dict
        """
        return {"max_seconds": self.max_seconds, "max_depth": self.max_depth, "max_boxes": self.max_boxes,
                "batch_size": self.batch_size,
                "bound": self.bound, "split": self.split, "carve": self.carve, "focus": self.focus,
                "device": self.device}

    def run(self, network, space: KeySpace, check, lo: np.ndarray, hi: np.ndarray, *,
            row_keys: np.ndarray | None = None, row_owner: np.ndarray | None = None,
            on_progress: Callable[[dict], None] | None = None, keep_boxes: bool = False) -> Tally:
        """Certify the boxes ``[lo, hi]`` (each its own owner) as far as the budget allows.

        Parameters
        ----------
        network : ReluNetwork
            The model under test's network (:func:`~chiralfair.certification.reading.relu_network`).
        space : KeySpace
            The boxes' space (the domain's keys).
        check : DiscriminationCheck
            On the model under test: checks candidates and one-key boxes.
        lo, hi : numpy.ndarray of int64, shape (n_owners, n_columns)
            The initial boxes, disjoint and inside the domain; coupled columns single roles.
        row_keys : numpy.ndarray of int64, shape (n_rows, n_columns), optional
            Keys of data rows to track (each must lie in the box of ``row_owner``).
        row_owner : numpy.ndarray of int64, shape (n_rows,), optional
            The initial box holding each row (-1: in none; such a row stays undecided).
        on_progress : callable, optional
            Called after each batch with ``{"seconds", "certified", "falsified", "n_open"}`` (volumes in keys).
        keep_boxes : bool, default=False
            Keep every decided box in ``Tally.boxes`` (memory grows with the boxes decided).

        Returns
        -------
        Tally
        """
        started = time.perf_counter()
        weights, biases = network.tensors(self.device)
        n_owners = len(lo)
        n_rows = 0 if row_keys is None else len(row_keys)
        tally = Tally(certified=np.zeros(n_owners), falsified=np.zeros(n_owners),
                      row_status=np.full(n_rows, UNDECIDED, dtype=np.int8))
        stats = {"n_boxes": 0, **{f"n_decided_by_{s}": 0 for s in ("ibp", "symbolic", "crown")}, "n_splits": 0,
                 "n_carved": 0,
                 "n_points": 0, "n_candidates": 0, "max_depth": 0, "n_depth_limited": 0, "stopped": "complete"}
        frontier = _Frontier(space.n_columns)
        frontier.push(lo.astype(np.int64), hi.astype(np.int64), np.zeros(n_owners, np.int64),
                      np.arange(n_owners, dtype=np.int64), np.arange(n_owners, dtype=np.int64),
                      np.log2(space.volume(lo, hi)))
        self._next_id = n_owners
        row_box = np.zeros(0, np.int64) if row_keys is None else (
            np.zeros(n_rows, np.int64) if row_owner is None else np.asarray(row_owner, dtype=np.int64).copy())
        batch = None
        limited: list[tuple] = []  # boxes left open at the depth budget
        self._keep_boxes = keep_boxes
        try:
            with single_intra_op_thread():  # layers of width <= 30: intra-op threads only spin
                while frontier.size:
                    if self.max_seconds is not None and time.perf_counter() - started > self.max_seconds:
                        stats["stopped"] = "time"
                        break
                    if self.max_boxes is not None and stats["n_boxes"] >= self.max_boxes:
                        stats["stopped"] = "boxes"
                        break
                    batch = frontier.pop(max(1, self.batch_size // space.n_combinations))
                    self._step(batch, network, weights, biases, space, check, frontier, tally, stats, row_box,
                               row_keys, limited)
                    batch = None
                    if on_progress is not None:
                        on_progress({"seconds": time.perf_counter() - started,
                                     "certified": float(tally.certified.sum()),
                                     "falsified": float(tally.falsified.sum()), "n_open": frontier.size})
        except KeyboardInterrupt:
            stats["stopped"] = "interrupted"
            logger.warning("certification interrupted: reporting what was proved so far")
        return close_tally(tally, stats, space, [frontier.all(), *limited] + ([batch] if batch is not None else []),
                           started)

    def _step(self, batch, network, weights, biases, space: KeySpace, check, frontier: _Frontier, tally: Tally,
              stats: dict, row_box: np.ndarray, row_keys, limited: list) -> None:
        """Bound, decide and split one batch of boxes."""
        b_lo, b_hi, depth, b_id, owner = batch
        stats["n_boxes"] += len(b_lo)
        stats["max_depth"] = max(stats["max_depth"], int(depth.max()))
        verdict, plan, candidates, gap = self._decide(weights, biases, space, b_lo, b_hi, stats)
        proven = np.flatnonzero(verdict == FALSIFIED)
        if len(proven):  # every key of these is an IDI by the bounds: the model confirms one point of each
            confirmed = self._check_points(space, check, b_lo[proven], tally)
            verdict[proven[~confirmed]] = UNDECIDED  # the model is the authority: split on
            stats["n_points"] += len(proven)
        point = (b_lo == b_hi).all(axis=1) & (verdict == UNDECIDED)
        if point.any():  # one key: the model's own check decides, exactly
            idi = self._check_points(space, check, b_lo[point], tally)
            verdict[np.flatnonzero(point)] = np.where(idi, FALSIFIED, CERTIFIED)
            stats["n_points"] += int(point.sum())
        self._count(tally, owner, space.volume(b_lo, b_hi), verdict)
        if self._keep_boxes:
            decided = verdict != UNDECIDED
            tally.boxes.append((b_lo[decided], b_hi[decided], verdict[decided]))
        open_box = np.flatnonzero(verdict == UNDECIDED)
        if len(open_box):
            self._check_candidates(space, check, b_lo[open_box], b_hi[open_box], candidates, open_box, tally, stats)
        deep = depth[open_box] >= self.max_depth if self.max_depth is not None else np.zeros(len(open_box), bool)
        if deep.any():
            stats["n_depth_limited"] += int(deep.sum())
            limited.append((b_lo[open_box[deep]], b_hi[open_box[deep]]))
        halve = open_box[~deep]
        c_lo, c_hi = split_boxes(b_lo[halve], b_hi[halve], plan.column[halve], plan.mid[halve])
        m = len(halve)
        child_verdict = np.full(2 * m, UNDECIDED, dtype=np.int8)
        carved = plan.carved[halve]
        child_verdict[np.flatnonzero(carved == 0)] = CERTIFIED
        child_verdict[m + np.flatnonzero(carved == 1)] = CERTIFIED
        stats["n_carved"] += int((carved >= 0).sum())
        child_owner = np.tile(owner[halve], 2)
        self._count(tally, child_owner, space.volume(c_lo, c_hi), child_verdict)
        if self._keep_boxes:
            done = child_verdict != UNDECIDED
            tally.boxes.append((c_lo[done], c_hi[done], child_verdict[done]))
        child_id = np.arange(self._next_id, self._next_id + 2 * m, dtype=np.int64)
        self._next_id += 2 * m
        if len(row_box):
            _move_rows(row_box, row_keys, tally.row_status, b_id, verdict, halve, plan, b_lo, b_hi, child_id,
                       child_verdict, open_box[deep])
        stats["n_splits"] += m
        keep = child_verdict == UNDECIDED
        # largest first, and nearer to certified first: a box whose bounds are mostly on one side comes earlier
        priority = np.log2(space.volume(c_lo, c_hi)) - self.focus * np.log2(np.maximum(np.tile(gap[halve], 2), 2.0**-8))
        frontier.push(c_lo[keep], c_hi[keep], np.tile(depth[halve] + 1, 2)[keep], child_id[keep], child_owner[keep],
                      priority[keep])

    @staticmethod
    def _count(tally: Tally, owner: np.ndarray, volume: np.ndarray, verdict: np.ndarray) -> None:
        np.add.at(tally.certified, owner[verdict == CERTIFIED], volume[verdict == CERTIFIED])
        np.add.at(tally.falsified, owner[verdict == FALSIFIED], volume[verdict == FALSIFIED])

    # ------------------------------------------------------------------ one batch
    def _decide(self, weights, biases, space: KeySpace, lo, hi, stats) -> tuple[np.ndarray, _Plan, tuple,
                                                                             np.ndarray]:
        """Each box's verdict (CERTIFIED / FALSIFIED / UNDECIDED), how to split it, and its candidate point.

        The bounds are computed in stages, each for the boxes the one before left open (:data:`STAGES`); the
        candidates are ``(boxes, corner_high, combination)`` (:class:`~.decision.Decision`) of the last stage.
        """
        import torch

        n, k = len(lo), space.n_combinations
        xlo, xhi = space.input_boxes(lo, hi)
        t_lo = torch.as_tensor(xlo.reshape(n * k, -1), dtype=torch.float64, device=self.device)
        t_hi = torch.as_tensor(xhi.reshape(n * k, -1), dtype=torch.float64, device=self.device)
        radius = ((t_hi - t_lo) / 2).reshape(n, k, -1)[:, 0]
        possibility = space.possibility(lo, hi)
        relevant = np.ones((n, k), bool) if possibility is None else possibility != IMPOSSIBLE
        verdict = np.full(n, UNDECIDED, dtype=np.int8)
        influence = np.zeros((n, xlo.shape[2]))
        plan = _Plan.bisect(n)
        candidates: tuple = (np.zeros(0, np.int64), np.zeros((0, xlo.shape[2]), bool), np.zeros(0, np.int64))
        rest = np.arange(n)
        gap = np.ones(n)
        inputs = _Inputs(t_lo, t_hi, radius, ((t_lo + t_hi) / 2).reshape(n, k, -1)[:, 0], possibility, relevant, k)
        for stage in STAGES[self.bound]:
            if not len(rest):
                break
            decision, slab = self._stage(stage, rest, inputs, weights, biases)
            verdict[rest[decision.certified]] = CERTIFIED
            verdict[rest[decision.falsified]] = FALSIFIED
            stats[f"n_decided_by_{stage}"] += int(decision.certified.sum() + decision.falsified.sum())
            still = ~decision.certified & ~decision.falsified
            influence[rest] = decision.influence
            gap[rest] = decision.gap
            candidates = (rest[still], decision.candidate_high[still], decision.candidate_combination[still])
            if slab is not None:
                plan.take(rest, slab, space.input_position)
            rest = rest[still]
        width = hi - lo
        score = influence[:, space.columns] if self.split == "influence" else width.astype(np.float64)
        score = np.where(width > 0, score, -1.0)
        flat = score.max(axis=1) <= 0
        score[flat] = np.where(width[flat] > 0, width[flat], -1)
        plan.bisect_on(np.flatnonzero(plan.carved < 0), score.argmax(axis=1), lo, hi)
        return verdict, plan, candidates, gap

    def _stage(self, stage: str, rest: np.ndarray, inputs: _Inputs, weights, biases) -> tuple[Decision, Carve | None]:
        """Bound and decide the boxes ``rest`` with one stage; every claim verified in float64.

        Interval propagation runs in float64. CROWN runs in float32 first (half the cost); the boxes it certifies,
        falsifies or carves a slab of are bounded again in float64 and decided by those bounds alone, so float32
        only chooses splits and candidates.
        """
        import torch

        k = inputs.n_combinations
        possibility = None if inputs.possibility is None else inputs.possibility[rest]
        if stage == "ibp":
            bounds = self._bounds(stage, weights, biases, *inputs.rows(rest))
            return decide(bounds, inputs.radius[torch.as_tensor(rest)], possibility, k), None
        fast_weights = [w.float() for w in weights]
        fast_biases = [b.float() for b in biases]
        lo, hi = inputs.rows(rest)
        quick = _as_double(self._bounds(stage, fast_weights, fast_biases, lo.float(), hi.float()))
        decision = decide(quick, inputs.radius[torch.as_tensor(rest)], possibility, k)
        slab = self._slab(quick, rest, inputs, decision)
        claim = decision.certified | decision.falsified | (slab.share >= CARVE_MIN if slab is not None else False)
        if not claim.any():
            return decision, slab
        sure = rest[claim]
        exact = self._bounds(stage, weights, biases, *inputs.rows(sure))
        checked = decide(exact, inputs.radius[torch.as_tensor(sure)], None if possibility is None
                         else possibility[claim], k)
        checked_slab = self._slab(exact, sure, inputs, checked)
        return _merge(decision, checked, claim), _merge_slab(slab, checked_slab, claim, len(rest))

    def _slab(self, bounds: LinearBounds, rest: np.ndarray, inputs: _Inputs, decision: Decision) -> Carve | None:
        """The slab each open box of ``rest`` certifies (share 0 for decided boxes), or None without carving."""
        if not self.carve:
            return None
        import torch

        index = torch.as_tensor(rest)
        slab = carve(bounds, inputs.centre[index].cpu().numpy(), inputs.radius[index].cpu().numpy(),
                     inputs.relevant[rest], inputs.n_combinations)
        decided = decision.certified | decision.falsified
        return Carve(slab.column, slab.mid, slab.high, np.where(decided, 0.0, slab.share))

    @staticmethod
    def _bounds(stage: str, weights, biases, lo, hi) -> LinearBounds:
        if stage == "ibp":
            lower, upper = interval_bounds(weights, biases, lo, hi)[-1]
            zero = lo.new_zeros(lo.shape)
            return LinearBounds(zero, lower[:, 0], zero, upper[:, 0], lower[:, 0], upper[:, 0])
        return crown_bounds(weights, biases, lo, hi, intermediate=stage)

    def _check_points(self, space: KeySpace, check, keys: np.ndarray, tally: Tally) -> np.ndarray:
        """The discrimination check of one possible input of each key; whether each key is an IDI."""
        X = space.points(keys, self._possible_combination(space, keys, None))
        result = check.check(X)
        self._record(result, check.domain, tally)
        return result.is_idi

    def _possible_combination(self, space: KeySpace, keys: np.ndarray, preferred: np.ndarray | None) -> np.ndarray:
        possibility = space.possibility(keys, keys)
        if possibility is None:
            return np.zeros(len(keys), dtype=np.int64) if preferred is None else preferred
        ok = possibility == POSSIBLE
        first = ok.argmax(axis=1)
        if preferred is None:
            return first
        return np.where(ok[np.arange(len(keys)), preferred], preferred, first)

    def _check_candidates(self, space: KeySpace, check, lo, hi, candidates, open_box, tally: Tally, stats) -> None:
        """Check the candidate point of each open box (its worst pair's corner, else its lower corner)."""
        rest, high, combination = candidates
        position = np.searchsorted(rest, open_box)
        found = (position < len(rest)) & (rest[np.minimum(position, len(rest) - 1)] == open_box)
        keys = lo.copy()
        corner = np.zeros_like(lo, dtype=bool)
        preferred = np.zeros(len(lo), dtype=np.int64)
        corner[found] = high[position[found]][:, space.columns]
        preferred[found] = combination[position[found]]
        keys[corner] = hi[corner]
        X = space.points(keys, self._possible_combination(space, keys, preferred))
        self._record(check.check(X), check.domain, tally)
        stats["n_candidates"] += len(keys)

    @staticmethod
    def _record(result, domain, tally: Tally) -> None:
        if not result.is_idi.any():
            return
        idi = result.is_idi
        tally.idis.append(result.X[idi])
        tally.counterparts.append(result.counterparts(domain)[idi])
        tally.labels.append(result.labels[idi])
        tally.counterpart_labels.append(result.counterpart_label[idi])


def _move_rows(row_box, row_keys, row_status, b_id, verdict, halve, plan, lo, hi, child_id, child_verdict,
               deep) -> None:
    """Rows in a batch's boxes take the verdict of a decided box, or move to the half holding them.

    ``halve`` are the batch positions of the boxes split (their children: ``child_id[j]`` the lower part,
    ``child_id[len(halve) + j]`` the upper); ``deep`` those left open at the depth budget (their rows stay undecided).
    """
    order = np.argsort(b_id)
    sorted_id = b_id[order]
    position = np.searchsorted(sorted_id, row_box)
    inside = (position < len(sorted_id)) & (sorted_id[np.minimum(position, len(sorted_id) - 1)] == row_box)
    rows = np.flatnonzero(inside)
    if not len(rows):
        return
    box = order[position[rows]]
    decided = verdict[box] != UNDECIDED
    row_status[rows[decided]] = verdict[box[decided]]
    row_box[rows[decided]] = -1
    row_box[rows[np.isin(box, deep)]] = -1
    half = np.full(len(lo), -1, dtype=np.int64)
    half[halve] = np.arange(len(halve))
    moving = half[box] >= 0
    r, j = rows[moving], half[box[moving]]
    column = plan.column[halve][j]
    upper = row_keys[r, column] > plan.mid[halve][j]
    child = np.where(upper, len(halve) + j, j)
    row_box[r] = child_id[child]
    certified = child_verdict[child] == CERTIFIED
    row_status[r[certified]] = CERTIFIED
    row_box[r[certified]] = -1
