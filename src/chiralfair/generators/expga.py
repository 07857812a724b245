"""ExpGA (Fan et al., ICSE'22): a genetic algorithm over the seeds, one model batch per generation."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..domain import Domain
from .base import Generator, register_generator
from .recorder import IDIRecorder

NEW_IDI_FITNESS = 3.0
OTHER_FITNESS = 1.0


@register_generator("expga")
class ExpGA(Generator):
    r"""ExpGA's local phase: evolve the seeds with roulette selection, slice crossover and uniform mutation.

    Global phase: the seeds (the first ``max_global``) are checked in one batch; the IDIs among them are the
    global IDIs. Local phase: the seeds are the initial population (its size ``n`` stays fixed), with
    fitness 3 for a seed that is a new IDI and 1 otherwise. Each of ``max_local`` generations

    1. **selects** ``n`` individuals with replacement, with probability proportional to fitness (roulette);
    2. **crosses** each one, with probability ``cross_rate``, with a uniformly drawn partner: a contiguous,
       non-empty slice of genes is copied from the partner;
    3. **mutates** each gene, with probability ``mutation_rate``, to a uniform value: a non-protected
       feature to a uniform integer in ``[lo, hi]``, a protected attribute to one of its valid values
       (a whole row, for an attribute over several columns; :meth:`Domain.sample`);
    4. **evaluates** the new population in one discrimination check: fitness 3 for an individual that is a
       new IDI (a key not recorded before, first occurrence in the population), 1 otherwise.

    Genes are the non-protected features and the protected attributes, in column order; an attribute over
    several columns (one-hot) is one gene, so crossover and mutation never split it into an invalid row.
    The population therefore stays inside the domain with valid protected values; after mutation it is repaired
    onto the domain's constraints (:meth:`Domain.repair`, architecture: counterparts that could exist).

    Parameters
    ----------
    max_global : int
        Seeds checked by the global phase; also the population size.
    max_local : int
        Generations; each checks at most ``n`` individuals (one model batch of at most ``n * K`` rows).
    cross_rate : float
        Probability that an individual is crossed (paper: 0.9 for tabular data).
    mutation_rate : float
        Probability that a gene is mutated (paper: 0.05 for tabular data).
    time_budget : float, optional
        Wall-clock budget of the whole run, in seconds; None for none (the paper runs for one hour). Checked
        between generations. With a budget the result depends on the machine's speed.

    Notes
    -----
    The original seeds (random inputs whose explanation ranks a protected attribute among the top features)
    are the seed strategy ``expga`` (:class:`~chiralfair.seeds.expga.ExpGASeeds`); like every generator,
    this one takes any seeds. Departures from the reference code (``waving7799/ExpGA``, ``ExpGA.py`` and
    ``Genetic_Algorithm.py``; ``algorithms.md`` §6 and §12.7):

    - **Crossover slices are non-empty**: start uniform in ``[0, n_genes)``, end uniform in
      ``(start, n_genes]``. The reference draws the end from ``[0, n_genes - start)``, so most slices are
      empty and crossover is mostly a no-op.
    - **Mutation reaches the upper bound** (``[lo, hi]``); the reference's ``randint(lo, hi)`` never does.
    - **Protected attributes are genes like the others but only take valid values** (a multi-column
      attribute moves as one gene); the reference mutates them like any feature.
    - **Operators are vectorised over the population**: every individual is crossed with a partner from
      the population before crossover (the reference crosses in place, so later individuals may copy
      already-crossed partners).
    - **An individual whose key was checked before is not checked again**: its fitness is 1 whatever the
      check would say (a known IDI is not new, a known non-IDI is not an IDI), so the query is saved.
      Duplicates within a generation are checked once. Hence each generation costs at most ``n * K``
      queries, usually far fewer.
    - **Seeds count as global IDIs** when they are IDIs (the reference counts only local IDIs and never
      verifies its seeds); the key is the non-protected projection (architecture: the counting rule), not the full
      vector.
    - **Budgets**: ``max_local`` generations and an optional ``time_budget`` (the paper stops after one
      hour, logging every 300 s).

    References
    ----------
    .. [1] Fan, Wang, Liu, Zhang, Gao, Zhou, Wu. "Explanation-guided fairness testing through genetic
       algorithm." ICSE 2022.
    .. [2] Holland. *Adaptation in Natural and Artificial Systems.* University of Michigan Press, 1975
       (roulette selection).
    """

    name = "expga"

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 cross_rate: float = 0.9,
                 mutation_rate: float = 0.05, time_budget: float | None = None):
        self.cross_rate = check_float(cross_rate, "cross_rate", minimum=0.0, maximum=1.0)
        self.mutation_rate = check_float(mutation_rate, "mutation_rate", minimum=0.0, maximum=1.0)
        if time_budget is not None:
            time_budget = check_float(time_budget, "time_budget", minimum=0.0, exclusive_minimum=True)
        self.time_budget = time_budget
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         cross_rate=self.cross_rate,
                         mutation_rate=self.mutation_rate, time_budget=time_budget)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        res, new = recorder.check(seeds, "global")
        recorder.n_seed_idis = int(res.is_idi.sum())
        population = seeds.copy()
        fitness = np.where(new, NEW_IDI_FITNESS, OTHER_FITNESS)
        gene = gene_of_column(recorder.domain)
        for generation in range(self.max_local):
            if self.time_budget is not None and recorder.seconds >= self.time_budget:
                return (f"stopped: time budget of {self.time_budget:g} s reached after {generation} generations "
                        "(results depend on machine speed, not reproducible)",)
            population = population[rng.choice(len(population), size=len(population), p=fitness / fitness.sum())]
            population = crossover(population, gene, self.cross_rate, rng)
            population = mutate(population, recorder.domain, gene, self.mutation_rate, rng)
            # onto the domain's constraints (architecture: counterparts that could exist)
            population = recorder.domain.repair(population)
            fitness = _evaluate(population, recorder)
        return ()


def gene_of_column(domain: Domain) -> np.ndarray:
    """Gene index of every column, shape (n_features,): a protected attribute's columns share one gene.

    Genes are numbered in the order of their first column.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    numpy.ndarray of int64, shape (n_features,)
    """
    owner = np.arange(domain.n_features)
    for a in domain.attributes:
        owner[list(a.columns)] = min(a.columns)
    _, gene = np.unique(owner, return_inverse=True)
    return gene.astype(np.int64)


def crossover(population: np.ndarray, gene: np.ndarray, rate: float, rng: np.random.Generator) -> np.ndarray:
    """Copy a contiguous non-empty slice of genes from a random partner into each crossed individual.

    Parameters
    ----------
    population : numpy.ndarray of int64, shape (n, n_features)
    gene : numpy.ndarray of int64, shape (n_features,)
        :func:`gene_of_column`.
    rate : float
        Probability that an individual is crossed.
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n, n_features)
    """
    n, n_genes = len(population), int(gene.max()) + 1
    crossed = rng.random(n) < rate
    partner = rng.integers(0, n, size=n)
    start = rng.integers(0, n_genes, size=n)
    end = rng.integers(start + 1, n_genes + 1)
    take = crossed[:, None] & (gene >= start[:, None]) & (gene < end[:, None])
    return np.where(take, population[partner], population)


def mutate(population: np.ndarray, domain: Domain, gene: np.ndarray, rate: float,
           rng: np.random.Generator) -> np.ndarray:
    """Give each gene, with probability ``rate``, a uniform value of the domain (:meth:`Domain.sample`).

    Parameters
    ----------
    population : numpy.ndarray of int64, shape (n, n_features)
        The individuals (codes).
    domain : Domain
    gene : numpy.ndarray of int64, shape (n_features,)
        :func:`gene_of_column`.
    rate : float
        Mutation probability per gene, in [0, 1].
    rng : numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64, shape (n, n_features)
    """
    n, n_genes = len(population), int(gene.max()) + 1
    hit = (rng.random((n, n_genes)) < rate)[:, gene]
    return np.where(hit, domain.sample(n, rng), population)


def _evaluate(population: np.ndarray, recorder: IDIRecorder) -> np.ndarray:
    """Fitness of each individual, shape (n,): 3 for a new IDI (first occurrence of its key), else 1.

    Only keys never checked before are checked, each once.
    """
    fitness = np.full(len(population), OTHER_FITNESS)
    _, first = np.unique(recorder.domain.keys(population), return_index=True)
    first = np.sort(first)
    first = first[~recorder.is_tested(population[first])]
    _, new = recorder.check(population[first], "local")
    fitness[first[new]] = NEW_IDI_FITNESS
    return fitness
