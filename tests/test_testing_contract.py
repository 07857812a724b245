"""chiralfair.testing's contract checks catch a generator or a seed strategy that breaks the contract."""

import numpy as np
import pytest

from chiralfair.generators.aequitas import Aequitas
from chiralfair.seeds.random import RandomSeeds
from chiralfair.testing import check_generator, check_seed_strategy, generator_checks


class IgnoresItsRandomState(Aequitas):
    """Draws its own random state: two runs with random_state=7 differ."""

    _draws = iter(range(10**6))

    def run(self, model, domain, seeds, *, random_state=None, **kw):
        return super().run(model, domain, seeds, random_state=next(self._draws), **kw)


class OverspendsItsBudget(Aequitas):
    """Claims a budget of one query."""

    def query_budget(self, n_seeds, n_combinations, n_features=None):
        return 1


class ReportsTheWrongCounterparts(Aequitas):
    """Reports the IDI itself as its counterpart (a pair that differs in nothing)."""

    def run(self, *args, **kw):
        res = super().run(*args, **kw)
        res.counterparts[:] = res.idis
        return res


class TooFewSeeds(RandomSeeds):
    """Returns half the seeds asked for, without a word."""

    def _choose(self, model, dataset, n_seeds, rng):
        seeds, info = super()._choose(model, dataset, n_seeds, rng)
        return seeds[: n_seeds // 2], info


class ForgetsItsRandomState(RandomSeeds):
    """Draws from a fresh random state every time."""

    def _choose(self, model, dataset, n_seeds, rng):
        return super()._choose(model, dataset, n_seeds, np.random.default_rng())


@pytest.mark.parametrize(("cls", "check"), [
    (IgnoresItsRandomState, "check_deterministic"),
    (OverspendsItsBudget, "check_query_budget_kept"),
    (ReportsTheWrongCounterparts, "check_counterparts_differ_only_in_protected"),
])
def test_a_generator_breaking_the_contract_fails_the_check_that_guards_it(cls, check):
    # check_generator stops at the first check that fails, which need not be the one named here
    with pytest.raises(AssertionError, match=f"generator '{cls.__name__}' breaks the contract: check_"):
        check_generator(cls)
    failing = dict(generator_checks(cls))[check]
    with pytest.raises(AssertionError):
        failing()


def test_the_builtin_generators_pass():
    check_generator("aequitas")
    check_generator("eidig", max_local=5)


@pytest.mark.parametrize(("cls", "check"), [(TooFewSeeds, "check_seeds_in_domain_with_true_idi_flags"),
                                           (ForgetsItsRandomState, "check_seeds_deterministic")])
def test_a_seed_strategy_breaking_the_contract_fails_the_check_that_guards_it(cls, check):
    with pytest.raises(AssertionError, match=check):
        check_seed_strategy(cls)


def test_the_builtin_seed_strategies_pass():
    check_seed_strategy("random")
    check_seed_strategy("iandd")
