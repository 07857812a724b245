"""GRFT: finds the IDIs of a model that discriminates, reproducibly, one model batch per generation."""

import numpy as np
import pytest
from toys import LinearToy, biased_module, fair_module, is_biased_idi, toy_domain

from chiralfair.exceptions import ConfigError
from chiralfair.generators import make_generator
from chiralfair.generators.grft import GRFT
from chiralfair.models import as_model


class CountingToy(LinearToy):
    """The biased toy, counting its forward calls (one per model batch)."""

    def __init__(self):
        super().__init__([3, 0, 1, 1, 0], -10.5)
        self.n_calls = 0

    def forward(self, x):
        self.n_calls += 1
        return super().forward(x)


def far_seeds(domain, n=30, seed=0):
    """Seeds away from the IDI band 8 <= a + b <= 10 of the biased toy: the global phase has to move."""
    X = domain.sample(4 * n, np.random.default_rng(seed))
    return X[~is_biased_idi(X)][:n]


def test_grft_finds_the_idis_of_a_biased_model_and_only_real_ones():
    domain = toy_domain(("sex",))
    res = make_generator("grft", max_global=30, max_local=30).run(
        as_model(biased_module()), domain, far_seeds(domain), random_state=0
    )
    assert res.n_seed_idis == 0 and res.n_global > 0 and res.n_local > 0
    assert is_biased_idi(res.idis).all()  # the toy's ground truth, not the model's own answer
    model = as_model(biased_module())
    assert (model.predict(res.idis) != model.predict(res.counterparts)).all()


def test_grft_finds_nothing_on_a_fair_model():
    domain = toy_domain(("sex",))
    res = make_generator("grft", max_global=20, max_local=10).run(
        as_model(fair_module()), domain, far_seeds(domain, 20), random_state=0
    )
    assert res.n_idis == 0 and res.n_queries > 0


def test_the_same_random_state_gives_the_same_idis():
    domain = toy_domain(("sex", "race"))
    runs = [
        make_generator("grft", max_global=20, max_local=20).run(
            as_model(biased_module()), domain, far_seeds(domain, 20), random_state=state
        )
        for state in (7, 7, 8)
    ]
    np.testing.assert_array_equal(runs[0].idis, runs[1].idis)
    np.testing.assert_array_equal(runs[0].counterparts, runs[1].counterparts)
    assert runs[0].n_queries == runs[1].n_queries
    assert not np.array_equal(runs[0].idis, runs[2].idis)


def test_each_generation_checks_every_seed_population_in_one_model_batch():
    domain = toy_domain(("sex",))
    module = CountingToy()
    max_iter = 4
    gen = make_generator("grft", max_global=25, max_local=0, max_iter=max_iter)
    res = gen.run(as_model(module), domain, far_seeds(domain, 25), random_state=0)
    assert res.n_seeds == 25
    assert 1 < module.n_calls <= 1 + max_iter  # the seeds' check, then one batch per generation


@pytest.mark.parametrize(
    "params, word",
    [
        ({"population": 1}, "population"),
        ({"elite_ranks": 2}, "elite_ranks"),
        ({"global_share": 0}, "global_share"),
        ({"cross_rate": 2}, "cross_rate"),
    ],
)
def test_bad_parameters_are_refused_by_name(params, word):
    with pytest.raises(ConfigError, match=word):
        GRFT(**params)
