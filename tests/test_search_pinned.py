"""The local walk's bookkeeping (key table, its filter, plausibility) made faster must find the same IDIs.

A search over a domain of 10**7 keys, long enough for the key table to hold tens of thousands of keys in several runs
and to rebuild its filter several times, with census's shape of coupling (sex <-> a role, Husband <-> Wife) and a
support for plausibility. Its figures are pinned to those of the code before the speed-up (commit 174307b, on the
machine of benchmarks/results/perf_guard.md), and recounted here from the pairs: the IDIs re-checked through the
model object, their keys counted, their plausibility recounted from the data's pair counts.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from toys import LinearToy

from chiralfair.domain import Domain
from chiralfair.generators import make_generator
from chiralfair.models import as_model

FEATURES = ("sex", "role", "f0", "f1", "f2", "f3", "f4", "f5", "f6")
WEIGHTS = [6.0, 0.4, 1.0, 1.0, 0.5, -0.5, 0.3, 0.7, -0.9]
BIAS = -12.3


def data(couple: bool):
    rng = np.random.default_rng(7)
    n = 4000
    sex = rng.integers(0, 2, n)
    married = rng.random(n) < 0.5
    role = np.where(married, np.where(sex == 0, 0, 1), 2)
    rest = rng.integers(0, 10, (n, 7))
    X = np.column_stack([sex, role, rest]).astype(np.int64)
    domain = Domain.from_data(X, FEATURES, kinds=["categorical", "categorical", *["ordinal"] * 7],
                              labels={"sex": {0: "Female", 1: "Male"}, "role": {0: "Wife", 1: "Husband", 2: "Single"}},
                              protected=["sex"])
    if couple:
        domain = domain.with_couplings({"sex": {"role": {0: 1, 1: 0}}})
    return X, domain


def model():
    return as_model(LinearToy(WEIGHTS, BIAS).double(), name="pinned-toy")


def search(couple: bool):
    X, domain = data(couple)
    seeds = X[np.random.default_rng(3).permutation(len(X))[:200]]
    return make_generator("eidig-inf", max_global=200, max_local=400).run(model(), domain, seeds, random_state=5)


# (n_idis, n_global, n_tested, n_queries, n_plausible_idis, sha1 of the IDIs' codes) of commit 174307b
PINNED = {False: (56618, 199, 59803, 120320, 18419, "bdb0f0b353bcf5d74f860817e98941f8ba0a7059"),
          True: (56739, 199, 59934, 120578, 39232, "bd7b0855214aabf8ca539bb63d32758ee9e4914f")}


@pytest.mark.parametrize("couple", [False, True], ids=["uncoupled", "coupled"])
def test_the_search_finds_what_it_found_before_and_its_figures_recount(couple):
    res = search(couple)
    _, domain = data(couple)
    figures = (res.n_idis, res.n_global, res.n_tested, res.n_queries, res.n_plausible_idis,
               hashlib.sha1(np.ascontiguousarray(res.idis).tobytes()).hexdigest())
    assert figures == PINNED[couple]
    # recounts: each IDI once by its key, each pair re-checked through the model, each plausibility from the counts
    assert len(np.unique(domain.keys(res.idis))) == res.n_idis == len(res.idis)
    p = model().predict_proba(res.idis)[:, 1]
    pc = model().predict_proba(res.counterparts)[:, 1]
    np.testing.assert_array_equal(res.idi_labels, (p > 0.5).astype(int))
    np.testing.assert_array_equal(res.counterpart_labels, (pc > 0.5).astype(int))
    assert (res.idi_labels != res.counterpart_labels).all()
    support = domain.support
    pairs = [(0, 1)]  # sex against the one other categorical column, role
    rare = support.rare

    def plausible(rows):
        ok = np.ones(len(rows), dtype=bool)
        for pcol, ccol in pairs:
            a = rows[:, pcol] - support.lower[pcol] + support.offsets[pcol]
            b = rows[:, ccol] - support.lower[ccol] + support.offsets[ccol]
            ok &= ~rare[a, b]
        return ok

    expected = plausible(res.idis) & plausible(res.counterparts)
    np.testing.assert_array_equal(res.plausible, expected)
    assert res.n_plausible_idis == int(expected.sum())
