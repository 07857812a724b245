"""Feature and ProtectedAttribute moved from domain/domain.py to domain/features.py; files saved before still load."""

import pickle

from chiralfair.domain import Domain, Feature, ProtectedAttribute


def test_a_pickle_saved_before_the_move_names_the_old_module_and_still_loads():
    # A mitigated model saved with joblib (or skops) before the move names chiralfair.domain.domain.Feature.
    domain = Domain([Feature("sex", 0, 1, "categorical", {0: "f", 1: "m"}), Feature("hours", 20, 59)], protected=[0],
                    protected_values=[[0, 1]])
    new = pickle.dumps(domain, protocol=2)
    assert b"chiralfair.domain.features" in new
    old = new.replace(b"chiralfair.domain.features", b"chiralfair.domain.domain")
    loaded = pickle.loads(old)
    assert loaded == domain
    assert type(loaded.features[0]) is Feature and type(loaded.attributes[0]) is ProtectedAttribute


def test_holds_no_value_reads_missing_codes_and_a_one_hot_row_without_a_1():
    import numpy as np

    from chiralfair.domain.features import holds_no_value

    indicator = {0: "0", 1: "1"}
    features = [Feature("sex", 0, 1, "categorical", {0: "f", 1: "m"}), Feature("race", 0, 2, "categorical", missing=2),
                Feature("sex_f", 0, 1, "categorical", indicator), Feature("sex_m", 0, 1, "categorical", indicator)]
    block = np.array([[0, 0], [1, 2], [0, 1]])
    # sex has no missing code (lo - 1 stands for it), race's is 2; two 0s of categories are a value
    assert holds_no_value(features, (0, 1), block).tolist() == [False, True, False]
    # indicator columns: a row with no 1 holds no value
    assert holds_no_value(features, (2, 3), np.array([[0, 0], [1, 0], [0, 1]])).tolist() == [True, False, False]
    assert holds_no_value(features, (1,), np.array([[2], [0]])).tolist() == [True, False]
