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
    assert chiral_params("iandd", 7, "c") == {"chiral_random_state": 7, "chiral_cache_dir": "c",
                                              "chiral_reference": True}
    assert chiral_params("i", 7, "c", reference=False)["chiral_reference"] is False
    assert chiral_params("random", 7) == {}


def rare_countries_and_a_refusing_pipeline():
    """Rows with five countries held by one row each, and a pipeline whose encoder refuses unknown categories."""
    import pandas as pd
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(0)
    n = 300
    country = rng.choice(["us", "mx"], n).astype(object)
    country[:5] = ["a", "b", "c", "d", "e"]
    race = rng.choice(["w", "b", "o"], n).astype(object)
    hours = rng.integers(10, 60, n)
    df = pd.DataFrame({"race": race, "country": country, "hours": hours,
                       "y": ((hours + 10 * (race == "w") + rng.normal(0, 5, n)) > 40).astype(int)})
    fit_on = df[df["race"] != "o"]  # race 'o' is refused by the model: left out of the protected values
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="error"), ["race", "country"]),
                                                 remainder="passthrough"),
                         LogisticRegression(max_iter=500)).fit(fit_on.drop(columns="y"), fit_on["y"])
    return pipe, df


def test_the_chiral_model_of_a_pipeline_that_refuses_unknown_categories_knows_every_category_of_the_data():
    # the chiral model's training split lacks some of the rare countries; the user's model accepts them all
    import warnings

    import chiralfair

    pipe, df = rare_countries_and_a_refusing_pipeline()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = chiralfair.audit(pipe, df, label="y", positive_class=1, favourable=1, protected="race",
                                  seeds="iandd", max_global=5, max_local=2)
    info = chiral_meta(result.outcome.seed_report)
    assert info["how"] == "sklearn-clone" and info["n_added_for_categories"] > 0
    assert result.dataset.domain.protected_value_labels() == [["b", "w"]]


def test_a_chiral_model_that_fails_on_a_data_row_is_named_as_chiralfairs_not_the_users(monkeypatch):
    from chiralfair.exceptions import ModelInputError
    from chiralfair.seeds import initial

    class Refusing:
        def predict(self, X):
            raise ModelInputError("model 'chiral-m' fails on inputs such as country=a")

    with pytest.raises(ModelInputError, match=r"chiralfair's chiral model .* not your model\) fails on a data row: "
                                              r"model 'chiral-m' fails .*seeds='cluster'"):
        initial._chiral_labels(Refusing(), np.zeros((2, 3), dtype=np.int64))
