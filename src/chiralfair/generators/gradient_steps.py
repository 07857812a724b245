"""Gradient and saliency steps shared by the gradient-guided generators ADF, EIDIG and MAFT.

Everything here works on a whole batch of chains (one row per chain), so that a generator advances all its
chains with one discrimination check and one gradient batch per step:

- :class:`ChainChecks` keeps, per chain, the outcome of the discrimination check of its current input;
- a gradient source gives d P(y=1)/dx at the inputs and at their counterparts in one batch:
  :class:`InputGradient` asks the model's ``input_gradient`` (ADF, EIDIG);
  :class:`~chiralfair.generators.finite_differences.FiniteDifferences` estimates it from ``predict_proba``
  (MAFT);
- :func:`cross_entropy_gradient` (ADF) and :func:`confidence_gradient` (EIDIG) turn d P(y=1)/dx into the
  gradient each paper uses;
- :func:`global_walk` is the global phase: check every chain, end the chains that reached an IDI, step the
  others along a direction computed from their gradients;
- :func:`inverse_saliency`, :func:`sample_features` and :func:`local_walk` make the local phase: pick a
  feature with probability inversely proportional to its saliency, move it one step, keep the move if the new
  input is an IDI, return to the global IDI otherwise.

References
----------
.. [1] Zhang et al. "White-box fairness testing through adversarial sampling." ICSE 2020.
.. [2] Zhang et al. "Efficient white-box fairness testing through gradient search." ISSTA 2021.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from ..domain import Domain
from ..exceptions import ConfigError
from ..models.protocol import CountingModel
from ..oracle import CheckResult
from .key_table import KeyLocation
from .recorder import IDIRecorder

# Smallest probability of the own label used as a divisor; the own label's probability is >= 0.5 whenever
# labels and probabilities agree, so this only guards models whose predict and predict_proba disagree.
_MIN_OWN_PROBA = 1e-12


@dataclass
class ChainChecks:
    """Per-chain outcome of the discrimination check of each chain's current input (mutable, row-aligned).

    Attributes
    ----------
    labels : numpy.ndarray of int64, shape (n_chains,)
        f(x).
    counterpart_labels : numpy.ndarray of int64, shape (n_chains, n_combinations)
        f(x') for every PA-value combination.
    proba : numpy.ndarray of float64, shape (n_chains, n_combinations)
        P(y=1 | x') for every combination.
    own_proba : numpy.ndarray of float64, shape (n_chains,)
        P(y=1 | x).
    possible : numpy.ndarray of bool, shape (n_chains, n_combinations), optional
        Which counterparts satisfy the domain's constraints (:attr:`CheckResult.possible`; default all True, as
        without constraints). An impossible counterpart is never chosen, so no gradient is taken at it.
    """

    labels: np.ndarray
    counterpart_labels: np.ndarray
    proba: np.ndarray
    own_proba: np.ndarray
    possible: np.ndarray = None  # type: ignore[assignment]  # reason: None stands for all True; __post_init__ makes it

    def __post_init__(self):
        if self.possible is None:
            self.possible = np.ones(np.shape(self.counterpart_labels), dtype=bool)

    @classmethod
    def empty(cls, n: int, n_combinations: int) -> ChainChecks:
        """Zero-filled records for ``n`` chains.

        Parameters
        ----------
        n : int
            Number of chains.
        n_combinations : int
            Protected-value combinations per chain.

        Returns
        -------
        ChainChecks
        """
        return cls(np.zeros(n, np.int64), np.zeros((n, n_combinations), np.int64),
                   np.zeros((n, n_combinations)), np.zeros(n), np.ones((n, n_combinations), dtype=bool))

    @classmethod
    def from_result(cls, res: CheckResult) -> ChainChecks:
        """Take the records of a check run with ``with_proba=True``.

        Parameters
        ----------
        res : CheckResult
            Of :meth:`DiscriminationCheck.check <chiralfair.oracle.DiscriminationCheck.check>` with ``with_proba=True``.

        Returns
        -------
        ChainChecks

        Raises
        ------
        ConfigError
            If the check was run without ``with_proba=True`` (it has no probabilities to take).
        """
        if res.proba is None or res.own_proba is None:
            raise ConfigError("ChainChecks.from_result needs a check run with with_proba=True; this one has no "
                              "probabilities")
        possible = res.possible if res.possible is not None else np.ones(res.counterpart_labels.shape, dtype=bool)
        return cls(res.labels, res.counterpart_labels, res.proba, res.own_proba, possible)

    def set_rows(self, rows, other: ChainChecks) -> None:
        """Overwrite ``rows`` (indices or mask) with the records of ``other`` (aligned with ``rows``).

        Parameters
        ----------
        rows : array-like of int or bool
            Chains to overwrite.
        other : ChainChecks
            One record per selected chain.
        """
        self.labels[rows] = other.labels
        self.counterpart_labels[rows] = other.counterpart_labels
        self.proba[rows] = other.proba
        self.own_proba[rows] = other.own_proba
        self.possible[rows] = other.possible

    def rows(self, rows) -> ChainChecks:
        """The records of ``rows`` (indices or mask: a copy; a slice gives views, use :meth:`copy` instead).

        Parameters
        ----------
        rows : array-like of int or bool
            Chains to keep.

        Returns
        -------
        ChainChecks
        """
        return ChainChecks(self.labels[rows], self.counterpart_labels[rows], self.proba[rows], self.own_proba[rows],
                           self.possible[rows])

    def copy(self) -> ChainChecks:
        """A copy of every record, independent of this one.

        Returns
        -------
        ChainChecks
        """
        return ChainChecks(self.labels.copy(), self.counterpart_labels.copy(), self.proba.copy(),
                           self.own_proba.copy(), self.possible.copy())

    @property
    def flips(self) -> np.ndarray:
        """Which combinations change the label, shape (n_chains, n_combinations)."""
        return self.counterpart_labels != self.labels[:, None]

    @property
    def is_idi(self) -> np.ndarray:
        """Whether each chain's input is an IDI, shape (n_chains,)."""
        return np.any(self.flips, axis=1)

    def first_flip(self) -> np.ndarray:
        """ADF's counterpart, shape (n_chains,).

        The first combination that flips the label, else the one whose P(y=1) differs most from x's (for a
        binary label, the largest |p_y(x) - p_y(x')|).

        Returns
        -------
        numpy.ndarray of int64, shape (n_chains,)
            A combination index per chain.
        """
        flips = self.flips
        return np.where(flips.any(axis=1), flips.argmax(axis=1), self.max_difference())

    def max_difference(self) -> np.ndarray:
        """EIDIG's ``max_diff`` counterpart: the combination whose P(y=1) differs most from x's, shape (n_chains,).

        Among the possible counterparts (an impossible one scores -1, below the input's own 0).

        Returns
        -------
        numpy.ndarray of int64, shape (n_chains,)
            A combination index per chain.
        """
        return np.where(self.possible, np.abs(self.proba - self.own_proba[:, None]), -1.0).argmax(axis=1)

    def random_flip(self, rng: np.random.Generator) -> np.ndarray:
        """EIDIG's ``find_pair``: a uniformly random combination that flips the label, shape (n_chains,).

        Chains that are not IDIs fall back to :meth:`max_difference`.

        Parameters
        ----------
        rng : numpy.random.Generator

        Returns
        -------
        numpy.ndarray of int64, shape (n_chains,)
            A combination index per chain.
        """
        flips = self.flips
        score = np.where(flips, rng.random(flips.shape), -1.0)
        return np.where(flips.any(axis=1), score.argmax(axis=1), self.max_difference())

    def counterpart_label(self, combo: np.ndarray) -> np.ndarray:
        """Label of combination ``combo[i]`` for chain i, shape (n_chains,).

        Parameters
        ----------
        combo : numpy.ndarray of int64, shape (n_chains,)
            A combination index per chain.

        Returns
        -------
        numpy.ndarray of int64, shape (n_chains,)
        """
        return self.counterpart_labels[np.arange(len(combo)), combo]

    def counterpart_proba(self, combo: np.ndarray) -> np.ndarray:
        """P(y=1) of combination ``combo[i]`` for chain i, shape (n_chains,).

        Parameters
        ----------
        combo : numpy.ndarray of int64, shape (n_chains,)
            A combination index per chain.

        Returns
        -------
        numpy.ndarray of float64, shape (n_chains,)
        """
        return self.proba[np.arange(len(combo)), combo]


def counterpart_rows(domain: Domain, X: np.ndarray, combo: np.ndarray) -> np.ndarray:
    """``X`` with its protected attributes set to combination ``combo[i]`` in row i, coupled columns changed.

    :meth:`Domain.counterpart_rows`, the one place counterparts are built.

    Parameters
    ----------
    domain : Domain
    X : numpy.ndarray of int64, shape (n, n_features)
    combo : numpy.ndarray of int, shape (n,)
        Indices into :attr:`Domain.combinations`.

    Returns
    -------
    numpy.ndarray of int64, shape (n, n_features)
    """
    return domain.counterpart_rows(X, combo)


def steppable(domain: Domain, X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Features a global gradient step may move: non-protected ones on which ``x`` and its counterpart agree.

    ADF and EIDIG move a feature where the gradients at ``x`` and at its counterpart ``x'`` point the same way,
    which compares the two along one axis at one point. A coupled column where ``x'`` holds another code (a
    husband's counterpart is a wife) is at two different points of that axis, so the comparison means nothing
    there and the step leaves it; elsewhere (and without couplings) this is every non-protected feature.

    Parameters
    ----------
    domain : Domain
    X, C : numpy.ndarray of int64, shape (n, n_features)
        Inputs and the counterparts whose gradients are compared.

    Returns
    -------
    numpy.ndarray of bool, shape (n, n_features)
    """
    return domain.non_protected_mask[None, :] & (np.asarray(X) == np.asarray(C))


def pair_gradients(model: CountingModel, X: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradients d P(y=1)/dx at the inputs and at their counterparts, from one ``input_gradient`` batch.

    Parameters
    ----------
    model : CountingModel
    X, C : numpy.ndarray, shape (n, n_features)
        Inputs and one counterpart of each.

    Returns
    -------
    g, g_counterpart : numpy.ndarray of float64, shape (n, n_features)
        Costs 2 n model queries.
    """
    n = len(X)
    if n == 0:
        z = np.zeros((0, X.shape[1]))
        return z, z.copy()
    G = model.input_gradient(np.concatenate([X, C]))
    return G[:n], G[n:]


class GradientSource(Protocol):
    """Where a gradient generator takes d P(y=1)/dx from: the model's gradient, or an estimate of it."""

    #: The model method the source needs (``"input_gradient"`` or ``"predict_proba"``).
    capability: ClassVar[str]

    def pair(self, model: CountingModel, domain: Domain, X: np.ndarray, C: np.ndarray, p: np.ndarray,
             p_counterpart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The gradients d P(y=1)/dx at ``X`` and at ``C``, each of shape (n, n_features), from one model batch.

        ``p`` and ``p_counterpart``, shape (n,), are P(y=1) at ``X`` and ``C``, known from their checks.

        Parameters
        ----------
        model : CountingModel
        domain : Domain
        X : numpy.ndarray of int64, shape (n, n_features)
            Inputs.
        C : numpy.ndarray of int64, shape (n, n_features)
            Their counterparts.
        p : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``X``.
        p_counterpart : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``C``.

        Returns
        -------
        gradient : numpy.ndarray of float64, shape (n, n_features)
            At ``X``.
        gradient_counterpart : numpy.ndarray of float64, shape (n, n_features)
            At ``C``.
        """

    def rows_per_pair(self, n_features: int) -> int:
        """Upper bound on model queries of one :meth:`pair` row (an input and its counterpart).

        Parameters
        ----------
        n_features : int
            Features of the domain.

        Returns
        -------
        int
        """


@dataclass(frozen=True)
class InputGradient:
    """The model's own ``input_gradient``: 2 gradient rows per input and counterpart (ADF, EIDIG)."""

    capability: ClassVar[str] = "input_gradient"

    def pair(self, model: CountingModel, domain: Domain, X: np.ndarray, C: np.ndarray, p: np.ndarray,
             p_counterpart: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`pair_gradients`; the probabilities are not needed.

        Parameters
        ----------
        model : CountingModel
        domain : Domain
        X : numpy.ndarray of int64, shape (n, n_features)
            Inputs.
        C : numpy.ndarray of int64, shape (n, n_features)
            Their counterparts.
        p : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``X``.
        p_counterpart : numpy.ndarray of float64, shape (n,)
            P(y=1) at ``C``.

        Returns
        -------
        gradient : numpy.ndarray of float64, shape (n, n_features)
            At ``X``.
        gradient_counterpart : numpy.ndarray of float64, shape (n, n_features)
            At ``C``.
        """
        return pair_gradients(model, X, C)

    def rows_per_pair(self, n_features: int) -> int:
        """2: the input and its counterpart.

        Parameters
        ----------
        n_features : int
            Unused.

        Returns
        -------
        int
        """
        return 2


def cross_entropy_gradient(g: np.ndarray, p1: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Gradient of the cross-entropy loss against the model's own label (ADF's ``gradient_graph``).

    With p = P(y=1 | x) and g = dp/dx: for label 1, L = -log p and dL/dx = -g / p; for label 0,
    L = -log(1 - p) and dL/dx = g / (1 - p). Following it moves x toward the decision boundary.

    Parameters
    ----------
    g : numpy.ndarray, shape (n, n_features)
        d P(y=1)/dx.
    p1 : numpy.ndarray, shape (n,)
        P(y=1 | x).
    labels : numpy.ndarray of int, shape (n,)
        The model's label of x.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
        Finite wherever ``g`` is.
    """
    positive = labels == 1
    own = np.where(positive, p1, 1.0 - p1)
    scale = np.where(positive, -1.0, 1.0) / np.maximum(own, _MIN_OWN_PROBA)
    return g * scale[:, None]


def confidence_gradient(g: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """EIDIG's ``compute_grad``: d P(y=1)/dx, negated where the label is 0.

    It points toward more confidence in the current label; EIDIG steps along its negative sign.

    Parameters
    ----------
    g : numpy.ndarray, shape (n, n_features)
    labels : numpy.ndarray of int, shape (n,)

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
    """
    return np.where((labels == 1)[:, None], g, -g)


# Gradients (g at x, g' at its counterpart) and the features a step may move (:func:`steppable`), shape
# (m, n_features) each, of the chains given by their inputs and check records.
ChainGradients = Callable[[np.ndarray, ChainChecks], tuple[np.ndarray, np.ndarray, np.ndarray]]
# The global step direction in {-1, 0, 1}, shape (m, n_features), of the chains ``rows`` (indices) from their
# gradients g and g' and movable features, each of shape (m, n_features).
StepDirection = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class PendingChains:
    """Chains that a global phase under a query budget stopped before their end, to go on with later.

    :func:`global_walk` leaves them when its share of the budget runs out or when the global IDIs in hand could
    spend what is left in their local walks; :func:`resume_global_walk` walks them on.

    Attributes
    ----------
    index : numpy.ndarray of int64, shape (m,)
        Their rows among the chains of the walk that stopped them.
    x : numpy.ndarray of int64, shape (m, n_features)
        Their current inputs.
    checks : ChainChecks
        Check records of ``x``; stale where ``unchecked``.
    unchecked : numpy.ndarray of bool, shape (m,)
        Inputs that a step moved and that were not checked yet.
    iterations_done : int
        Iterations of the walk so far (the next one is ``iterations_done``).
    """

    index: np.ndarray
    x: np.ndarray
    checks: ChainChecks
    unchecked: np.ndarray
    iterations_done: int


def global_walk(recorder: IDIRecorder, seeds: np.ndarray, *, max_iter: int, step: float,
                gradients: ChainGradients, direction: StepDirection, walk_past_known_idis: bool,
                budget_share: float | None = None, gradient_rows: int = 2,
                local_rows: int = 0) -> tuple[np.ndarray, ChainChecks, PendingChains | None]:
    """The global phase of ADF, EIDIG and MAFT for every seed at once: walk each chain toward an IDI.

    Each of ``max_iter + 1`` iterations checks the chains' inputs in one batch (the input left by the last
    step is checked too, algorithms.md §12.5). An IDI with a new key ends its chain and becomes a global IDI.
    An IDI whose key another chain recorded first ends its chain too (EIDIG), or walks on
    (``walk_past_known_idis``, ADF). Every other chain takes ``gradients`` at its input and moves to
    ``repair(clip(x + step * direction))`` (onto the domain's constraints, :meth:`Domain.repair`). Chains whose
    input did not change since the last iteration (stuck at a bound) are neither re-checked nor
    re-differentiated, since the model is deterministic: their previous
    gradients are passed to ``direction`` again.

    Under a query budget, with ``budget_share``, the steps after the seeds' check spend at most that share of
    the budget left after it: a gradient batch (counted with the check of the step it leads to) or a check that
    could pass the share is cut to the first chains (in seed order) that fit, and the other chains stop. So the
    phase ends within its share instead of having a batch refused whole. It also stops once the local walks of
    the global IDIs found so far could spend all that is left (``local_rows`` each): more global IDIs would have
    no budget to walk from. The chains stopped so are returned as :class:`PendingChains`, for
    :func:`resume_global_walk` once the local walks have spent less than expected. Without a budget, or with
    ``budget_share=None``, nothing is cut and nothing is pending.

    Parameters
    ----------
    recorder : IDIRecorder
        Checks go through it with phase ``"global"``; it receives ``n_seed_idis``.
    seeds : numpy.ndarray of int64, shape (n_seeds, n_features)
    max_iter : int
        Steps per chain.
    step : float
        Step size s_g, in encoded units.
    gradients : callable
        ``gradients(X, checks) -> (g, g_counterpart, movable)`` for the chains due.
    direction : callable
        ``direction(rows, g, g_counterpart, movable) -> (len(rows), n_features)`` in {-1, 0, 1}, for the chains
        that move (``rows`` indexes the seeds, so that a direction may keep per-chain state such as momentum).
    walk_past_known_idis : bool
        Whether a chain on an IDI already recorded goes on walking.
    budget_share : float, optional
        In (0, 1]: the share of the query budget left after the seeds' check that the steps may spend.
    gradient_rows : int, default=2
        Upper bound on the model queries of one chain's ``gradients`` (:meth:`GradientSource.rows_per_pair`); used
        under a budget only.
    local_rows : int, default=0
        Model queries the local walk of one global IDI may spend (0: the phase never stops for that reason); used
        under a budget only.

    Returns
    -------
    x_global : numpy.ndarray of int64, shape (n_global, n_features)
        The global IDIs, in seed order.
    checks_global : ChainChecks
        Their check records.
    pending : PendingChains or None
        The chains stopped before their end under a budget (None when there are none).
    """
    n = len(seeds)
    return _walk_chains(recorder, seeds.copy(), ChainChecks.empty(n, len(recorder.domain.combinations)),
                        np.ones(n, dtype=bool), 0, seeding=True, max_iter=max_iter, step=step, gradients=gradients,
                        direction=direction, walk_past_known_idis=walk_past_known_idis, budget_share=budget_share,
                        gradient_rows=gradient_rows, local_rows=local_rows)


def resume_global_walk(recorder: IDIRecorder, pending: PendingChains, *, max_iter: int, step: float,
                       gradients: ChainGradients, direction: StepDirection, walk_past_known_idis: bool,
                       budget_share: float, gradient_rows: int = 2,
                       local_rows: int = 0) -> tuple[np.ndarray, ChainChecks, PendingChains | None]:
    """Walk on the chains a budgeted :func:`global_walk` left pending, from their iteration, under a new share.

    As :func:`global_walk`, with ``budget_share`` a share of the budget left now; ``direction``'s ``rows`` index
    ``pending``'s chains. Inputs already checked are not checked again.

    Parameters
    ----------
    recorder : IDIRecorder
    pending : PendingChains
    max_iter, step, gradients, direction, walk_past_known_idis, budget_share, gradient_rows, local_rows
        As :func:`global_walk`.

    Returns
    -------
    x_global : numpy.ndarray of int64, shape (n_global, n_features)
    checks_global : ChainChecks
    pending : PendingChains or None
    """
    return _walk_chains(recorder, pending.x.copy(), pending.checks.copy(), pending.unchecked.copy(),
                        pending.iterations_done, seeding=False, max_iter=max_iter, step=step, gradients=gradients,
                        direction=direction, walk_past_known_idis=walk_past_known_idis, budget_share=budget_share,
                        gradient_rows=gradient_rows, local_rows=local_rows)


def _walk_chains(recorder: IDIRecorder, x: np.ndarray, checks: ChainChecks, unchecked: np.ndarray, first: int, *,
                 seeding: bool, max_iter: int, step: float, gradients: ChainGradients, direction: StepDirection,
                 walk_past_known_idis: bool, budget_share: float | None, gradient_rows: int,
                 local_rows: int) -> tuple[np.ndarray, ChainChecks, PendingChains | None]:
    """The iterations of :func:`global_walk` from iteration ``first``; ``unchecked`` marks the inputs to check."""
    domain = recorder.domain
    n = len(x)
    grad = np.zeros(x.shape)
    grad_cf = np.zeros(x.shape)
    movable = np.zeros(x.shape, dtype=bool)
    active = np.ones(n, dtype=bool)
    changed = np.ones(n, dtype=bool)  # gradients due
    cut = np.zeros(n, dtype=bool)
    is_global = np.zeros(n, dtype=bool)
    per_check = check_cost(len(domain.combinations)) * recorder.calls_per_query(with_proba=True)
    cap = None if seeding else _share_of_the_budget(recorder, budget_share)
    it = first
    for it in range(first, max_iter + 1):
        todo = _within_cap(recorder, np.flatnonzero(active & unchecked), per_check, cap, active, cut)
        if len(todo):
            res, new = recorder.check(x[todo], "global", with_proba=True)
            checks.set_rows(todo, ChainChecks.from_result(res))
            unchecked[todo] = False
            if seeding and it == 0:
                recorder.n_seed_idis = int(res.is_idi.sum())
                cap = _share_of_the_budget(recorder, budget_share)
            is_global[todo[new]] = True
            active[todo[new if walk_past_known_idis else res.is_idi]] = False
        if it == max_iter or not active.any() or _walks_fill_the_budget(recorder, cap, is_global, local_rows):
            break
        fresh = _within_cap(recorder, np.flatnonzero(active & changed), gradient_rows + per_check, cap, active, cut)
        if len(fresh):
            grad[fresh], grad_cf[fresh], movable[fresh] = gradients(x[fresh], checks.rows(fresh))
        moving = np.flatnonzero(active)
        if not len(moving):
            break
        d = direction(moving, grad[moving], grad_cf[moving], movable[moving])
        stepped = domain.repair(domain.clip(x[moving] + step * d))
        changed[:] = False
        changed[moving] = (stepped != x[moving]).any(axis=1)
        unchecked[:] = changed
        x[moving] = stepped
    idx = np.flatnonzero(is_global)
    return x[idx], checks.rows(idx), _pending(x, checks, unchecked, active | cut, cap, it, max_iter)


def _pending(x: np.ndarray, checks: ChainChecks, unchecked: np.ndarray, stopped: np.ndarray, cap: int | None,
             it: int, max_iter: int) -> PendingChains | None:
    """The chains a capped walk stopped at iteration ``it`` before ``max_iter``, or None."""
    index = np.flatnonzero(stopped)
    if cap is None or it >= max_iter or not len(index):
        return None
    return PendingChains(index, x[index], checks.rows(index), unchecked[index], it)


def _share_of_the_budget(recorder: IDIRecorder, share: float | None) -> int | None:
    """The ``recorder.n_queries`` that spending ``share`` of the query budget left reaches; None without either."""
    remaining = recorder.model.remaining_queries
    if share is None or remaining is None:
        return None
    return recorder.n_queries + int(share * remaining)


def _walks_fill_the_budget(recorder: IDIRecorder, cap: int | None, is_global: np.ndarray, local_rows: int) -> bool:
    """Whether, under a capped budget, the local walks of the global IDIs found could spend all that is left."""
    remaining = recorder.model.remaining_queries
    if cap is None or remaining is None or not local_rows:
        return False
    return int(is_global.sum()) * local_rows >= remaining


def _within_cap(recorder: IDIRecorder, chains: np.ndarray, cost: int, cap: int | None, active: np.ndarray,
                cut: np.ndarray) -> np.ndarray:
    """The first ``chains`` whose queries (``cost`` each, at most) fit under ``cap``; the others stop (``cut``)."""
    if cap is None:
        return chains
    fits = max(cap - recorder.n_queries, 0) // max(cost, 1)
    if fits < len(chains):
        active[chains[fits:]] = False
        cut[chains[fits:]] = True
        chains = chains[:fits]
    return chains


def inverse_saliency(g: np.ndarray, g_counterpart: np.ndarray, non_protected: np.ndarray,
                     epsilon: float) -> np.ndarray:
    """Local-phase feature probabilities, proportional to 1 / (|g| + |g'| + epsilon) on non-protected features.

    Features to which the model is least sensitive are the likeliest to be moved, so that the local walk
    stays inside the discriminatory region. ``epsilon > 0`` keeps every weight finite (a zero gradient
    component never divides by zero, algorithms.md §12.2); a row whose gradients are all zero gets the
    uniform distribution over the non-protected features.

    Parameters
    ----------
    g, g_counterpart : numpy.ndarray, shape (n, n_features)
    non_protected : numpy.ndarray of bool, shape (n_features,)
    epsilon : float
        Positive.

    Returns
    -------
    numpy.ndarray of float64, shape (n, n_features)
        Each row sums to 1 and is 0 on the protected attributes.
    """
    w = np.where(non_protected, 1.0 / (np.abs(g) + np.abs(g_counterpart) + epsilon), 0.0)
    return w / w.sum(axis=1, keepdims=True)


def sample_features(prob: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one feature per row from the row's distribution (inverse CDF, one uniform draw per row).

    Parameters
    ----------
    prob : numpy.ndarray, shape (n, n_features)
        Non-negative rows with positive sums.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Never a feature of zero probability.
    """
    return _sample_from_cumulative(np.cumsum(prob, axis=1), rng)


def _sample_from_cumulative(cum: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(len(cum)) * cum[:, -1]
    return np.minimum((cum <= u[:, None]).sum(axis=1), cum.shape[1] - 1).astype(np.int64)


def _sample_from_cumulative_columns(cum_t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """:func:`_sample_from_cumulative` of ``cum_t.T`` (one chain a column): the same draws and features.

    The count of cumulative probabilities at most the draw runs down the columns, so numpy sums whole rows of
    chains at once instead of a dozen features per chain (about twice as fast at a walk's thousand chains).
    """
    u = rng.random(cum_t.shape[1]) * cum_t[-1]
    return np.minimum((cum_t <= u).sum(axis=0), cum_t.shape[0] - 1).astype(np.int64)


def random_non_protected(n: int, non_protected: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One uniformly random non-protected feature index per row, shape (n,).

    Parameters
    ----------
    n : int
        Number of rows.
    non_protected : numpy.ndarray of int64
        Indices of the non-protected columns.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
    """
    idx = np.flatnonzero(non_protected)
    return idx[rng.integers(0, len(idx), size=n)]


# Computes the local-phase feature probabilities of the chains given by their inputs and check records.
Saliency = Callable[[np.ndarray, ChainChecks, np.random.Generator], np.ndarray]


def local_walk(recorder: IDIRecorder, x0: np.ndarray, checks0: ChainChecks, prob0: np.ndarray, *,
               max_local: int, step: float, update_interval: int | None, refresh: Saliency,
               rng: np.random.Generator) -> None:
    """The local phase of ADF, EIDIG and MAFT for every global IDI at once: a walk that stays on IDIs.

    Each iteration, every chain picks a non-protected feature from its probabilities, moves it by ``± step``
    (fair coin) and clips. A move to an IDI is kept and the walk continues from there; any other move returns
    the chain to its global IDI ``x0`` and to the probabilities ``prob0`` computed there (EIDIG's rule). After
    ``update_interval`` consecutive iterations without a return, the probabilities are recomputed at the
    current IDI by ``refresh``; ``None`` never recomputes them (EIDIG-INF).

    All chains are checked in one batch per iteration, through ``recorder`` with phase ``"local"``. Two kinds
    of move cost no model query, since the model is deterministic: a move that clipping (or the repair onto the
    domain's constraints) turns into no move (the chain stays on its IDI), and a move to a key this walk has
    already checked (or started from), whose outcome is known (the check of an input whose PA values lie in the
    PA domains depends only on its key; inputs outside them are always checked). A chain that moved onto a known
    IDI without a check is checked when its probabilities are next refreshed, since ``refresh`` needs that
    input's check records. The walk, and so every IDI found, is the same as with every move checked; only the
    queries differ.

    Parameters
    ----------
    recorder : IDIRecorder
    x0 : numpy.ndarray of int64, shape (n_chains, n_features)
        Global IDIs.
    checks0 : ChainChecks
        Their check records.
    prob0 : numpy.ndarray, shape (n_chains, n_features)
        Feature probabilities at ``x0``.
    max_local : int
        Iterations per chain.
    step : float
        Local step size s_l, in encoded units.
    update_interval : int or None
        Iterations between refreshes of the probabilities.
    refresh : callable
        ``refresh(X, checks, rng) -> probabilities``, shape (m, n_features), for the chains due.
    rng : numpy.random.Generator
    """
    n = len(x0)
    if n == 0 or max_local == 0:
        return
    # Onto the constraints: a seed that broke one was checked as its repair, and every proposal below is checked
    # as given (the walk repairs the moves that can break a rule).
    x0 = recorder.domain.repair(x0)
    known = KnownOutcomes(recorder)
    try:
        _walk(recorder, known, x0, checks0, prob0, max_local=max_local, step=step, update_interval=update_interval,
              refresh=refresh, rng=rng)
    finally:
        known.close()


def _walk(recorder: IDIRecorder, known: KnownOutcomes, x0: np.ndarray, checks0: ChainChecks, prob0: np.ndarray, *,
          max_local: int, step: float, update_interval: int | None, refresh: Saliency,
          rng: np.random.Generator) -> None:
    """The iterations of :func:`local_walk`, with the outcomes the walk knows in ``known``.

    Without refreshes (``update_interval=None``) nothing reads a chain's check records or its count of iterations
    since a return, so neither is kept, and the checks need no probabilities (labels come from ``predict`` either
    way, so the IDIs are the same).
    """
    n = len(x0)
    refreshing = update_interval is not None
    interval = update_interval or max_local + 1  # never reached without refreshes
    domain = recorder.domain
    lower, upper, constrained = domain.lower, domain.upper, domain.constrained_mask
    any_constrained = bool(constrained.any())
    stays_inside = any_constrained and domain.repairs_stay_inside()
    # A whole step moves integer codes to integers: added as an int64, it gives the values the float round trip
    # (rint of code + sign * step) gives, in one add and one clip in place.
    whole_step = float(step).is_integer() and abs(step) < 2**31
    x = x0.copy()
    # A copy: the records of x0 must survive the walk, since a chain that returns takes them back.
    checks = checks0.copy() if refreshing else checks0
    known.add(x0, np.ones(n, dtype=bool))
    # Chains on a known IDI reached without a check: their records in ``checks`` are those of an earlier input.
    stale = np.zeros(n, dtype=bool)
    # Cumulative feature probabilities, kept between iterations: a chain's change only on a refresh or a return.
    # (features, chains): one chain a column, for the draw (:func:`_sample_from_cumulative_columns`)
    cum0 = np.ascontiguousarray(np.cumsum(prob0, axis=1).T)
    cum = cum0.copy()
    since_return = np.zeros(n, dtype=np.int64)
    rows = np.arange(n)
    for _ in range(max_local):
        if refreshing:
            due = np.flatnonzero(since_return >= interval)
            if len(due):
                recheck = due[stale[due]]
                if len(recheck):
                    res, _ = recorder.check(x[recheck], "local", with_proba=True, satisfying=True)
                    checks.set_rows(recheck, ChainChecks.from_result(res))
                    stale[recheck] = False
                cum[:, due] = np.cumsum(refresh(x[due], checks.rows(due), rng), axis=1).T
                since_return[due] = 0
            since_return += 1
        feature = _sample_from_cumulative_columns(cum, rng)
        sign = rng.integers(0, 2, size=n) * 2 - 1
        old = x[rows, feature]
        if whole_step:
            value = old + sign * int(step)
            np.clip(value, lower[feature], upper[feature], out=value)
        else:
            value = np.clip(np.rint(old + sign * step), lower[feature], upper[feature]).astype(np.int64)
        changed = value != old
        # Onto the domain's constraints (architecture: counterparts that could exist); a move the repair undoes is no
        # move. A chain's input meets them (it was checked), so only a move of a column some rule reads can break one.
        # The recorder compares the candidates with the bounds only when a repair moved some outside them (none
        # should: the rows are then refused there, naming the fault); a clipped move stays inside.
        outside = False
        repairs = None
        risky = (changed & constrained[feature]).nonzero()[0] if any_constrained else None
        if risky is not None and len(risky):
            undone, fixed, repaired = domain.repair_one_column_moves(x[risky], feature[risky], value[risky])
            if len(undone):
                changed[risky[undone]] = False
            if len(fixed):
                outside = not stays_inside and bool((repaired < lower).any() or (repaired > upper).any())
                repairs = risky[fixed], repaired
        moved = changed.nonzero()[0]
        cand = x[moved]
        cand[np.arange(len(moved)), feature[moved]] = value[moved]
        if repairs is not None:  # moved is sorted, and holds every repaired chain
            cand[np.searchsorted(moved, repairs[0])] = repairs[1]
        if not len(moved):
            continue  # every chain stays on its IDI
        own = recorder.checker.own_combination(cand)  # read once, for the walk's bookkeeping and for the check
        where, inside = known.locate(cand, own, inside=not outside)
        is_known, outcome = known.lookup(cand, located=(where, inside))
        ask = (~is_known).nonzero()[0]
        if len(ask):
            asked = where.rows(ask)
            # the walk's outcome bits go on the keys in the recorder's own marking pass (KnownOutcomes.add's)
            res, _ = recorder.check(cand[ask], "local", with_proba=refreshing, located=asked, satisfying=True,
                                    also_mark=known.bits_for(inside[ask]), own=own[ask], inside=not outside)
            outcome[ask] = res.is_idi
            if refreshing:
                checked_hit = moved[ask[res.is_idi]]
                checks.set_rows(checked_hit, ChainChecks.from_result(res).rows(res.is_idi))
                stale[checked_hit] = False
        x[moved[outcome]] = cand[outcome]
        back = moved[~outcome]  # the chains that moved and found no IDI (moved is sorted, as flatnonzero gives)
        if refreshing:
            stale[moved[is_known & outcome]] = True
        if len(back):
            x[back] = x0[back]
            cum[:, back] = cum0[:, back]
            if refreshing:
                checks.set_rows(back, checks0.rows(back))
                since_return[back] = 0
                stale[back] = False


class KnownOutcomes:
    """Discrimination-check outcomes of the keys checked so far, for inputs whose PA values lie in the PA domains.

    Such an input's check tries every combination and compares with its own, so its outcome depends on its key
    only (architecture: the counting rule); an input outside the PA domains (a missing protected value) is never looked
    up or stored. The outcomes are two flag bits borrowed from the recorder's key table (:meth:`close` gives them back),
    so a key the walk knows costs no memory beyond the recorder's own entry for it.

    Parameters
    ----------
    recorder : IDIRecorder
        Gives the domain, its discrimination check and the key table.
    """

    def __init__(self, recorder: IDIRecorder):
        self.domain = recorder.domain
        self.checker = recorder.checker
        self._table = recorder.key_table
        self._idi, self._non_idi = self._table.borrow_bits(2)

    def locate(self, X: np.ndarray, own: np.ndarray | None = None, *,
               inside: bool = False) -> tuple[KeyLocation, np.ndarray]:
        """Locate each row's key in the recorder's key table, and say whether its PA values lie in the PA domains.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n, n_features)
            Codes.
        own : numpy.ndarray of int64, shape (n,), optional
            The rows' own PA combinations (:meth:`DiscriminationCheck.own_combination`), when the caller has them.
        inside : bool, default=False
            Every code of ``X`` is inside its bounds (:meth:`Domain.keys`). Not checked.

        Returns
        -------
        located : KeyLocation
            Valid until the table's next ``locate`` (pass it, or its rows, to :meth:`IDIRecorder.check`).
        inside : numpy.ndarray of bool, shape (n,)
        """
        if own is None:
            own = self.checker.own_combination(X)
        return self._table.locate(self.domain.keys(X, inside=inside)), own >= 0

    def lookup(self, X: np.ndarray, *, located=None) -> tuple[np.ndarray, np.ndarray]:
        """Whether each row's outcome is known, and whether it is an IDI (False where unknown), shape (n,) each.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n, n_features)
            Codes.
        located : tuple of (KeyLocation, numpy.ndarray), optional
            :meth:`locate` of ``X``, when the caller has it.

        Returns
        -------
        known : numpy.ndarray of bool, shape (n,)
        is_idi : numpy.ndarray of bool, shape (n,)
        """
        where, inside = self.locate(X) if located is None else located
        flags = self._table.flags_at(where)
        idi = inside & (flags & self._idi != 0)
        return idi | (inside & (flags & self._non_idi != 0)), idi

    def add(self, X: np.ndarray, is_idi: np.ndarray, *, located=None) -> None:
        """Remember the outcomes ``is_idi`` (shape (n,)) of the rows of ``X`` inside the PA domains.

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n, n_features)
            Codes.
        is_idi : numpy.ndarray of bool, shape (n,)
        located : tuple of (KeyLocation, numpy.ndarray), optional
            :meth:`locate` of ``X``, when the caller has it.
        """
        where, inside = self.locate(X) if located is None else located
        rows = np.flatnonzero(inside)
        if len(rows):
            bits = np.where(np.asarray(is_idi)[rows], self._idi, self._non_idi).astype(np.uint8)
            self._table.mark_at(where.rows(rows), bits)

    def bits_for(self, inside: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """The bits :meth:`add` sets, as :meth:`IDIRecorder.check`'s ``also_mark`` for rows whose ``inside`` is known.

        Parameters
        ----------
        inside : numpy.ndarray of bool, shape (n,)
            Whether each row's PA values lie in the PA domains (:meth:`locate`'s); rows outside get no bit.

        Returns
        -------
        callable
            ``is_idi (m,) -> uint8 bits (m,)`` for the leading ``m`` rows.
        """
        idi, non_idi = np.uint8(self._idi), np.uint8(self._non_idi)

        def bits(is_idi: np.ndarray) -> np.ndarray:
            return np.where(is_idi, idi, non_idi) * inside[:len(is_idi)]  # uint8 times bool: 0 outside
        return bits

    def close(self) -> None:
        """Give the borrowed bits back to the recorder's key table (clearing them)."""
        self._table.return_bits((self._idi, self._non_idi))


def local_gradient_rows(max_local: int, update_interval: int | None, rows_per_pair: int = 2) -> int:
    """Upper bound on gradient queries per global IDI in :func:`local_walk`: one pair at the IDI, one per refresh.

    A refresh needs ``update_interval`` iterations without a return before it, so at most
    ``(max_local - 1) // update_interval`` happen. A pair (input and counterpart) costs ``rows_per_pair``
    queries (:meth:`GradientSource.rows_per_pair`; 2 for the model's own gradient).

    Parameters
    ----------
    max_local : int
        Local iterations per global IDI.
    update_interval : int or None
        Iterations between gradient refreshes (None: never refreshed).
    rows_per_pair : int, default=2
        Queries of one gradient pair.

    Returns
    -------
    int
    """
    if max_local == 0:
        return 0
    refreshes = 0 if update_interval is None else (max_local - 1) // update_interval
    return rows_per_pair * (1 + refreshes)


def check_cost(n_combinations: int) -> int:
    """Upper bound on model queries of checking one input.

    One per combination, plus one when the input's own PA values lie outside the PA domains (see
    :class:`~chiralfair.oracle.DiscriminationCheck`).

    Parameters
    ----------
    n_combinations : int
        Protected-value combinations.

    Returns
    -------
    int
    """
    return n_combinations + 1
