"""ADF, adversarial discrimination finder (Zhang et al., ICSE 2020): gradient-guided global and local search."""

from __future__ import annotations

import numpy as np

from .._validation import check_float, check_int
from .base import Generator, register_generator
from .gradient_steps import (
    ChainChecks,
    check_cost,
    counterpart_rows,
    cross_entropy_gradient,
    global_walk,
    inverse_saliency,
    local_gradient_rows,
    local_walk,
    pair_gradients,
    random_non_protected,
    steppable,
)
from .recorder import IDIRecorder

# Under a query budget, the largest share of what the seeds' check leaves that the global steps spend (as EIDIG's
# default ``global_share``): the local phase, where most IDIs are found, gets the rest.
GLOBAL_SHARE = 0.5


@register_generator("adf")
class ADF(Generator):
    """ADF: a global phase that walks each seed toward the decision boundary, then a local walk around each IDI.

    **Global phase.** Every seed starts a chain; all chains advance together. Each of ``max_iter + 1``
    iterations checks the chains' inputs (the input left by the last step is checked too, unlike EIDIG's copy
    of ADF, algorithms.md §12.5). An input that is an IDI with a new key ends its chain and becomes a global
    IDI. Otherwise its counterpart x' is the first PA combination that flips the label, else the one
    maximising |p_y(x) - p_y(x')|. With g and g' the gradients of the cross-entropy loss against the model's
    own label at x and x', the step is ``x <- clip(x + step_global * sign(g) * mask)``, where the mask holds
    the non-protected features with sign(g) = sign(g') != 0. If g is zero on every non-protected feature, the
    step follows sign(g') instead, and vice versa. If the mask is still empty, one random non-protected feature
    moves, in the direction of sign(g), else sign(g'), else a fair coin.

    **Local phase.** From each global IDI, ``max_local`` iterations: pick a non-protected feature with
    probability proportional to 1 / (|g| + |g'| + epsilon), where g, g' are the loss gradients at the current
    input and its first flipping counterpart; move it by ``± step_local`` (fair coin); clip.
    A move to an IDI is kept and the walk goes on from there (with gradients recomputed at the new input, as in
    the paper's Alg. 3); any other move returns the walk to the global IDI.

    Departures from the reference code (``pxzhang94/ADF``), each deliberate:

    - The local phase is not scipy's ``basinhopping``: its L-BFGS-B minimiser finite-differences a 0/1
      objective (about n_features + 1 wasted model calls per iteration) and its Metropolis acceptance lets the
      walk leave the discriminatory region (algorithms.md §12.3). The EIDIG-style walk above replaces it.
    - ``epsilon`` (I&D's fix) keeps the local probabilities finite where a gradient component is zero
      (§12.2); rows whose gradients are all zero get uniform probabilities.
    - The zero-gradient rules of the global phase move the chain (the reference code multiplies by a zero
      sign vector, so such a chain never moves, and its all-zero-g' case moves every feature upward).
    - The PA domain is the domain's (§12.1), and several PAs are handled at once (every combination).
    - All global phases run before all local phases (in the reference code each seed's local phase runs
      before the next seed's global phase), so an IDI that both find counts as global here.
    - Chains whose input did not change since the last iteration (stuck at a bound) are not re-checked or
      re-differentiated, and a local move to a key the walk has already checked is not checked again
      (:func:`~chiralfair.generators.gradient_steps.local_walk`): the model is deterministic, so the outcome is
      known. The IDIs found are the same; only the queries are fewer.
    - With coupled columns (architecture: counterparts that could exist), the mask also leaves out a coupled column on
      which x' holds another code than x (:func:`~.gradient_steps.steppable`): the two gradients are then taken at two
      different points of that axis. Every step is repaired onto the domain's constraints (:meth:`Domain.repair`).
    - **Under a query budget** (``max_queries``) the global steps spend at most half of what the seeds' check
      leaves (:data:`GLOBAL_SHARE`), and stop once the global IDIs in hand could spend the rest in their local walks
      (:func:`~.gradient_steps.global_walk`); a batch that does not fit is cut to the chains that fit. Without a
      budget nothing of this happens.

    Parameters
    ----------
    max_global : int
        Seeds taken by the global phase (1000 in the paper, 100 in the I&D paper's experiments).
    max_local : int
        Local iterations per global IDI.
    max_iter : int
        Global steps per seed (10); each seed is checked up to ``max_iter + 1`` times.
    step_global, step_local : float
        Step sizes s_g and s_l, in encoded units (1 in the paper).
    epsilon : float
        Added to the local saliency |g| + |g'| before inverting it.

    References
    ----------
    .. [1] Zhang, Zhang, Zhang, Zhou, Wang, Sun. "White-box fairness testing through adversarial sampling."
       ICSE 2020.
    """

    name = "adf"
    needs_gradient = True
    needs_proba = True

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 max_iter: int = 10,
                 step_global: float = 1.0, step_local: float = 1.0, epsilon: float = 1e-6):
        self.max_iter = check_int(max_iter, "max_iter", minimum=0)
        self.step_global = check_float(step_global, "step_global", minimum=0, exclusive_minimum=True)
        self.step_local = check_float(step_local, "step_local", minimum=0, exclusive_minimum=True)
        self.epsilon = check_float(epsilon, "epsilon", minimum=0, exclusive_minimum=True)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries, max_iter=self.max_iter,
                         step_global=self.step_global, step_local=self.step_local, epsilon=self.epsilon)

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries (checks and gradient rows) for ``n_seeds`` seeds (``n_features`` unused).

        Per seed: ``max_iter + 1`` checks and ``2 max_iter`` gradient rows in the global phase; per global IDI
        (at most one per seed): ``max_local`` checks and ``2 max_local`` gradient rows in the local phase.

        Parameters
        ----------
        n_seeds : int
            Seeds of the global phase.
        n_combinations : int
            Protected-value combinations the discrimination check tries per input.
        n_features : int, optional
            Features of the domain (unused here).

        Returns
        -------
        int
            Model queries (rows sent to the model).
        """
        per_check = check_cost(n_combinations)
        global_phase = (self.max_iter + 1) * per_check + 2 * self.max_iter
        local_phase = self.max_local * per_check + local_gradient_rows(self.max_local, 1)
        return int(n_seeds) * (global_phase + local_phase)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        x0, checks0 = self._global_phase(recorder, seeds, rng)
        if self.max_local and len(x0):
            prob0 = self._saliency(recorder, x0, checks0, rng)
            local_walk(recorder, x0, checks0, prob0, max_local=self.max_local, step=self.step_local,
                       update_interval=1, refresh=lambda X, c, r: self._saliency(recorder, X, c, r), rng=rng)
        return ()

    def _global_phase(self, recorder: IDIRecorder, seeds: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, ChainChecks]:
        """Advance every seed's chain; return the global IDIs that start a local walk and their check records."""
        domain, model = recorder.domain, recorder.model
        # An IDI whose key was already recorded by another chain goes on walking, as in ADF.
        x_global, checks_global, _ = global_walk(
            recorder, seeds, max_iter=self.max_iter, step=self.step_global,
            gradients=lambda X, checks: self._loss_gradients(model, domain, X, checks),
            direction=lambda rows, g, g_cf, movable: _adf_direction(g, g_cf, movable, rng), walk_past_known_idis=True,
            budget_share=GLOBAL_SHARE, local_rows=self.max_local * len(domain.combinations))
        return x_global, checks_global

    @staticmethod
    def _loss_gradients(model, domain, X: np.ndarray, checks: ChainChecks):
        """Cross-entropy gradients at X and at its first flipping (else most different) counterpart.

        Also the features a global step may move (:func:`~.gradient_steps.steppable`), shape (n, n_features).
        """
        combo = checks.first_flip()
        C = counterpart_rows(domain, X, combo)
        g, g_cf = pair_gradients(model, X, C)
        return (cross_entropy_gradient(g, checks.own_proba, checks.labels),
                cross_entropy_gradient(g_cf, checks.counterpart_proba(combo), checks.counterpart_label(combo)),
                steppable(domain, X, C))

    def _saliency(self, recorder: IDIRecorder, X: np.ndarray, checks: ChainChecks,
                  rng: np.random.Generator) -> np.ndarray:
        g, g_cf, _ = self._loss_gradients(recorder.model, recorder.domain, X, checks)
        return inverse_saliency(g, g_cf, recorder.domain.non_protected_mask, self.epsilon)


def _adf_direction(g: np.ndarray, g_cf: np.ndarray, movable: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """ADF's global step direction in {-1, 0, 1}, shape (n, n_features) (see the :class:`ADF` docstring).

    ``movable`` (n, n_features) marks the features a step may move (:func:`~.gradient_steps.steppable`); the
    random fallback feature is drawn among the movable features of its row.
    """
    s = np.where(movable, np.sign(g), 0.0)
    s_cf = np.where(movable, np.sign(g_cf), 0.0)
    direction = np.where(s == s_cf, s, 0.0)
    g_zero = ~s.any(axis=1)
    cf_zero = ~s_cf.any(axis=1)
    direction[g_zero] = s_cf[g_zero]
    direction[cf_zero & ~g_zero] = s[cf_zero & ~g_zero]
    empty = np.flatnonzero(~direction.any(axis=1))
    movable = np.broadcast_to(movable, g.shape)
    # Draw for every row so that the random stream does not depend on which rows are empty.
    feature = random_non_protected(len(g), np.any(movable, axis=0), rng)
    coin = rng.integers(0, 2, size=len(g)) * 2 - 1
    if len(empty):
        f = _next_movable(movable[empty], feature[empty])
        fallback = np.where(s[empty, f] != 0, s[empty, f], np.where(s_cf[empty, f] != 0, s_cf[empty, f], coin[empty]))
        direction[empty, f] = fallback
    return direction


def _next_movable(movable: np.ndarray, feature: np.ndarray) -> np.ndarray:
    """``feature[i]`` if row i may move it, else the next feature (cyclically) that row may move, shape (n,)."""
    d = movable.shape[1]
    distance = (np.arange(d)[None, :] - feature[:, None]) % d
    return np.where(movable, distance, d).argmin(axis=1)
