"""``assert_individually_fair``: the fairness gate as an assertion in a test suite (pytest, unittest, ...)."""

from __future__ import annotations

from typing import Any


def assert_individually_fair(model, data, *, max_share: float, protected, confidence: float = 0.95,
                             method: str = "clopper-pearson", reading: str = "superpopulation", **kwargs: Any):
    """Assert that at most ``max_share`` of the held-out individuals are affected by their protected attributes.

    The verdict (:func:`chiralfair.estimate`) is estimated against the threshold, sampling stops once its interval
    lies on one side of ``max_share`` (the confidence spent over the looks), and the test passes only when the
    interval's upper bound is at most ``max_share``. A failure says why: the share and its interval, the threshold,
    whether the model is shown unfair or the interval is undecided, and the worst group (the largest share harmed),
    then the verdict's summary.

    Parameters
    ----------
    model : estimator, pipeline, torch module, callable, or path
        Your fitted model, as :func:`chiralfair.audit` takes it.
    data : pandas.DataFrame, polars.DataFrame, path, or Dataset
        Your data, with ``label=`` and ``positive_class=`` for a frame or file.
    max_share : float
        Largest acceptable share of individuals affected, in [0, 1].
    protected : str or sequence of str
        Protected attribute(s) under test.
    confidence : float, default=0.95
        Confidence level of the decision.
    method : {"clopper-pearson", "wilson"}, default="clopper-pearson"
        Interval method (:mod:`chiralfair.pipeline.gate` says why not Wilson).
    reading : {"superpopulation", "rows"}, default="superpopulation"
        Assert it for the people the model will meet (the held-out rows as a sample of them: their binomial
        interval, even when every row is checked) or for the held-out rows themselves.
    **kwargs
        Of :func:`chiralfair.estimate` (``label``, ``positive_class``, ``favourable``, ``test``, ``test_size``,
        ``population``, ``random_state``, ``margin``, ``max_queries``, ...).

    Returns
    -------
    GateDecision
        When the assertion holds (``decision.verdict`` holds the figures).

    Raises
    ------
    AssertionError
        When the gate does not pass (fail or undecided); the message starts with the gate's line.
    ConfigError, DatasetError, ModelCapabilityError, ...
        As :func:`chiralfair.estimate`, for inputs it refuses.

    Examples
    --------
    >>> from chiralfair.testing import assert_individually_fair
    >>> def test_model_is_individually_fair():
    ...     assert_individually_fair(pipe, df, label="income", positive_class=">50K", protected="sex",
    ...                              max_share=0.02)                              # doctest: +SKIP
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    from ..pipeline.gate import check_fairness

    decision = check_fairness(model, data, max_share=max_share, protected=protected, confidence=confidence,
                              method=method, reading=reading, **kwargs)
    if not decision.passed:
        raise AssertionError(decision.message())
    return decision
