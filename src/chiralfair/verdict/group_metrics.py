"""The group metrics fairlearn users read, on the held-out rows: selection rate, TPR and FPR per protected group.

:func:`held_out_rows` puts every held-out row through the discrimination check in one batch (n_rows ×
n_combinations model queries) and returns, per row, the true label, the model's label, whether the row is an IDI
(``is_idi``: some counterpart differing only in the protected attributes, and that could exist, gets another
label), whether the verdict leaves the person out (``left_out``: a missing protected value, or no counterpart that
could exist; never ``is_idi``) and its protected values; a user can hand that frame to their own
:class:`fairlearn.metrics.MetricFrame`. :func:`group_metrics` computes each protected group's selection rate (share
predicted the positive class), true positive rate and false positive rate with intervals, over every row of the
group (the model's decisions on all the held-out people), beside the group's IDI rate over the people the verdict
counts (so the "all" row's IDI rate is the verdict's share over the same rows): the figures of fairlearn's
``MetricFrame``, from the same rate functions called on each group's rows (``MetricFrame`` itself runs only for its
bootstrap, ``n_boot > 0``).

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
from ..exceptions import ConfigError

METRICS = ("selection_rate", "tpr", "fpr")
METRIC_TEXT = {"selection_rate": "selection rate", "tpr": "true positive rate", "fpr": "false positive rate"}
GROUP_METRIC_COLUMNS = ("attribute", "group", "n", "n_positive", "n_negative", "n_left_out", "n_idis", "idi_rate",
                        *(f"{m}{part}" for m in METRICS for part in ("", "_lower", "_upper")))
LEFT_OUT_NOTE = ("IDIs: share of the group's people the verdict counts that are IDIs (a counterpart that could exist "
                 "gets another label); a person whose protected value is missing, or none of whose counterparts could "
                 "exist under the constraints, is left out of it as the verdict leaves them out")
UNDEFINED_TEXT = {"tpr": "undefined: the group has no positive row", "fpr": "undefined: the group has no negative row"}


def held_out_rows(model, dataset, rows, *, gamma: float | None = None, plausible_only: bool = False) -> pd.DataFrame:
    """Each held-out person's labels, ``is_idi``, whether the verdict leaves them out, and protected values.

    One checked batch gives the true label, the model's label, ``is_idi``, ``left_out`` and the protected values.

    ``is_idi`` and ``left_out`` follow the verdict's rule, person by person
    (:func:`~chiralfair.verdict.estimation.people_outcomes`): a person whose protected value is missing, or none of
    whose counterparts could exist under the domain's constraints, is ``left_out`` (in no share and no group, as
    the verdict leaves them out: :func:`~chiralfair.verdict.result.left_out_mask`) and their ``is_idi`` is False.
    So ``is_idi.sum()`` is the verdict's count of people affected, and the verdict's share is
    ``frame.loc[~frame.left_out, "is_idi"].mean()``.

    Parameters
    ----------
    model : CountingModel
        The model under test (codes in, {0, 1} positive-class labels out).
    dataset : Dataset
        Its domain sets the protected attributes and the constraints.
    rows : array-like of int, shape (n_rows,)
        Row numbers of ``dataset`` (the held-out rows).
    gamma : float, optional
        The verdict's ``gamma`` (a label change counts only with a probability gap of at least ``gamma``).
    plausible_only : bool, default=False
        The verdict's ``plausible_only`` (only a plausible counterpart makes a person an IDI).

    Returns
    -------
    pandas.DataFrame, shape (n_rows, 6 + n_protected)
        ``row`` (the row number in ``dataset``), ``y_true`` and ``y_pred`` (1 = the positive class),
        ``is_idi`` (bool: counted, and some counterpart that could exist gets another label), ``left_out``
        (bool), ``why_left_out`` (None for the people counted, else the reason in words), and one column per
        protected attribute with its value's text (``"missing"`` for a value outside the attribute's domain).
        Costs ``n_rows × n_combinations`` model queries (one batch). For a model fed frames, the rows are the
        people as given (:attr:`Dataset.raw <chiralfair.datasets.Dataset.raw>`), not their codes.
    """
    from .estimation import people_outcomes

    rows = np.asarray(rows, dtype=np.int64)
    people = people_outcomes(model, dataset, rows, gamma=gamma, plausible_only=plausible_only)
    frame = pd.DataFrame({"row": rows, "y_true": dataset.y[rows].astype(np.int64), "y_pred": people.labels,
                          "is_idi": people.affected, "left_out": people.left_out,
                          "why_left_out": _why_left_out(dataset.domain, people)})
    position = dataset.domain.protected_value_index(dataset.X[rows])
    for j, (attribute, labels) in enumerate(zip(dataset.domain.attributes, dataset.domain.protected_value_labels(),
                                                strict=True)):
        text = np.asarray(labels + ["missing"], dtype=object)
        frame[attribute.name] = text[np.where(position[:, j] >= 0, position[:, j], len(labels))]
    return frame


def _why_left_out(domain, people) -> np.ndarray:
    """Each person's reason for being left out, in words (None for the people counted), shape (n,)."""
    why = np.full(len(people.left_out), None, dtype=object)
    names = np.asarray(domain.protected_names, dtype=object)
    unplaced = people.unplaced.any(axis=1)
    why[people.left_out & ~unplaced] = "every counterpart breaks a constraint of the domain"
    if unplaced.any():
        patterns, inverse = np.unique(people.unplaced[unplaced], axis=0, return_inverse=True)
        texts = np.asarray([f"no group: {', '.join(names[p])} missing or not among the attribute's values"
                            for p in patterns], dtype=object)
        why[unplaced] = texts[np.asarray(inverse).reshape(-1)]
    return why


@dataclass(frozen=True)
class GroupMetrics:
    """Selection rate, TPR and FPR per protected group on the held-out rows (fairlearn ``MetricFrame``).

    Attributes
    ----------
    groups : tuple of dict
        One record per protected value and, with several protected attributes, per combination of values; keys
        :data:`GROUP_METRIC_COLUMNS`. ``selection_rate`` is the share of the group's rows predicted the positive
        class; ``tpr`` and ``fpr`` are None (undefined) for a group without positive / negative rows; each
        ``*_lower``/``*_upper`` is an interval bound (None when undefined); these three are over every held-out
        row of the group. ``n_left_out`` is how many of the group's rows the verdict leaves out (a missing
        protected value, or no counterpart that could exist: :func:`~chiralfair.verdict.result.left_out_mask`),
        ``n_idis`` how many of the others are IDIs, and ``idi_rate`` is ``n_idis`` over the others, the verdict's
        share for the group (None when the verdict leaves out every row of the group, as for ``sex=missing``).
    overall : dict
        The same figures over all held-out rows (``attribute == group == "all"``): its ``idi_rate`` is the
        verdict's share when the verdict checked every held-out row.
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
        for col in GROUP_METRIC_COLUMNS[GROUP_METRIC_COLUMNS.index("idi_rate"):]:
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
                       f"{idi_text(r)}")
        return out


def group_metrics(frame: pd.DataFrame, protected, *, n_boot: int = 0, confidence: float = 0.95,
                  random_state: int = 0, rows: str = "") -> GroupMetrics:
    """Selection rate, TPR and FPR per protected group of ``frame`` (from :func:`held_out_rows`), with fairlearn.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``y_true``, ``y_pred``, ``is_idi``, ``left_out`` and one per protected attribute
        (:func:`held_out_rows`). Selection rate, TPR and FPR are over every row; the IDI rate over the rows not
        ``left_out``, as the verdict counts them.
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
        For ``n_boot`` below 0, ``confidence`` outside (0, 1), no protected attribute, or a ``frame`` without the
        ``left_out`` column (who the verdict leaves out cannot be told from the other columns).
    """
    n_boot = check_int(n_boot, "n_boot", minimum=0)
    confidence = check_float(confidence, "confidence", minimum=0.0, maximum=1.0, exclusive_minimum=True)
    protected = list(protected)
    if not protected:
        raise ConfigError("group_metrics needs at least one protected attribute: its groups are what it compares")
    missing = [c for c in ("y_true", "y_pred", "is_idi", "left_out") if c not in frame.columns]
    if missing:
        raise ConfigError(f"group_metrics' frame has no column {', '.join(map(repr, missing))}: pass the frame "
                          "held_out_rows() returns (left_out: whom the verdict leaves out of the IDI rate)")
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
             "number of groups)", LEFT_OUT_NOTE]
    n_left_out = int(overall["n_left_out"])
    if n_left_out:
        by_group = [f"{g['group']} {g['n_left_out']:,}" for g in groups
                    if g["n_left_out"] and g["attribute"] == protected[0]]
        notes.append(f"{n_left_out:,} of the {overall['n']:,} rows are left out of the IDI rate, as the verdict "
                     f"leaves them out ({', '.join(by_group)}); they count in the selection rate, TPR and FPR")
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
                  "n_left_out": counts[key_tuple][6], "n_idis": counts[key_tuple][7], "idi_rate": idi}
        for m in METRICS:
            record.update(_figure(m, by_group.loc[key, m], None if lower is None else lower.loc[key, m],
                                  None if upper is None else upper.loc[key, m], n_pos, n - n_pos))
        records.append(record)
    records.sort(key=lambda r: r["group"])
    n_all, n_pos_all = len(frame), int(frame["y_true"].sum())
    whole = _count_row(frame)
    overall = {"attribute": "all", "group": "all", "n": n_all, "n_positive": n_pos_all,
               "n_negative": n_all - n_pos_all, "n_left_out": whole[6], "n_idis": whole[7], "idi_rate": whole[2]}
    if n_boot:
        ov_lower, ov_upper = mf.overall_ci
    else:
        level = quantiles[1] - quantiles[0]
        ov_lower, ov_upper = (b.iloc[0] for b in _wilson_bounds({(): whole}, [()], level))
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
    """(n, n_positive, idi_rate, n_predicted_positive, true positives, false positives, n_left_out, n_idis).

    The IDI rate is over the rows the verdict counts (not ``left_out``), None when it leaves out every row.
    """
    y, pred = part["y_true"].to_numpy(), part["y_pred"].to_numpy()
    left_out = part["left_out"].to_numpy(dtype=bool)
    n_idis = int((part["is_idi"].to_numpy(dtype=bool) & ~left_out).sum())
    n_counted = int(len(y) - left_out.sum())
    return (int(len(y)), int(y.sum()), n_idis / n_counted if n_counted else None, int(pred.sum()),
            int((pred & y).sum()), int((pred & (1 - y)).sum()), int(left_out.sum()), n_idis)


def _wilson_bounds(counts, index, level: float):
    """Lower and upper Wilson bounds of each metric, frames indexed like ``index`` with columns :data:`METRICS`."""
    from .result import proportion_confint

    keys = [k if isinstance(k, tuple) else (k,) for k in index]
    # n, n_positive, predicted positive, true positives, false positives (_count_row's 0, 1, 3, 4, 5)
    c = np.array([[row[i] for i in (0, 1, 3, 4, 5)] for row in (counts.get(k, (0,) * 8) for k in keys)],
                 dtype=float).reshape(len(keys), 5)
    n, n_pos = c[:, 0], c[:, 1]
    events = {"selection_rate": (c[:, 2], n), "tpr": (c[:, 3], n_pos), "fpr": (c[:, 4], n - n_pos)}
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


def idi_text(record: dict[str, Any]) -> str:
    """A group's IDI figure: ``"6.98% (203 of 2,908; 92 left out)"``, or ``"left out (92)"`` when all are.

    Parameters
    ----------
    record : dict
        A :attr:`GroupMetrics.groups` record or :attr:`GroupMetrics.overall` (a stored one without ``n_idis``
        shows its rate alone).

    Returns
    -------
    str
    """
    rate, n_left_out = record.get("idi_rate"), int(record.get("n_left_out") or 0)
    if rate is None:
        return f"left out ({n_left_out:,})"
    if record.get("n_idis") is None:
        return f"{rate:.2%}"
    counted = f"{record['n_idis']:,} of {record['n'] - n_left_out:,}"
    return f"{rate:.2%} ({counted}{f'; {n_left_out:,} left out' if n_left_out else ''})"


def _rate_text(record: dict[str, Any], metric: str) -> str:
    value = record.get(metric)
    if value is None:
        return "undefined"
    lo, hi = record.get(f"{metric}_lower"), record.get(f"{metric}_upper")
    return f"{value:.2%}" if lo is None else f"{value:.2%} [{lo:.2%}, {hi:.2%}]"


def _fairlearn_version() -> str:
    from importlib.metadata import version  # without importing fairlearn, which the default figures do not need

    return version("fairlearn")

