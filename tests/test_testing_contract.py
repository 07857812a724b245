"""chiralfair.testing's contract checks catch a generator or a seed strategy that breaks the contract."""

import numpy as np
import pytest

from chiralfair.generators.aequitas import Aequitas
from chiralfair.oracle import DiscriminationCheck
from chiralfair.seeds.random import RandomSeeds
from chiralfair.testing import check_generator, check_seed_strategy, generator_checks, parametrize_with_checks
from chiralfair.testing.toys import toy_dataset, toy_model


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


class UnderCountsQueries(Aequitas):
    """Reports the inputs checked as its queries, forgetting the counterparts sent to the model."""

    def run(self, *args, **kw):
        res = super().run(*args, **kw)
        object.__setattr__(res, "n_queries", res.n_tested)
        return res


class ForgetsItsSeedIDIs(Aequitas):
    """Says none of its seeds is an IDI."""

    def run(self, *args, **kw):
        res = super().run(*args, **kw)
        object.__setattr__(res, "n_seed_idis", 0)
        return res


class OutOfBoundsCounterparts(Aequitas):
    """Moves every counterpart's column c one step past its upper bound."""

    def run(self, *args, **kw):
        res = super().run(*args, **kw)
        res.counterparts[:, 4] = 5
        return res


class FlagsBySexAlone(RandomSeeds):
    """Computes its own IDI flags by flipping sex only (right on a sex-only domain, wrong beside race)."""

    def _choose(self, model, dataset, n_seeds, rng):
        seeds, info = super()._choose(model, dataset, n_seeds, rng)
        flipped = seeds.copy()
        flipped[:, 0] = 1 - flipped[:, 0]
        return seeds, {**info, "is_idi": model.predict(seeds) != model.predict(flipped)}


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
    (UnderCountsQueries, "check_counts_are_consistent"),
    (ForgetsItsSeedIDIs, "check_counts_are_consistent"),
    (OutOfBoundsCounterparts, "check_counterparts_differ_only_in_protected"),
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
                                           (ForgetsItsRandomState, "check_seeds_deterministic"),
                                           (FlagsBySexAlone, "check_seeds_in_domain_with_true_idi_flags")])
def test_a_seed_strategy_breaking_the_contract_fails_the_check_that_guards_it(cls, check):
    with pytest.raises(AssertionError, match=check):
        check_seed_strategy(cls)


def test_the_builtin_seed_strategies_pass():
    check_seed_strategy("random")
    check_seed_strategy("iandd")


def test_a_budget_given_to_the_checks_is_the_one_they_expect():
    # max_global=10 made every generator fail check_counts_are_consistent (it compared with the checks' own 20).
    check_generator("aequitas", max_global=10)
    check_generator("themis", max_global=40)


def test_an_error_raised_where_the_contract_expects_an_answer_is_reported_as_a_breach():
    class Crashes(Aequitas):
        def run(self, *args, **kw):
            raise RuntimeError("index out of range in my local phase")

    with pytest.raises(AssertionError, match="'Crashes' breaks the contract: check_deterministic: raised "
                                             "RuntimeError: index out of range in my local phase"):
        check_generator(Crashes)


def test_parametrize_takes_one_name_alone_and_refuses_an_instance():
    mark = parametrize_with_checks(generators="aequitas")
    ids = [p.id for p in mark.args[1]]
    assert ids[0] == "aequitas-check_deterministic" and all(i.startswith("aequitas-") for i in ids)
    with pytest.raises(TypeError, match="not an instance"):
        parametrize_with_checks(generators=[Aequitas(max_global=5, max_local=5)])
    with pytest.raises(TypeError, match="not an instance"):
        check_seed_strategy(RandomSeeds())


def test_seeds_a_strategy_proposes_outside_the_bounds_are_moved_in_and_their_flags_checked_again():
    class OutOfBounds(RandomSeeds):
        def _choose(self, model, dataset, n_seeds, rng):
            seeds, info = super()._choose(model, dataset, n_seeds, rng)
            seeds = seeds.copy()
            seeds[::2, 2], seeds[::2, 3] = 10, 1  # a is in [0, 9]: a + b = 11 is no IDI, a + b = 10 (a = 9) is one
            return seeds, {**info, "is_idi": DiscriminationCheck(model, dataset.domain).check(seeds).is_idi}

    data, model = toy_dataset(400), toy_model(biased=True)
    report = OutOfBounds().select(model, data, 40, random_state=1)
    data.domain.validate(report.seeds)
    assert np.array_equal(report.is_idi, DiscriminationCheck(model, data.domain).check(report.seeds).is_idi)
    assert report.is_idi[::2].all()  # moved to a = 9, b = 1: all IDIs, which the proposal's flags said none was
    assert any("20 seeds were outside the domain's bounds" in n and "checked again" in n for n in report.notes)


def test_a_strategy_proposing_seeds_of_the_wrong_width_is_named():
    from chiralfair.exceptions import ConfigError

    class Narrow(RandomSeeds):
        def _choose(self, model, dataset, n_seeds, rng):
            seeds, info = super()._choose(model, dataset, n_seeds, rng)
            return seeds[:, :4], info

    with pytest.raises(ConfigError, match=r"proposed seeds of shape \(40, 4\); the domain needs \(n_seeds, 5\)"):
        Narrow().select(toy_model(biased=True), toy_dataset(400), 40, random_state=1)


def test_the_recorder_refuses_a_candidate_outside_the_bounds_naming_its_column():
    from chiralfair.exceptions import DomainError
    from chiralfair.generators.recorder import IDIRecorder
    from chiralfair.testing.toys import coupled_toy_domain

    domain = coupled_toy_domain()
    recorder = IDIRecorder(toy_model(biased=True), domain)
    with pytest.raises(DomainError, match=r"global candidates .*column 'b' value -3 \(row 0\) is outside \[0, 9\]"):
        recorder.check(np.array([[0, 0, 5, -3, 2]]), "global")
