"""The contract every generator and every seed strategy keeps (architecture: layers and habits), runnable on your own.

A generator you register (:func:`chiralfair.generators.register_generator`) or a seed strategy
(:func:`chiralfair.seeds.register_seed_strategy`) can be checked the way scikit-learn's ``check_estimator`` checks
an estimator: :func:`check_generator` and :func:`check_seed_strategy` run every check and fail with the first
broken one; :func:`parametrize_with_checks` makes one pytest test per check. chiralfair's own test suite runs
them over its registries.

Generators are checked on toy models whose IDIs are known (:mod:`.toys`): the same ``random_state`` gives the same
result; every reported pair is re-checked against the model (labels differ, the IDI is a true one); counterparts
lie in the domain and differ from the IDI in protected attributes only; the counts add up and keys are unique; the
query budget (:meth:`~chiralfair.generators.Generator.query_budget`) is kept; a fair model gives no IDI (after real
checks), a biased one some; a seed outside the domain is refused naming its column; a model lacking what the
generator needs is refused before its first query; with a coupling and constraints, every pair is a coupled pair of
possible people. Seed strategies: determinism; seeds in the domain, as many as asked, with IDI flags that a direct
check confirms; a fair model gives an initialization rate of 0, a biased one more.

References
----------
.. [1] Buitinck et al. "API design for machine learning software: experiences from the scikit-learn project."
   ECML PKDD workshop, 2013 (``check_estimator``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .toys import (
    breaks_toy_rules,
    coupled_toy_domain,
    is_biased_idi,
    toy_dataset,
    toy_domain,
    toy_model,
)

BUDGET = {"max_global": 20, "max_local": 20}
N_SEEDS = 30
N_STRATEGY_SEEDS = 40
PROTECTED = (("sex",), ("sex", "race"))


# ------------------------------------------------------------------------------------------------ generators
def _build_generator(generator, params: dict):
    """A generator from a registered name, a Generator class or a factory, with the checks' small budget."""
    from ..generators import make_generator

    _refuse_an_instance(generator, "run")
    kwargs = {**BUDGET, **params}
    return make_generator(generator, **kwargs) if isinstance(generator, str) else generator(**kwargs)


def _label_of(algorithm) -> str:
    """``"aequitas"``, ``"MyGenerator"``, or ``"MyGenerator(step=2)"`` for a functools.partial."""
    if isinstance(algorithm, functools.partial):
        args = ", ".join([*map(repr, algorithm.args), *(f"{k}={v!r}" for k, v in algorithm.keywords.items())])
        return f"{_label_of(algorithm.func)}({args})"
    return algorithm if isinstance(algorithm, str) else getattr(algorithm, "__name__", repr(algorithm))


def _search(generator, params, *, biased=True, protected=("sex",), random_state=0, domain=None):
    domain = domain if domain is not None else toy_domain(protected)
    model = toy_model(biased=biased)
    gen = _build_generator(generator, params)
    seeds = domain.repair(domain.sample(N_SEEDS, np.random.default_rng(0)))
    return gen, domain, model, gen.run(model, domain, seeds, random_state=random_state)


def _check_deterministic(generator, params: dict) -> None:
    """The same ``random_state`` gives the same pairs, phases and counts."""
    *_, a = _search(generator, params, random_state=7)
    *_, b = _search(generator, params, random_state=7)
    assert np.array_equal(a.idis, b.idis) and np.array_equal(a.counterparts, b.counterparts), "pairs differ"
    assert np.array_equal(a.phase, b.phase), "phases differ"
    assert (a.n_idis, a.n_global, a.n_local, a.n_tested, a.n_queries) == (
        b.n_idis, b.n_global, b.n_local, b.n_tested, b.n_queries), "counts differ"


def _check_pairs_recheck_against_the_model(generator, params: dict) -> None:
    """Every reported pair, sent to the model again, gets the labels reported, which differ; the IDI is a true one."""
    for protected in PROTECTED:
        _, _, model, res = _search(generator, params, protected=protected)
        assert res.n_idis > 0, f"no IDI of the biased toy found with {protected}"
        assert np.array_equal(model.predict(res.idis), res.idi_labels), "an IDI's label is not the model's"
        assert np.array_equal(model.predict(res.counterparts), res.counterpart_labels), \
            "a counterpart's label is not the model's"
        assert (res.idi_labels != res.counterpart_labels).all(), "a pair whose labels agree"
        assert is_biased_idi(res.idis).all(), "a reported IDI that the biased toy's rule says is none"


def _check_counterparts_differ_only_in_protected(generator, params: dict) -> None:
    """Counterparts lie in the domain, take protected values of the domain, and differ from the IDI only there."""
    for protected in PROTECTED:
        from ..exceptions import DomainError

        _, domain, _, res = _search(generator, params, protected=protected)
        try:
            domain.validate(res.idis, what="idis")
            domain.validate(res.counterparts, what="counterparts")
        except DomainError as err:
            raise AssertionError(f"a pair outside the domain: {err}") from err
        npa = domain.non_protected
        assert np.array_equal(res.idis[:, npa], res.counterparts[:, npa]), "a pair differs in a non-protected column"
        for col, values in zip(domain.protected, domain.protected_values, strict=True):
            assert np.isin(res.counterparts[:, col], values).all(), "a counterpart outside the protected domain"
        pa = list(domain.protected)
        assert (res.idis[:, pa] != res.counterparts[:, pa]).any(axis=1).all(), "a counterpart equal to its IDI"


def _check_counts_are_consistent(generator, params: dict) -> None:
    """n_global + n_local = n_idis = pairs; phases match; keys unique; n_idis <= n_tested; seeds counted."""
    from ..oracle import DiscriminationCheck

    gen, domain, model, res = _search(generator, params)
    assert res.n_global + res.n_local == res.n_idis == len(res.idis) == len(res.counterparts), (
        f"counts disagree: n_global {res.n_global} + n_local {res.n_local}, n_idis {res.n_idis}, "
        f"{len(res.idis)} IDIs, {len(res.counterparts)} counterparts")
    assert (res.phase == "global").sum() == res.n_global and (res.phase == "local").sum() == res.n_local, (
        f"phases disagree with the counts: {(res.phase == 'global').sum()} 'global' and "
        f"{(res.phase == 'local').sum()} 'local' rows for n_global {res.n_global}, n_local {res.n_local}")
    keys = domain.keys(res.idis)
    assert len(set(keys.tolist())) == len(keys), "an IDI counted twice (keys not unique)"
    assert res.n_idis <= res.n_tested, f"{res.n_idis} IDIs from {res.n_tested} inputs tested"
    assert res.n_queries == model.n_queries, (
        f"n_queries {res.n_queries} but the model answered {model.n_queries} rows (every query counts)")
    n_seeds = min(N_SEEDS, getattr(gen, "max_global", BUDGET["max_global"]))
    assert res.n_seeds == n_seeds, f"n_seeds {res.n_seeds}, but {n_seeds} seeds were searched from"
    seeds = domain.repair(domain.sample(N_SEEDS, np.random.default_rng(0)))[:n_seeds]
    n_seed_idis = int(DiscriminationCheck(toy_model(biased=True), domain).check(seeds).is_idi.sum())
    assert res.n_seed_idis == n_seed_idis, f"n_seed_idis {res.n_seed_idis}, but {n_seed_idis} of the seeds are IDIs"


def _check_query_budget_kept(generator, params: dict) -> None:
    """The queries sent stay within the generator's own :meth:`query_budget`."""
    gen, domain, _, res = _search(generator, params)
    bound = gen.query_budget(N_SEEDS, len(domain.combinations), n_features=domain.n_features)
    assert 0 < res.n_queries <= bound, f"{res.n_queries} queries, budget {bound}"


def _check_fair_model_gives_no_idis(generator, params: dict) -> None:
    """A model that ignores the protected attributes has no IDI, and the empty result comes from real checks."""
    for protected in PROTECTED:
        *_, res = _search(generator, params, biased=False, protected=protected)
        assert res.n_idis == 0 and len(res.idis) == 0, f"{res.n_idis} IDIs of a fair model"
        assert res.n_tested > 0, "no input was checked: an empty result that reads as 'fair'"


def _check_seed_outside_the_domain_is_refused(generator, params: dict) -> None:
    """A seed outside the domain is refused, naming its column."""
    from ..exceptions import DomainError

    domain = toy_domain()
    seeds = domain.sample(N_SEEDS, np.random.default_rng(0))
    seeds[3, domain.index("b")] = 12
    try:
        _build_generator(generator, params).run(toy_model(biased=True), domain, seeds, random_state=0)
    except DomainError as err:
        assert "'b'" in str(err), f"the refusal does not name the column: {err}"
        return
    raise AssertionError("a seed outside the domain was searched from")


def _check_a_model_lacking_a_capability_is_refused_up_front(generator, params: dict) -> None:
    """A labels-only model is refused before its first query by a generator needing gradients or probabilities."""
    from ..exceptions import ModelCapabilityError
    from ..models.protocol import CountingModel

    w, bias = np.array([3.0, 0, 1, 1, 0]), -10.5
    labels_only = CountingModel(lambda X: (np.asarray(X, dtype=np.float64) @ w + bias > 0).astype(np.int64),
                                name="labels-only-toy")
    gen = _build_generator(generator, params)
    domain = toy_domain()
    seeds = domain.sample(N_SEEDS, np.random.default_rng(0))
    if not (getattr(gen, "needs_gradient", False) or getattr(gen, "needs_proba", False)):
        assert gen.run(labels_only, domain, seeds, random_state=0).n_idis > 0, "no IDI of a labels-only model"
        return
    try:
        gen.run(labels_only, domain, seeds, random_state=0)
    except ModelCapabilityError:
        assert labels_only.n_queries == 0, "refused only after querying the model"
        return
    raise AssertionError("a generator that needs gradients or probabilities ran on a labels-only model")


def _check_pairs_respect_couplings_and_constraints(generator, params: dict) -> None:
    """With a coupling and constraints, every pair is a coupled pair of people the rules allow."""
    for protected in PROTECTED:
        domain = coupled_toy_domain(protected)
        gen, _, model, res = _search(generator, params, protected=protected, domain=domain)
        assert res.n_idis > 0, f"no IDI found under the coupling with {protected}"
        assert not breaks_toy_rules(res.idis).any(), "an IDI that breaks a constraint"
        assert not breaks_toy_rules(res.counterparts).any(), "a counterpart that breaks a constraint"
        # the counterpart is the coupled one: c swaps 0 <-> 1 exactly where sex changed, a and b stay
        sex_changed = res.idis[:, 0] != res.counterparts[:, 0]
        c = res.idis[:, 4]
        assert np.array_equal(res.counterparts[:, 4], np.where(sex_changed & (c < 2), 1 - c, c)), \
            "the coupled column did not move with sex (or moved without it)"
        assert np.array_equal(res.idis[:, 2:4], res.counterparts[:, 2:4]), "a pair differs in a non-protected column"
        assert np.array_equal(model.predict(res.counterparts), res.counterpart_labels)
        assert (res.idi_labels != res.counterpart_labels).all() and is_biased_idi(res.idis).all()
        assert np.array_equal(domain.keys(res.idis), domain.keys(res.counterparts)), "an IDI and its counterpart " \
            "have different keys"
        assert len(np.unique(domain.keys(res.idis))) == res.n_idis, "an IDI counted twice"
        bound = gen.query_budget(N_SEEDS, len(domain.combinations), n_features=domain.n_features)
        assert 0 < res.n_queries <= bound, f"{res.n_queries} queries, budget {bound}"


GENERATOR_CHECKS: tuple[Callable[[Any, dict], None], ...] = (
    _check_deterministic, _check_counterparts_differ_only_in_protected, _check_pairs_recheck_against_the_model,
    _check_counts_are_consistent, _check_query_budget_kept, _check_fair_model_gives_no_idis,
    _check_seed_outside_the_domain_is_refused, _check_a_model_lacking_a_capability_is_refused_up_front,
    _check_pairs_respect_couplings_and_constraints)


def generator_checks(generator, **params) -> list[tuple[str, Callable[[], None]]]:
    """The contract's checks of one generator, each as ``(name, check)`` with ``check()`` raising on a breach.

    Parameters
    ----------
    generator : str, Generator subclass or callable
        A registered name, or what builds the generator from ``max_global``, ``max_local`` and ``**params``.
    **params
        Further hyper-parameters of the generator.

    Returns
    -------
    list of (str, callable)
    """
    _refuse_an_instance(generator, "run")
    return [(check.__name__.lstrip("_"), functools.partial(check, generator, params)) for check in GENERATOR_CHECKS]


def check_generator(generator, **params) -> None:
    """Run every check of :data:`GENERATOR_CHECKS` on ``generator`` (see :func:`generator_checks`).

    Parameters
    ----------
    generator : str, Generator subclass or callable
        A registered name, or what builds the generator from ``max_global``, ``max_local`` and ``**params``.
    **params
        Further hyper-parameters of the generator.

    Raises
    ------
    AssertionError
        Naming the generator and the first check that failed, with its reason.

    Examples
    --------
    >>> from chiralfair.testing import check_generator
    >>> check_generator("aequitas")
    """
    _run_checks(generator_checks(generator, **params), f"generator {_label_of(generator)!r}")


# ------------------------------------------------------------------------------------------------ seed strategies
@functools.lru_cache(maxsize=2)
def _seed_toys(protected=("sex",)):
    """The toy data, a biased tree fitted on it and a fair pipeline that drops the protected attributes.

    With ``("sex", "race")`` the labels depend on race, not on sex, so a strategy that flags IDIs by flipping sex
    alone is caught.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.tree import DecisionTreeClassifier

    data = toy_dataset(n=400, protected=protected, reads="race" if "race" in protected else "sex")
    biased = DecisionTreeClassifier(random_state=0).fit(data.X, data.y)
    keep = ColumnTransformer([("keep", "passthrough", [2, 3, 4])], remainder="drop")
    fair = Pipeline([("drop_protected", keep), ("tree", DecisionTreeClassifier(random_state=0))]).fit(data.X, data.y)
    return data, biased, fair


def _build_strategy(strategy, params: dict):
    from ..seeds import make_seed_strategy

    _refuse_an_instance(strategy, "select")
    return make_seed_strategy(strategy, **params) if isinstance(strategy, str) else strategy(**params)


def _check_seeds_deterministic(strategy, params: dict) -> None:
    """The same ``random_state`` gives the same seeds, IDI flags and clustering."""
    data, biased, _ = _seed_toys()
    a = _build_strategy(strategy, params).select(biased, data, N_STRATEGY_SEEDS, random_state=7)
    b = _build_strategy(strategy, params).select(biased, data, N_STRATEGY_SEEDS, random_state=7)
    assert np.array_equal(a.seeds, b.seeds) and np.array_equal(a.is_idi, b.is_idi), "seeds differ"
    assert a.clustering == b.clustering, "clusterings differ"


def _check_seeds_in_domain_with_true_idi_flags(strategy, params: dict) -> None:
    """As many seeds as asked, in the domain, whose IDI flags a direct discrimination check confirms."""
    from ..models import as_model
    from ..oracle import DiscriminationCheck

    for protected in PROTECTED:
        data, biased, _ = _seed_toys(protected)
        report = _build_strategy(strategy, params).select(biased, data, N_STRATEGY_SEEDS, random_state=1)
        assert report.seeds.shape == (N_STRATEGY_SEEDS, data.domain.n_features), \
            f"seeds of shape {report.seeds.shape} with {protected}"
        data.domain.validate(report.seeds, what="seeds")
        recheck = DiscriminationCheck(as_model(biased), data.domain).check(report.seeds).is_idi
        assert np.array_equal(recheck, report.is_idi), (
            f"{int((recheck != report.is_idi).sum())} IDI flags a direct check does not confirm with {protected} "
            f"(initialization rate {report.initialization_rate:.3f}, a direct check {recheck.mean():.3f})")


def _check_fair_model_gives_initialization_rate_zero(strategy, params: dict) -> None:
    """A model that never reads the protected attributes gives no seed that is an IDI."""
    data, _, fair = _seed_toys()
    report = _build_strategy(strategy, params).select(fair, data, N_STRATEGY_SEEDS, random_state=2)
    assert report.initialization_rate == 0.0 and not report.is_idi.any(), "an IDI of a fair model"


def _check_biased_model_gives_a_positive_initialization_rate(strategy, params: dict) -> None:
    """A model that reads sex gives some seeds that are IDIs."""
    for protected in PROTECTED:
        data, biased, _ = _seed_toys(protected)
        report = _build_strategy(strategy, params).select(biased, data, N_STRATEGY_SEEDS, random_state=3)
        assert report.initialization_rate > 0.0, f"no seed is an IDI of a biased model with {protected}"


SEED_STRATEGY_CHECKS: tuple[Callable[[Any, dict], None], ...] = (
    _check_seeds_deterministic, _check_seeds_in_domain_with_true_idi_flags,
    _check_fair_model_gives_initialization_rate_zero, _check_biased_model_gives_a_positive_initialization_rate)


def seed_strategy_checks(strategy, **params) -> list[tuple[str, Callable[[], None]]]:
    """The contract's checks of one seed strategy, each as ``(name, check)``.

    Parameters
    ----------
    strategy : str, SeedStrategy subclass or callable
        A registered name, or what builds the strategy from ``**params``.
    **params
        Its parameters.

    Returns
    -------
    list of (str, callable)
    """
    _refuse_an_instance(strategy, "select")
    return [(check.__name__.lstrip("_"), functools.partial(check, strategy, params))
            for check in SEED_STRATEGY_CHECKS]


def check_seed_strategy(strategy, **params) -> None:
    """Run every check of :data:`SEED_STRATEGY_CHECKS` on ``strategy`` (see :func:`seed_strategy_checks`).

    Parameters
    ----------
    strategy : str, SeedStrategy subclass or callable
        A registered name, or what builds the strategy from ``**params``.
    **params
        Its parameters.

    Raises
    ------
    AssertionError
        Naming the strategy and the first check that failed.

    Examples
    --------
    >>> from chiralfair.testing import check_seed_strategy
    >>> check_seed_strategy("cluster")
    """
    _run_checks(seed_strategy_checks(strategy, **params), f"seed strategy {_label_of(strategy)!r}")


# ------------------------------------------------------------------------------------------------ for pytest
def parametrize_with_checks(generators=(), seed_strategies=(), mitigation_methods=()):
    """A ``pytest.mark.parametrize`` over ``(name, check)`` of every check of the algorithms given.

    Parameters
    ----------
    generators, seed_strategies : sequence
        Registered names (or classes / factories).
    mitigation_methods : sequence of str
        Registered mitigation methods' names (:mod:`.mitigation_contract`).

    Returns
    -------
    pytest.MarkDecorator
        Decorating ``def test_contract(name, check): check()``; one test per (algorithm, check), with ids such as
        ``aequitas-_check_deterministic``.

    Examples
    --------
    >>> from chiralfair.testing import parametrize_with_checks
    >>> @parametrize_with_checks(generators=["aequitas", "my-generator"])   # doctest: +SKIP
    ... def test_contract(name, check):
    ...     check()
    """
    import pytest

    generators, seed_strategies = _as_list(generators, "run"), _as_list(seed_strategies, "select")
    cases = [(_label_of(g), name, check) for g in generators for name, check in generator_checks(g)]
    cases += [(_label_of(s), name, check) for s in seed_strategies for name, check in seed_strategy_checks(s)]
    if mitigation_methods:
        from .mitigation_contract import mitigation_method_checks

        methods = [mitigation_methods] if isinstance(mitigation_methods, str) else list(mitigation_methods)
        cases += [(m, name, check) for m in methods for name, check in mitigation_method_checks(m)]
    return pytest.mark.parametrize(("name", "check"), [pytest.param(label, check, id=f"{label}-{name}")
                                                       for label, name, check in cases])


def _run_checks(checks, what: str) -> None:
    for name, check in checks:
        try:
            check()
        except AssertionError as err:
            raise AssertionError(f"{what} breaks the contract: {name}: {err}") from err
        except Exception as err:  # an error where the contract expects an answer is a breach too
            raise AssertionError(f"{what} breaks the contract: {name}: raised {type(err).__name__}: {err}") from err


def _as_list(algorithms, method: str) -> list:
    """A name or class given alone is one algorithm, not a sequence of letters; an instance is refused."""
    if isinstance(algorithms, (str, type)):
        return [algorithms]
    algorithms = list(algorithms)
    for a in algorithms:
        _refuse_an_instance(a, method)
    return algorithms


def _refuse_an_instance(algorithm, method: str) -> None:
    if not isinstance(algorithm, (str, type)) and hasattr(algorithm, method):
        raise TypeError(f"pass a registered name, a class or a factory taking the hyper-parameters, not an "
                        f"instance ({algorithm!r}): each check builds its own, with its own budget and state")
