import numpy as np
import pytest

from chiralfair.generators.gradient_steps import (
    ChainChecks,
    confidence_gradient,
    cross_entropy_gradient,
    inverse_saliency,
    local_gradient_rows,
    sample_features,
)


def test_cross_entropy_gradient_points_to_the_boundary_and_scales_by_own_probability():
    g = np.array([[0.2, -0.1], [0.2, -0.1]])
    p1 = np.array([0.8, 0.25])
    labels = np.array([1, 0])
    out = cross_entropy_gradient(g, p1, labels)
    np.testing.assert_allclose(out[0], -g[0] / 0.8)  # label 1: lower P(y=1)
    np.testing.assert_allclose(out[1], g[1] / 0.75)  # label 0: raise P(y=1)


def test_cross_entropy_gradient_is_finite_when_probability_and_label_disagree():
    out = cross_entropy_gradient(np.ones((2, 3)), np.array([0.0, 1.0]), np.array([1, 0]))
    assert np.isfinite(out).all()


def test_confidence_gradient_negates_label_zero_rows():
    g = np.array([[1.0, -2.0], [1.0, -2.0]])
    np.testing.assert_array_equal(confidence_gradient(g, np.array([1, 0])), [[1, -2], [-1, 2]])


def test_inverse_saliency_zero_gradients_are_uniform_over_non_protected():
    mask = np.array([False, True, True, True])
    p = inverse_saliency(np.zeros((2, 4)), np.zeros((2, 4)), mask, 1e-6)
    np.testing.assert_allclose(p, [[0, 1 / 3, 1 / 3, 1 / 3]] * 2)


def test_inverse_saliency_prefers_insensitive_features_and_survives_a_zero_component():
    mask = np.array([True, True, True])
    g = np.array([[0.0, 1.0, 10.0]])
    p = inverse_saliency(g, np.zeros_like(g), mask, 1e-6)
    assert np.isfinite(p).all() and p[0, 0] > p[0, 1] > p[0, 2] > 0
    np.testing.assert_allclose(p.sum(axis=1), 1)


def test_sample_features_never_draws_a_zero_probability_feature():
    rng = np.random.default_rng(0)
    prob = np.tile([0.0, 0.5, 0.0, 0.5, 0.0], (5000, 1))
    f = sample_features(prob, rng)
    assert set(np.unique(f)) == {1, 3}
    assert 0.45 < (f == 1).mean() < 0.55


def test_chain_checks_counterpart_choices():
    checks = ChainChecks(labels=np.array([0, 0]), counterpart_labels=np.array([[0, 1, 1], [0, 0, 0]]),
                         proba=np.array([[0.4, 0.6, 0.9], [0.4, 0.1, 0.3]]), own_proba=np.array([0.4, 0.4]))
    np.testing.assert_array_equal(checks.is_idi, [True, False])
    np.testing.assert_array_equal(checks.first_flip(), [1, 1])
    np.testing.assert_array_equal(checks.max_difference(), [2, 1])
    picks = {int(checks.random_flip(np.random.default_rng(s))[0]) for s in range(50)}
    assert picks == {1, 2}


@pytest.mark.parametrize(("max_local", "interval", "rows"), [(0, 1, 0), (1, 1, 2), (10, 1, 20), (10, 5, 4),
                                                             (11, 5, 6), (10, None, 2)])
def test_local_gradient_rows(max_local, interval, rows):
    assert local_gradient_rows(max_local, interval) == rows
