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
