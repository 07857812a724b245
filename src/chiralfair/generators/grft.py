"""GRFT (Li et al., ICSE 2025): a genetic global phase per seed, then a cheap batched random local walk.

The global phase evolves, for every seed, a population of the seed's perturbations towards inputs whose
counterparts' probabilities differ most from their own; a generation that holds an IDI ends that seed's search and
all its IDIs are global IDIs. The local phase walks every global IDI at once along one attribute and direction per
step, shared by all of them, keeping the moves that land on IDIs.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_float, check_int
from ..domain import Domain
from ..exceptions import ConfigError
from .base import Generator, register_generator
from .gradient_steps import ChainChecks, KnownOutcomes, check_cost
from .recorder import IDIRecorder

# Fitness is rounded to this many decimals before populations are ranked: two inputs whose fitness is equal
# (e.g. on a linear model's level set) would otherwise be ordered by float rounding noise (1e-15 between two fits
# of one model that differ only in how their classes are named), and so would the whole search.
FITNESS_DECIMALS = 12


@register_generator("grft")
class GRFT(Generator):
    """GRFT: a genetic algorithm per seed as the global phase, a shared random walk as the local phase.

    **Global phase.** The seeds (the first ``max_global``) are checked in one batch; a seed that is an IDI is a
    global IDI and needs no population. Every other seed gets a population of ``population`` inputs: the seed
    and ``population - 1`` copies of it in which ``n_perturbed`` non-protected attributes, drawn once per seed,
    move by a uniform integer in ``[-perturbation, perturbation]`` (clipped into the bounds). The fitness of an
    input x is the sum over every combination of protected values of ``|P(y=1 | x) - P(y=1 | x')|``: how far its
    counterparts are from deciding otherwise. Each of at most ``max_iter`` generations checks the populations of
    all the seeds still searching in one model batch (each distinct input once; an input of the last generation
    keeps its fitness unqueried). A population holding an IDI ends its seed's search, and all of its IDIs are
    recorded as global IDIs. Otherwise the next population keeps the fittest input (elitism) and fills the other
    places with children: two parents, each the best of ``tournament_size`` ranks drawn among the
    ``elite_ranks`` fittest, are crossed gene by gene (uniform crossover, each gene from the first parent with
    probability ``cross_rate``), and with probability ``mutation_rate`` the child's ``n_mutated`` random
    non-protected attributes move by a uniform integer in ``[-mutation, mutation]``.

    **Local phase.** All global IDIs walk together for ``max_local`` steps: each step draws one non-protected
    attribute and one direction (±``step_local``) for all of them; the chains whose move lands on an IDI move
    there, the others stay on their IDI.

    Black box: it needs probabilities (``predict_proba``), no gradient.

    Departures from the paper and its code (``liliquan0118/GRFT``: ``GRFT.py``, ``GeneticAlgorithm.py``), each
    deliberate:

    - **A seed that is an IDI is a global IDI at once**: it is checked alone, at ``K`` queries, not with a whole
      population (the code evaluates its 100 individuals to find the seed among them).
    - **Mutation moves three attributes**, as the code does (``build_mutate_func`` draws four attributes and
      moves the first three; the fourth is drawn and unused). ``n_mutated`` sets the number.
    - **The local walk stores the clipped input.** The code clips the candidate it checks but keeps the unclipped
      one as the chain's position when it is an IDI, so a chain pushed past a bound walks on outside the domain,
      checking the same clipped input again. Here a chain is always an input of the domain, and a move that
      clipping (or the repair onto the domain's constraints) turns into no move is not checked.
    - **Nothing is checked twice**: a distinct input is checked once per generation, an input the last generation
      checked keeps its fitness, and a local move to an input whose outcome this walk already knows costs no
      query (the code queries every individual of every generation and every local candidate, and counts them
      all). Local chains that meet on one input walk on as one.
    - **All seeds advance together** (the code runs one seed's genetic algorithm after another), and the random
      stream is one ``numpy.random.Generator``, so runs are reproducible but not draw-for-draw the code's.
    - **The discrimination check tries every combination of protected values** (as the code's ``similar_set``),
      counterparts that break one of the domain's constraints excluded; IDIs count once by their non-protected
      key, as for every generator here, not as the code's full vectors.
    - **Under a query budget** (``max_queries``, or one set on the model) the global phase spends at most
      ``global_share`` of the budget left when it starts, so that the local phase gets the rest: a generation
      that does not fit is cut to the seeds whose populations fit, and the other seeds stop searching. Without a
      budget the phases run to ``max_iter`` and ``max_local`` as in the code.

    Parameters
    ----------
    max_global : int
        Seeds taken by the global phase.
    max_local : int
        Local steps (each moves every global IDI once).
    max_queries : int, optional
        Query budget (:class:`~chiralfair.generators.base.Generator`).
    max_iter : int
        Generations per seed (the code's ``max_iter``, 10).
    population : int
        Inputs per seed's population (the code's ``pop_num``, 100), >= 2.
    n_perturbed : int
        Non-protected attributes perturbed to make the first population (2).
    perturbation : int
        Largest move of a perturbed attribute in the first population, in codes (5).
    tournament_size : int
        Ranks drawn per tournament (3).
    elite_ranks : int
        Tournaments draw among this many fittest inputs (the code's ``subtotal``, 10), >= ``tournament_size``.
    cross_rate : float
        Probability that a child's gene comes from its first parent (0.5).
    mutation_rate : float
        Probability that a child is mutated (0.5).
    n_mutated : int
        Attributes a mutation moves (3).
    mutation : int
        Largest move of a mutated attribute, in codes (3).
    step_local : int
        Size of a local step, in codes (1).
    global_share : float
        Under a query budget, the largest share of it the global phase spends (0.5), in (0, 1].

    Raises
    ------
    ConfigError
        If a parameter is out of range (named).
    ModelCapabilityError
        At :meth:`run`, if the model answers labels only (no ``predict_proba``); the message names the model.

    References
    ----------
    .. [1] Li, Lu, Wang, Zhang et al. "Dissecting Global Search: A Simple Yet Effective Method to Boost
       Individual Discrimination Testing and Repair." ICSE 2025. Code: ``liliquan0118/GRFT``.
    """

    name = "grft"
    needs_proba = True

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 max_iter: int = 10, population: int = 100, n_perturbed: int = 2, perturbation: int = 5,
                 tournament_size: int = 3, elite_ranks: int = 10, cross_rate: float = 0.5,
                 mutation_rate: float = 0.5, n_mutated: int = 3, mutation: int = 3, step_local: int = 1,
                 global_share: float = 0.5):
        self.max_iter = check_int(max_iter, "max_iter", minimum=0)
        self.population = check_int(population, "population", minimum=2)
        self.n_perturbed = check_int(n_perturbed, "n_perturbed", minimum=1)
        self.perturbation = check_int(perturbation, "perturbation", minimum=1)
        self.tournament_size = check_int(tournament_size, "tournament_size", minimum=2)
        self.elite_ranks = check_int(elite_ranks, "elite_ranks", minimum=2)
        if self.elite_ranks < self.tournament_size:
            raise ConfigError(f"elite_ranks={self.elite_ranks} is smaller than tournament_size="
                              f"{self.tournament_size}: a tournament draws distinct ranks among the elite ranks")
        self.cross_rate = check_float(cross_rate, "cross_rate", minimum=0.0, maximum=1.0)
        self.mutation_rate = check_float(mutation_rate, "mutation_rate", minimum=0.0, maximum=1.0)
        self.n_mutated = check_int(n_mutated, "n_mutated", minimum=1)
        self.mutation = check_int(mutation, "mutation", minimum=1)
        self.step_local = check_int(step_local, "step_local", minimum=1)
        self.global_share = check_float(global_share, "global_share", minimum=0.0, maximum=1.0,
                                        exclusive_minimum=True)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         max_iter=self.max_iter, population=self.population, n_perturbed=self.n_perturbed,
                         perturbation=self.perturbation, tournament_size=self.tournament_size,
                         elite_ranks=self.elite_ranks, cross_rate=self.cross_rate, mutation_rate=self.mutation_rate,
                         n_mutated=self.n_mutated, mutation=self.mutation, step_local=self.step_local,
                         global_share=self.global_share)

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries for ``n_seeds`` seeds (``n_features`` unused).

        The seeds' checks; per seed ``max_iter`` generations of ``population`` checked inputs; in the local phase
        ``max_local`` checks per global IDI, and a seed gives at most ``population`` global IDIs.

        Parameters
        ----------
        n_seeds : int
            Seeds of the global phase.
        n_combinations : int
            Protected-value combinations the discrimination check tries per input.
        n_features : int, optional
            Features of the domain (unused).

        Returns
        -------
        int
            Model queries.
        """
        n = min(int(n_seeds), self.max_global)
        per_check = check_cost(n_combinations)
        return n * per_check * (1 + self.max_iter * self.population + self.population * self.max_local)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        domain = recorder.domain
        movable = _movable_features(domain)
        budget = recorder.model.remaining_queries
        global_cap = None if budget is None else recorder.n_queries + int(self.global_share * budget)
        res, new = recorder.check(seeds, "global", with_proba=True)
        recorder.n_seed_idis = int(res.is_idi.sum())
        if len(movable) == 0:
            return ("every non-protected feature has a single value: no population and no local walk can move",)
        found = [(res.X[new], res.counterpart_index[new])]
        searching = np.flatnonzero(~res.is_idi)
        if self.max_iter and len(searching):
            found += _Evolution(self, recorder, movable, global_cap, rng).run(
                res.X[searching], ChainChecks.from_result(res).rows(searching))
        starts, flips = (np.concatenate(part) for part in zip(*found, strict=True))
        if self.max_local and len(starts):
            _local_walk(recorder, starts, flips, movable, self.max_local, self.step_local, rng)
        return ()


class _Evolution:
    """The genetic global phase of every searching seed: populations, fitness, selection, crossover, mutation."""

    def __init__(self, gen: GRFT, recorder: IDIRecorder, movable: np.ndarray, global_cap: int | None,
                 rng: np.random.Generator):
        self.gen, self.recorder, self.movable, self.cap, self.rng = gen, recorder, movable, global_cap, rng
        self.domain = recorder.domain

    def run(self, seeds: np.ndarray, checks: ChainChecks) -> list[tuple[np.ndarray, np.ndarray]]:
        """Evolve a population per seed; return the global IDIs found (new keys) and their flipping combinations."""
        gen = self.gen
        n, p = len(seeds), gen.population
        population = self._first_population(seeds)
        fitness = np.full((n, p), np.nan)
        fitness[:, 0] = fitness_of(checks)  # the seed's own check, already made
        found = []
        for _ in range(gen.max_iter):
            fitness, is_idi, new_idis, whole = self._evaluate(population, fitness)
            found.append(new_idis)
            keep = whole & ~is_idi.any(axis=1)
            population, fitness = population[keep], fitness[keep]
            if not len(population):
                break
            population, fitness = self._next_generation(population, fitness)
        return found

    def _first_population(self, seeds: np.ndarray) -> np.ndarray:
        """Each seed and ``population - 1`` perturbations of ``n_perturbed`` attributes drawn once per seed."""
        gen, rng, domain = self.gen, self.rng, self.domain
        n, p, d = len(seeds), gen.population, domain.n_features
        k = min(gen.n_perturbed, len(self.movable))
        attributes = self.movable[np.argsort(rng.random((n, len(self.movable))), axis=1)[:, :k]]
        population = np.repeat(seeds[:, None, :], p, axis=1)
        moves = rng.integers(-gen.perturbation, gen.perturbation + 1, size=(n, p - 1, k))
        rows = np.arange(n)[:, None, None]
        population[rows, np.arange(1, p)[None, :, None], attributes[:, None, :]] += moves
        return domain.repair(domain.clip(population.reshape(n * p, d))).reshape(n, p, d)

    def _evaluate(self, population: np.ndarray, fitness: np.ndarray):
        """Check each distinct input of unknown fitness once, all populations in one batch.

        Returns the fitness and IDI flags, shape (n_seeds, population) each, the new global IDIs, and which seeds'
        populations were checked whole: under the global cap, only the populations of the first seeds that fit
        are checked, and the others stop searching.
        """
        n, p, d = population.shape
        rows = population.reshape(n * p, d)
        todo = np.flatnonzero(np.isnan(fitness.reshape(-1)))
        owner = np.repeat(np.arange(n), p)[todo]
        # one check per distinct (seed, input), in seed order (the rows of a population share its protected values)
        _, first, inverse = np.unique(np.column_stack([owner, rows[todo]]), axis=0, return_index=True,
                                      return_inverse=True)
        inverse = inverse.reshape(-1)
        ask = todo[first]
        m = self._affordable(owner[first])
        res, new = self.recorder.check(rows[ask[:m]], "global", with_proba=True)
        value = np.full(len(ask), np.nan)
        value[:m] = fitness_of(ChainChecks.from_result(res))
        idi = np.zeros(len(ask), dtype=bool)
        idi[:m] = res.is_idi
        flat_fitness, flat_idi = fitness.reshape(-1).copy(), np.zeros(n * p, dtype=bool)
        flat_fitness[todo], flat_idi[todo] = value[inverse], idi[inverse]
        whole = ~np.isin(np.arange(n), owner[inverse >= m])
        return flat_fitness.reshape(n, p), flat_idi.reshape(n, p), (res.X[new], res.counterpart_index[new]), whole

    def _affordable(self, owners: np.ndarray) -> int:
        """How many of the distinct inputs (in seed order, ``owners`` their seeds) the global cap lets through.

        A cut keeps whole populations only.
        """
        if self.cap is None:
            return len(owners)
        per_row = check_cost(len(self.domain.combinations)) * self.recorder.calls_per_query(with_proba=True)
        fits = max(self.cap - self.recorder.n_queries, 0) // per_row
        if fits >= len(owners):
            return len(owners)
        return int(np.searchsorted(owners, owners[fits], side="left"))

    def _next_generation(self, population: np.ndarray, fitness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keep each population's fittest input; fill the rest with children of tournament winners."""
        gen, rng = self.gen, self.rng
        n, p, d = population.shape
        ranked = np.argsort(-fitness, axis=1, kind="stable")  # the fittest first; ties in population order
        elite_ranks = min(gen.elite_ranks, p)
        size = min(gen.tournament_size, elite_ranks)
        draws = np.argsort(rng.random((n, p - 1, 2, elite_ranks)), axis=3)[..., :size]
        first = draws[:, :, 0].min(axis=2)
        second_draw = np.sort(draws[:, :, 1], axis=2)
        second = np.where(second_draw[..., 0] != first, second_draw[..., 0], second_draw[..., 1])
        rows = np.arange(n)[:, None]
        parent1 = population[rows, ranked[rows, first]]
        parent2 = population[rows, ranked[rows, second]]
        children = np.where(rng.random((n, p - 1, d)) < gen.cross_rate, parent1, parent2)
        children = self._mutate(children)
        best = ranked[:, 0]
        elite = population[np.arange(n), best]
        next_population = np.concatenate([elite[:, None, :], children], axis=1)
        next_fitness = np.full((n, p), np.nan)
        next_fitness[:, 0] = fitness[np.arange(n), best]
        return next_population, next_fitness

    def _mutate(self, children: np.ndarray) -> np.ndarray:
        """With probability ``mutation_rate``, move ``n_mutated`` random non-protected attributes of a child."""
        gen, rng, domain = self.gen, self.rng, self.domain
        n, m, d = children.shape
        k = min(gen.n_mutated, len(self.movable))
        mutated = rng.random((n, m)) < gen.mutation_rate
        attributes = self.movable[np.argsort(rng.random((n, m, len(self.movable))), axis=2)[..., :k]]
        moves = rng.integers(-gen.mutation, gen.mutation + 1, size=(n, m, k)) * mutated[..., None]
        out = children.copy()
        np.add.at(out, (np.arange(n)[:, None, None], np.arange(m)[None, :, None], attributes), moves)
        return domain.repair(domain.clip(out.reshape(n * m, d))).reshape(n, m, d)


def fitness_of(checks: ChainChecks) -> np.ndarray:
    """GRFT's fitness: the sum over the possible counterparts of ``|P(y=1 | x') - P(y=1 | x)|``, shape (n,).

    Parameters
    ----------
    checks : ChainChecks
        Check records with probabilities.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
        Rounded to :data:`FITNESS_DECIMALS` decimals.
    """
    gap = np.abs(checks.proba - checks.own_proba[:, None])
    return np.round(np.where(checks.possible, gap, 0.0).sum(axis=1), FITNESS_DECIMALS)


def _movable_features(domain: Domain) -> np.ndarray:
    """Non-protected feature indices with more than one value, shape (n_movable,)."""
    idx = domain.non_protected
    return idx[domain.upper[idx] > domain.lower[idx]]


def _local_walk(recorder: IDIRecorder, starts: np.ndarray, flips: np.ndarray, movable: np.ndarray, max_local: int,
                step: int, rng: np.random.Generator) -> None:
    """GRFT's local phase: every chain tries the same attribute and direction each step and keeps IDI moves.

    A candidate is checked with its chain's flipping counterpart first (:meth:`IDIRecorder.check_first`).
    """
    domain = recorder.domain
    x, first = _distinct_chains(starts, flips)
    lower, upper = domain.lower, domain.upper
    known = KnownOutcomes(recorder)
    try:
        known.add(x, np.ones(len(x), dtype=bool))
        for _ in range(max_local):
            a = int(movable[rng.integers(0, len(movable))])
            value = np.clip(x[:, a] + (rng.integers(0, 2) * 2 - 1) * step, lower[a], upper[a])
            moved = np.flatnonzero(value != x[:, a])
            cand = x[moved]
            cand[:, a] = value[moved]
            if domain.constrained_mask[a]:
                cand = domain.repair(cand)
                real = (cand != x[moved]).any(axis=1)
                moved, cand = moved[real], cand[real]
            if not len(moved):
                continue
            where, inside = known.locate(cand)
            is_known, outcome = known.lookup(cand, located=(where, inside))
            ask = np.flatnonzero(~is_known)
            if len(ask):
                res, _ = recorder.check_first(cand[ask], first[moved[ask]], "local")
                outcome[ask] = res.is_idi
                known.add(cand[ask], res.is_idi)
                hit = ask[res.is_idi]
                first[moved[hit]] = res.counterpart_index[res.is_idi]
            x[moved[outcome]] = cand[outcome]
            if (is_known & outcome).any():  # a chain moved onto a known IDI, maybe onto another chain
                x, first = _distinct_chains(x, first)
    finally:
        known.close()


def _distinct_chains(x: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chain per distinct input (the first one's flipping combination kept)."""
    _, keep = np.unique(x, axis=0, return_index=True)
    keep = np.sort(keep)
    return x[keep], first[keep].copy()
