"""Contract tests over every registered seed strategy (architecture: layers and habits)."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.tree import DecisionTreeClassifier
from toys import toy_dataset

from chiralfair.exceptions import ModelInputError
from chiralfair.models import as_model
from chiralfair.oracle import DiscriminationCheck
from chiralfair.results import SeedReport
from chiralfair.seeds import (
    SEED_STRATEGIES,
    _load_all,  # noqa: F401  (fills the registry)
    make_seed_strategy,
)

STRATEGIES = sorted(SEED_STRATEGIES)
N_SEEDS = 40


@pytest.fixture(scope="module")
def data():
    return toy_dataset(n=400)


@pytest.fixture(scope="module")
def biased_tree(data):
    return DecisionTreeClassifier(random_state=0).fit(data.X, data.y)


@pytest.fixture(scope="module")
def fair_pipeline(data):
    """Fair by construction: the first step drops the protected attributes (sex, race)."""
    keep = ColumnTransformer([("keep", "passthrough", [2, 3, 4])], remainder="drop")
    pipe = Pipeline([("drop_protected", keep), ("tree", DecisionTreeClassifier(random_state=0))])
    return pipe.fit(data.X, data.y)


def test_every_strategy_is_registered():
    assert {"random", "rows", "cluster", "i", "iandd"} <= set(STRATEGIES)


@pytest.mark.parametrize("name", STRATEGIES)
def test_same_random_state_gives_identical_seeds(name, data, biased_tree):
    a = make_seed_strategy(name).select(biased_tree, data, N_SEEDS, random_state=7)
    b = make_seed_strategy(name).select(biased_tree, data, N_SEEDS, random_state=7)
    assert np.array_equal(a.seeds, b.seeds)
    assert np.array_equal(a.is_idi, b.is_idi)
    assert a.clustering == b.clustering


@pytest.mark.parametrize("name", STRATEGIES)
def test_seeds_in_domain_count_and_idi_flags(name, data, biased_tree):
    report = make_seed_strategy(name).select(biased_tree, data, N_SEEDS, random_state=1)
    assert report.strategy == name
    assert report.seeds.shape == (N_SEEDS, data.domain.n_features)
    data.domain.validate(report.seeds, what="seeds")
    recheck = DiscriminationCheck(as_model(biased_tree), data.domain).check(report.seeds).is_idi
    assert np.array_equal(recheck, report.is_idi)
    assert report.seconds["total"] >= 0
    back = SeedReport.from_json(report.to_json())
    assert np.array_equal(back.seeds, report.seeds) and back.clustering == report.clustering


# expga explains the fair pipeline by permutation SHAP, whose numba code compiles on first use (20 s).
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "expga" else n for n in STRATEGIES])
def test_fair_model_gives_initialization_rate_zero(name, data, fair_pipeline):
    report = make_seed_strategy(name).select(fair_pipeline, data, N_SEEDS, random_state=2)
    assert report.initialization_rate == 0.0
    assert not report.is_idi.any()
    if report.n_initial_idis is not None:
        assert report.n_initial_idis == 0


@pytest.mark.parametrize("name", STRATEGIES)
def test_biased_model_gives_positive_initialization_rate(name, data, biased_tree):
    report = make_seed_strategy(name).select(biased_tree, data, N_SEEDS, random_state=3)
    assert report.initialization_rate > 0.0


class RefusesAt(BaseEstimator, ClassifierMixin):
    """A tree whose predict fails, as an encoder does, on inputs holding ``value`` in ``column`` (fits anything)."""

    def __init__(self, column=4, value=4):
        self.column, self.value = column, value

    def fit(self, X, y):
        self.tree_ = DecisionTreeClassifier(random_state=0).fit(X, y)
        self.classes_ = self.tree_.classes_
        return self

    def predict(self, X):
        if (np.asarray(X)[:, self.column] == self.value).any():
            raise ValueError(f"Found unknown categories [{self.value}] in column 0 during transform")
        return self.tree_.predict(X)

    def predict_proba(self, X):
        self.predict(X)
        return self.tree_.predict_proba(X)


# expga explains by permutation SHAP first, whose numba code compiles on first use (20 s).
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "expga" else n for n in STRATEGIES])
@pytest.mark.parametrize("column, value, words", [(0, 1, "refuses protected attribute 'sex' value 'Male'"),
                                                  (4, 4, "refuses column 'c' value '4'")],
                         ids=["protected", "non-protected"])
def test_a_model_refusing_a_value_is_a_clear_error_naming_it(name, data, column, value, words):
    # An unseen value, for seed selection: every model call passes CountingModel, which names the value at fault.
    model = RefusesAt(column, value).fit(data.X, data.y)
    with pytest.raises(ModelInputError, match=words):
        make_seed_strategy(name).select(model, data, N_SEEDS, random_state=0)


def test_static_name_list_matches_the_registry():
    # The command line refuses unknown seed strategies from this list before importing them.
    from chiralfair.seeds.names import BUILTIN_SEED_STRATEGIES

    assert sorted(BUILTIN_SEED_STRATEGIES) == STRATEGIES


def test_each_builtin_strategy_is_registered_by_its_own_module():
    # make_seed_strategy imports only the module SEED_STRATEGY_MODULES names: in a fresh process, importing it
    # registers the name, and make_seed_strategy('iandd') leaves the strategies it does not use unimported
    import json
    import subprocess
    import sys

    from chiralfair.seeds.names import BUILTIN_SEED_STRATEGIES, SEED_STRATEGY_MODULES

    assert sorted(SEED_STRATEGY_MODULES) == sorted(BUILTIN_SEED_STRATEGIES)
    code = """
import importlib, json
from chiralfair.seeds.names import SEED_STRATEGY_MODULES
from chiralfair.seeds import SEED_STRATEGIES
out = {}
for name, module in SEED_STRATEGY_MODULES.items():
    importlib.import_module("chiralfair.seeds." + module)
    out[name] = name in SEED_STRATEGIES._entries
print(json.dumps(out))
"""
    registered = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                           check=True).stdout)
    assert registered == dict.fromkeys(SEED_STRATEGY_MODULES, True)
    lone = subprocess.run([sys.executable, "-c", "import sys; from chiralfair.seeds import make_seed_strategy; "
                           "make_seed_strategy('iandd'); print(' '.join(sorted(sys.modules)))"],
                          capture_output=True, text=True, check=True).stdout.split()
    assert "chiralfair.seeds.expga" not in lone and "chiralfair.seeds.data_rows" not in lone
