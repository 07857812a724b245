"""The fairness gate as a step of the pipeline: estimate the verdict against a threshold, then decide.

:func:`check_fairness` takes your model and data as :func:`~.front.estimate` does; :func:`check_fairness_benchmark`
a :class:`~.config.RunConfig` of names. Both estimate with ``threshold=max_share`` (sampling stops as soon as the
interval lies on one side of it, the confidence spent over the looks: :func:`chiralfair.verdict.estimate`) and
return the :class:`~chiralfair.verdict.GateDecision` of :func:`chiralfair.verdict.decide`. ``chiralfair check`` and
:func:`chiralfair.testing.assert_individually_fair` call them.

The gate's intervals are Clopper-Pearson by default (the verdict's are Wilson): the confidence spent over the looks
is kept only if every look's interval covers at its level, which Clopper-Pearson guarantees at every sample size
and Wilson only approximately. On the biased toy model (true share 0.28, threshold 0.28, margin 0.03, 400 random
states) the decision was wrong 23 times with Wilson (5.75%, against the 5% allowed) and 12 times with
Clopper-Pearson (3%); with one fixed 95% level at every look, 76 and 62 times.

By default the decision speaks for the people the model will meet (``reading="superpopulation"``): the held-out
rows are a sample of them, so a verdict exact for those rows is decided on the exact binomial interval of their
count (:func:`chiralfair.verdict.gate.superpopulation_interval`), and its line says both. ``reading="rows"``
decides for the rows checked alone. A protected value the model refuses (its rows left out) or a group no held-out
row holds is named in the line, and makes a pass undecided.
"""

from __future__ import annotations

from typing import Any

from .._validation import check_choice, check_float


def check_fairness(model, data, *, max_share: float, confidence: float = 0.95, method: str = "clopper-pearson",
                   reading: str = "superpopulation", **kwargs: Any):
    """Pass, fail or undecided: is the share of held-out individuals your model discriminates at most max_share.

    Parameters
    ----------
    model, data
        As :func:`chiralfair.audit` takes them (a fitted model or model file; a frame, data file or Dataset).
    max_share : float
        Largest acceptable share affected, in [0, 1].
    confidence : float, default=0.95
        Confidence level of the interval the decision is made on.
    method : {"clopper-pearson", "wilson"}, default="clopper-pearson"
        Interval method (see the module docstring for why not Wilson).
    reading : {"superpopulation", "rows"}, default="superpopulation"
        Decide for the people the model will meet (the held-out rows as a sample of them) or for the rows checked.
    **kwargs
        Of :func:`chiralfair.estimate`: ``label``, ``positive_class``, ``favourable``, ``protected``, ``bins``,
        ``schema``, ``test``, ``test_size``, ``population`` (default ``"test"``), ``random_state``, ``margin``,
        ``max_queries``, ``method``, ``gamma``, ...

    Returns
    -------
    GateDecision
        ``exit_code`` 0 (pass), 1 (fail) or 2 (undecided); ``verdict`` the verdict it was decided on.

    Raises
    ------
    ConfigError, DatasetError, DomainError, ModelFileError, ModelCapabilityError
        As :func:`chiralfair.estimate`; also for ``max_share`` outside [0, 1] or an unknown ``reading``.
    """
    from ..verdict import decide
    from .front import estimate

    max_share = _checked(max_share, reading)
    verdict = estimate(model, data, confidence=confidence, method=method, threshold=max_share, **kwargs)
    return decide(verdict, max_share, reading=reading)


def check_fairness_benchmark(config, *, max_share: float, confidence: float = 0.95, population: str = "test",
                             method: str = "clopper-pearson", reading: str = "superpopulation", **params: Any):
    """The gate on a zoo model trained on a benchmark (:class:`~.config.RunConfig`); see :func:`check_fairness`.

    Parameters
    ----------
    config : RunConfig
        The benchmark dataset, the zoo model, the protected attributes, the random state.
    max_share : float
        The share of individuals affected the gate accepts, in [0, 1].
    confidence : float, default=0.95
        Spent over the looks of the sequential decision.
    population : {"test", "rows", "domain"}, default="test"
    method : {"clopper-pearson", "wilson"}, default="clopper-pearson"
    reading : {"superpopulation", "rows"}, default="superpopulation"
        As :func:`check_fairness`.
    **params
        Of :func:`chiralfair.verdict.estimate` (``margin``, ``max_queries``, ...).

    Returns
    -------
    GateDecision

    Raises
    ------
    ConfigError, DatasetError
        For a bad name, random state, estimate parameter or ``max_share``.
    """
    from ..verdict import decide
    from .front import estimate_benchmark

    max_share = _checked(max_share, reading)
    verdict = estimate_benchmark(config, population=population, confidence=confidence, method=method,
                                 threshold=max_share, **params)
    return decide(verdict, max_share, reading=reading)


def _checked(max_share, reading: str) -> float:
    """``max_share`` and ``reading`` checked before any work."""
    from ..verdict.gate import READINGS

    check_choice(reading, "reading", READINGS)
    return check_float(max_share, "max_share", minimum=0.0, maximum=1.0)


__all__ = ["check_fairness", "check_fairness_benchmark"]
