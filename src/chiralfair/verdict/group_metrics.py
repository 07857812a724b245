"""The group metrics fairlearn users read, on the held-out rows: selection rate, TPR and FPR per protected group.

:func:`held_out_rows` puts every held-out row through the discrimination check in one batch (n_rows ×
n_combinations model queries) and returns, per row, the true label, the model's label, whether the row is an IDI
(``is_idi``: some counterpart differing only in the protected attributes gets another label) and its protected
values; a user can hand that frame to their own :class:`fairlearn.metrics.MetricFrame`. :func:`group_metrics`
computes each protected group's selection rate (share predicted the positive class), true positive rate and false
positive rate with intervals, beside the group's IDI rate: the figures of fairlearn's ``MetricFrame``, from the same
rate functions called on each group's rows (``MetricFrame`` itself runs only for its bootstrap, ``n_boot > 0``).

Each rate is a proportion of the group's rows (predicted positive of all; of the positives; of the negatives), so
its interval is by default a Wilson interval on those counts (:func:`statsmodels.stats.proportion.proportion_confint`,
as the verdict's). fairlearn's own bootstrap (``MetricFrame(n_boot=..., ci_quantiles=...)``) is there with
``n_boot > 0``; it is not the default because it recomputes the whole ``MetricFrame`` per resample: 26 s for 100
resamples of census's 13,025 test rows and one protected attribute, against well under a second for Wilson, and
its percentile interval of a rate at 0 is [0, 0] where Wilson's says how far above 0 the rate may be. Intervals
are pointwise (no correction for the number of groups).

A group with no positive row has no TPR, one with no negative row no FPR: they are reported as undefined (None),
never as a number.

References
----------
.. [1] Weerts et al. "Fairlearn: Assessing and Improving Fairness of AI Systems." JMLR 24 (2023).
.. [2] Hardt, Price, Srebro. "Equality of opportunity in supervised learning." NeurIPS 2016 (TPR and FPR per
   group: equalized odds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from .._validation import check_float, check_int
from ..datasets.population import population_of
from ..exceptions import ConfigError
from ..oracle import DiscriminationCheck

METRICS = ("selection_rate", "tpr", "fpr")
METRIC_TEXT = {"selection_rate": "selection rate", "tpr": "true positive rate", "fpr": "false positive rate"}
GROUP_METRIC_COLUMNS = ("attribute", "group", "n", "n_positive", "n_negative", "idi_rate",
                        *(f"{m}{part}" for m in METRICS for part in ("", "_lower", "_upper")))
UNDEFINED_TEXT = {"tpr": "undefined: the group has no positive row", "fpr": "undefined: the group has no negative row"}


def held_out_rows(model, dataset, rows) -> pd.DataFrame:
    """Each held-out row's true label, the model's label, ``is_idi`` and protected values, from one checked batch.

    Parameters
    ----------
    model : CountingModel
        The model under test (codes in, {0, 1} positive-class labels out).
    dataset : Dataset
        Its domain sets the protected attributes.
    rows : array-like of int, shape (n_rows,)
        Row numbers of ``dataset`` (the held-out rows).

    Returns
    -------
    pandas.DataFrame, shape (n_rows, 4 + n_protected)
        ``row`` (the row number in ``dataset``), ``y_true`` and ``y_pred`` (1 = the positive class),
        ``is_idi`` (bool), and one column per protected attribute with its value's text (``"missing"`` for a
        value outside the attribute's domain). Costs ``n_rows × n_combinations`` model queries (one batch).
        For a model fed frames, the rows are the people as given (:attr:`Dataset.raw
        <chiralfair.datasets.Dataset.raw>`), not their codes.
    """
    rows = np.asarray(rows, dtype=np.int64)
    X = dataset.X[rows]
    people = population_of(dataset, rows) if model.reads_people else None
    result = DiscriminationCheck(model, dataset.domain).check(X, population=people)
    frame = pd.DataFrame({"row": rows, "y_true": dataset.y[rows].astype(np.int64), "y_pred": result.labels,
                          "is_idi": result.is_idi})
    position = dataset.domain.protected_value_index(X)
    for j, (attribute, labels) in enumerate(zip(dataset.domain.attributes, dataset.domain.protected_value_labels(),
                                                strict=True)):
        text = np.asarray(labels + ["missing"], dtype=object)
        frame[attribute.name] = text[np.where(position[:, j] >= 0, position[:, j], len(labels))]
    return frame


@dataclass(frozen=True)
class GroupMetrics:
    """Selection rate, TPR and FPR per protected group on the held-out rows (fairlearn ``MetricFrame``).

    Attributes
    ----------
    groups : tuple of dict
        One record per protected value and, with several protected attributes, per combination of values; keys
        :data:`GROUP_METRIC_COLUMNS`. ``selection_rate`` is the share of the group's rows predicted the positive
        class; ``tpr`` and ``fpr`` are None (undefined) for a group without positive / negative rows; each
        ``*_lower``/``*_upper`` is an interval bound (None when undefined). ``idi_rate`` is the share of the
        group's held-out rows that are IDIs.
    overall : dict
        The same figures over all held-out rows (``attribute == group == "all"``).
    n_boot : int
        fairlearn bootstrap resamples; 0: Wilson intervals on the counts.
    confidence : float
        Level of each interval (pointwise).
    rows : str
        Which rows were measured (the held-out rows, in words).
    notes : tuple of str
    """

    groups: tuple[dict[str, Any], ...]
    overall: dict[str, Any]
    n_boot: int
    confidence: float
    rows: str = ""
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """Overall first, then one row per group; columns :data:`GROUP_METRIC_COLUMNS`.

        Returns
        -------
        pandas.DataFrame
        """
        frame = pd.DataFrame([self.overall, *self.groups], columns=list(GROUP_METRIC_COLUMNS))
        for col in GROUP_METRIC_COLUMNS[5:]:
            frame[col] = frame[col].astype("float64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready figures (:meth:`from_dict` gives back an equal object).

        Returns
        -------
        dict
        """
        return {"groups": [dict(g) for g in self.groups], "overall": dict(self.overall), "n_boot": self.n_boot,
                "confidence": self.confidence, "rows": self.rows, "notes": list(self.notes), "meta": dict(self.meta)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupMetrics:
        """Inverse of :meth:`to_dict`.

        Parameters
        ----------
        d : dict
            What :meth:`to_dict` returned.

        Returns
        -------
        GroupMetrics
        """
        return cls(groups=tuple(d["groups"]), overall=d["overall"], n_boot=d["n_boot"], confidence=d["confidence"],
                   rows=d.get("rows", ""), notes=tuple(d.get("notes", ())), meta=d.get("meta", {}))

    def lines(self) -> list[str]:
        """A readable table: group, n, selection rate, TPR, FPR (with intervals), IDI rate.

        Returns
        -------
        list of str
        """
        level = (f"{self.confidence:.0%} bootstrap intervals ({self.n_boot} resamples)" if self.n_boot else
                 f"{self.confidence:.0%} Wilson intervals")
        out = [f"Group metrics on {self.rows or 'the held-out rows'} (fairlearn MetricFrame; {level}):"]
        records = [self.overall, *self.groups]
        width = max(len(str(r["group"])) for r in records)
        out.append(f"  {'group':<{width}}  {'n':>7}  {'selection rate':<26}  {'TPR':<26}  {'FPR':<26}  IDIs")
        for r in records:
            cells = [_rate_text(r, m) for m in METRICS]
            out.append(f"  {str(r['group']):<{width}}  {r['n']:>7,}  {cells[0]:<26}  {cells[1]:<26}  {cells[2]:<26}  "
                       f"{r['idi_rate']:.2%}")
        return out


def group_metrics(frame: pd.DataFrame, protected, *, n_boot: int = 0, confidence: float = 0.95,
                  random_state: int = 0, rows: str = "") -> GroupMetrics:
    """Selection rate, TPR and FPR per protected group of ``frame`` (from :func:`held_out_rows`), with fairlearn.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``y_true``, ``y_pred``, ``is_idi`` and one per protected attribute (:func:`held_out_rows`).
    protected : sequence of str
        The protected attributes' columns of ``frame``.
    n_boot : int, default=0
        Bootstrap resamples of fairlearn's ``MetricFrame`` (percentile intervals); 0: Wilson intervals on the
        counts (see the module docstring for why that is the default).
    confidence : float, default=0.95
        Level of each interval.
    random_state : int, default=0
        Seeds the bootstrap.
    rows : str
        Which rows ``frame`` holds, in words.

    Returns
    -------
    GroupMetrics

    Raises
    ------
    ConfigError
        For ``n_boot`` below 0, ``confidence`` outside (0, 1), or no protected attribute.
    """
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    confidence = check_float(confidence, "confidence", minimum=0.0, maximum=1.0, exclusive_minimum=True)
    protected = list(protected)
    if not protected:
        raise ConfigError("group_metrics needs at least one protected attribute: its groups are what it compares")
    quantiles = [(1 - confidence) / 2, (1 + confidence) / 2]
    groups: list[dict[str, Any]] = []
    overall: dict[str, Any] | None = None
    features = [[name] for name in protected]
    if len(protected) > 1:
        features.append(protected)
    for columns in features:
        by_group, overall_now = _metric_frame(frame, columns, n_boot, quantiles, random_state)
        overall = overall if overall is not None else overall_now
        groups.extend(by_group)
    overall = cast(dict[str, Any], overall)  # measured with the first protected attribute
    how = (f"fairlearn bootstrap percentile intervals ({n_boot} resamples)" if n_boot else
           "Wilson intervals on the group's counts")
    notes = [f"selection rate: share of the group's rows the model gives the positive class (label 1); TPR and FPR "
             f"against the true labels; {confidence:.0%} {how}, each figure on its own (no correction for the "
             "number of groups)"]
    undefined = [f"{g['group']} ({'TPR' if g['n_positive'] == 0 else 'FPR'})" for g in groups
                 if g["n_positive"] == 0 or g["n_negative"] == 0]
    if undefined:
        notes.append(f"undefined for want of positive or negative rows: {', '.join(undefined)}")
    return GroupMetrics(groups=tuple(groups), overall=overall, n_boot=n_boot, confidence=confidence, rows=rows,
                        notes=tuple(notes), meta={"fairlearn_version": _fairlearn_version(),
                                                  "random_state": random_state})


def _metric_frame(frame, columns, n_boot, quantiles, random_state):
    """Records of one ``MetricFrame`` over ``columns`` (one attribute, or the intersection of several)."""
    import warnings

    metrics = {"selection_rate": _selection_rate, "tpr": _true_positive_rate, "fpr": _false_positive_rate}
    if n_boot or not len(frame):
        from fairlearn.metrics import MetricFrame

        sensitive = frame[columns[0]] if len(columns) == 1 else frame[columns]
        boot = {"n_boot": n_boot, "ci_quantiles": quantiles, "random_state": random_state} if n_boot else {}
        with warnings.catch_warnings():  # an undefined rate warns in sklearn; it is reported as undefined instead
            warnings.simplefilter("ignore")
            mf = MetricFrame(metrics=metrics, y_true=frame["y_true"].to_numpy(), y_pred=frame["y_pred"].to_numpy(),
                             sensitive_features=sensitive, **boot)
        by_group, overall_rates = mf.by_group, mf.overall
    else:
        by_group, overall_rates = _rates(frame, columns, metrics)
    counts = _counts(frame, columns)
    if n_boot:
        lower, upper = mf.by_group_ci
    else:
        lower, upper = _wilson_bounds(counts, by_group.index, quantiles[1] - quantiles[0])
    attribute = ",".join(columns)
    records = []
    for key in by_group.index:
        key_tuple = key if isinstance(key, tuple) else (key,)
        if key_tuple not in counts:  # a combination of values no held-out row holds
            continue
        text = ", ".join(f"{c}={v}" for c, v in zip(columns, key_tuple, strict=True))
        n, n_pos, idi = counts[key_tuple][:3]
        record = {"attribute": attribute, "group": text, "n": n, "n_positive": n_pos, "n_negative": n - n_pos,
                  "idi_rate": idi}
        for m in METRICS:
            record.update(_figure(m, by_group.loc[key, m], None if lower is None else lower.loc[key, m],
                                  None if upper is None else upper.loc[key, m], n_pos, n - n_pos))
        records.append(record)
    records.sort(key=lambda r: r["group"])
    n_all, n_pos_all = len(frame), int(frame["y_true"].sum())
    overall = {"attribute": "all", "group": "all", "n": n_all, "n_positive": n_pos_all,
               "n_negative": n_all - n_pos_all, "idi_rate": float(frame["is_idi"].mean()) if n_all else 0.0}
    if n_boot:
        ov_lower, ov_upper = mf.overall_ci
    else:
        level = quantiles[1] - quantiles[0]
        ov_lower, ov_upper = (b.iloc[0] for b in _wilson_bounds({(): _count_row(frame)}, [()], level))
    for m in METRICS:
        overall.update(_figure(m, overall_rates[m], None if ov_lower is None else ov_lower[m],
                               None if ov_upper is None else ov_upper[m], n_pos_all, n_all - n_pos_all))
    return records, overall


def _rates(frame, columns, metrics) -> tuple[pd.DataFrame, dict[str, float]]:
    """Each observed group's rates (``metrics`` on its rows) and all rows' rates: ``MetricFrame``'s without a bootstrap.

    The same figures as ``MetricFrame(metrics, y_true, y_pred, sensitive_features)``'s ``by_group`` (for the
    groups some row holds; the records keep no other) and ``overall``: each function is called on the group's rows
    as MetricFrame calls it, without MetricFrame's per-row conversions (most of the group metrics' time on census's
    13,025 held-out rows) and without importing fairlearn.
    """
    y_true, y_pred = frame["y_true"].to_numpy(), frame["y_pred"].to_numpy()
    keys, values = [], []
    for key, rows in frame.groupby(columns, sort=False, observed=True).indices.items():
        keys.append(key if isinstance(key, tuple) else (key,))
        values.append([f(y_true[rows], y_pred[rows]) for f in metrics.values()])
    index = (pd.MultiIndex.from_tuples(keys, names=columns) if len(columns) > 1
             else pd.Index([k[0] for k in keys], name=columns[0]))
    by_group = pd.DataFrame(values, index=index, columns=list(metrics), dtype=float)
    return by_group, {m: f(y_true, y_pred) for m, f in metrics.items()}


# The three rates for labels in {0, 1} (1 the positive class), as fairlearn's selection_rate, true_positive_rate and
# false_positive_rate compute them (a count over a count, in float64), without the checks and the confusion matrix
# they build at every call: on census's held-out rows those took most of the group metrics' time. An undefined rate
# is NaN here; _figure reports it as None either way.
def _selection_rate(y_true, y_pred) -> float:
    y_pred = np.asarray(y_pred)
    return np.count_nonzero(y_pred == 1) / len(y_pred)


def _true_positive_rate(y_true, y_pred) -> float:
    return _rate_among(np.asarray(y_true) == 1, np.asarray(y_pred))


def _false_positive_rate(y_true, y_pred) -> float:
    return _rate_among(np.asarray(y_true) == 0, np.asarray(y_pred))


def _rate_among(rows: np.ndarray, y_pred: np.ndarray) -> float:
    """The share of ``rows`` predicted 1 (NaN without rows)."""
    n = np.count_nonzero(rows)
    return np.count_nonzero(rows & (y_pred == 1)) / n if n else math.nan


def _counts(frame, columns) -> dict[tuple, tuple]:
    """:func:`_count_row` of every observed group, keyed by its values' tuple."""
    return {(key if isinstance(key, tuple) else (key,)): _count_row(part)
            for key, part in frame.groupby(columns, sort=False, observed=True)}


def _count_row(part) -> tuple:
    """(n, n_positive, idi_rate, n_predicted_positive, true positives, false positives) of some rows."""
    y, pred = part["y_true"].to_numpy(), part["y_pred"].to_numpy()
    return (int(len(y)), int(y.sum()), float(part["is_idi"].mean()) if len(y) else 0.0, int(pred.sum()),
            int((pred & y).sum()), int((pred & (1 - y)).sum()))


def _wilson_bounds(counts, index, level: float):
    """Lower and upper Wilson bounds of each metric, frames indexed like ``index`` with columns :data:`METRICS`."""
    from .result import proportion_confint

    keys = [k if isinstance(k, tuple) else (k,) for k in index]
    c = np.array([counts.get(k, (0,) * 6) for k in keys], dtype=float).reshape(len(keys), 6)
    n, n_pos = c[:, 0], c[:, 1]
    events = {"selection_rate": (c[:, 3], n), "tpr": (c[:, 4], n_pos), "fpr": (c[:, 5], n - n_pos)}
    lower, upper = {}, {}
    for m, (k, total) in events.items():
        safe = np.maximum(total, 1)  # undefined rates (no rows) are set to None by _figure
        lo, hi = proportion_confint(k, safe, alpha=1 - level, method="wilson")
        lower[m], upper[m] = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return pd.DataFrame(lower, index=index), pd.DataFrame(upper, index=index)


def _figure(metric: str, value, lower, upper, n_positive: int, n_negative: int) -> dict[str, Any]:
    """A metric's value and bounds, None where it is undefined (TPR without positives, FPR without negatives)."""
    undefined = (metric == "tpr" and n_positive == 0) or (metric == "fpr" and n_negative == 0)
    if undefined:
        return {metric: None, f"{metric}_lower": None, f"{metric}_upper": None}
    return {metric: _number(value), f"{metric}_lower": _number(lower), f"{metric}_upper": _number(upper)}


def _number(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _rate_text(record: dict[str, Any], metric: str) -> str:
    value = record.get(metric)
    if value is None:
        return "undefined"
    lo, hi = record.get(f"{metric}_lower"), record.get(f"{metric}_upper")
    return f"{value:.2%}" if lo is None else f"{value:.2%} [{lo:.2%}, {hi:.2%}]"


def _fairlearn_version() -> str:
    from importlib.metadata import version  # without importing fairlearn, which the default figures do not need

    return version("fairlearn")

