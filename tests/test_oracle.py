import numpy as np
import pytest
from toys import is_biased_idi, toy_domain

from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import DomainError
from chiralfair.oracle import DiscriminationCheck


def all_points(domain):
    grids = np.meshgrid(*[np.arange(f.lo, f.hi + 1) for f in domain.features], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


def test_biased_model_idis_match_ground_truth(domain, biased_model):
    X = all_points(domain)
    res = DiscriminationCheck(biased_model, domain).check(X)
    np.testing.assert_array_equal(res.is_idi, is_biased_idi(X))


def test_fair_model_has_no_idi(domain, fair_model):
    res = DiscriminationCheck(fair_model, domain).check(all_points(domain))
    assert not res.is_idi.any()


def test_counterparts_differ_only_in_protected_and_flip_label(domain, biased_model):
    X = all_points(domain)
    res = DiscriminationCheck(biased_model, domain).check(X)
    cp = res.counterparts(domain)[res.is_idi]
    Xi = X[res.is_idi]
    np.testing.assert_array_equal(np.delete(cp, domain.protected, axis=1), np.delete(Xi, domain.protected, axis=1))
    assert (biased_model.predict(cp) != biased_model.predict(Xi)).all()
    np.testing.assert_array_equal(res.counterpart_label[res.is_idi], biased_model.predict(cp))


def test_one_batch_costs_n_combinations_queries(domain, biased_model):
    X = all_points(domain)[:100]
    biased_model.reset_queries()
    DiscriminationCheck(biased_model, domain).check(X)
    assert biased_model.n_queries == 100 * 2


def test_several_protected_attributes_use_every_combination(biased_model):
    dom = toy_domain(("sex", "race"))
    check = DiscriminationCheck(biased_model, dom)
    assert check.n_combinations == 6
    X = all_points(dom)
    np.testing.assert_array_equal(check.check(X).is_idi, is_biased_idi(X))


def test_with_proba_reports_most_different_counterpart_for_non_idis(domain, biased_model):
    X = np.array([[0, 0, 0, 0, 0], [1, 0, 4, 4, 0]])
    res = DiscriminationCheck(biased_model, domain).check(X, with_proba=True)
    assert not res.is_idi[0] and res.is_idi[1]
    assert res.counterpart_index[0] == 1  # sex=1 raises P(y=1) the most
    assert res.proba.shape == (2, 2)


def test_domain_requires_two_protected_values():
    with pytest.raises(DomainError, match="only one value"):
        Domain((Feature("sex", 0, 1), Feature("a", 0, 3)), protected=(0,), protected_values=((1,),))


def test_chunked_check_equals_one_batch(monkeypatch, biased_model):
    from chiralfair import oracle

    dom = toy_domain(("sex", "race"))
    X = all_points(dom)[::7].copy()
    X[::5, 0] = 1  # every PA value is in the domain here; make some rows outside by declaring fewer race values
    small = dom.with_protected(["sex", "race"], values={"sex": [0, 1], "race": [0, 1]})
    whole = DiscriminationCheck(biased_model, small).check(X, with_proba=True)
    monkeypatch.setattr(oracle, "CHUNK_ROWS", 7)
    chunked = DiscriminationCheck(biased_model, small).check(X, with_proba=True)
    assert (X[:, 1] == 2).any(), "some inputs have a race value outside the declared domain"
    for name in ("labels", "counterpart_labels", "is_idi", "counterpart_index"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name), err_msg=name)
    np.testing.assert_array_equal(chunked.labels, biased_model.predict(X))
    # float32 kernels may round differently for another batch size
    np.testing.assert_allclose(chunked.proba, whole.proba, rtol=1e-5)
    np.testing.assert_allclose(chunked.own_proba, whole.own_proba, rtol=1e-5)


def test_too_many_combinations_is_refused_with_the_sizes():
    feats = tuple(Feature(f"f{i}", 0, 9) for i in range(5))
    with pytest.raises(DomainError, match=r"100,000 value combinations \(f0: 10, f1: 10"):
        Domain(feats).with_protected(["f0", "f1", "f2", "f3", "f4"])


def test_own_combination_indexes_combinations_for_groups_and_singles():
    feats = (Feature("sex", 0, 1), Feature("r_A", 0, 1), Feature("r_B", 0, 1), Feature("r_C", 0, 1),
             Feature("age", 0, 3, missing=3), Feature("a", 0, 9))
    dom = Domain(feats).with_protected(["sex", ("r_A", "r_B", "r_C"), "age"])
    assert dom.protected_names == ["sex", "r", "age"] and dom.attributes[2].values == ((0,), (1,), (2,))
    check = DiscriminationCheck(None, dom)
    X = np.array(np.meshgrid(*[np.arange(f.lo, f.hi + 1) for f in feats[:5]], [0], indexing="ij")).reshape(6, -1).T
    own = check.own_combination(X)
    valid = (X[:, 1:4].sum(axis=1) == 1) & (X[:, 4] != 3)
    np.testing.assert_array_equal(own >= 0, valid)
    np.testing.assert_array_equal(dom.combinations[own[valid]], X[valid][:, list(dom.protected)])
    assert len(dom.combinations) == 2 * 3 * 3
    # a missing age, or no 1 among the one-hot r columns (no value of r: a missing one); two 1s is a value outside r's
    np.testing.assert_array_equal(dom.missing_protected(X), (X[:, 4] == 3) | (X[:, 1:4].sum(axis=1) == 0))
