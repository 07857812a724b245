"""What the bounds of every protected combination over one box prove: no IDI there, every key an IDI, or neither.

A key is an IDI when two of its possible inputs ``x_a`` and ``x_b`` (the same non-protected codes at combinations
``a`` and ``b``) get different labels, i.e. ``g(x_a) > 0 >= g(x_b)`` for some ordered pair. Over a box:

- **certified fair** when every ordered pair of combinations that may be possible there is excluded. A pair is
  excluded by the *pair test*: for some ``t`` in [0, 1], the maximum over the box of
  ``t * upper_a(x) - (1 - t) * lower_b(x)`` is below ``-margin``, where ``upper_a`` and ``lower_b`` are the linear
  CROWN bounds of ``g(x_a)`` and ``g(x_b)`` over the same non-protected codes (:mod:`.key_space`). At ``t = 1``
  this says ``g(x_a)`` is never positive; at ``t = 0``, ``g(x_b)`` never negative; at ``t = 1/2``, that the
  difference ``g(x_a) - g(x_b)`` is negative everywhere; between, the two lines are weighed (an LP dual of the two
  conditions together, so correlated inputs are not bounded apart).
- **falsified** when some combination possible everywhere in the box is positive everywhere and another possible
  everywhere is negative everywhere: every key of the box is an IDI.
- **undecided** otherwise; the box is split (on the column that loosens the bounds most, or the widest) and the
  *candidate*, the corner of the box that the worst open pair's lines point to, is checked on the model.

Every claim keeps a margin of :data:`DECISION_MARGIN` on the logit: the model computes its labels in float32, the
bounds are float64, and points within the margin are left to the model's own discrimination check.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .key_space import IMPOSSIBLE, POSSIBLE

# Logit margin of every claim (|g| below it is decided by the model itself, at points).
DECISION_MARGIN = 1e-4
# The weights t of the pair test (0 and 1 are the sign tests; 1/2 the difference).
PAIR_WEIGHTS = tuple(np.linspace(0.0, 1.0, 11))
# Largest number of (box, ordered pair) rows of one pair-test batch.
PAIR_CHUNK = 1 << 16


@dataclass(frozen=True)
class Decision:
    """What one batch of boxes' bounds prove.

    Attributes
    ----------
    certified, falsified : numpy.ndarray of bool, shape (n_boxes,)
    candidate_high : numpy.ndarray of bool, shape (n_boxes, n_inputs)
        For each input column, whether the candidate corner takes the box's upper end (else its lower end).
    candidate_combination : numpy.ndarray of int64, shape (n_boxes,)
        The combination ``a`` of the worst open pair (the candidate is read at it).
    influence : numpy.ndarray of float64, shape (n_boxes, n_inputs)
        How much each input column loosens the bounds: the sum over combinations of
        ``(|lower_coef| + |upper_coef|) * radius``.
    gap : numpy.ndarray of float64, shape (n_boxes,)
        How far each box is from being certified, in [0, 1]: the share of the span of its combinations' bounds
        that lies on the wrong side of the margin, for the nearer of "all positive" and "all negative".
    """

    certified: np.ndarray
    falsified: np.ndarray
    candidate_high: np.ndarray
    candidate_combination: np.ndarray
    influence: np.ndarray
    gap: np.ndarray


def decide(bounds, radius, possibility: np.ndarray | None, n_combinations: int) -> Decision:
    """Classify boxes from the linear bounds of every (box, combination).

    Parameters
    ----------
    bounds : LinearBounds
        Of the network over each (box, combination) input box, rows box-major: shape (n_boxes * n_combinations, ...).
    radius : torch.Tensor of float64, shape (n_boxes, n_inputs)
        Half-widths of the boxes' shared inputs (0 on protected and coupled columns).
    possibility : numpy.ndarray of int8, shape (n_boxes, n_combinations), or None
        From :meth:`KeySpace.possibility <chiralfair.certification.key_space.KeySpace.possibility>`; None: all possible.
    n_combinations : int

    Returns
    -------
    Decision
    """
    import torch

    n, k = radius.shape[0], n_combinations
    d = radius.shape[1]
    lower = bounds.lower.reshape(n, k).cpu().numpy()
    upper = bounds.upper.reshape(n, k).cpu().numpy()
    if possibility is None:
        relevant = np.ones((n, k), dtype=bool)
        everywhere = relevant
    else:
        relevant = possibility != IMPOSSIBLE
        everywhere = possibility == POSSIBLE
    positive, negative = lower > DECISION_MARGIN, upper < -DECISION_MARGIN
    certified = (positive | ~relevant).all(axis=1) | (negative | ~relevant).all(axis=1)
    falsified = ~certified & (positive & everywhere).any(axis=1) & (negative & everywhere).any(axis=1)
    lcoef = bounds.lower_coef.reshape(n, k, d)
    ucoef = bounds.upper_coef.reshape(n, k, d)
    influence = ((lcoef.abs() + ucoef.abs()).sum(1) * radius).cpu().numpy()
    candidate_high = np.zeros((n, d), dtype=bool)
    candidate_combination = np.zeros(n, dtype=np.int64)
    open_box = np.flatnonzero(~certified & ~falsified)
    if len(open_box):
        # ordered pairs (a, b) that may still make an IDI: a may be positive, b may be negative
        may = relevant[open_box]
        open_pair = (may & ~negative[open_box])[:, :, None] & (may & ~positive[open_box])[:, None, :]
        open_pair &= ~np.eye(k, dtype=bool)[None]
        box, a, b = np.nonzero(open_pair)
        worst = _pair_test(torch.as_tensor(open_box[box]), torch.as_tensor(a), torch.as_tensor(b), bounds, radius,
                           n, k)
        excluded = worst[0] < -DECISION_MARGIN
        still_open = np.zeros(len(open_box), dtype=bool)
        np.logical_or.at(still_open, box[~excluded], True)
        certified[open_box[~still_open]] = True
        # the candidate of each box still open: its worst pair's corner
        score = worst[0]
        order = np.lexsort((-score, box))
        first = order[np.r_[True, box[order][1:] != box[order][:-1]]]
        rows = open_box[box[first]]
        candidate_high[rows] = worst[1][first]
        candidate_combination[rows] = a[first]
    return Decision(certified=certified, falsified=falsified, candidate_high=candidate_high,
                    candidate_combination=candidate_combination, influence=influence,
                    gap=_gap(lower, upper, relevant))


def _gap(lower: np.ndarray, upper: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """The share of each box's bound span on the wrong side of the margin, for its nearer certification."""
    low = np.where(relevant, lower, np.inf).min(axis=1)
    high = np.where(relevant, upper, -np.inf).max(axis=1)
    span = np.maximum(high - low, 1e-12)
    wrong_positive = np.where(relevant, DECISION_MARGIN - lower, -np.inf).max(axis=1)
    wrong_negative = np.where(relevant, upper + DECISION_MARGIN, -np.inf).max(axis=1)
    return np.clip(np.minimum(wrong_positive, wrong_negative) / span, 0.0, 1.0)


def _pair_test(box, a, b, bounds, radius, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each (box, a, b): the smallest over t of the pair test's maximum, and the corner that attains it.

    Returns the minimum, shape (n_pairs,), and for each column whether the corner takes the upper end, shape
    (n_pairs, n_inputs).
    """
    import torch

    d = radius.shape[1]
    t = torch.as_tensor(PAIR_WEIGHTS, dtype=radius.dtype)[None, :, None]
    lcoef = bounds.lower_coef.reshape(n, k, d)
    ucoef = bounds.upper_coef.reshape(n, k, d)
    lconst = bounds.lower_const.reshape(n, k)
    uconst = bounds.upper_const.reshape(n, k)
    best_value, best_corner = [], []
    for start in range(0, len(box), PAIR_CHUNK):
        i, pa, pb = box[start:start + PAIR_CHUNK], a[start:start + PAIR_CHUNK], b[start:start + PAIR_CHUNK]
        coef = t * ucoef[i, pa][:, None, :] - (1 - t) * lcoef[i, pb][:, None, :]  # (m, T, d)
        value = (t[..., 0] * uconst[i, pa][:, None] - (1 - t[..., 0]) * lconst[i, pb][:, None]
                 + (coef.abs() * radius[i][:, None, :]).sum(-1))  # (m, T)
        v, at = value.min(dim=1)
        best_value.append(v.cpu().numpy())
        best_corner.append((coef[torch.arange(len(i)), at] > 0).cpu().numpy())
    return np.concatenate(best_value), np.concatenate(best_corner)


@dataclass(frozen=True)
class Carve:
    """For each box, the largest slab along one input column that its linear bounds already certify.

    Attributes
    ----------
    column : numpy.ndarray of int64, shape (n_boxes,)
        The input column of the slab.
    mid : numpy.ndarray of int64, shape (n_boxes,)
        The box splits into ``[lo, mid]`` and ``[mid + 1, hi]`` on ``column``.
    high : numpy.ndarray of bool, shape (n_boxes,)
        Whether the certified slab is the upper part (else the lower).
    share : numpy.ndarray of float64, shape (n_boxes,)
        The slab's share of the box (0 where no slab is certified).
    """

    column: np.ndarray
    mid: np.ndarray
    high: np.ndarray
    share: np.ndarray


def carve(bounds, centre, radius, relevant: np.ndarray, n_combinations: int) -> Carve:
    """The largest slab of each box on which every relevant combination's line is above (or below) the margin.

    Over the box, ``lower_c(x) >= const + coef . (x - centre)``; with every column but ``j`` at its worst, the line
    is a function of ``x_j`` alone, and the codes of ``x_j`` where it stays above the margin for every relevant
    combination form an upper or lower slab (the line is monotone in ``x_j``). Such a slab is certified fair (all
    positive) without bounding it again; the same with the upper lines for all negative. The slab's end is found in
    closed form and then checked at both of its ends, so rounding can only shrink it.

    Parameters
    ----------
    bounds : LinearBounds
        Rows box-major, shape (n_boxes * n_combinations, ...).
    centre, radius : numpy.ndarray of float64, shape (n_boxes, n_inputs)
        The input box of each box (the same for every combination on the shared columns; radius 0 elsewhere).
    relevant : numpy.ndarray of bool, shape (n_boxes, n_combinations)
        The combinations that may be possible in each box.
    n_combinations : int

    Returns
    -------
    Carve
    """
    n, k = len(centre), n_combinations
    d = centre.shape[1]
    best = Carve(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n))
    lo, hi = centre - radius, centre + radius
    width = np.rint(hi - lo) + 1
    for sign in (1.0, -1.0):  # all positive (lower lines), all negative (upper lines, negated)
        if sign > 0:
            const = bounds.lower_const.reshape(n, k).cpu().numpy()
            coef = bounds.lower_coef.reshape(n, k, d).cpu().numpy()
        else:
            const = -bounds.upper_const.reshape(n, k).cpu().numpy()
            coef = -bounds.upper_coef.reshape(n, k, d).cpu().numpy()
        spread = np.abs(coef) * radius[:, None, :]
        # the line in x_j with every other column at its worst: base + coef_j * x_j
        base = const[:, :, None] - (spread.sum(-1, keepdims=True) - spread) - coef * centre[:, None, :]
        ignore = ~relevant[:, :, None]
        for high in (True, False):
            s = _slab_end(base, coef, lo[:, None, :], hi[:, None, :], high, ignore)
            share = np.where(high, hi - s + 1, s - lo + 1) / width
            mid = s - 1 if high else s
            ok = _holds(base, coef, s, hi if high else lo, ignore) & (share > 0) & (share < 1)
            share = np.where(ok, share, 0.0)
            j = share.argmax(axis=1)
            value = share[np.arange(n), j]
            better = value > best.share
            best = Carve(np.where(better, j, best.column), np.where(better, mid[np.arange(n), j], best.mid),
                         np.where(better, high, best.high), np.where(better, value, best.share))
    return Carve(best.column, best.mid.astype(np.int64), best.high, best.share)


def _slab_end(base, coef, lo, hi, high: bool, ignore) -> np.ndarray:
    """The innermost end of the slab per (box, column), from every combination's line (shape (n, d))."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (DECISION_MARGIN - base) / coef  # the code where the line reaches the margin
    if high:  # slab [s, hi]: increasing lines need s > cross; others must already hold at hi
        need = np.where(coef > 0, np.floor(cross) + 1, np.where(base + coef * hi > DECISION_MARGIN, -np.inf, np.inf))
        need = np.where(ignore, -np.inf, need)
        return np.maximum(need.max(axis=1), lo[:, 0] + 1)
    need = np.where(coef < 0, np.ceil(cross) - 1, np.where(base + coef * lo > DECISION_MARGIN, np.inf, -np.inf))
    need = np.where(ignore, np.inf, need)
    return np.minimum(need.min(axis=1), hi[:, 0] - 1)


def _holds(base, coef, s, end, ignore) -> np.ndarray:
    """Whether every relevant line is above the margin at both ends of the slab (so on all of it)."""
    with np.errstate(invalid="ignore"):
        at_s = base + coef * s[:, None, :]
        at_end = base + coef * end[:, None, :]
    ok = ((at_s > DECISION_MARGIN) & (at_end > DECISION_MARGIN)) | ignore
    return ok.all(axis=1) & np.isfinite(s)
