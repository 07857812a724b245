"""EIDIG (Zhang et al., ISSTA 2021): ADF with global momentum and local prior-gradient reuse.

Presets ``eidig`` (= EIDIG-INF at its default), ``eidig-5`` and ``eidig-inf``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_float, check_int
from ..exceptions import ConfigError
from .base import Generator, register_generator
from .gradient_steps import (
    ChainChecks,
    GradientSource,
    InputGradient,
    PendingChains,
    check_cost,
    confidence_gradient,
    counterpart_rows,
    global_walk,
    inverse_saliency,
    local_gradient_rows,
    local_walk,
    resume_global_walk,
    steppable,
)
from .recorder import IDIRecorder


@register_generator("eidig")
class EIDIG(Generator):
    """EIDIG: momentum-accelerated global search, then a local walk that reuses the gradient of its global IDI.

    **Global phase.** Every seed starts a chain; all chains advance together. Each of ``max_iter + 1``
    iterations checks the chains' inputs (the input left by the last step is checked too, algorithms.md
    §12.5). An IDI ends its chain; if its key is new it becomes a global IDI and starts a local walk. Otherwise
    x2 is the counterpart whose P(y=1) differs most from x's (``max_diff``); with
    c(x) = d P(y=1)/dx negated where the label is 0 (EIDIG's ``compute_grad``, pointing toward more confidence
    in the current label), the momenta are ``G1 <- decay G1 + c(x)`` and ``G2 <- decay G2 + c(x2)`` (both start
    at 0 per seed), and the step is ``x <- clip(x - step_global * sign(G1))`` on the non-protected features
    where sign(G1) = sign(G2); other features stay.

    **Local phase.** From each global IDI x0, the feature probabilities p0 are proportional to
    1 / (|g(x0)| + |g(x2)| + epsilon) over the non-protected features, with x2 the ``max_diff`` counterpart.
    For ``max_local`` iterations: pick a feature from p, move it by ``± step_local`` (fair coin), clip. A move
    to an IDI is kept and the walk continues from there; any other move returns to x0 and p0. After
    ``update_interval`` consecutive kept iterations, p is recomputed at the current input with a random
    flipping counterpart (``find_pair``); ``update_interval=None`` never recomputes it (EIDIG-INF, the cheapest
    variant and the one the I&D paper uses, hence the default of ``eidig``).

    Departures from the reference code (``LingfengZhang98/EIDIG``), each deliberate:

    - The last global step is checked (``max_iter + 1`` checks; the reference stops after ``max_iter``).
    - IDIs are counted by their non-protected projection (architecture: the counting rule), not by the full vector.
    - All global phases run before all local phases, batched over chains; the random stream is one
      ``numpy.random.Generator`` (the reference uses ``np.random.seed(42)`` and per-row draws), so runs are
      reproducible but not draw-for-draw identical to the reference.
    - Chains whose input did not change since the last iteration are not re-checked or re-differentiated, and a
      local move that clipping turns into no move, or that reaches a key the walk has already checked, costs no
      query (:func:`~chiralfair.generators.gradient_steps.local_walk`): the model is deterministic. The IDIs
      found are the same; only the queries are fewer.
    - With coupled columns (architecture: counterparts that could exist), the global step also leaves a coupled column
      on which x2 holds another code than x (:func:`~.gradient_steps.steppable`): the two momenta are then taken at two
      different points of that axis. Every step is repaired onto the domain's constraints (:meth:`Domain.repair`).
    - **Under a query budget** (``max_queries``, or one set on the model) the global steps spend at most
      ``global_share`` of the budget left after the seeds' check: a gradient batch or check that does not fit is cut
      to the first chains that fit (:func:`~.gradient_steps.global_walk`), and the steps also stop once the global
      IDIs in hand could spend what is left in their local walks (``max_local`` checks of ``K`` queries each), so
      that the local phase, where most IDIs are found, gets the budget. When those walks end with budget left, the
      chains stopped early walk on (:func:`~.gradient_steps.resume_global_walk`, momenta kept), then their new
      global IDIs' local walks, until the budget or the chains run out. The local saliency (and each refresh) is
      estimated for the first global IDIs whose gradients fit in half of the budget left; the others start from
      uniform feature probabilities, as an all-zero gradient gives. Without a budget nothing of this happens, and
      the search is the one described above, bit for bit.

    Parameters
    ----------
    max_global : int
        Seeds taken by the global phase (``g_num``, 1000 in the paper).
    max_local : int
        Local iterations per global IDI (``l_num``).
    max_iter : int
        Global steps per seed (10).
    decay : float
        Momentum decay in [0, 1] (0.5).
    update_interval : int or None
        Kept local iterations between gradient refreshes; None never refreshes (EIDIG-INF).
    step_global, step_local : float
        Step sizes s_g and s_l, in encoded units (1).
    epsilon : float
        Added to the local saliency before inverting it (1e-6).
    global_share : float
        Under a query budget, the largest share of what the seeds' check leaves that the global steps spend
        (0.5), in (0, 1].

    References
    ----------
    .. [1] Zhang, Zhang, Zhang. "Efficient white-box fairness testing through gradient search." ISSTA 2021.
    """

    name = "eidig"
    needs_gradient = True
    needs_proba = True

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 max_iter: int = 10, decay: float = 0.5,
                 update_interval: int | None = None, step_global: float = 1.0, step_local: float = 1.0,
                 epsilon: float = 1e-6, global_share: float = 0.5):
        self.max_iter = check_int(max_iter, "max_iter", minimum=0)
        self.decay = check_float(decay, "decay", minimum=0, maximum=1)
        self.update_interval = (None if update_interval is None
                                else check_int(update_interval, "update_interval", minimum=1))
        self.step_global = check_float(step_global, "step_global", minimum=0, exclusive_minimum=True)
        self.step_local = check_float(step_local, "step_local", minimum=0, exclusive_minimum=True)
        self.epsilon = check_float(epsilon, "epsilon", minimum=0, exclusive_minimum=True)
        self.global_share = check_float(global_share, "global_share", minimum=0.0, maximum=1.0,
                                        exclusive_minimum=True)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         max_iter=self.max_iter, decay=self.decay,
                         update_interval=self.update_interval, step_global=self.step_global,
                         step_local=self.step_local, epsilon=self.epsilon, global_share=self.global_share)

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries (checks and gradient rows) for ``n_seeds`` seeds.

        Per seed: ``max_iter + 1`` checks and ``max_iter`` gradient pairs (an input and its counterpart) in the
        global phase; per global IDI (at most one per seed): ``max_local`` checks, a gradient pair at the IDI
        and one per refresh. A pair costs 2 gradient rows (``n_features`` is not needed); MAFT's estimate costs
        more and needs ``n_features``.

        Parameters
        ----------
        n_seeds : int
            Seeds of the global phase.
        n_combinations : int
            Protected-value combinations the discrimination check tries per input.
        n_features : int, optional
            Features of the domain; needed by MAFT's finite-difference estimate (one probe per feature).

        Returns
        -------
        int
            Model queries (rows sent to the model).
        """
        features = self._budget_features(n_features)
        pair = self._gradient_source().rows_per_pair(features)
        local_pair = self._local_gradient_source().rows_per_pair(features)
        per_check = check_cost(n_combinations)
        global_phase = (self.max_iter + 1) * per_check + pair * self.max_iter
        local_phase = self.max_local * per_check + local_gradient_rows(self.max_local, self.update_interval,
                                                                       local_pair)
        return int(n_seeds) * (global_phase + local_phase)

    def _budget_features(self, n_features: int | None) -> int:
        return 0 if n_features is None else int(n_features)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        gradients, local_gradients = self._gradient_source(), self._local_gradient_source()
        momentum = _Momentum(len(seeds), recorder.domain.n_features, self.decay)
        x0, checks0, pending = self._global_phase(recorder, seeds, gradients, momentum)
        while True:
            if self.max_local and len(x0):
                prob0 = self._saliency(recorder, local_gradients, x0, checks0, checks0.max_difference())
                local_walk(recorder, x0, checks0, prob0, max_local=self.max_local, step=self.step_local,
                           update_interval=self.update_interval,
                           refresh=lambda X, c, r: self._saliency(recorder, local_gradients, X, c,
                                                                  c.random_flip(r)),
                           rng=rng)
            # Under a query budget the local walks may end with budget left: the pending chains walk on.
            spent = recorder.n_queries
            if pending is None:
                return ()
            momentum = momentum.subset(pending.index)
            x0, checks0, pending = self._global_phase(recorder, seeds, gradients, momentum, resume=pending)
            if recorder.n_queries == spent:
                return ()

    def _gradient_source(self) -> GradientSource:
        """Where the global phase takes d P(y=1)/dx from: the model's ``input_gradient`` (MAFT: an estimate)."""
        return InputGradient()

    def _local_gradient_source(self) -> GradientSource:
        """Where the local saliency takes d P(y=1)/dx from: as the global phase (MAFT: a plainer estimate)."""
        return self._gradient_source()

    def _global_phase(self, recorder: IDIRecorder, seeds: np.ndarray, gradients: GradientSource,
                      momentum: _Momentum, resume: PendingChains | None = None):
        """Advance every seed's chain with momentum (or the chains ``resume`` holds).

        Returns the new global IDIs, their check records and the chains left pending under a query budget
        (:func:`~.gradient_steps.global_walk`).
        """
        walk: dict[str, Any] = dict(max_iter=self.max_iter, step=self.step_global,
                    gradients=lambda X, checks: self._confidence_gradients(recorder, gradients, X, checks),
                    direction=momentum.direction, walk_past_known_idis=False, budget_share=self.global_share,
                    gradient_rows=gradients.rows_per_pair(recorder.domain.n_features),
                    local_rows=self.max_local * len(recorder.domain.combinations))
        if resume is None:
            return global_walk(recorder, seeds, **walk)
        return resume_global_walk(recorder, resume, **walk)

    @staticmethod
    def _confidence_gradients(recorder: IDIRecorder, gradients: GradientSource, X: np.ndarray,
                              checks: ChainChecks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """EIDIG's ``compute_grad`` at X and at its ``max_diff`` counterpart, and the features a step may move."""
        combo = checks.max_difference()
        C = counterpart_rows(recorder.domain, X, combo)
        g, g_cf = gradients.pair(recorder.model, recorder.domain, X, C, checks.own_proba,
                                 checks.counterpart_proba(combo))
        return (confidence_gradient(g, checks.labels), confidence_gradient(g_cf, checks.counterpart_label(combo)),
                steppable(recorder.domain, X, C))

    def _saliency(self, recorder: IDIRecorder, gradients: GradientSource, X: np.ndarray, checks: ChainChecks,
                  combo: np.ndarray) -> np.ndarray:
        """Local feature probabilities at ``X``; under a query budget, uniform past the gradients that fit."""
        fits = _affordable_pairs(recorder, gradients, len(X))
        if fits == len(X):
            g, g_cf = gradients.pair(recorder.model, recorder.domain, X, counterpart_rows(recorder.domain, X, combo),
                                     checks.own_proba, checks.counterpart_proba(combo))
        else:
            g, g_cf = np.zeros(X.shape), np.zeros(X.shape)
            if fits:
                head = checks.rows(np.arange(fits))
                g[:fits], g_cf[:fits] = gradients.pair(
                    recorder.model, recorder.domain, X[:fits], counterpart_rows(recorder.domain, X[:fits],
                                                                                combo[:fits]),
                    head.own_proba, head.counterpart_proba(combo[:fits]))
        return inverse_saliency(g, g_cf, recorder.domain.non_protected_mask, self.epsilon)


# Under a query budget, the largest share of what is left that one batch of local saliency estimates spends.
SALIENCY_SHARE = 0.5


def _affordable_pairs(recorder: IDIRecorder, gradients: GradientSource, n: int) -> int:
    """How many of ``n`` gradient pairs fit in :data:`SALIENCY_SHARE` of the query budget left (``n`` without one)."""
    remaining = recorder.model.remaining_queries
    if remaining is None:
        return n
    per_pair = max(gradients.rows_per_pair(recorder.domain.n_features), 1)
    return min(n, int(SALIENCY_SHARE * remaining) // per_pair)


class _Momentum:
    """EIDIG's global step: momenta G1, G2 of the chains' gradients, stepping along -sign(G1) where it agrees with G2.

    Parameters
    ----------
    n_chains, n_features : int
    decay : float
    """

    def __init__(self, n_chains: int, n_features: int, decay: float):
        self.decay = decay
        self.g = np.zeros((n_chains, n_features))
        self.g_counterpart = np.zeros((n_chains, n_features))

    def direction(self, rows: np.ndarray, grad: np.ndarray, grad_counterpart: np.ndarray,
                  movable: np.ndarray) -> np.ndarray:
        """Update the momenta of the chains ``rows``; return their step direction, shape (len(rows), n_features).

        ``movable`` (len(rows), n_features) marks the features a step may move
        (:func:`~.gradient_steps.steppable`).
        """
        self.g[rows] = self.decay * self.g[rows] + grad
        self.g_counterpart[rows] = self.decay * self.g_counterpart[rows] + grad_counterpart
        s, s_cf = np.sign(self.g[rows]), np.sign(self.g_counterpart[rows])
        return np.where(movable & (s == s_cf), -s, 0.0)

    def subset(self, rows: np.ndarray) -> _Momentum:
        """The momenta of the chains ``rows`` only (their rows renumbered from 0), for a resumed walk."""
        out = _Momentum(len(rows), self.g.shape[1], self.decay)
        out.g, out.g_counterpart = self.g[rows], self.g_counterpart[rows]
        return out


class _FixedInterval(EIDIG):
    """EIDIG with the class's ``update_interval`` fixed (a named preset)."""

    fixed_update_interval: int | None = None

    def __init__(self, **params):
        if "update_interval" in params:
            raise ConfigError(f"generator {self.name!r} fixes update_interval={self.fixed_update_interval!r}; "
                              "use 'eidig' to choose it")
        super().__init__(update_interval=self.fixed_update_interval, **params)


@register_generator("eidig-5")
class EIDIG5(_FixedInterval):
    """EIDIG-5: :class:`EIDIG` refreshing the local gradients after every 5 kept iterations.

    Parameters
    ----------
    **params
        As :class:`EIDIG`, without ``update_interval``.
    """

    name = "eidig-5"
    fixed_update_interval = 5


@register_generator("eidig-inf")
class EIDIGINF(_FixedInterval):
    """EIDIG-INF: :class:`EIDIG` never refreshing the local gradients (same as ``eidig`` at its default).

    Parameters
    ----------
    **params
        As :class:`EIDIG`, without ``update_interval``.
    """

    name = "eidig-inf"
    fixed_update_interval = None
