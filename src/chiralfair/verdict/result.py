"""The :class:`Verdict` of :func:`chiralfair.verdict.estimate`: how many are treated unfairly, whom, how badly.

A search result (:class:`~chiralfair.results.SearchResult`) says how well a generator did within its budget; a
verdict speaks about a population: the share of its individuals that some counterpart (differing only in the
protected attributes) would see get another label, with a confidence interval, per protected group, with the
direction of the harm, the probability gap and a short description of the affected individuals.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

GROUP_COLUMNS = ("attribute", "group", "n", "n_affected", "share_affected", "lower", "upper", "n_harmed",
                 "share_harmed", "share_harmed_lower", "share_harmed_upper", "harmed_share", "harmed_lower",
                 "harmed_upper")

# The fields a verdict decides from its counts (never passed in): see Verdict.
DECIDED = ("people_lower", "people_upper", "people_method", "people_confidence", "worst_group", "too_small")

POPULATION_TEXT = {"rows": "the dataset's rows", "test": "the test split's rows",
                   "domain": "uniform draws from the input domain"}

STOPPED_TEXT = {"margin": "the interval reached the margin", "budget": "the query budget was spent",
                "exact": "every individual of the population was checked",
                "exhausted": "every row of the population was sampled",
                "threshold": "the interval lay wholly on one side of the gate's threshold"}


@dataclass(frozen=True)
class Verdict:
    """Share of a population that is discriminated, with intervals, harm table, probability gap and rules.

    An individual is *affected* when some counterpart (the same individual with other protected-attribute
    values, every combination of the protected domains, coupled columns changed with them; one that breaks a
    constraint of the domain cannot exist and does not count) gets another label, and, when ``gamma`` is set,
    the gap between their positive-class probabilities is at least ``gamma``. With ``counterparts ==
    "plausible"`` only plausible counterparts count (architecture: counterparts that could exist). An affected
    individual is *harmed* when it gets the unfavourable label (its counterpart then gets the favourable one).

    Attributes
    ----------
    population : {"rows", "test", "domain"}
        Where the individuals come from: the dataset's rows, its test split, or uniform draws from the domain.
    population_size : int or None
        Number of individuals in the population (rows; or points of the domain, with the protected attributes
        ranging over their value sets).
    protected : tuple of str
        Protected attributes under test.
    favourable : int
        The favourable label, 0 or 1.
    n_individuals : int
        Individuals checked (sampled, or all of them when ``exact``).
    n_affected : int
        Of those, the affected ones.
    n_harmed : int
        Of the affected, those that get the unfavourable label.
    share, lower, upper : float
        Estimated share affected and its confidence interval, in [0, 1]; ``lower == upper == share`` when
        ``exact``.
    confidence : float
        Confidence level of the overall interval, e.g. 0.95.
    method : {"wilson", "clopper-pearson"}
        Interval method (:func:`statsmodels.stats.proportion.proportion_confint`).
    margin : float
        Target half-width of the overall interval.
    exact : bool
        Whether every individual of the population was checked (the shares are exact, intervals of width 0).
    stopped_by : {"margin", "budget", "exact", "exhausted", "threshold"}
        Why checking stopped (``"threshold"``: a sequential decision against a gate's threshold, see
        :func:`chiralfair.verdict.estimate`).
    gamma : float or None
        Threshold on the probability gap for a pair to count as discriminatory (None: any label change).
    groups : tuple of dict
        One record per protected value and, for several protected attributes, per combination of values:
        keys as in :data:`GROUP_COLUMNS`. ``share_affected`` is the share affected among the group's
        individuals; ``share_harmed`` the share of the group's individuals that get the unfavourable label while a
        counterpart gets the favourable one (who is harmed); ``harmed_share`` that share among the group's
        affected individuals (None when none is affected).
    group_confidence : float
        Confidence level of each group interval: ``1 - (1 - confidence) / n_intervals`` (Bonferroni over the
        ``3 * len(groups)`` group intervals), so that all hold at once with probability at least ``confidence``.
    gap : dict or None
        The probability gap ``max over counterparts x' of |P(x) - P(x')|`` (P = positive-class probability):
        ``quantiles`` and ``quantiles_affected`` (str quantile level -> gap), and ``histogram`` with ``edges``
        (21 edges over [0, 1]), ``counts`` and ``counts_affected``. None for a model without probabilities.
    rules : tuple of dict
        What the affected individuals share: leaves of a depth-3 decision tree fitted on the non-protected
        features (affected vs not), those richer in affected individuals than the population, most affected
        first. Keys ``rule`` (text with decoded labels), ``n``, ``n_affected``, ``affected_share``,
        ``coverage`` (share of all affected individuals the rule holds).
    n_queries : int
        Rows sent to the model.
    seconds : float
        Wall seconds.
    notes : tuple of str
        How the figures must be read (sampling scheme, finite-population correction, correction for many
        groups, an unreached margin).
    meta : dict
        Package and statsmodels versions, parameters, dataset and model names.
    counterparts : {"possible", "plausible"}
        Which counterparts the headline figures (share, groups, gap, rules) count: every possible one, or only
        the plausible ones (``estimate(plausible_only=True)``).
    plausibility : dict or None
        Both shares, whatever the headline: ``n_affected_possible``, ``share_possible``, ``lower_possible``,
        ``upper_possible`` and the same with ``_plausible`` (affected through a plausible counterpart), with
        ``n_counterparts`` (possible counterparts checked), ``n_implausible_counterparts``,
        ``n_with_implausible_counterpart`` (individuals with at least one), ``n_without_plausible_counterpart``
        (individuals with none that is plausible) and the rule's ``min_lift`` and ``min_expected``
        (:mod:`chiralfair.domain.plausibility`). None when the domain has no support.
    couplings, constraints : tuple of str
        The domain's couplings and constraints, as text (:meth:`Domain.describe_couplings`,
        :meth:`Domain.describe_constraints`).
    n_left_out : int
        Individuals checked but left out of every share: each counterpart of theirs breaks a constraint, so no
        decision could treat them differently (the first note says so). ``n_individuals`` does not count them
        (:func:`left_out_mask` is the rule).
    unplaced : dict of str to int
        Individuals checked but left out of every share and every group because their own value of a protected
        attribute is not among its values (missing, or a value the data do not hold), by attribute: they belong to
        no group, and no combination is a counterpart of someone of a known value (:func:`left_out_mask`).
        ``n_individuals`` and ``n_left_out`` do not count them; :attr:`n_unplaced` does.
    n_unplaced : int
        How many individuals :attr:`unplaced` counts (one with several such attributes counts once).

    The figures below are decided once, from the counts above, when the verdict is made (never passed in; a
    verdict read back from JSON decides them again, equally). Every door (the console, the report, the gate, the
    model card and BOM, MLflow) reads them instead of computing its own (architecture: the population and the
    domain).

    people_lower, people_upper : float or None
        The share's interval for the people the model will meet, the individuals checked read as a sample of them
        (:func:`people_interval`): a sampled verdict's own interval, or, when every row was checked (the share is
        then exact for these rows, ``lower == upper == share``), the Clopper-Pearson interval of the count. None
        for uniform draws from the domain, which are no sample of people.
    people_method : str or None
        The method of that interval: ``"clopper-pearson"`` for an exact verdict, else :attr:`method`.
    people_confidence : float or None
        Its level: :attr:`confidence`, or the last look's level of a sequential decision.
    worst_group : str or None
        The most harmed group (:func:`decide_groups`): the largest share harmed among the groups that are not too
        small to tell (ties: the larger group); None when none of them is harmed.
    too_small : tuple of str
        The groups too small to tell (:data:`MIN_GROUP_SIZE`, :data:`MAX_GROUP_HALF_WIDTH`), never the worst group.
        Each record of :attr:`groups` also carries its decision: ``people_harmed_lower`` and
        ``people_harmed_upper`` (the Clopper-Pearson interval of its share harmed for the people of that group, at
        ``people_confidence``; None for the domain) and ``too_small``.
    """

    population: str
    population_size: int | None
    protected: tuple[str, ...]
    favourable: int
    n_individuals: int
    n_affected: int
    n_harmed: int
    share: float
    lower: float
    upper: float
    confidence: float
    method: str
    margin: float
    exact: bool
    stopped_by: str
    gamma: float | None
    groups: tuple[dict[str, Any], ...]
    group_confidence: float
    gap: dict[str, Any] | None
    rules: tuple[dict[str, Any], ...]
    n_queries: int
    seconds: float
    notes: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    counterparts: str = "possible"
    plausibility: dict[str, Any] | None = None
    couplings: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    n_left_out: int = 0
    unplaced: dict[str, int] = field(default_factory=dict)
    n_unplaced: int = 0
    people_lower: float | None = field(init=False, default=None)
    people_upper: float | None = field(init=False, default=None)
    people_method: str | None = field(init=False, default=None)
    people_confidence: float | None = field(init=False, default=None)
    worst_group: str | None = field(init=False, default=None)
    too_small: tuple[str, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        decided = people_interval(self)
        for name, value in zip(("people_lower", "people_upper", "people_method", "people_confidence"), decided,
                               strict=True):
            object.__setattr__(self, name, value)
        groups, worst, small = decide_groups(self.groups, people_confidence=decided[3], exact=self.exact)
        object.__setattr__(self, "groups", groups)
        object.__setattr__(self, "worst_group", worst)
        object.__setattr__(self, "too_small", small)

    def group(self, name: str) -> dict[str, Any]:
        """The record of the group named ``name`` (e.g. ``"race=Black"``).

        Parameters
        ----------
        name : str

        Returns
        -------
        dict

        Raises
        ------
        ConfigError
            For a name that is no group of the verdict (the message lists them).
        """
        for g in self.groups:
            if g["group"] == name:
                return g
        from ..exceptions import ConfigError

        raise ConfigError(f"no group {name!r} in the verdict; its groups: {', '.join(g['group'] for g in self.groups)}")

    def worst(self) -> dict[str, Any] | None:
        """The record of :attr:`worst_group`, or None.

        Returns
        -------
        dict or None
        """
        return None if self.worst_group is None else self.group(self.worst_group)

    @property
    def half_width(self) -> float:
        """Largest distance from the estimate to an end of its interval (0 when exact)."""
        return max(self.share - self.lower, self.upper - self.share)

    @property
    def population_text(self) -> str:
        """Which individuals were checked, in words.

        The rows the pipeline names in ``meta["population_rows"]`` (e.g. "a held-out split of the given data
        (13,025 rows, ...) that may include rows the model was fitted on"), else the population's generic name.
        """
        return self.meta.get("population_rows") or POPULATION_TEXT.get(self.population, self.population)

    def to_frame(self) -> pd.DataFrame:
        """The share affected overall (first row, ``attribute == "all"``) and per group, with the harm table.

        The overall row's ``harmed_share`` is a plain ratio (no interval).

        Returns
        -------
        pandas.DataFrame, shape (1 + len(groups), 15)
            Columns :data:`GROUP_COLUMNS` and ``confidence`` (of each row's intervals).
        """
        overall = {"attribute": "all", "group": "all", "n": self.n_individuals, "n_affected": self.n_affected,
                   "share_affected": self.share, "lower": self.lower, "upper": self.upper,
                   "n_harmed": self.n_harmed, "share_harmed": self.n_harmed / self.n_individuals
                   if self.n_individuals else None, "share_harmed_lower": None, "share_harmed_upper": None,
                   "harmed_share": self.n_harmed / self.n_affected if self.n_affected else None,
                   "harmed_lower": None, "harmed_upper": None, "confidence": self.confidence}
        rows = [overall] + [{**g, "confidence": self.group_confidence} for g in self.groups]
        frame = pd.DataFrame(rows, columns=[*GROUP_COLUMNS, "confidence"])
        for col in ("share_affected", "lower", "upper", "share_harmed", "share_harmed_lower", "share_harmed_upper",
                    "harmed_share", "harmed_lower", "harmed_upper"):
            frame[col] = frame[col].astype("float64")
        frame["n_harmed"] = frame["n_harmed"].astype("Int64")
        return frame

    def to_json(self) -> str:
        """Serialize everything; :meth:`from_json` gives back an equal verdict.

        Returns
        -------
        str
        """
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["protected"] = list(self.protected)
        d["groups"] = list(self.groups)
        d["rules"] = list(self.rules)
        d["notes"] = list(self.notes)
        d["couplings"] = list(self.couplings)
        d["constraints"] = list(self.constraints)
        d["too_small"] = list(self.too_small)
        d["half_width"] = self.half_width
        return json.dumps(d)

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        """Inverse of :meth:`to_json`.

        Parameters
        ----------
        text : str
            What :meth:`to_json` returned.

        Returns
        -------
        Verdict
        """
        d = json.loads(text)
        for decided in ("half_width", *DECIDED):  # decided again from the counts
            d.pop(decided, None)
        for key in ("protected", "groups", "rules", "notes", "couplings", "constraints"):
            if key in d:
                d[key] = tuple(d[key])
        return cls(**d)

    def summary(self) -> str:
        """The verdict as a few readable lines: share affected, harm table, probability gap, rules, notes.

        Returns
        -------
        str
        """
        pa = ", ".join(self.protected)
        which = "a plausible counterpart" if self.counterparts == "plausible" else "a counterpart"
        lines = [f"Share of individuals affected ({which} differing only in {pa} gets another label"
                 + (f" with a probability gap >= {self.gamma:g}" if self.gamma is not None else "") + "): "
                 + _share_text(self.share, self.lower, self.upper, self.exact)]
        people = people_line(self) if self.exact else None
        if people:
            lines.append(f"  {people}")
        other = plausibility_line(self.plausibility, self.counterparts, self.exact)
        if other:
            lines.append(f"  {other}")
        if one_label := one_label_line(self.meta):
            lines.append(f"  {one_label}")
        left_out = left_out_line(self.n_left_out, self.constraints, self.meta.get("left_out"), self.population,
                                 unplaced=self.unplaced)
        if left_out:
            lines.append(f"  left out: {left_out}")
        if self.n_affected == 0 and (proxies := self.meta.get("proxies")):
            from .proxies import blind_spot_line

            lines.append(f"  {blind_spot_line(proxies)}")
        lines += [f"  coupled: {c}" for c in self.couplings]
        how = ("exact: every individual checked" if self.exact
               else interval_name(self) + ("" if self.meta.get("sequential") else " interval"))
        if self.population_size is None:
            size = ""
        elif self.population == "domain" and not self.exact:
            size = f" (domain of {self.population_size:,})"
        else:
            size = f" of {self.population_size:,}"
        lines.append(f"  {how}; population: {self.population_text}; "
                     f"{self.n_individuals:,} individuals{size}, {verdict_queries_text(self)}, {self.seconds:.2f} s; "
                     f"stopped: {STOPPED_TEXT.get(self.stopped_by, self.stopped_by)}")
        lines += self._group_lines()
        lines += self._gap_lines()
        lines += self._rule_lines()
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def label_text(self, label: int) -> str:
        """A label named as the data name it: ``"label 1 (>50K)"``, ``"label 0 (not >50K)"``.

        Parameters
        ----------
        label : {0, 1}

        Returns
        -------
        str
            ``"label 0"`` or ``"label 1"`` alone when the positive class is ``"1"`` or unknown.
        """
        return label_text(label, self.meta.get("positive_class"), self.meta.get("negative_class"),
                          column=self.meta.get("label_column"))

    def _group_lines(self) -> list[str]:
        if not self.groups:
            return []
        level = "exact" if self.exact else (f"{self.group_confidence:.2%} {_method_text(self.method)} intervals "
                                            f"(Bonferroni: {self.confidence:.0%} for all "
                                            f"{3 * len(self.groups)} at once)")
        lines = [f"Who is harmed (favourable {self.label_text(self.favourable)}): per group, the share that gets the "
                 f"unfavourable label while a counterpart gets the favourable one; {level}:"]
        width = max(len(g["group"]) for g in self.groups)
        people = self.people_confidence is not None
        head = (f"harmed, for the group's people ({self.people_confidence:.0%} Clopper-Pearson)" if people else
                "too small to tell")
        lines.append(f"  {'group':<{width}}  {'n':>8}  {'harmed':<28}  {'affected':<28}  {head}")
        for g in self.groups:
            harmed = _share_text(g.get("share_harmed"), g.get("share_harmed_lower"), g.get("share_harmed_upper"),
                                 self.exact) + f" ({g['n_harmed']:,})"
            affected = _share_text(g["share_affected"], g["lower"], g["upper"], self.exact)
            sample = (f"[{g['people_harmed_lower']:.2%}, {g['people_harmed_upper']:.2%}]" if people and g["n"]
                      else "-") + (" too small to tell" if g["too_small"] else "")
            lines.append(f"  {g['group']:<{width}}  {g['n']:>8,}  {harmed:<28}  {affected:<28}  {sample}")
        if (worst := most_harmed_line(self)) is not None:
            lines.append(f"  {worst}")
        if small := too_small_text(self):
            lines.append(f"  too small to tell, not ranked: {small}")
        return lines

    def _gap_lines(self) -> list[str]:
        if self.gap is None:
            return ["How badly: the model gives no probabilities, so no probability gap."]
        q = self.gap["quantiles"]
        qa = self.gap["quantiles_affected"]
        text = ", ".join(f"{_quantile_name(k)} {v:.3f}" for k, v in q.items())
        out = [f"How badly: probability gap max |P(x) - P(x')| over counterparts: {text}"]
        if qa:
            out.append("  among affected: " + ", ".join(f"{_quantile_name(k)} {v:.3f}" for k, v in qa.items()))
        return out

    def _rule_lines(self) -> list[str]:
        if not self.rules:
            return []
        out = ["What the affected have in common (depth-3 tree on the non-protected features):"]
        for r in self.rules:
            out.append(f"  {r['rule']}: {r['affected_share']:.1%} affected ({r['n_affected']:,} of {r['n']:,}), "
                       f"{r['coverage']:.1%} of all affected")
        return out


def label_text(label: int, positive_class: Any, negative_class: Any = None, *, column: Any = None) -> str:
    """A model label (1 = the positive class) named in the data's terms.

    A label value that reads as a number (German credit's ``1`` and ``2``) is named with its column, ``"label 0
    (credit = 1)"``, so that it is not read as a label code; without the column, ``"label 0 (label value 1)"``.

    Parameters
    ----------
    label : {0, 1}
    positive_class : str or None
        The value of the label column that label 1 stands for.
    negative_class : str or None, optional
        The one value label 0 stands for, when the label column holds just one other.
    column : str, optional
        The label column's name.

    Returns
    -------
    str
        ``"label 1 (>50K)"`` / ``"label 0 (<=50K)"``, or ``"label 0 (not >50K)"`` without ``negative_class``;
        ``"label 1"`` alone when ``positive_class`` is None or ``"1"`` (nothing to add).
    """
    if positive_class is None or str(positive_class) == "1":
        return f"label {label}"
    if label == 1 or negative_class is not None:
        return f"label {label} ({_label_value_text(positive_class if label == 1 else negative_class, column)})"
    if _reads_as_number(positive_class):
        return f"label {label} ({column or 'label value'} other than {positive_class})"
    return f"label {label} (not {positive_class})"


def _label_value_text(value: Any, column: Any) -> str:
    if not _reads_as_number(value):
        return str(value)
    return f"{column} = {value}" if column is not None else f"label value {value}"


def _reads_as_number(value: Any) -> bool:
    try:
        float(str(value))
    except ValueError:
        return False
    return True


def binomial_interval(count: int, n: int, confidence: float, method: str = "clopper-pearson") -> tuple[float, float]:
    """The binomial interval of ``count`` successes in ``n`` draws (as statsmodels' ``proportion_confint``).

    Parameters
    ----------
    count, n : int
        ``0 <= count <= n``, ``n >= 1``.
    confidence : float
        In (0, 1).
    method : {"clopper-pearson", "wilson"}
        Clopper-Pearson is exact: it covers at least ``confidence`` at every ``n`` and share.

    Returns
    -------
    (float, float)

    References
    ----------
    .. [1] Clopper, Pearson. "The use of confidence or fiducial limits illustrated in the case of the binomial."
       Biometrika 26(4), 1934.
    """
    from .params import METHODS

    lower, upper = proportion_confint(count, n, alpha=1 - confidence, method=METHODS[method])
    # Clopper-Pearson gives NaN bounds at 0 and n in some statsmodels versions; the bounds there are 0 and 1.
    lower = 0.0 if count == 0 or math.isnan(lower) else float(lower)
    upper = 1.0 if count == n or math.isnan(upper) else float(upper)
    return lower, upper


def proportion_confint(count, nobs, alpha: float, method: str):
    """The two-sided intervals of statsmodels' ``proportion_confint``, ``"beta"`` and ``"wilson"``, on scipy alone.

    The same formulas in the same floating-point operations (the tests compare them bit for bit), without importing
    statsmodels, which costs the command line half a second it does not otherwise spend.

    Parameters
    ----------
    count, nobs : int, float or numpy.ndarray
        Successes and draws (arrays broadcast).
    alpha : float
        ``1 - confidence``.
    method : {"beta", "wilson"}

    Returns
    -------
    (float, float) or (numpy.ndarray, numpy.ndarray)
        Floats for scalar inputs.

    Raises
    ------
    ValueError
        For another method.
    """
    from scipy import stats

    scalar = np.isscalar(count) and np.isscalar(nobs)
    count_a, nobs_a = np.asarray(count), np.asarray(nobs)
    q = count_a / nobs_a
    half = alpha / 2.0
    if method == "beta":
        lower = stats.beta.ppf(half, count_a, nobs_a - count_a + 1)
        upper = stats.beta.isf(half, count_a + 1, nobs_a - count_a)
        if np.ndim(lower) > 0:
            lower.flat[q.flat == 0] = 0
            upper.flat[q.flat == 1] = 1
        else:
            lower = 0 if q == 0 else lower
            upper = 1 if q == 1 else upper
    elif method == "wilson":
        crit = stats.norm.isf(half)
        crit2 = crit**2
        denom = 1 + crit2 / nobs_a
        center = (q + crit2 / (2 * nobs_a)) / denom
        dist = crit * np.sqrt(q * (1.0 - q) / nobs_a + crit2 / (4.0 * nobs_a**2))
        dist /= denom
        lower, upper = np.clip(center - dist, 0, 1), np.clip(center + dist, 0, 1)
    else:
        raise ValueError(f"method must be 'beta' or 'wilson', got {method!r}")
    if scalar:
        return float(lower), float(upper)
    return lower, upper


# A group is too small to tell, and never the worst group, below this many individuals or with a wider interval
# (half-width of its share harmed's interval, :func:`decide_groups`).
MIN_GROUP_SIZE = 30
MAX_GROUP_HALF_WIDTH = 0.10


def look_confidence(confidence: float, look: int) -> float:
    """Level of the interval at look ``look`` (1, 2, ...) of a sequential decision: ``confidence`` spent over looks.

    ``1 - (1 - confidence) * 6 / (pi**2 * look**2)``: the misses add up to at most ``1 - confidence`` over all
    looks (union bound), so every look's interval holds at once with probability at least ``confidence``.

    Parameters
    ----------
    confidence : float
        The overall level, in (0, 1).
    look : int
        The look's number, >= 1.

    Returns
    -------
    float
    """
    return 1 - (1 - confidence) * 6 / (math.pi ** 2 * max(look, 1) ** 2)


def people_interval(verdict: Verdict) -> tuple[float | None, float | None, str | None, float | None]:
    """The interval rule: the share's interval for the people the model will meet, its method and level.

    The individuals checked are read as a sample of the people the model will meet. A sampled verdict's interval
    already is such an interval (its individuals are a sample, drawn without replacement, of rows that are a sample
    of those people). When every row was checked, the share is exact for these rows (``lower == upper``), and the
    people's interval is the Clopper-Pearson interval of the count affected among them: 2 of 600 affected is 0.33%
    exactly for the rows, [0.04%, 1.20%] for the people. When every row was reached by sampling against a gate's
    threshold (``stopped_by="exhausted"`` with ``meta["sequential"]``), that last look is one more look of the
    sequential decision and gets its level (:func:`look_confidence`).

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    (lower, upper, method, confidence)
        All None for uniform draws from the domain (no sample of people) or no individual checked.

    References
    ----------
    .. [1] Clopper, Pearson. "The use of confidence or fiducial limits illustrated in the case of the binomial."
       Biometrika 26(4), 1934.
    .. [2] Cochran. *Sampling Techniques*, 3rd ed., Wiley 1977, ch. 3 (a finite population as a sample of a
       superpopulation).
    """
    if verdict.population == "domain" or not verdict.n_individuals:
        return None, None, None, None
    sequential = verdict.meta.get("sequential") or {}
    if not verdict.exact:
        return (float(verdict.lower), float(verdict.upper), verdict.method,
                float(sequential.get("look_confidence", verdict.confidence)))
    level = verdict.confidence
    if verdict.stopped_by == "exhausted" and sequential:
        level = look_confidence(verdict.confidence, int(sequential["looks"]) + 1)
    lower, upper = binomial_interval(verdict.n_affected, verdict.n_individuals, level)
    return lower, upper, "clopper-pearson", float(level)


def decide_groups(groups, *, people_confidence: float | None,
                  exact: bool) -> tuple[tuple[dict[str, Any], ...], str | None, tuple[str, ...]]:
    """The worst-group rule: each group's interval and whether it is too small to tell, and the most harmed group.

    A group's share harmed (its individuals who get the unfavourable label while a counterpart gets the favourable
    one) is read for the people of that group the model will meet: the Clopper-Pearson interval of ``n_harmed`` of
    ``n`` at ``people_confidence``. A group is **too small to tell** with fewer than :data:`MIN_GROUP_SIZE`
    individuals or an interval half-width above :data:`MAX_GROUP_HALF_WIDTH` (for uniform draws from the domain,
    ``people_confidence`` None, the group's own interval); it is named, and never the worst group. The **worst
    group** is the group, of those not too small, with the largest share harmed (ties: the larger group, then
    the first); None when none of them is harmed. Groups no one checked belongs to (``n == 0``) are neither.

    Parameters
    ----------
    groups : sequence of dict
        :attr:`Verdict.groups` records (``group``, ``n``, ``n_harmed``, ``share_harmed``, ...).
    people_confidence : float or None
        :attr:`Verdict.people_confidence`.
    exact : bool
        :attr:`Verdict.exact` (a domain group's own interval then has width 0).

    Returns
    -------
    groups : tuple of dict
        New records with ``people_harmed_lower``, ``people_harmed_upper`` and ``too_small``.
    worst : str or None
    too_small : tuple of str
    """
    out = []
    for g in groups:
        n, harmed = int(g["n"]), int(g.get("n_harmed") or 0)
        lower = upper = None
        if n and people_confidence is not None:
            lower, upper = binomial_interval(harmed, n, people_confidence)
            width = upper - lower
        elif n:
            own = (g.get("share_harmed_lower"), g.get("share_harmed_upper"))
            width = 0.0 if exact or own[0] is None else own[1] - own[0]
        small = bool(n) and (n < MIN_GROUP_SIZE or width / 2 > MAX_GROUP_HALF_WIDTH)
        out.append({**g, "people_harmed_lower": lower, "people_harmed_upper": upper, "too_small": small})
    candidates = [g for g in out if g["n"] and g.get("n_harmed") and not g["too_small"]]
    worst = max(candidates, key=lambda g: (g["n_harmed"] / g["n"], g["n"]), default=None)  # ties: the first
    return (tuple(out), None if worst is None else worst["group"],
            tuple(g["group"] for g in out if g["too_small"]))


def left_out_mask(own, possible, n_combinations: int):
    """The left-out rule: which individuals have no counterpart that could exist, shape (n,).

    A counterpart is one of the ``n_combinations`` protected combinations other than the individual's own, and it
    could exist when it breaks no constraint (``possible``, from :class:`~chiralfair.oracle.DiscriminationCheck`).
    An individual none of whose counterparts could exist cannot be treated differently whatever the model does: it
    is left out of every share (the verdict's, the certificates'), counted and named (architecture: counterparts
    that could exist). An individual whose own protected value is not among the attribute's values (missing, or a
    value the data do not hold; ``own == -1``) has no counterpart either: it belongs to no group, and the
    combinations are no counterparts of someone of a known value, so it is left out too, counted apart
    (:attr:`Verdict.unplaced`), so that the share and the groups count the same people.

    Parameters
    ----------
    own : numpy.ndarray of int, shape (n,)
        Each individual's own combination (-1 outside the protected domains).
    possible : numpy.ndarray of bool, shape (n, n_combinations), or None
        Whether each counterpart satisfies the constraints (None: the domain has none).
    n_combinations : int

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
    """
    return ~counterparts_that_could_exist(np.asarray(own), possible, n_combinations).any(axis=1)


def unplaced_by_attribute(domain, X) -> dict[str, int]:
    """By protected attribute, how many rows of ``X`` hold an own value that is not among its values.

    Such a person (a missing protected value, or one the data never hold) is in no group and has no counterpart:
    the verdict and the certificates leave them out, and this count says why.

    Parameters
    ----------
    domain : Domain
    X : numpy.ndarray of int64, shape (n_samples, n_features)
        Codes.

    Returns
    -------
    dict of str to int
        Only the attributes with such rows.
    """
    outside = domain.protected_value_index(X) < 0
    return {a.name: int(outside[:, j].sum()) for j, a in enumerate(domain.attributes) if outside[:, j].any()}


def counterparts_that_could_exist(own, possible, n_combinations: int):
    """Each individual's counterparts (every combination but its own) that break no constraint, shape (n, k).

    Parameters
    ----------
    own, possible, n_combinations
        As :func:`left_out_mask`.

    Returns
    -------
    numpy.ndarray of bool, shape (n, n_combinations)
    """
    own = np.asarray(own)
    others = np.ones((len(own), n_combinations), dtype=bool)
    inside = np.flatnonzero(own >= 0)
    others[inside, own[inside]] = False
    others[own < 0] = False  # no group, no counterpart: left out (left_out_mask)
    if possible is not None:
        others &= possible
    return others


# What a run sends outside the query budget, by step, in words (``result.json``'s ``queries["outside_budget"]``).
OUTSIDE_BUDGET_NAMES = (("probes", "probe rows"), ("verdict", "held-out verdict rows"),
                        ("group_metrics", "group-metric rows"), ("diversity", "diversity rows"))


def outside_budget_text(outside: dict[str, int] | None) -> str | None:
    """The rows sent outside the query budget, by step: ``"48,352 probe rows, 26,048 held-out verdict rows"``.

    The one wording of every door (audit's first screen, the estimate's summary, the gate's line).

    Parameters
    ----------
    outside : dict or None
        Step (``probes``, ``verdict``, ``group_metrics``, ``diversity``) to rows, as the model received them.

    Returns
    -------
    str or None
        None when nothing was sent outside the budget.
    """
    outside = outside or {}
    parts = [f"{int(outside[key]):,} {label}" for key, label in OUTSIDE_BUDGET_NAMES if outside.get(key)]
    return ", ".join(parts) or None


def verdict_queries_text(verdict: Verdict) -> str:
    """What the verdict sent the model: its queries, of the budget if any, and the rows sent outside it.

    The front doors (``estimate``, the gate) record in ``meta["queries"]`` what they sent outside the verdict's
    budget (the probes before it: the values the model accepts, its F1, the bins' agreement), so that every row the
    model received is said: ``"3,000 queries of the budget 3,000; outside it: 48,352 probe rows"``.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    str
    """
    record = verdict.meta.get("queries") or {}
    text = f"{verdict.n_queries:,} queries"
    if record.get("max_queries") is not None:
        text += f" of the budget {int(record['max_queries']):,}"
    outside = outside_budget_text(record.get("outside_budget"))
    if outside:
        text += ("; outside it: " if record.get("max_queries") is not None else "; also sent: ") + outside
    return text


def interval_name(verdict: Verdict) -> str:
    """The sampled share's interval named, level and method: ``"95% Clopper-Pearson"``.

    A sequential decision's interval (``meta["sequential"]``, a gate's threshold) is named by the level it was
    computed at, the last look's (:func:`look_confidence`): ``"99.93% Clopper-Pearson (the level of look 3 of a
    sequential decision, so that 95% holds over all its looks)"``, never as the plain interval, which is wider at
    the first look too.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    str
    """
    sequential = verdict.meta.get("sequential")
    name = f"{verdict.confidence:.0%} {_method_text(verdict.method)}"
    if sequential and not verdict.exact:
        looks = int(sequential["looks"])
        level = float(sequential.get("look_confidence") or look_confidence(verdict.confidence, looks))
        name = (f"{_level_text(level)} {_method_text(verdict.method)} (the level of look {looks:,} of a sequential "
                f"decision, so that {verdict.confidence:.0%} holds over all its looks)")
    return name


def _level_text(level: float) -> str:
    """A confidence level with the digits that tell it from its neighbours: 96.96%, 99.24%, 99.9848%."""
    for digits in range(2, 7):
        text = f"{level:.{digits}%}"
        if not text.startswith("100"):
            return text
    return f"{level:.6%}"


def sample_interval(verdict: Verdict) -> tuple[float, float] | None:
    """For a sequential decision's sampled verdict: the interval of the same sample read once, as ``estimate`` gives it.

    The gate names both (its decision's interval, corrected for the repeated looks, and this one) so that no door
    shows an unnamed interval that differs from another door's.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    (lower, upper) or None
        At :attr:`Verdict.confidence` with :attr:`Verdict.method`; None for a verdict that is not sequential and
        sampled.
    """
    if verdict.exact or not verdict.meta.get("sequential") or not verdict.n_individuals:
        return None
    return binomial_interval(verdict.n_affected, verdict.n_individuals, verdict.confidence, verdict.method)


def people_line(verdict: Verdict) -> str | None:
    """For a share exact over N rows: its interval for the people the model will meet, the rows read as a sample.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    str or None
        E.g. ``"for the people the model will meet (these 300 rows as a sample of them): [9.41%, 17.34%], 95%
        Clopper-Pearson"``; None for a sampled verdict (its interval already is the people's) or the domain.
    """
    if not verdict.exact or verdict.people_lower is None or verdict.people_confidence is None:
        return None
    return (f"for the people the model will meet (these {verdict.n_individuals:,} rows as a sample of them): "
            f"[{verdict.people_lower:.2%}, {verdict.people_upper:.2%}], {verdict.people_confidence:.0%} "
            f"{_method_text(verdict.people_method or '')}")


def most_harmed_line(verdict: Verdict) -> str | None:
    """The worst group in one line, with its interval for the group's people (None without a worst group).

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    str or None
        ``"most harmed group: sex=Male (10.84% of its 8,723 individuals get the unfavourable label while a
        counterpart gets the favourable one; [10.20%, 11.52%] for the people of that group, 95% Clopper-Pearson)"``.
    """
    g = verdict.worst()
    if g is None:
        return None
    where = "" if g["people_harmed_lower"] is None else (
        f"; [{g['people_harmed_lower']:.2%}, {g['people_harmed_upper']:.2%}] for the people of that group, "
        f"{verdict.people_confidence:.0%} Clopper-Pearson")
    return (f"most harmed group: {g['group']} ({g['n_harmed'] / g['n']:.2%} of its {g['n']:,} individuals get the "
            f"unfavourable label while a counterpart gets the favourable one{where})")


def too_small_text(verdict: Verdict, most: int = 6) -> str | None:
    """The groups too small to tell, as text: ``"race=Other (12 individuals, 25.00% harmed, [5.49%, 57.19%])"``.

    Parameters
    ----------
    verdict : Verdict
    most : int, default=6
        Groups named; the others are counted.

    Returns
    -------
    str or None
    """
    if not verdict.too_small:
        return None
    out = []
    for name in verdict.too_small[:most]:
        g = verdict.group(name)
        interval = "" if g["people_harmed_lower"] is None else (
            f", [{g['people_harmed_lower']:.2%}, {g['people_harmed_upper']:.2%}]")
        out.append(f"{name} ({g['n']:,} individual{'' if g['n'] == 1 else 's'}, "
                   f"{g['n_harmed'] / g['n']:.2%} harmed{interval})")
    more = len(verdict.too_small) - most
    return "; ".join(out) + (f"; {more:,} more" if more > 0 else "")


def one_label_line(meta: dict[str, Any]) -> str | None:
    """The first-screen note when the model gives every row checked one label, and no one is affected.

    Parameters
    ----------
    meta : dict
        :attr:`Verdict.meta`; ``one_label`` (the label, written by the pipeline) when the model predicts it for every
        held-out row.

    Returns
    -------
    str or None
    """
    label = meta.get("one_label")
    if label is None:
        return None
    return (f"note: the model predicts one label ({label}) for every held-out row, so no counterpart can change it: "
            "0% affected is no evidence of fairness (a constant decision treats no one differently, and serves no "
            "one); check the model")


def left_out_line(n_left_out: int, constraints, refused, population: str, *, unplaced=None) -> str | None:
    """Who is not in the share and why, for the first screen (no counterpart could exist; a refused value).

    The people none of whose counterparts could exist, and the people holding a protected value the model refuses.

    Parameters
    ----------
    n_left_out : int
        Individuals none of whose counterparts could exist (:attr:`Verdict.n_left_out`).
    constraints : sequence of str
        The domain's constraints, in words (:attr:`Verdict.constraints`).
    refused : sequence of dict
        The protected values the model refuses, with their rows (``Verdict.meta["left_out"]``: ``attribute``,
        ``value``, ``n_rows``, ``n_held_out``).
    population : {"test", "rows", "domain"}
        Which rows were checked: the held-out rows count the held-out rows left out, every row the data rows.
    unplaced : mapping of str to int, optional
        Individuals whose own value of that protected attribute is not among its values (:attr:`Verdict.unplaced`).

    Returns
    -------
    str or None
        None when no one is left out.
    """
    parts = []
    if n_left_out:
        rules = "; ".join(constraints or ()) or "the domain's constraints"
        who = "1 individual" if n_left_out == 1 else f"{n_left_out:,} individuals"
        parts.append(f"{who}, none of whose counterparts could exist (each breaks: {rules}); no decision could treat "
                     "them differently, so they are not in the share")
    for attribute, n in (unplaced or {}).items():
        who = "1 individual" if n == 1 else f"{int(n):,} individuals"
        parts.append(f"{who} whose own {attribute} is missing or not among its values, so in no group and with no "
                     "counterpart: they are not in the share")
    for value in refused or ():
        n = value.get("n_held_out") if population == "test" and value.get("n_held_out") is not None \
            else value.get("n_rows", 0)
        who = "1 individual" if n == 1 else f"{int(n):,} individuals"
        parts.append(f"{who} with {value['attribute']}={value['value']}, a value the model refuses (it cannot decide "
                     "on them), so they are not in the share and their group is not tested")
    return "; ".join(parts) or None


def plausibility_line(plausibility: dict | None, counterparts: str, exact: bool) -> str | None:
    """The share not in the headline: through plausible counterparts (or, for a plausible headline, any).

    Parameters
    ----------
    plausibility : dict or None
        :attr:`Verdict.plausibility`.
    counterparts : {"possible", "plausible"}
        :attr:`Verdict.counterparts`.
    exact : bool

    Returns
    -------
    str or None
    """
    if not plausibility:
        return None
    kind = "possible" if counterparts == "plausible" else "plausible"
    share = _share_text(plausibility[f"share_{kind}"], plausibility[f"lower_{kind}"], plausibility[f"upper_{kind}"],
                        exact)
    what = "through any possible counterpart" if kind == "possible" else "through plausible counterparts only"
    n_affected = plausibility[f"n_affected_{kind}"]
    return (f"{what}: {share} ({n_affected:,} individual{'' if n_affected == 1 else 's'}; "
            f"{plausibility['n_implausible_counterparts']:,} of {plausibility['n_counterparts']:,} counterparts "
            f"{'is' if plausibility['n_implausible_counterparts'] == 1 else 'are'} implausible)")


def _method_text(method: str) -> str:
    return {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}.get(method, method)


def _share_text(share, lower, upper, exact: bool) -> str:
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "-"
    if exact:
        return f"{share:.2%}"
    return f"{share:.2%} [{lower:.2%}, {upper:.2%}]"


def _quantile_name(level: str) -> str:
    value = float(level)
    return "max" if value == 1.0 else ("median" if value == 0.5 else f"p{value * 100:g}")
