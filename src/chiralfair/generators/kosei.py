"""KOSEI (Sano, Kitamura, Takada, SEKE'22): seeds, then a breadth-first ±1 search that never checks twice."""

from __future__ import annotations

import numpy as np

from .._validation import check_float, check_int
from ..domain import Domain
from .base import Generator, register_generator
from .recorder import IDIRecorder


@register_generator("kosei")
class Kosei(Generator):
    r"""KOSEI: check the seeds, then expand every IDI to all its untested ±1 neighbours, breadth first.

    Global phase: the seeds (the first ``max_global``) are checked in one batch; the IDIs among them (one
    per key) are the global IDIs and fill a first-in first-out queue. Local phase (the paper's Alg. 3): pop
    an IDI ``d``; for every non-protected feature ``p`` and ``δ ∈ {-1, +1}`` (in column order, −1 first)
    form ``d'`` = ``d`` with ``d'[p] = d[p] + δ``; skip ``d'`` if ``d'[p]`` leaves the feature's bounds or
    ``d'``'s key was checked before (in either phase); check the rest; push every IDI among them to the
    back of the queue. The search stops when the queue is empty, the local budget is spent, or
    ``time_budget`` has passed; :attr:`SearchResult.notes` says which.

    Batching: up to ``batch_size`` queued IDIs are popped at once and all their candidates go to the model
    in one discrimination check. Popping several items of a FIFO queue at once and de-duplicating their
    candidates in order (first occurrence kept) yields exactly the candidates, order and queue of popping
    them one by one, so ``batch_size`` changes the speed, never the result.

    Every checked input is new: ``n_tested`` equals the number of checked candidates (seeds included,
    when the seeds have distinct keys). A candidate is checked with its parent's flipping counterpart first
    (:meth:`IDIRecorder.check_first <chiralfair.generators.recorder.IDIRecorder.check_first>`: the combination
    of protected values that changed the parent's label): one it flips is an IDI at two queries instead of one
    per combination (census race: 5), so the queries per checked candidate drop with several combinations; the
    candidates, and so the IDIs' keys, are those of the plain check. Recorded pairs hold the first counterpart
    found to flip.

    Parameters
    ----------
    max_global : int
        Seeds checked by the global phase.
    max_local : int
        Local budget per global IDI, in checked candidates, pooled: the local phase checks at most
        ``max_local * n_global`` candidates in total (the last batch is cut to fit, in queue order).
    batch_size : int
        Queued IDIs popped per model batch (at most ``2 * n_features`` candidates each); does not change
        the result.
    time_budget : float, optional
        Wall-clock budget of the whole run, in seconds; None for none. Checked between batches, so a run may
        overrun it by one batch. With a budget the result depends on the machine's speed.

    Notes
    -----
    Departures from the paper (Alg. 3; the reference code, ``sskeiouk/KOSEI``, extends AEQUITAS's Python 2
    code):

    - **The local budget counts checked candidates, pooled over the global IDIs** (``max_local`` per global
      IDI), so that it reads like the budget of :class:`~chiralfair.generators.aequitas.Aequitas` and ADF
      here. The paper's ``limit`` counts popped IDIs for the whole local search (2000 in its experiments),
      each costing up to ``2 * n_features`` checks.
    - **"Evaluated before" is by key** (the non-protected projection, architecture: the counting rule), not by the full
      vector: two inputs that differ only in protected attributes have the same discrimination check, so the second
      one is skipped too. The set of evaluated inputs also holds the global phase's seeds.
    - **Global phase = the given seeds**, checked once; the paper's global phase is AEQUITAS's random
      sampling (the ``random`` seed strategy here).
    - The paper's line 10 reads "if d'[p] ∈ Dom(p) then continue"; its text says invalid values are
      skipped, which is what is done. Features with a single value are never perturbed. A neighbour that
      breaks one of the domain's constraints is repaired onto them (:meth:`Domain.repair`,
      architecture: counterparts that could exist) before it is compared with the tested keys.
    - Multi-valued and several PAs: the discrimination check tries every combination of PA values, as in the
      paper's Alg. 2 (``γ = 0``: any change of the predicted label).

    References
    ----------
    .. [1] Sano, Kitamura, Takada. "An efficient discrimination discovery method for fairness testing."
       SEKE 2022, pp. 200–205. doi:10.18293/SEKE2022-064.
    .. [2] Udeshi, Arora, Chattopadhyay. "Automated directed fairness testing." ASE 2018.
    """

    name = "kosei"

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 batch_size: int = 4096,
                 time_budget: float | None = None):
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        if time_budget is not None:
            time_budget = check_float(time_budget, "time_budget", minimum=0.0, exclusive_minimum=True)
        self.time_budget = time_budget
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         batch_size=self.batch_size,
                         time_budget=time_budget)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        res, new = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(res.is_idi.sum())
        queue, flips = seeds[new], res.counterpart_index[new]
        budget = self.max_local * len(queue)
        moves = _moves(recorder.domain)
        if budget == 0:
            return ()
        if len(moves) == 0:
            return ("every non-protected feature has a single value: the local phase cannot move",)
        checked = 0
        while len(queue) and checked < budget:
            if self.time_budget is not None and recorder.seconds >= self.time_budget:
                return (f"stopped: time budget of {self.time_budget:g} s reached after {checked} local checks "
                        "(results depend on machine speed, not reproducible)",)
            parents, queue = queue[: self.batch_size], queue[self.batch_size:]
            parent_flips, flips = flips[: self.batch_size], flips[self.batch_size:]
            children, parent = _untested_neighbours(parents, moves, recorder)
            children, parent = children[: budget - checked], parent[: budget - checked]
            res, _ = recorder.check_first(children, parent_flips[parent], "local")
            checked += len(children)
            # The queue holds checked IDIs only, so it never outgrows the budget.
            queue = np.concatenate([queue, res.X[res.is_idi]])
            flips = np.concatenate([flips, res.counterpart_index[res.is_idi]])
        if checked >= budget:
            return (f"stopped: local budget of {budget} checks (max_local x {budget // self.max_local} global "
                    "IDIs) spent",)
        return (f"stopped: queue empty after {checked} local checks (no untested neighbour of an IDI left)",)


def _moves(domain: Domain) -> np.ndarray:
    """The ±1 moves, shape (n_moves, 2): (column, δ) for every non-protected feature with several values.

    Ordered by column, −1 before +1 (the paper's loop order).
    """
    idx = domain.non_protected
    cols = idx[domain.upper[idx] > domain.lower[idx]]
    return np.stack([np.repeat(cols, 2), np.tile([-1, 1], len(cols))], axis=1).astype(np.int64)


def _untested_neighbours(parents: np.ndarray, moves: np.ndarray,
                         recorder: IDIRecorder) -> tuple[np.ndarray, np.ndarray]:
    """The in-bounds ±1 neighbours of ``parents`` whose key was never checked, first occurrence of each key.

    Returns
    -------
    children : numpy.ndarray of int64, shape (n_candidates, n_features)
        In the order of a one-by-one expansion: parent by parent, then move by move.
    parent : numpy.ndarray of int64, shape (n_candidates,)
        Each child's parent (index into ``parents``).
    """
    domain = recorder.domain
    n, m = len(parents), len(moves)
    children = np.repeat(parents, m, axis=0)
    parent = np.repeat(np.arange(n), m)
    rows = np.arange(n * m)
    cols = np.tile(moves[:, 0], n)
    children[rows, cols] += np.tile(moves[:, 1], n)
    moved = children[rows, cols]
    inside = (moved >= domain.lower[cols]) & (moved <= domain.upper[cols])
    children, parent = children[inside], parent[inside]
    # Onto the domain's constraints (architecture: counterparts that could exist) before the keys are compared, so a
    # repaired child is one key.
    children = domain.repair(children)
    _, first = np.unique(domain.keys(children), return_index=True)
    first = np.sort(first)
    children, parent = children[first], parent[first]
    untested = ~recorder.is_tested(children)
    return children[untested], parent[untested]
