"""chiral_random_state: repeated selections share one chiral model, reused from the strategy or the model cache."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from toys import toy_dataset

from chiralfair.models import as_model, train_model
from chiralfair.seeds import SEED_STRATEGIES, make_seed_strategy
from chiralfair.seeds.initial import InitialIDISeeds
from chiralfair.seeds.names import CHIRAL_SEED_STRATEGIES, chiral_params


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


@pytest.fixture(scope="module")
def sklearn_model(data):
    return as_model(LogisticRegression().fit(data.X, data.y), name="lr-toy")


def chiral_meta(report):
    return report.meta["chiral_model"]


@pytest.mark.parametrize("name", ["i", "iandd"])
def test_repeats_share_the_chiral_model_kept_in_the_strategy(name, data, sklearn_model):
    strategy = make_seed_strategy(name, chiral_random_state=5)
    first = strategy.select(sklearn_model, data, 30, random_state=0)
    second = strategy.select(sklearn_model, data, 30, random_state=1)
    assert chiral_meta(first)["from_cache"] is False and chiral_meta(first)["how"] == "sklearn-clone"
    assert chiral_meta(second)["from_cache"] is True and chiral_meta(second)["cache"] == "strategy"
    for key in ("split_random_state", "train_random_state"):
        assert chiral_meta(first)[key] == chiral_meta(second)[key]
    # Reusing the chiral model gives what a fresh strategy (retraining it) gives: bit for bit.
    fresh = make_seed_strategy(name, chiral_random_state=5).select(sklearn_model, data, 30, random_state=1)
    np.testing.assert_array_equal(fresh.seeds, second.seeds)
    assert chiral_meta(fresh)["from_cache"] is False


def test_another_model_or_dataset_retrains(data, sklearn_model):
    strategy = make_seed_strategy("i", chiral_random_state=5)
    strategy.select(sklearn_model, data, 20, random_state=0)
    other = as_model(LogisticRegression(C=0.1).fit(data.X, data.y), name="lr-toy-2")
    assert chiral_meta(strategy.select(other, data, 20, random_state=0))["from_cache"] is False
    assert chiral_meta(strategy.select(other, toy_dataset(n=300), 20, random_state=0))["from_cache"] is False


def test_without_chiral_random_state_each_selection_draws_its_chiral_model(data, sklearn_model):
    strategy = make_seed_strategy("i")
    a = chiral_meta(strategy.select(sklearn_model, data, 20, random_state=0))
    b = chiral_meta(strategy.select(sklearn_model, data, 20, random_state=1))
    assert a["train_random_state"] != b["train_random_state"] and not b["from_cache"]


def test_zoo_chiral_model_comes_from_the_model_cache(data, tmp_path):
    trained = train_model(data, "lr", random_state=3, cache_dir=tmp_path)
    strategy = make_seed_strategy("iandd", chiral_random_state=3, chiral_cache_dir=tmp_path)
    reports = [strategy.select(trained.model, data, 30, random_state=r) for r in range(3)]
    assert [chiral_meta(r)["from_cache"] for r in reports] == [False, True, True]
    assert [chiral_meta(r)["cache"] for r in reports] == [None, "disk", "disk"]
    # The chiral model is cached beside the model under test.
    names = sorted(p.name.split("-")[:2] for p in tmp_path.iterdir() if p.suffix != ".lock")
    assert names == [["toy", "chiral"], ["toy", "lr"]]
    again = make_seed_strategy("iandd", chiral_random_state=3, chiral_cache_dir=tmp_path).select(
        trained.model, data, 30, random_state=2)
    np.testing.assert_array_equal(again.seeds, reports[2].seeds)


def test_chiral_random_state_is_checked():
    from chiralfair.exceptions import ConfigError

    with pytest.raises(ConfigError, match="chiral_random_state"):
        make_seed_strategy("i", chiral_random_state=-1)


def test_static_list_of_chiral_strategies_matches_the_registry():
    make_seed_strategy("random")  # fills the registry
    chiral = sorted(n for n, cls in SEED_STRATEGIES.items() if issubclass(cls, InitialIDISeeds))
    assert sorted(CHIRAL_SEED_STRATEGIES) == chiral
    assert chiral_params("iandd", 7, "c") == {"chiral_random_state": 7, "chiral_cache_dir": "c"}
    assert chiral_params("random", 7) == {}
