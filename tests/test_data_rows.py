"""The data_rows baseline and the per-query figures of the seed reports of i and data_rows."""

import json

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier
from toys import toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.results import SeedReport
from chiralfair.seeds import make_seed_strategy


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


@pytest.fixture(scope="module")
def tree(data):
    return DecisionTreeClassifier(random_state=0).fit(data.X, data.y)


def unique_idi_keys(model, data) -> int:
    hits = data.X[DiscriminationCheck(as_model(model), data.domain).check(data.X).is_idi]
    return len(np.unique(data.domain.keys(hits)))


@pytest.mark.parametrize("max_queries", [1, 2, 3, 101, 250])
def test_the_query_budget_is_kept_to_the_last_whole_check(data, tree, max_queries):
    model = as_model(tree)
    report = make_seed_strategy("data_rows", max_queries=max_queries).select(model, data, 10, random_state=0)
    k = DiscriminationCheck(model, data.domain).n_combinations  # 2: sex is binary
    assert report.n_initial_queries == (max_queries // k) * k <= max_queries
    assert report.n_candidates == max_queries // k
    assert report.meta["max_queries"] == max_queries


def test_initial_idis_recheck_as_idis_with_distinct_keys(data, tree):
    report = make_seed_strategy("data_rows", max_queries=300).select(tree, data, 20, random_state=4)
    n = report.n_initial_idis
    assert 0 < n <= report.n_candidate_idis <= report.n_candidates == 150
    seeds = report.seeds[:min(n, 20)]
    assert DiscriminationCheck(as_model(tree), data.domain).check(seeds).is_idi.all()
    assert len(np.unique(data.domain.keys(seeds))) == len(seeds)


def test_an_unlimited_budget_finds_every_idi_key_of_the_data(data, tree):
    report = make_seed_strategy("data_rows", max_queries=10**6).select(tree, data, 10, random_state=0)
    assert report.n_candidates == data.n_samples
    assert report.n_initial_idis == unique_idi_keys(tree, data)
    assert report.initial_idis_per_1000_queries == pytest.approx(
        1000 * report.n_initial_idis / (2 * data.n_samples))
    assert report.candidate_idi_share == report.n_candidate_idis / data.n_samples


def test_default_budget_is_a_query_per_data_row_plus_one_per_training_row(data, tree):
    report = make_seed_strategy("data_rows").select(tree, data, 10, random_state=0)
    assert report.meta["max_queries"] == data.n_samples + len(data.split(0)[0])


def test_shortfall_is_filled_with_checked_rows_then_unchecked_rows(data, tree):
    report = make_seed_strategy("data_rows", max_queries=20).select(tree, data, 60, random_state=0)
    assert report.seeds.shape == (60, 5)
    recheck = DiscriminationCheck(as_model(tree), data.domain).check(report.seeds).is_idi
    assert np.array_equal(recheck, report.is_idi)
    assert any("beyond the budget" in n for n in report.notes)
    assert report.n_queries > report.n_initial_queries  # the unchecked fill rows were checked


def test_bad_budget_is_refused():
    with pytest.raises(ConfigError, match="max_queries"):
        make_seed_strategy("data_rows", max_queries=0)


def test_i_counts_screening_check_and_chiral_training_rows(data, tree):
    report = make_seed_strategy("i").select(tree, data, 10, random_state=0)
    n_train = len(data.split(report.meta["chiral_model"]["split_random_state"])[0])
    assert report.chiral_training_rows == report.meta["chiral_model"]["n_train"] == n_train
    assert report.n_initial_queries == data.n_samples + 2 * report.n_candidates
    assert report.n_initial_idis <= report.n_candidate_idis <= report.n_candidates
    assert report.initial_idis_per_1000_queries == pytest.approx(
        1000 * report.n_initial_idis / (report.n_initial_queries + n_train))
    assert report.candidate_idi_share == report.n_candidate_idis / report.n_candidates


def test_seed_report_json_keeps_the_new_fields_and_reads_old_reports(data, tree):
    report = make_seed_strategy("i").select(tree, data, 10, random_state=0)
    d = json.loads(report.to_json())
    assert d["initial_idis_per_1000_queries"] == report.initial_idis_per_1000_queries
    back = SeedReport.from_json(report.to_json())
    assert (back.n_candidate_idis, back.n_initial_queries, back.chiral_training_rows) == (
        report.n_candidate_idis, report.n_initial_queries, report.chiral_training_rows)
    for key in ("n_candidate_idis", "n_initial_queries", "chiral_training_rows", "candidate_idi_share",
                "initial_idis_per_1000_queries"):
        del d[key]  # a report written before these existed
    old = SeedReport.from_json(json.dumps(d))
    assert old.initial_idis_per_1000_queries is None and old.candidate_idi_share is None


def test_i_counts_every_candidate_idi_before_deduplication(data, tree):
    chiral = DecisionTreeClassifier(max_depth=2, random_state=0).fit(data.X, data.y)
    report = make_seed_strategy("i", chiral_model=chiral).select(tree, data, 10, random_state=0)
    candidates = data.X[tree.predict(data.X) != chiral.predict(data.X)]
    hits = candidates[DiscriminationCheck(as_model(tree), data.domain).check(candidates).is_idi]
    n_keys = len(np.unique(data.domain.keys(hits)))
    assert n_keys < len(hits), "the toy data must repeat an IDI key among the candidates for this test"
    assert (report.n_candidates, report.n_candidate_idis, report.n_initial_idis) == (len(candidates), len(hits),
                                                                                    n_keys)
    assert report.chiral_training_rows == 0  # a given chiral model: no training counted
