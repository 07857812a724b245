"""AEQUITAS (Udeshi et al., ASE'18): random global phase, then a probabilistically directed local walk."""

from __future__ import annotations

import numpy as np

from .._validation import check_choice, check_float, check_int
from ..domain import Domain
from ..exceptions import ConfigError
from .base import Generator, register_generator
from .gradient_steps import KnownOutcomes
from .recorder import IDIRecorder

VARIANTS = ("random", "semi", "fully")


@register_generator("aequitas")
class Aequitas(Generator):
    r"""AEQUITAS: check the seeds, then walk around every global IDI by ±``perturbation_unit`` steps.

    Global phase: the seeds (the first ``max_global``) are checked in one batch; the IDIs among them are
    the global IDIs. Local phase: one chain per global IDI (per unique key); all chains advance together,
    ``max_local`` steps each. At every step each chain proposes one perturbed input:

    1. choose a non-protected feature ``p``: uniformly (``random``, ``semi``) or with probability
       ``σ_pr[p]`` (``fully``);
    2. choose a direction: −1 with probability ``σ_v[p]``, +1 otherwise; at a bound a fair coin;
    3. add ``direction * perturbation_unit`` to ``x[p]`` and clip into the domain.

    The whole batch of proposals is checked in one model batch. Then, per chain (vectorised), ``semi`` and
    ``fully`` move ``σ_v[p]`` by ``delta_v`` towards the direction that found an IDI (up if an IDI was found
    going −1 or none going +1, else down; clamped to [0, 1]); ``fully`` also raises ``σ_pr[p]`` by
    ``delta_pr`` on an IDI or lowers it (floored at 0) on a miss, then renormalises. ``random`` updates
    nothing (its direction is a fair coin throughout).

    Parameters
    ----------
    max_global : int
        Seeds checked by the global phase.
    max_local : int
        Local steps per global IDI (one proposal per step; see Counting below).
    variant : {"random", "semi", "fully"}
        Random, semi-directed or fully-directed AEQUITAS.
    perturbation_unit : int
        Size of one step, in encoded units.
    delta_v : float
        Change of the direction probability ``σ_v`` per step (paper §5: 0.001).
    delta_pr : float
        Change of the feature probability ``σ_pr`` per step (paper §5: 0.001; ``fully`` only).

    Notes
    -----
    Deliberate departures from the reference code (``sakshiudeshi/Aequitas``, ``pxzhang94/ADF:adf_baseline``):

    - **No basinhopping, no L-BFGS-B.** L-BFGS-B finite-differences a 0/1 objective, wasting about
      ``n_features + 1`` model calls per iteration, and its Metropolis acceptance lets the walk leave the IDI
      region with probability 0.37. Walk semantics here: a chain moves to its proposal when the proposal is
      an IDI and otherwise stays at its last IDI (basinhopping at temperature 0 without a minimiser), so every
      proposal is a ±1 neighbour of a known IDI. ``max_local`` therefore counts proposals (see Counting).
    - **σ_pr spans the non-protected features only** (paper Alg. 2, ``P \ P_disc``); the code spread it over
      every feature, PA included. Features with a single value (``lo == hi``) cannot move and are left out.
    - **Protected attributes are never perturbed by the step**, in every variant (the code's Random variant
      could step the PA), and any number of features is supported (the code hard-coded 13).
    - **Multi-valued and several PAs**: the discrimination check tries every combination of PA values (the
      code compared PA = 0 against PA = 1 only).
    - **σ_v and σ_pr are per chain**, so that chains are independent and advance together in one batch; the
      code shares them across the local searches, which run one after another.
    - **A step clipped back onto its own IDI is not checked** (at a bound the direction is a fair coin, so
      half of those steps are no-ops): it costs no query and updates neither σ_v nor σ_pr. Likewise a step
      that the domain's constraints repair back onto the IDI (architecture: counterparts that could exist). The code
      re-evaluated the unchanged IDI and rewarded the no-op, which drifts σ_pr towards features that sit at a
      bound (binary features always do). The step still counts towards ``max_local``.
    - **A proposal whose outcome the search already knows is not queried**: a key the global phase or an
      earlier step checked (a chain stepping back onto the IDI it came from, or onto a neighbour found not to
      be an IDI), or one another chain proposes in the same step. Its known outcome is used as a check's would
      be: the chain moves onto a known IDI, σ_v and σ_pr are updated, and the step counts towards
      ``max_local``. The draws and moves are those of checking every proposal, so without a query budget the
      IDIs found are the same keys, at fewer queries; under a budget the walk goes further.
    - **A proposal is checked with its chain's flipping counterpart first**
      (:meth:`IDIRecorder.check_first <chiralfair.generators.recorder.IDIRecorder.check_first>`): the
      combination of protected values that changed the label at the chain's IDI. A proposal it flips is an IDI
      at two queries instead of one per combination (census race: 5); the others get the remaining
      combinations. With two combinations (one binary PA) this is the ordinary check. Recorded pairs then hold
      the first counterpart found to flip, not the first in combination order.
    - **No wall-clock reseeding**: every draw comes from the ``random_state``'s generator.
    - **Global phase = the given seeds**, checked once (as in ADF's re-implementation, which loops over random
      samples instead of running basinhopping); the seed strategy decides where they come from.

    Counting: ``max_local`` is the number of steps per chain, one proposal each; ``n_checked['local']``
    counts the proposals sent to the model (no-op steps and known outcomes excluded); ``n_local`` the new
    IDI keys of the local phase; the queries are the model rows of those checks (about 2 per proposal that
    the chain's counterpart flips, up to one per combination for the others).

    References
    ----------
    .. [1] Udeshi, Arora, Chattopadhyay. "Automated directed fairness testing." ASE 2018.
    .. [2] Zhang et al. "White-box fairness testing through adversarial sampling." ICSE 2020 (its AEQUITAS
       baseline, ``adf_baseline/aequitas.py``, and the ``max_global = max_local = 1000`` defaults).
    """

    name = "aequitas"

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 variant: str = "fully",
                 perturbation_unit: int = 1, delta_v: float = 0.001, delta_pr: float = 0.001):
        self.variant = check_choice(variant, "variant", VARIANTS)
        self.perturbation_unit = check_int(perturbation_unit, "perturbation_unit", minimum=1)
        self.delta_v = check_float(delta_v, "delta_v", minimum=0.0, maximum=1.0)
        self.delta_pr = check_float(delta_pr, "delta_pr", minimum=0.0, maximum=1.0)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries, variant=self.variant,
                         perturbation_unit=self.perturbation_unit, delta_v=self.delta_v,
                         delta_pr=self.delta_pr)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        res, new = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(res.is_idi.sum())
        starts = seeds[new]
        if self.max_local == 0 or len(starts) == 0:
            return ()
        movable = _movable_features(recorder.domain)
        if len(movable) == 0:
            return ("every non-protected feature has a single value: the local phase cannot move",)
        walk = _LocalWalk(starts, movable, recorder.domain, self, rng, flips=res.counterpart_index[new])
        try:
            walk.know(recorder, res.X, res.is_idi)
            for _ in range(self.max_local):
                walk.step(recorder)
        finally:
            walk.close()
        return ()


class _LocalWalk:
    """State of all local chains: current IDI, direction probabilities σ_v and feature probabilities σ_pr.

    Arrays have shape (n_chains, n_features) for points and (n_chains, n_movable) for probabilities. The chains
    also carry the combination that flipped at their IDI (``first``, -1 when unknown), tried first by every
    check, and share one :class:`~chiralfair.generators.gradient_steps.KnownOutcomes` (made at the first
    :meth:`know` or :meth:`step`; :meth:`close` gives its bits back to the recorder).
    """

    def __init__(self, starts: np.ndarray, movable: np.ndarray, domain: Domain, gen: Aequitas,
                 rng: np.random.Generator, flips: np.ndarray | None = None):
        n, m = len(starts), len(movable)
        self.X = starts.copy()
        self.movable = movable
        self.lower = domain.lower[movable]
        self.upper = domain.upper[movable]
        self.gen = gen
        self.rng = rng
        self.rows = np.arange(n)
        self.sigma_v = np.full((n, m), 0.5)
        self.sigma_pr = np.full((n, m), 1.0 / m)
        self.first = np.full(n, -1, dtype=np.int64) if flips is None else np.asarray(flips, dtype=np.int64).copy()
        self.known: KnownOutcomes | None = None

    def know(self, recorder: IDIRecorder, X: np.ndarray, is_idi: np.ndarray) -> None:
        """Remember checked outcomes (e.g. the global phase's), so that the walk does not ask for them again."""
        self._known(recorder).add(X, is_idi)

    def close(self) -> None:
        """Give the known outcomes' bits back to the recorder's key table."""
        if self.known is not None:
            self.known.close()
            self.known = None

    def _known(self, recorder: IDIRecorder) -> KnownOutcomes:
        if self.known is None:
            self.known = KnownOutcomes(recorder)
            self.known.add(self.X, np.ones(len(self.X), dtype=bool))
        return self.known

    def _choose_features(self) -> np.ndarray:
        """Index into ``movable`` of each chain's feature, shape (n_chains,)."""
        n, m = self.sigma_pr.shape
        if self.gen.variant != "fully":
            return self.rng.integers(0, m, size=n)
        cum = np.cumsum(self.sigma_pr, axis=1)
        u = self.rng.random(n) * cum[:, -1]
        return np.minimum((cum <= u[:, None]).sum(axis=1), m - 1)

    def _choose_directions(self, p: np.ndarray, values: np.ndarray) -> np.ndarray:
        """−1 or +1 per chain; a fair coin where the feature sits at a bound."""
        n = len(p)
        directed = np.where(self.rng.random(n) < self.sigma_v[self.rows, p], -1, 1)
        coin = self.rng.integers(0, 2, size=n) * 2 - 1
        at_bound = (values == self.lower[p]) | (values == self.upper[p])
        return np.where(at_bound, coin, directed)

    def step(self, recorder: IDIRecorder) -> np.ndarray:
        """Propose, check (one model batch) and update every chain.

        Returns
        -------
        numpy.ndarray of bool, shape (n_chains,)
            Whether each chain's proposal was a (moved-to) IDI.
        """
        p = self._choose_features()
        cols = self.movable[p]
        values = self.X[self.rows, cols]
        direction = self._choose_directions(p, values)
        moved = np.clip(values + direction * self.gen.perturbation_unit, self.lower[p], self.upper[p])
        # A step pushed against a bound is clipped back onto the chain's own IDI: nothing new to check.
        rows = np.flatnonzero(moved != values)
        proposal = self.X[rows].copy()
        proposal[np.arange(len(rows)), cols[rows]] = moved[rows]
        # Onto the domain's constraints; a step the repair undoes is a no-op, like a step against a bound.
        proposal = recorder.domain.repair(proposal)
        real = (proposal != self.X[rows]).any(axis=1)
        rows, proposal = rows[real], proposal[real]
        idi = self._outcomes(recorder, rows, proposal)
        self._update(rows, p[rows], direction[rows], idi)
        self.X[rows[idi]] = proposal[idi]
        out = np.zeros(len(p), dtype=bool)
        out[rows] = idi
        return out

    def _outcomes(self, recorder: IDIRecorder, rows: np.ndarray, proposal: np.ndarray) -> np.ndarray:
        """Whether each proposal (of the chains ``rows``) is an IDI, asking the model only for unknown keys.

        One proposal per unknown key is checked (the first chain's), with the chain's flipping counterpart
        first; an input outside the PA domains is always checked (its outcome is not its key's).
        """
        known = self._known(recorder)
        where, inside = known.locate(proposal)
        is_known, idi = known.lookup(proposal, located=(where, inside))
        unknown = np.flatnonzero(~is_known)
        if not len(unknown):
            return idi
        key = where.inverse[unknown]
        # one row per unknown key among the rows inside the PA domains; every row outside them
        ask_mask = np.ones(len(unknown), dtype=bool)
        inside_rows = np.flatnonzero(inside[unknown])
        _, first_of_key = np.unique(key[inside_rows], return_index=True)
        ask_mask[inside_rows] = False
        ask_mask[inside_rows[first_of_key]] = True
        ask = unknown[ask_mask]
        res, _ = recorder.check_first(proposal[ask], self.first[rows[ask]], "local")
        idi[ask] = res.is_idi
        self.first[rows[ask[res.is_idi]]] = res.counterpart_index[res.is_idi]
        known.add(proposal[ask], res.is_idi)
        repeats = unknown[~ask_mask]
        if len(repeats):  # rows inside the PA domains whose key was asked on another row: that row's outcome
            answered = inside[ask]
            slot = where.inverse[ask[answered]]
            order = slot.argsort()
            idi[repeats] = res.is_idi[answered][order[np.searchsorted(slot, where.inverse[repeats], sorter=order)]]
        return idi

    def _update(self, rows: np.ndarray, p: np.ndarray, direction: np.ndarray, idi: np.ndarray) -> None:
        """Move σ_v (``semi``, ``fully``) and σ_pr (``fully``) of the chains ``rows`` after their check."""
        if self.gen.variant == "random" or len(rows) == 0:
            return
        towards_minus = (idi & (direction < 0)) | (~idi & (direction > 0))
        dv = np.where(towards_minus, self.gen.delta_v, -self.gen.delta_v)
        self.sigma_v[rows, p] = np.clip(self.sigma_v[rows, p] + dv, 0.0, 1.0)
        if self.gen.variant == "fully":
            pr = self.sigma_pr[rows, p]
            lowered = np.maximum(pr - self.gen.delta_pr, 0.0)
            self.sigma_pr[rows, p] = np.where(idi, pr + self.gen.delta_pr, lowered)
            self.sigma_pr[rows] /= self.sigma_pr[rows].sum(axis=1, keepdims=True)


def _movable_features(domain: Domain) -> np.ndarray:
    """Non-protected feature indices with more than one value, shape (n_movable,)."""
    idx = domain.non_protected
    return idx[domain.upper[idx] > domain.lower[idx]]


def _preset(variant: str):
    """Build a generator class registered as ``aequitas-<variant>`` with the variant fixed."""

    class Preset(Aequitas):
        __doc__ = f"AEQUITAS with ``variant={variant!r}`` fixed (see :class:`Aequitas`)."
        name = f"aequitas-{variant}"

        def __init__(self, **params):
            if params.pop("variant", variant) != variant:
                raise ConfigError(f"generator {self.name!r} fixes variant={variant!r}; "
                                  "use 'aequitas' to choose the variant")
            super().__init__(variant=variant, **params)

    Preset.__name__ = Preset.__qualname__ = f"Aequitas{variant.capitalize()}"
    return register_generator(Preset.name)(Preset)


AequitasRandom = _preset("random")
AequitasSemi = _preset("semi")
AequitasFully = _preset("fully")
