"""The figures of one model on the held-out rows: F1, accuracy, IDI rates with intervals, group metrics.

Every figure names its rows (design §8, "held-out or nothing"): F1, accuracy, the IDI rate and fairlearn's group
metrics are measured on the test split, which no step of retraining saw; the domain IDI rate over uniform draws
from the input domain (:func:`chiralfair.verdict.estimate`, 95% Wilson intervals).

Group metrics: fairlearn's demographic-parity and equalized-odds differences over the groups of the protected
attributes (their joint values) in the test rows, through :class:`fairlearn.metrics.MetricFrame`. The
equalized-odds difference compares true- and false-positive rates; a group with no positive test row has no
true-positive rate (0/0), one with no negative row no false-positive rate, and the difference is then
*undefined*: it is reported as None with the reason (``equalized_odds_undefined``), never as a number.

References
----------
.. [1] Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in AI." Microsoft, 2020.
.. [2] Hardt, Price, Srebro. "Equality of Opportunity in Supervised Learning." NeurIPS 2016 (equalized odds).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..datasets.base import Dataset
from ..datasets.population import population_of
from ..exceptions import ConfigError
from ..models.protocol import CountingModel
from ..oracle import DiscriminationCheck

CONFIDENCE = 0.95


class Evaluator:
    """Measures models on one dataset's test rows (and the domain), the same rows for every model.

    Parameters
    ----------
    dataset : Dataset
    test : numpy.ndarray of int64
        The held-out rows.
    union : numpy.ndarray, shape (n, n_features), optional
        IDIs re-checked under the paper's protocol (remaining IDIs); None skips it.
    domain_rate : bool
        Measure the IDI rate over domain draws too.
    source : dict, optional
        How the IDIs were found, for a fresh search on each model (``generator``, ``seed_strategy``, ``params``);
        None skips the fresh search.
    search_state : int, optional
    margin : float
        Sampling margin of the domain IDI rate.
    domain_seed : int
    """

    def __init__(self, dataset: Dataset, test, *, union=None, domain_rate: bool = True, source=None,
                 search_state=None, margin: float = 0.005, domain_seed: int = 0):
        self.dataset, self.test, self.union, self.domain_rate = dataset, test, union, domain_rate
        self.source, self.search_state, self.margin, self.domain_seed = source, search_state, margin, domain_seed

    def __call__(self, model: CountingModel) -> dict[str, Any]:
        """The figures of ``model`` as a dict of :data:`~chiralfair.mitigation.retraining.ROW_FIELDS` keys."""
        from sklearn.metrics import accuracy_score, f1_score

        y_true = self.dataset.y[self.test]
        X_test = self.dataset.X[self.test]
        people = population_of(self.dataset, self.test) if model.takes_frame else None
        y_pred = model.predict(X_test if people is None else people.frame)  # the people as given, if fed frames
        row: dict[str, Any] = {"f1": float(f1_score(y_true, y_pred, pos_label=1, zero_division=0)),
                               "accuracy": float(accuracy_score(y_true, y_pred))}
        row.update(group_metrics(y_true, y_pred, self.dataset.domain.describe_protected(X_test)))
        row.update(self._test_rate(model))
        if self.domain_rate:
            row.update(self._domain_rate(model))
        if self.union is not None:
            row.update(remaining_idis=int(DiscriminationCheck(model, self.dataset.domain).is_idi(self.union).sum()),
                       n_rechecked=int(len(self.union)))
        if self.source is not None:
            row.update(self._fresh_search(model))
        return row

    def _test_rate(self, model: CountingModel) -> dict[str, Any]:
        from ..verdict import estimate

        on_test = estimate(model, self.dataset, population="test", test_index=self.test, exact=True,
                           favourable=_favourable(self.dataset), random_state=0)
        lower, upper = wilson(on_test.n_affected, on_test.n_individuals)
        return {"test_idi_rate": on_test.share, "test_idi_lower": lower, "test_idi_upper": upper,
                "test_n": on_test.n_individuals}

    def _domain_rate(self, model: CountingModel) -> dict[str, Any]:
        from ..verdict import estimate

        on_domain = estimate(model, self.dataset, population="domain", margin=self.margin, confidence=CONFIDENCE,
                             favourable=_favourable(self.dataset), random_state=self.domain_seed)
        return {"domain_idi_rate": on_domain.share, "domain_idi_lower": on_domain.lower,
                "domain_idi_upper": on_domain.upper, "domain_n": on_domain.n_individuals}

    def _fresh_search(self, model: CountingModel) -> dict[str, Any]:
        from ..generators import make_generator
        from ..seeds import make_seed_strategy

        generator = make_generator(self.source["generator"], **dict(self.source["params"]))
        seeds = make_seed_strategy(self.source["seed_strategy"]).select(
            model, self.dataset, generator.max_global, random_state=self.search_state)
        found = generator.run(model, self.dataset.domain, seeds, random_state=self.search_state)
        return {"search_n_idis": found.n_idis, "search_n_tested": found.n_tested,
                "search_success_rate": found.success_rate}


def wilson(count: int, nobs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson interval of a binomial share (statsmodels), treating the rows as a sample of the population.

    Parameters
    ----------
    count : int
        Successes.
    nobs : int
        Trials.
    confidence : float, default=0.95
        Confidence level.

    Returns
    -------
    lower, upper : float
        In [0, 1]; (0, 1) for ``nobs == 0``.
    """
    from statsmodels.stats.proportion import proportion_confint

    if nobs == 0:
        return 0.0, 1.0
    lower, upper = proportion_confint(count, nobs, alpha=1 - confidence, method="wilson")
    return float(lower), float(upper)


def group_metrics(y_true, y_pred, groups) -> dict[str, Any]:
    """Demographic-parity and equalized-odds differences over ``groups``, the latter None where undefined.

    Parameters
    ----------
    y_true, y_pred : array-like of {0, 1}, shape (n_samples,)
    groups : pandas.DataFrame or array-like, shape (n_samples,) or (n_samples, n_attributes)
        Each row's protected values (several columns: their joint values are the groups).

    Returns
    -------
    dict
        ``demographic_parity_difference`` (float), ``equalized_odds_difference`` (float or None) and
        ``equalized_odds_undefined`` (None, or why: the groups without a positive or a negative row).
    """
    import pandas as pd
    from fairlearn.metrics import MetricFrame, equalized_odds_difference, selection_rate

    y_true = np.asarray(y_true)
    frame = groups if isinstance(groups, pd.DataFrame) else pd.DataFrame({"group": np.asarray(groups)})
    frame = frame.astype(str).reset_index(drop=True)
    dpd = MetricFrame(metrics=selection_rate, y_true=y_true, y_pred=np.asarray(y_pred),
                      sensitive_features=frame).difference()
    counts = pd.crosstab([frame[c] for c in frame.columns], y_true).reindex(columns=[0, 1], fill_value=0)
    missing = [("positive", "/".join(map(str, np.atleast_1d(g)))) for g in counts.index[counts[1] == 0]]
    missing += [("negative", "/".join(map(str, np.atleast_1d(g)))) for g in counts.index[counts[0] == 0]]
    if missing:
        reason = "; ".join(f"group {g!r} has no {kind} test row" for kind, g in missing)
        return {"demographic_parity_difference": float(dpd), "equalized_odds_difference": None,
                "equalized_odds_undefined": f"undefined: {reason}"}
    eod = equalized_odds_difference(y_true, np.asarray(y_pred), sensitive_features=frame)
    return {"demographic_parity_difference": float(dpd), "equalized_odds_difference": float(eod),
            "equalized_odds_undefined": None}


def _favourable(dataset: Dataset) -> int:
    """The favourable label for the estimate; only its harm table depends on it, which retraining does not use."""
    from ..verdict import resolve_favourable
    try:
        return resolve_favourable(dataset, None)[0]
    except ConfigError:
        return 1
