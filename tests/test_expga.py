"""ExpGA's own behaviour: the GA operators, the population's validity, fitness, and the ``expga`` seed strategy."""

import dataclasses

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier
from toys import biased_module, toy_dataset, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.generators import IDIRecorder, make_generator
from chiralfair.generators.expga import _evaluate, crossover, gene_of_column, mutate
from chiralfair.models import as_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.expga import protected_rank

N = 20_000


def one_hot_domain(hi=99) -> Domain:
    """x0, race over three one-hot columns (x1..x3), x4, sex (x5): genes x0 | race | x4 | sex."""
    feats = [Feature("x0", 0, hi), Feature("race_A", 0, 1), Feature("race_B", 0, 1), Feature("race_C", 0, 1),
             Feature("x4", 0, hi), Feature("sex", 0, 1)]
    return Domain(feats).with_protected([("race_A", "race_B", "race_C"), "sex"])


def test_genes_keep_a_multi_column_attribute_together():
    assert gene_of_column(one_hot_domain()).tolist() == [0, 1, 1, 1, 2, 3]
    assert gene_of_column(toy_domain(("sex", "race"))).tolist() == [0, 1, 2, 3, 4]


def test_mutation_rate_per_gene():
    domain = one_hot_domain(hi=10**6)
    pop = domain.sample(N, np.random.default_rng(0))
    out = mutate(pop, domain, gene_of_column(domain), 0.05, np.random.default_rng(1))
    changed = out != pop
    # x0 and x4 take one of 10**6 + 1 values: a mutated gene (almost) always changes.
    for col in (0, 4):
        assert abs(changed[:, col].mean() - 0.05) < 0.006
    # Genes mutate independently: both non-protected genes changed in about 0.05**2 of the rows.
    assert abs((changed[:, 0] & changed[:, 4]).mean() - 0.0025) < 0.0015


def test_crossover_rate_and_contiguous_slices():
    # Every individual differs from every other in every gene (the PA p takes 3,001 values), so a crossed row
    # changes exactly on its slice.
    feats = [Feature("x0", 0, 10**6), Feature("p", 0, 3000), Feature("x2", 0, 10**6), Feature("x3", 0, 10**6)]
    domain = Domain(feats).with_protected(["p"])
    i = np.arange(N)
    pop = np.column_stack([i, i % 3001, i, i])
    out = crossover(pop, gene_of_column(domain), 0.9, np.random.default_rng(2))
    changed = out != pop
    crossed = changed.any(axis=1)
    assert abs(crossed.mean() - 0.9) < 0.01
    lo, hi = changed.argmax(axis=1), 3 - changed[:, ::-1].argmax(axis=1)
    assert (changed.sum(axis=1)[crossed] == (hi - lo + 1)[crossed]).all()  # one contiguous slice
    # Slices are non-empty and start and end anywhere: every gene is changed in some row, the last one too.
    assert changed.any(axis=0).all() and changed[:, -1].mean() > 0.2


def test_population_stays_in_domain_with_valid_protected_values():
    domain = one_hot_domain()
    gene = gene_of_column(domain)
    rng = np.random.default_rng(3)
    pop = domain.sample(500, rng)
    for _ in range(50):
        pop = mutate(crossover(pop, gene, 0.9, rng), domain, gene, 0.3, rng)
        domain.validate(pop)
        assert (domain.protected_value_index(pop) >= 0).all()
        assert (pop[:, 1:4].sum(axis=1) == 1).all()


def test_fitness_is_three_for_a_new_idi_only():
    domain = toy_domain()
    recorder = IDIRecorder(as_model(biased_module()), domain)
    idi = [0, 0, 4, 4, 0]      # a + b = 8: IDI
    other = [0, 0, 4, 5, 0]    # a + b = 9: IDI
    fair = [0, 0, 0, 0, 0]     # a + b = 0: not an IDI
    recorder.check(np.array([other]), "global")
    pop = np.array([idi, [1, 0, 4, 4, 0], other, fair, idi])
    fitness = _evaluate(pop, recorder)
    # First occurrence of a new IDI: 3; its counterpart (same key) and repeats: 1; a known IDI: 1; a non-IDI: 1.
    assert fitness.tolist() == [3, 1, 1, 1, 1]
    assert recorder.n_checked["local"] == 2  # only the two untested keys were checked


def test_never_checks_an_input_twice_and_population_drives_local_idis():
    domain = toy_domain(("sex", "race"))
    seeds = domain.sample(30, np.random.default_rng(0))
    res = make_generator("expga", max_global=30, max_local=40).run(as_model(biased_module()), domain, seeds,
                                                                    random_state=0)
    assert res.n_queries == len(domain.combinations) * res.n_tested
    assert res.n_local > res.n_global > 0


def test_selection_prefers_new_idis():
    # With no crossover and no mutation, the population only re-samples its seeds: after the first generation
    # no key is new, so only the global IDIs are found and nothing is checked again.
    domain = toy_domain()
    seeds = domain.sample(30, np.random.default_rng(1))
    res = make_generator("expga", max_global=30, max_local=5, cross_rate=0.0, mutation_rate=0.0).run(
        as_model(biased_module()), domain, seeds, random_state=0)
    assert res.n_local == 0 and res.n_tested == len(set(domain.keys(seeds).tolist()))


# ------------------------------------------------------------------------------------------ seed strategy
def test_protected_rank_counts_attributes_once_and_ties_against_them():
    domain = one_hot_domain()
    values = np.array([[0.5, 0.1, 0.1, 0.1, 0.2, 0.0],    # race sums to 0.3: second after x0
                       [0.1, 0.0, 0.0, 0.0, 0.2, 0.3],    # sex first
                       [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])   # all tie: attributes rank after the others
    assert protected_rank(values, domain).tolist() == [1, 0, 3]


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


def test_expga_seeds_from_a_fair_model_are_all_fill(data):
    blind = data.X.copy()
    blind[:, :2] = 0  # a tree never splits on a constant column: sex and race are ignored
    fair = DecisionTreeClassifier(random_state=0).fit(blind, data.y)
    report = make_seed_strategy("expga", threshold=1, max_candidates=12, batch_size=5).select(
        fair, data, 5, random_state=0)
    assert report.n_candidates == 12  # three batches of 5, 5 and 2 candidates: none kept
    assert report.notes and report.notes[0].startswith("0 of 12 explained candidates")
    assert report.seeds.shape == (5, 5)


def test_expga_seeds_take_the_paper_threshold_by_dataset_name(data):
    tree = DecisionTreeClassifier(random_state=0).fit(data.X, data.y)
    census_like = dataclasses.replace(data, name="census")
    report = make_seed_strategy("expga").select(tree, census_like, 10, random_state=0)
    assert report.meta["threshold"] == 7 and report.meta["explainer"] == "tree"
    report = make_seed_strategy("expga").select(tree, data, 10, random_state=0)
    assert report.meta["threshold"] == 3  # 5 features, sex counted once: ceil(5 / 2)
    # The biased tree leans on sex: explanation-filtered seeds hold more IDIs than uniform draws.
    expga = make_seed_strategy("expga", threshold=1).select(tree, data, 40, random_state=0)
    uniform = make_seed_strategy("random").select(tree, data, 40, random_state=0)
    assert expga.initialization_rate > uniform.initialization_rate
