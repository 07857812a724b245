"""The figures of one model on the held-out rows: F1, accuracy, IDI rates with intervals, group metrics.

Every figure names its rows (architecture: mitigation, "held-out or nothing"): F1, accuracy, the IDI rate and
fairlearn's group metrics are measured on the test split, which no step of retraining saw; the domain IDI rate over
uniform draws from the input domain (:func:`chiralfair.verdict.estimate`). The test IDI rate is a verdict's share
affected and carries the verdict's interval, its interval rule (:func:`~chiralfair.verdict.result.people_interval`:
the 95% Clopper-Pearson interval of the count, the test rows read as a sample of the people the model will meet), so
that ``retrain`` gives the interval ``run``, ``estimate``, ``check`` and the model card give for the same rows and
model; the domain rate carries its sampled verdict's interval (Clopper-Pearson, :func:`~chiralfair.verdict.estimate`'s
default).

Group metrics: fairlearn's demographic-parity and equalized-odds differences over the groups of the protected
attributes (their joint values) in the test rows, through :class:`fairlearn.metrics.MetricFrame`. The
equalized-odds difference compares true- and false-positive rates; a group with no positive test row has no
true-positive rate (0/0), one with no negative row no false-positive rate, and the difference is then
*undefined*: it is reported as None with the reason (``equalized_odds_undefined``), never as a number.

Both come with 95% bootstrap intervals over the rows (:func:`group_metric_intervals`): the rows are resampled with
replacement, which is the same as drawing the counts of each (group, label, prediction) cell from a multinomial,
so 1,000 resamples cost a few milliseconds (fairlearn's own bootstrap rebuilds a MetricFrame per resample: about
90 s for 200 resamples of 13,000 rows on this project's machine).

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
from ..exceptions import ConfigError, ModelCapabilityError
from ..models.protocol import CountingModel
from ..oracle import DiscriminationCheck

CONFIDENCE = 0.95
# The intervals of the IDI rates, named where they are shown: the verdict's interval rule.
INTERVAL_NAME = f"{CONFIDENCE:.0%} Clopper-Pearson"
N_BOOTSTRAP = 1000


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
    plausible_only : bool, default=False
        Count plausible counterparts only in the IDI rates (:func:`chiralfair.verdict.estimate`).
    keep_predictions : bool, default=False
        Also return the predicted labels of the rows (``predicted``), for figures over several splits' rows
        (``auto`` pools them, :func:`pooled_group_figures`).
    """

    def __init__(self, dataset: Dataset, test, *, union=None, domain_rate: bool = True, source=None,
                 search_state=None, margin: float = 0.005, domain_seed: int = 0, plausible_only: bool = False,
                 keep_predictions: bool = False):
        self.dataset, self.test, self.union, self.domain_rate = dataset, test, union, domain_rate
        self.source, self.search_state, self.margin, self.domain_seed = source, search_state, margin, domain_seed
        self.plausible_only, self.keep_predictions = plausible_only, keep_predictions
        self.searches_not_run: dict[str, str] = {}  # model name -> why its fresh search could not run

    def __call__(self, model: CountingModel) -> dict[str, Any]:
        """The figures of ``model`` as a dict of :data:`~chiralfair.mitigation.retraining.ROW_FIELDS` keys."""
        from sklearn.metrics import accuracy_score, f1_score

        y_true = self.dataset.y[self.test]
        X_test = self.dataset.X[self.test]
        people = population_of(self.dataset, self.test) if model.reads_people else None
        y_pred = model.predict(X_test if people is None else people.frame)  # the people as given, if fed frames
        row: dict[str, Any] = {"f1": float(f1_score(y_true, y_pred, pos_label=1, zero_division=0)),
                               "accuracy": float(accuracy_score(y_true, y_pred))}
        row.update(group_metrics(y_true, y_pred, protected_groups_frame(self.dataset.domain, X_test)))
        if self.keep_predictions:
            row["predicted"] = np.asarray(y_pred, dtype=np.int64).reshape(-1)
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
        from ..verdict.result import people_interval

        on_test = estimate(model, self.dataset, population="test", test_index=self.test, exact=True,
                           favourable=_favourable(self.dataset), random_state=0, plausible_only=self.plausible_only)
        lower, upper, _, _ = people_interval(on_test)  # the verdict's own interval rule, as every door gives it
        if lower is None:  # no test row checked: nothing to bound
            lower, upper = 0.0, 1.0
        return {"test_idi_rate": on_test.share, "test_idi_lower": lower, "test_idi_upper": upper,
                "test_n": on_test.n_individuals}

    def _domain_rate(self, model: CountingModel) -> dict[str, Any]:
        from ..verdict import estimate

        on_domain = estimate(model, self.dataset, population="domain", margin=self.margin, confidence=CONFIDENCE,
                             favourable=_favourable(self.dataset), random_state=self.domain_seed,
                             plausible_only=self.plausible_only)
        return {"domain_idi_rate": on_domain.share, "domain_idi_lower": on_domain.lower,
                "domain_idi_upper": on_domain.upper, "domain_n": on_domain.n_individuals}

    def _fresh_search(self, model: CountingModel) -> dict[str, Any]:
        from ..generators import make_generator
        from ..seeds import make_seed_strategy

        generator = make_generator(self.source["generator"], **dict(self.source["params"]))
        try:
            seeds = make_seed_strategy(self.source["seed_strategy"]).select(
                model, self.dataset, generator.max_global, random_state=self.search_state)
        except ModelCapabilityError as err:  # e.g. I&D seeds need a chiral copy this kind of model cannot give
            self.searches_not_run[model.name] = str(err)
            return {"search_n_idis": None, "search_n_tested": None, "search_success_rate": None}
        found = generator.run(model, self.dataset.domain, seeds, random_state=self.search_state)
        return {"search_n_idis": found.n_idis, "search_n_tested": found.n_tested,
                "search_success_rate": found.success_rate}


def protected_groups_frame(domain, X):
    """Each row's protected values as text (:meth:`Domain.describe_protected`), described once per distinct group.

    Parameters
    ----------
    domain : Domain
    X : numpy.ndarray of int, shape (n_samples, n_features)

    Returns
    -------
    pandas.DataFrame, shape (n_samples, n_attributes)
    """
    X = np.asarray(X, dtype=np.int64)
    _, first, inverse = np.unique(domain.protected_value_index(X), axis=0, return_index=True, return_inverse=True)
    described = domain.describe_protected(X[first])
    return described.iloc[np.asarray(inverse).reshape(-1)].reset_index(drop=True)


def share_interval(count: int, nobs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The verdict's interval of a share affected: Clopper-Pearson, the rows read as a sample of the people.

    The interval rule of every verdict (:func:`~chiralfair.verdict.result.binomial_interval`), for a share measured
    outside one (``auto``'s validation IDI rates).

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
    from ..verdict.result import binomial_interval

    if nobs == 0:
        return 0.0, 1.0
    lower, upper = binomial_interval(int(count), int(nobs), confidence)
    return float(lower), float(upper)


def group_metrics(y_true, y_pred, groups) -> dict[str, Any]:
    """Demographic-parity and equalized-odds differences over ``groups``, the latter None where undefined.

    The differences are fairlearn's (``demographic_parity_difference`` and ``equalized_odds_difference``, the
    default "between groups" and "worst case"), computed from the counts of the (group, label, prediction) cells:
    fairlearn's :class:`~fairlearn.metrics.MetricFrame` takes about 0.25 s per call, which ``auto``'s candidates and
    the bootstrap cannot afford; ``tests/test_mitigation_kinds.py`` checks that the two agree.

    Parameters
    ----------
    y_true, y_pred : array-like of {0, 1}, shape (n_samples,)
    groups : pandas.DataFrame or array-like, shape (n_samples,) or (n_samples, n_attributes)
        Each row's protected values (several columns: their joint values are the groups).

    Returns
    -------
    dict
        ``demographic_parity_difference`` (float), ``equalized_odds_difference`` (float or None),
        ``equalized_odds_undefined`` (None, or why: the groups without a positive or a negative row), and their 95%
        bootstrap intervals (:func:`group_metric_intervals`): ``demographic_parity_lower`` / ``_upper``,
        ``equalized_odds_lower`` / ``_upper``.
    """
    import pandas as pd

    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    frame = groups if isinstance(groups, pd.DataFrame) else pd.DataFrame({"group": np.asarray(groups)})
    frame = frame.astype(str).reset_index(drop=True)
    per_column = [np.unique(frame[c].to_numpy(dtype=str), return_inverse=True) for c in frame.columns]
    joint = np.ravel_multi_index([np.asarray(inv).reshape(-1) for _, inv in per_column],
                                 [len(values) for values, _ in per_column])
    _, first, codes = np.unique(joint, return_index=True, return_inverse=True)
    codes = np.asarray(codes).reshape(-1)
    names = ["/".join(frame.iloc[i].tolist()) for i in first]
    cells = _cells(y_true, y_pred, codes, len(names))
    dpd, eod = _differences(cells[None])
    out = {"demographic_parity_difference": float(dpd[0]), **group_metric_intervals(y_true, y_pred, codes)}
    labels = cells.sum(axis=2)  # (n_groups, 2): rows of label 0 and 1 per group
    missing = [f"group {names[g]!r} has no positive test row" for g in np.flatnonzero(labels[:, 1] == 0)]
    missing += [f"group {names[g]!r} has no negative test row" for g in np.flatnonzero(labels[:, 0] == 0)]
    if missing:
        return {**out, "equalized_odds_difference": None, "equalized_odds_lower": None, "equalized_odds_upper": None,
                "equalized_odds_undefined": f"undefined: {'; '.join(missing)}"}
    return {**out, "equalized_odds_difference": float(eod[0]), "equalized_odds_undefined": None}


def pooled_group_figures(y_true, groups, predicted, reference, *, n_boot: int = N_BOOTSTRAP,
                         confidence: float = CONFIDENCE, random_state: int = 0) -> dict[str, Any]:
    """A model's group metrics against a reference's on the same rows, and how far the rise could be from the rows.

    The rows are those of several validation splits pooled (each split's rows predicted by the model fitted on
    that split's other rows): both differences are computed from the counts of the pooled (group, label,
    prediction) cells, so a group small in one split still counts with its rows of the others. The rise (model
    minus reference) gets a one-sided bootstrap bound over the rows, resampled in pairs (a row's label, its
    prediction by the model and by the reference together), as :func:`group_metric_intervals` does for one model.

    Parameters
    ----------
    y_true : array-like of {0, 1}, shape (n_samples,)
    groups : array-like, shape (n_samples,)
        Each row's group (any hashable labels).
    predicted, reference : array-like of {0, 1}, shape (n_samples,)
        The model's and the reference's predicted labels.
    n_boot : int, default=1000
    confidence : float, default=0.95
        Of the one-sided bound.
    random_state : int, default=0

    Returns
    -------
    dict
        Per metric name (``demographic_parity_difference``, ``equalized_odds_difference``): ``value`` and
        ``reference`` (None where undefined: a group without a row of a label), ``rise`` (value minus reference)
        and ``rise_upper`` (the ``confidence`` quantile of the bootstrapped rise), None where undefined.
    """
    _, group = np.unique(np.asarray(groups).astype(str), return_inverse=True)
    group = np.asarray(group).reshape(-1)
    tables = _paired_tables(y_true, predicted, reference, group, int(group.max()) + 1 if len(group) else 0,
                            n_boot, random_state)
    model_dpd, model_eod = _differences(tables.sum(axis=4))
    ref_dpd, ref_eod = _differences(tables.sum(axis=3))
    out: dict[str, Any] = {}
    for key, model, ref in (("demographic_parity_difference", model_dpd, ref_dpd),
                            ("equalized_odds_difference", model_eod, ref_eod)):
        value = float(model[0]) if np.isfinite(model[0]) else None
        base = float(ref[0]) if np.isfinite(ref[0]) else None
        rise = model[1:] - ref[1:]
        kept = rise[np.isfinite(rise)]
        out[key] = {"value": value, "reference": base, "rise": None, "rise_upper": None}
        if value is not None and base is not None:
            out[key]["rise"] = value - base
            out[key]["rise_upper"] = float(np.percentile(kept, 100 * confidence)) if len(kept) else None
    return out


def pooled_f1_loss(y_true, predicted, reference, *, n_boot: int = N_BOOTSTRAP, confidence: float = CONFIDENCE,
                   random_state: int = 0) -> dict[str, float]:
    """A model's F1 loss against a reference's on the same rows, and how far the loss could be from the rows.

    The paired bootstrap of :func:`pooled_group_figures`: the rows are resampled in pairs (a row's label, its
    prediction by the model and by the reference together), drawn as the counts of the 8 (label, model, reference)
    cells from a multinomial, and the F1 of the positive class 1 (0 where a resample has no positive row and no
    positive prediction, as ``f1_score(..., zero_division=0)``) of both is computed from each resample's counts.

    Parameters
    ----------
    y_true, predicted, reference : array-like of {0, 1}, shape (n_samples,)
    n_boot : int, default=1000
    confidence : float, default=0.95
        Of the one-sided bound.
    random_state : int, default=0

    Returns
    -------
    dict
        ``loss`` (the reference's F1 minus the model's, on the rows given), ``loss_upper`` (the ``confidence``
        quantile of the bootstrapped loss) and ``margin`` (``loss_upper - loss``, at least 0).
    """
    one_group = np.zeros(np.size(y_true), dtype=np.int64)
    tables = _paired_tables(y_true, predicted, reference, one_group, 1, n_boot, random_state)[:, 0].astype(np.float64)
    loss = _f1(tables.sum(axis=2)) - _f1(tables.sum(axis=3))  # (label, reference) minus (label, model)
    upper = float(np.percentile(loss[1:], 100 * confidence))
    return {"loss": float(loss[0]), "loss_upper": upper, "margin": max(0.0, upper - float(loss[0]))}


def _paired_tables(y_true, predicted, reference, group: np.ndarray, n_groups: int, n_boot: int,
                   random_state: int) -> np.ndarray:
    """Row counts per (group, label, model's prediction, reference's prediction), then ``n_boot`` resamples'.

    A resample draws rows in pairs (a row's three labels together). Shape (n_boot + 1, n_groups, 2, 2, 2).
    """
    y_true = np.asarray(y_true, dtype=np.int64).reshape(-1)
    predicted = np.asarray(predicted, dtype=np.int64).reshape(-1)
    reference = np.asarray(reference, dtype=np.int64).reshape(-1)
    n = len(y_true)
    joint = np.bincount(group * 8 + y_true * 4 + predicted * 2 + reference, minlength=8 * n_groups)
    boot = np.random.default_rng(random_state).multinomial(n, joint / max(n, 1), size=n_boot)
    return np.concatenate([joint[None], boot]).reshape(-1, n_groups, 2, 2, 2)


def _f1(cells: np.ndarray) -> np.ndarray:
    """F1 of the positive class of each table of counts, shape (n, 2 labels, 2 predictions); 0 where undefined."""
    true_pos, wrong = 2 * cells[:, 1, 1], cells[:, 0, 1] + cells[:, 1, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(true_pos + wrong > 0, true_pos / (true_pos + wrong), 0.0)


def _cells(y_true: np.ndarray, y_pred: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Counts of rows per (group, label, prediction), shape (n_groups, 2, 2)."""
    return np.bincount(group * 4 + y_true * 2 + y_pred, minlength=4 * n_groups).reshape(n_groups, 2, 2)


def _differences(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Demographic-parity and equalized-odds differences of each table of counts, shape (n, n_groups, 2, 2).

    NaN where a group has no row (parity) or no row of one label (odds).
    """
    cells = cells.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        selection = cells[:, :, :, 1].sum(axis=2) / cells.sum(axis=(2, 3))
        tpr = cells[:, :, 1, 1] / cells[:, :, 1, :].sum(axis=2)
        fpr = cells[:, :, 0, 1] / cells[:, :, 0, :].sum(axis=2)
    dpd = np.where(np.isfinite(selection).all(axis=1), np.ptp(selection, axis=1), np.nan)
    odds = np.where((np.isfinite(tpr) & np.isfinite(fpr)).all(axis=1),
                    np.maximum(np.ptp(tpr, axis=1), np.ptp(fpr, axis=1)), np.nan)
    return dpd, odds




def group_metric_intervals(y_true, y_pred, groups, *, n_boot: int = N_BOOTSTRAP, confidence: float = CONFIDENCE,
                           random_state: int = 0) -> dict[str, float | None]:
    """Bootstrap intervals of the demographic-parity and equalized-odds differences over the rows.

    A resample of the rows (with replacement) is a multinomial draw of the counts of the (group, label, prediction)
    cells, so each resample costs a few operations on ``4 · n_groups`` counts. A resample in which a group of the
    rows has no row, or (for equalized odds) no positive or no negative row, leaves that difference undefined and
    is left out of its interval.

    Parameters
    ----------
    y_true, y_pred : array-like of {0, 1}, shape (n_samples,)
    groups : array-like of int, shape (n_samples,)
        Each row's group.
    n_boot : int, default=1000
    confidence : float, default=0.95
    random_state : int, default=0
        The same value gives the same interval.

    Returns
    -------
    dict
        ``demographic_parity_lower``, ``demographic_parity_upper``, ``equalized_odds_lower``,
        ``equalized_odds_upper`` (None where no resample defines the difference).
    """
    y_true = np.asarray(y_true, dtype=np.int64)
    y_pred = np.asarray(y_pred, dtype=np.int64)
    _, group = np.unique(np.asarray(groups), return_inverse=True)
    n = len(y_true)
    keys = ("demographic_parity_lower", "demographic_parity_upper", "equalized_odds_lower", "equalized_odds_upper")
    if n == 0:
        return dict.fromkeys(keys)
    n_groups = int(group.max()) + 1
    cells = _cells(y_true, y_pred, group.reshape(-1), n_groups).reshape(-1)
    boot = np.random.default_rng(random_state).multinomial(n, cells / n, size=n_boot)
    tail = 100 * (1 - confidence) / 2
    out: dict[str, float | None] = {}
    for name, values in zip(("demographic_parity", "equalized_odds"),
                            _differences(boot.reshape(n_boot, n_groups, 2, 2)), strict=True):
        kept = values[np.isfinite(values)]
        low, high = np.percentile(kept, [tail, 100 - tail]) if len(kept) else (None, None)
        out[f"{name}_lower"] = None if low is None else float(low)
        out[f"{name}_upper"] = None if high is None else float(high)
    return out


def _favourable(dataset: Dataset) -> int:
    """The favourable label for the estimate; only its harm table depends on it, which retraining does not use."""
    from ..verdict import resolve_favourable
    try:
        return resolve_favourable(dataset, None)[0]
    except ConfigError:
        return 1
