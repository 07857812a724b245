"""SG, symbolic generation (Aggarwal et al., FSE 2019).

SG negates the predicates of a local surrogate tree's decision path and solves the resulting constraints to
reach new inputs. A black-box generator: it needs only the model's ``predict``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .._random import derive_seed
from .._validation import check_choice, check_float, check_int
from ..domain import Domain
from ..exceptions import ConfigError
from .base import Generator, register_generator
from .recorder import IDIRecorder
from .surrogate import PathStep, Predicate, decision_path, fit_surrogate, local_samples

SEED_RANK = 5.0
LOCAL_RANK = 1.0   # the reference's rank2: local candidates are popped before seeds
GLOBAL_RANK = 10.0  # the reference's rank3: global candidates after seeds
SOLVERS = ("auto", "interval", "z3")


class _Item(NamedTuple):
    """A queue entry; ``(priority, order)`` decides the order, ``order`` breaking ties by insertion."""

    priority: float
    order: int
    phase: str   # "global" (seeds, global search) or "local"
    seed: bool
    root: int    # for local items: ``order`` of the global IDI whose local search they descend from
    x: np.ndarray


class SolverTimeout(RuntimeError):
    """z3 gave up on a constraint within its time-out (``check()`` returned ``unknown``)."""


# ---------------------------------------------------------------------------------------------- solving
def solve_interval(constraints: Sequence[Predicate], x: np.ndarray, domain: Domain) -> np.ndarray | None:
    """Solve a conjunction of single-feature bounds by interval arithmetic.

    Features named in ``constraints`` range over their domain bounds (a protected attribute over its
    declared values); all other features keep ``x``'s values. The solution returned is the one nearest to
    ``x`` (L1), which for a box is the per-feature clip of ``x`` into the feasible interval.

    Parameters
    ----------
    constraints : sequence of Predicate
    x : numpy.ndarray of int64, shape (n_features,)
        The input the constraints were derived from.
    domain : Domain

    Returns
    -------
    numpy.ndarray of int64, shape (n_features,), or None
        None when the constraints are unsatisfiable inside the domain.
    """
    out = np.array(x, dtype=np.int64, copy=True)
    lo, hi = _feasible_intervals(constraints, domain)
    protected = dict(zip(domain.protected, domain.protected_values, strict=True))
    for f in lo:
        a, b = lo[f], hi[f]
        if f in protected:
            allowed = np.array([v for v in protected[f] if a <= v <= b], dtype=np.int64)
            if len(allowed) == 0:
                return None
            out[f] = allowed[np.argmin(np.abs(allowed - out[f]))]
        elif a > b:
            return None
        else:
            out[f] = min(max(out[f], a), b)
    return out


def _feasible_intervals(constraints, domain) -> tuple[dict[int, int], dict[int, int]]:
    lo: dict[int, int] = {}
    hi: dict[int, int] = {}
    for p in constraints:
        f = p.feature
        if f not in lo:
            lo[f], hi[f] = domain.features[f].lo, domain.features[f].hi
        if p.upper:
            hi[f] = min(hi[f], p.bound)
        else:
            lo[f] = max(lo[f], p.bound)
    return lo, hi


def solve_z3(constraints: Sequence[Predicate], x: np.ndarray, domain: Domain, *,
             timeout_ms: int) -> np.ndarray | None:
    """Solve a conjunction of predicates with z3 (Int variables bounded by the domain).

    Same contract as :func:`solve_interval`: variables only for the constrained features (protected ones
    restricted to their declared values), the others keep ``x``'s values, and z3's ``Optimize`` returns the
    solution nearest to ``x`` (L1), so both solvers agree.

    Parameters
    ----------
    constraints : sequence of Predicate
    x : numpy.ndarray of int64, shape (n_features,)
    domain : Domain
    timeout_ms : int
        z3's per-query time-out, in milliseconds.

    Returns
    -------
    numpy.ndarray of int64, shape (n_features,), or None
        None when unsatisfiable.

    Raises
    ------
    SolverTimeout
        If z3 answers ``unknown`` (time-out).
    """
    import z3  # lazily: importing the solver takes about 0.2 s, which a refused flag should not pay

    out = np.array(x, dtype=np.int64, copy=True)
    opt = z3.Optimize()
    opt.set("timeout", int(timeout_ms))
    protected = dict(zip(domain.protected, domain.protected_values, strict=True))
    var = {}
    for f in sorted({p.feature for p in constraints}):
        feat = domain.features[f]
        v = var[f] = z3.Int(feat.name)
        opt.add(v >= feat.lo, v <= feat.hi)
        if f in protected:
            opt.add(z3.Or([v == int(a) for a in protected[f]]))
    for p in constraints:
        v = var[p.feature]
        opt.add(v <= p.bound if p.upper else v >= p.bound)
    opt.minimize(z3.Sum([z3.Abs(v - int(out[f])) for f, v in var.items()]))
    answer = opt.check()
    if answer == z3.unsat:
        return None
    if answer != z3.sat:
        raise SolverTimeout(f"z3 returned {answer} within {timeout_ms} ms")
    model = opt.model()
    for f, v in var.items():
        out[f] = model.eval(v, model_completion=True).as_long()
    return out


def solve(constraints: Sequence[Predicate], x: np.ndarray, domain: Domain, *, solver: str = "auto",
          timeout_ms: int = 1000) -> np.ndarray | None:
    """Solve path constraints with the chosen solver.

    ``"interval"`` always uses interval arithmetic, ``"z3"`` always z3, ``"auto"`` interval arithmetic when
    one feature is constrained and z3 otherwise.

    Parameters
    ----------
    constraints : sequence of Predicate
        The path constraints to satisfy.
    x : numpy.ndarray of int64, shape (n_features,)
        The input to move as little as possible (unconstrained features keep its values).
    domain : Domain
    solver : {"auto", "interval", "z3"}, default="auto"
    timeout_ms : int, default=1000
        z3's time limit in milliseconds.

    Returns
    -------
    numpy.ndarray of int64, shape (n_features,), or None
        An input in the domain satisfying the constraints; None if there is none.

    Raises
    ------
    SolverTimeout
        If z3 is used and times out.
    """
    single = len({p.feature for p in constraints}) <= 1
    if solver == "interval" or (solver == "auto" and single):
        return solve_interval(constraints, x, domain)
    return solve_z3(constraints, x, domain, timeout_ms=timeout_ms)


# ---------------------------------------------------------------------------------------------- search
def local_constraints(path: Sequence[PathStep]):
    """Yield, for each path predicate, the path with it negated and the constraint on its feature alone.

    Parameters
    ----------
    path : sequence of PathStep
        The decision path of an input in the surrogate tree.

    Yields
    ------
    negated_path : tuple of Predicate
        The full path with predicate ``i`` negated (the visited-path key).
    constraint : list of Predicate
        The predicates of ``negated_path`` on predicate ``i``'s feature (the other features stay put).
    confidence : float
        Mean confidence of the negated path, with ``1 - c`` for the negated predicate.
    """
    preds = [s.predicate for s in path]
    confs = np.array([s.confidence for s in path])
    for i, p in enumerate(preds):
        negated = (*preds[:i], p.negate(), *preds[i + 1:])
        c = confs.copy()
        c[i] = 1.0 - c[i]
        yield negated, [q for q in negated if q.feature == p.feature], float(c.mean())


def global_constraint(path: Sequence[PathStep], threshold: float):
    """Negate the path's first predicate with confidence below ``threshold``, keeping the prefix before it.

    Parameters
    ----------
    path : sequence of PathStep
        The decision path of an input in the surrogate tree.
    threshold : float
        Confidence below which a predicate is negated.

    Returns
    -------
    (constraint, confidence) or None
        ``constraint`` is a tuple of Predicate (also the visited-path key); ``confidence`` the mean
        confidence with ``1 - c`` for the negated predicate. None if every confidence is >= ``threshold``.
    """
    for i, step in enumerate(path):
        if step.confidence < threshold:
            constraint = (*(s.predicate for s in path[:i]), step.predicate.negate())
            confs = [s.confidence for s in path[:i]] + [1.0 - step.confidence]
            return constraint, float(np.mean(confs))
    return None


@register_generator("sg")
class SymbolicGeneration(Generator):
    """SG: symbolic generation of IDIs from local surrogate trees and constraint solving.

    Each input popped from a priority queue is checked for discrimination and explained: ``n_samples``
    samples around it (a random subset of features re-drawn uniformly in the domain, see
    :mod:`~chiralfair.generators.surrogate`) are labelled by the model in one batch and a
    ``DecisionTreeClassifier`` is fitted on them; the input's decision path gives predicates with
    confidences (the child's share of its parent's samples). Predicates on protected attributes are dropped.

    - **Local search** (if the input is an IDI): each predicate is negated in turn and solved for its feature
      alone, the other features keeping their values; pushed with priority ``1 + mean confidence``.
    - **Global search** (always): the first predicate with confidence below ``threshold`` is negated, with
      the prefix before it kept; pushed with priority ``10 - mean confidence``.
    - Seeds enter with priority 5, so the order is local < seeds < global. Ties go by insertion order.
    - A negated path already in the visited set is not solved again.
    - Inputs from the local search count in the local phase; seeds and global-search inputs in the global one.

    The run stops when ``limit`` unique inputs (keys) have been tested, the queue is empty, or
    ``time_budget`` has passed; :attr:`SearchResult.notes` says which.

    Parameters
    ----------
    max_global : int
        Seeds used (the first ``max_global``).
    max_local : int
        Local tests per global IDI (with ``cap_local``); also sets the default
        ``limit = max_global * (max_local + 1)``: every seed plus its local tests.
    limit : int, optional
        Unique inputs to test (the reference's ``sample_limit``: 1000 there, 100 in the I&D replication).
    n_samples : int
        Surrogate samples per explained input, the input itself included (the reference draws 5000; each
        other sample is one model query).
    perturb_prob : float
        Probability that a sample re-draws a feature. The default 0.2 re-draws about 2.6 of census's 13
        features per sample; 1.0 re-draws all of them, like LIME's global-marginal samples. Local samples give
        high confidences along the path, so the global search (which needs one below ``threshold``) fires
        less often and the run leans on the local search.
    max_depth : int, optional
        Depth cap of the surrogate tree; None (the reference) grows it until its leaves are pure.
    threshold : float
        The global search negates the first predicate with confidence below it (the paper's T1).
    solver : {"auto", "interval", "z3"}
        How constraints are solved: ``"z3"`` always with z3 (``Optimize``); ``"interval"`` always by interval
        arithmetic (exact: tree paths are conjunctions of single-feature bounds); ``"auto"`` by interval
        arithmetic for single-feature constraints (all local-search ones) and z3 otherwise. All three give
        the same solution: the one nearest to the explained input (L1).
    solver_timeout_ms : int
        z3 time-out per query, in milliseconds; a timed-out query yields no candidate (counted in the notes).
    time_budget : float, optional
        Wall-clock budget of the whole run, in seconds; None for none. It is checked between explained
        inputs, so a run may overrun it by one explanation (plus one solver time-out). With a budget the
        result depends on the machine's speed: same ``random_state`` gives identical results only without one.
    batch_size : int
        Queue items popped, checked (one discrimination-check batch) and explained together. 1 reproduces the
        strict queue order; larger batches let items pushed by one member of a batch wait for the others.
    cap_local : bool
        True (default): the local search that descends from one global IDI (a seed or a global-search input)
        tests at most ``max_local`` inputs, then its remaining candidates are dropped, as the budget of the
        other generators reads. False: the reference's uncapped local search, where only ``limit`` stops it;
        since local candidates outrank seeds, the first IDI seed's local search then takes the whole budget
        and the later seeds are never reached (on census age with a DNN, not even at ``limit`` = 10,000).

    Notes
    -----
    Departures from the reference re-implementation (``pxzhang94/ADF:adf_baseline/symbolic_generation.py``):

    - Local samples instead of LIME's global-marginal samples (``algorithms.md`` §12.9); 1000 samples per
      input by default instead of 5000 (the tree fit dominates the run time).
    - Solutions are the ones nearest to the explained input instead of z3's arbitrary model, which makes runs
      reproducible and keeps the "sticky" spirit of the paper.
    - An input whose key was tested before is not explained again; ``limit`` counts unique tested keys, as
      the reference's ``tot_inputs`` does.
    - Mean confidences leave out the dropped protected-attribute predicates.
    - The ``max_local`` cap per global IDI (``cap_local``) is ours; the reference has only ``limit``.
    - Seeds are tested when popped, as in the reference; seeds never reached before the run stops are not
      tested, so ``n_seed_idis`` counts only the tested seeds (the notes say how many were not reached).
    - Solutions and surrogate samples are repaired onto the domain's constraints (:meth:`Domain.repair`,
      architecture: counterparts that could exist), so no query is spent on an input that cannot exist.

    References
    ----------
    .. [1] Aggarwal, Lohia, Nagar, Dey, Saha. "Black box fairness testing of machine learning models."
       ESEC/FSE 2019.
    .. [2] Zhang et al. "White-box fairness testing through adversarial sampling." ICSE 2020 (the
       re-implementation used as baseline by ADF, EIDIG and I&D).
    """

    name = "sg"

    def __init__(self, *, max_global: int = 100, max_local: int = 100, max_queries: int | None = None,
                 limit: int | None = None,
                 n_samples: int = 1000, perturb_prob: float = 0.2, max_depth: int | None = None,
                 threshold: float = 0.3, solver: str = "auto", solver_timeout_ms: int = 1000,
                 time_budget: float | None = None, batch_size: int = 8, cap_local: bool = True):
        if not isinstance(cap_local, bool):
            raise ConfigError(f"cap_local must be True or False, got {cap_local!r}")
        if limit is not None:
            limit = check_int(limit, "limit", minimum=1)
        if max_depth is not None:
            max_depth = check_int(max_depth, "max_depth", minimum=1)
        if time_budget is not None:
            time_budget = check_float(time_budget, "time_budget", minimum=0.0, exclusive_minimum=True)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries, limit=limit,
                         n_samples=check_int(n_samples, "n_samples", minimum=2),
                         perturb_prob=check_float(perturb_prob, "perturb_prob", minimum=0.0, maximum=1.0,
                                                  exclusive_minimum=True),
                         max_depth=max_depth,
                         threshold=check_float(threshold, "threshold", minimum=0.0, maximum=1.0),
                         solver=check_choice(solver, "solver", SOLVERS),
                         solver_timeout_ms=check_int(solver_timeout_ms, "solver_timeout_ms", minimum=1),
                         time_budget=time_budget, batch_size=check_int(batch_size, "batch_size", minimum=1),
                         cap_local=cap_local)

    @property
    def limit(self) -> int:
        """Unique inputs to test: the ``limit`` parameter, else ``max_global * (max_local + 1)``."""
        return self.params["limit"] or self.max_global * (self.max_local + 1)

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries: ``limit * (n_combinations + n_samples)``.

        At most ``limit`` unique inputs are tested (``n_combinations`` queries each, one more if its PA values
        lie outside the PA domains) and explained (``n_samples - 1`` queries each).

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
            Model queries.
        """
        return self.limit * (n_combinations + 1 + self.params["n_samples"] - 1)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        return _SGRun(self, recorder, seeds, rng).run()


class _SGRun:
    """The state of one SG run: the queue, the visited paths and the tested keys."""

    def __init__(self, gen: SymbolicGeneration, recorder: IDIRecorder, seeds: np.ndarray, rng):
        p = gen.params
        self.p, self.recorder, self.rng = p, recorder, rng
        self.domain = recorder.domain
        self.limit = gen.limit
        self.protected = set(self.domain.protected)
        self.tree_seed = derive_seed(rng)
        self.queue: list = []
        self.counter = itertools.count()
        self.visited: set = set()
        self.tested: set = set()
        self.n_seeds = len(seeds)
        self.n_seeds_reached = 0
        self.n_z3 = self.n_timeouts = 0
        self.cap = p["max_local"] if p["cap_local"] else None
        self.local_tested: dict[int, int] = {}
        self.n_capped = 0
        for x in seeds:
            self._push(SEED_RANK, "global", x, seed=True)

    def _push(self, priority: float, phase: str, x: np.ndarray, *, seed: bool = False,
              root: int = -1) -> None:
        heapq.heappush(self.queue, _Item(priority, next(self.counter), phase, seed, root, x))

    def _over_time(self) -> bool:
        budget = self.p["time_budget"]
        return budget is not None and self.recorder.seconds >= budget

    def run(self) -> tuple[str, ...]:
        stop = None
        while stop is None:
            if self.recorder.n_tested >= self.limit:
                stop = f"stopped: limit of {self.limit} tested inputs reached"
            elif not self.queue:
                stop = (f"stopped: queue empty after {self.recorder.n_tested} tested inputs "
                        "(no unvisited path left)")
            elif self._over_time():
                stop = self._time_note()
            elif not self._step():
                stop = self._time_note()
        return self._notes(stop)

    def _time_note(self) -> str:
        return (f"stopped: time budget of {self.p['time_budget']:g} s reached after {self.recorder.n_tested} "
                "tested inputs (results depend on machine speed, not reproducible)")

    def _notes(self, stop: str) -> tuple[str, ...]:
        notes = [stop]
        if self.n_timeouts:
            notes.append(f"{self.n_timeouts} of {self.n_z3} z3 queries timed out after "
                         f"{self.p['solver_timeout_ms']} ms; they yielded no candidate")
        if self.n_capped:
            notes.append(f"{self.n_capped} local candidates were dropped: their global IDI had used its "
                         f"max_local={self.cap} local tests")
        missed = self.n_seeds - self.n_seeds_reached
        if missed:
            notes.append(f"{missed} of {self.n_seeds} seeds were not reached before the run stopped; "
                         f"n_seed_idis counts the {self.n_seeds_reached} reached seeds only")
        return tuple(notes)

    def _pop_batch(self) -> list[_Item]:
        """Pop up to ``batch_size`` items with untested keys.

        No more than the limit leaves room for, and no local item beyond its global IDI's ``max_local`` cap.
        """
        room = min(self.p["batch_size"], self.limit - self.recorder.n_tested)
        batch: list[_Item] = []
        while self.queue and len(batch) < room:
            item = heapq.heappop(self.queue)
            key = self.domain.keys(item.x[None, :])[0]
            if item.seed:
                self.n_seeds_reached += 1
            if key in self.tested:
                if item.seed:
                    self.recorder.n_seed_idis += int(self.recorder.is_recorded(item.x[None, :])[0])
                continue
            if item.phase == "local" and self.cap is not None:
                if self.local_tested.get(item.root, 0) >= self.cap:
                    self.n_capped += 1
                    continue
                self.local_tested[item.root] = self.local_tested.get(item.root, 0) + 1
            self.tested.add(key)
            batch.append(item)
        return batch

    def _step(self) -> bool:
        """Check and explain one batch; False if the time budget ran out midway."""
        batch = self._pop_batch()
        if not batch:
            return True
        X = np.stack([item.x for item in batch])
        phases = np.array([item.phase for item in batch])
        labels = np.empty(len(X), dtype=np.int64)
        is_idi = np.empty(len(X), dtype=bool)
        for phase in ("global", "local"):
            rows = np.flatnonzero(phases == phase)
            if len(rows):
                res, _ = self.recorder.check(X[rows], phase)
                labels[rows], is_idi[rows] = res.labels, res.is_idi
        is_seed = np.array([item.seed for item in batch])
        self.recorder.n_seed_idis += int((is_idi & is_seed).sum())
        paths = self._explain(X, labels)
        for item, path, idi in zip(batch, paths, is_idi, strict=True):
            if self._over_time():
                return False
            x = item.x
            if idi and self.cap != 0:
                self._local_search(x, path, root=item.root if item.phase == "local" else item.order)
            self._global_search(x, path)
        return True

    def _explain(self, X: np.ndarray, labels: np.ndarray) -> list[list[PathStep]]:
        """Return each input's decision path in a surrogate tree, without protected-attribute predicates.

        All inputs' samples are labelled in one model batch.
        """
        n, d = self.p["n_samples"] - 1, self.domain.n_features
        S = local_samples(X, self.domain, n, self.p["perturb_prob"], self.rng)
        # No query on an input that breaks the domain's constraints, samples included
        # (architecture: counterparts that could exist).
        S = self.domain.repair(S.reshape(-1, d)).reshape(S.shape)
        L = self.recorder.model.predict(S.reshape(-1, d)).reshape(len(X), n)
        paths = []
        for x, y, s, lab in zip(X, labels, S, L, strict=True):
            tree = fit_surrogate(np.vstack([x[None, :], s]), np.concatenate([[y], lab]),
                                 random_state=self.tree_seed, max_depth=self.p["max_depth"])
            paths.append([st for st in decision_path(tree, x) if st.predicate.feature not in self.protected])
        return paths

    def _solve(self, constraint, x) -> np.ndarray | None:
        solver = self.p["solver"]
        uses_z3 = solver == "z3" or (solver == "auto" and len({q.feature for q in constraint}) > 1)
        self.n_z3 += uses_z3
        try:
            return solve(constraint, x, self.domain, solver=solver, timeout_ms=self.p["solver_timeout_ms"])
        except SolverTimeout:
            self.n_timeouts += 1
            return None

    def _push_candidate(self, priority: float, phase: str, x_new: np.ndarray | None, root: int = -1) -> None:
        if x_new is None:
            return
        # onto the domain's constraints (architecture: counterparts that could exist)
        x_new = self.domain.repair(x_new[None, :])[0]
        if self.domain.keys(x_new[None, :])[0] not in self.tested:
            self._push(priority, phase, x_new, root=root)

    def _local_search(self, x: np.ndarray, path: list[PathStep], root: int) -> None:
        for negated, constraint, conf in local_constraints(path):
            if negated in self.visited:
                continue
            self.visited.add(negated)
            self._push_candidate(LOCAL_RANK + conf, "local", self._solve(constraint, x), root)

    def _global_search(self, x: np.ndarray, path: list[PathStep]) -> None:
        found = global_constraint(path, self.p["threshold"])
        if found is None or found[0] in self.visited:
            return
        constraint, conf = found
        self.visited.add(constraint)
        self._push_candidate(GLOBAL_RANK - conf, "global", self._solve(constraint, x))
