"""Estimate the share of a population that a model discriminates, whom it harms and how badly.

Individuals come from a population the user chooses: the dataset's rows, its test split, or uniform draws
from the input domain. Each is put through the discrimination check (architecture: the counting rule: every combination
of the protected attributes' values) in batches, and checking stops when the confidence interval of the share lies
within ``margin`` of the estimate, or when the query budget is spent. A population whose enumeration costs no
more queries than the worst-case sample is enumerated instead, and its shares are exact.

Counterparts are those of the domain (architecture: counterparts that could exist): coupled columns change with their
protected attribute, and a counterpart that breaks one of the domain's constraints is impossible and not counted. Each
counterpart is also scored for plausibility (:meth:`Domain.plausible <chiralfair.domain.Domain.plausible>`); the verdict
reports the share affected through a plausible counterpart beside the share affected through any possible one, and
``plausible_only=True`` makes the first the headline.

With a ``threshold`` (the fairness gate, :mod:`chiralfair.verdict.gate`), checking also stops as soon as the
interval lies wholly on one side of it: a sequential decision. Looking at the interval after every batch and
stopping on what it shows would make a fixed-level interval miss more often than ``1 - confidence`` (repeated
looks). The confidence is kept by spending it over the looks: look ``k`` uses the level
``1 - alpha * 6 / (pi**2 * k**2)`` with ``alpha = 1 - confidence`` (the terms add up to ``alpha``), so by the
union bound every look's interval holds at once with probability at least ``confidence``, and so do the decision
and the interval reported where sampling stopped. The price is width: the first look is at level
``1 - 0.61 alpha``, the tenth at ``1 - 0.0061 alpha``; the sample doubles from look to look, so that there are few.
The bound needs each look's interval to cover at its level, which Clopper-Pearson guarantees at every sample size
and Wilson only approximately (the gate uses Clopper-Pearson: :mod:`chiralfair.pipeline.gate`).

Intervals come from :func:`statsmodels.stats.proportion.proportion_confint` (Wilson by default, or
Clopper-Pearson). The group intervals are Bonferroni-corrected so that they hold all at once. Rows of a finite
population are sampled without replacement and the intervals take no finite-population correction: they are
conservative (at least as wide as needed).

References
----------
.. [1] Galhotra, Brun, Meliou. "Fairness testing: testing software for discrimination." FSE 2017 (THEMIS:
   random inputs and a stopping rule on the confidence interval).
.. [2] Wilson, E. B. "Probable inference, the law of succession, and statistical inference." JASA 1927.
.. [3] Clopper, C. J., Pearson, E. S. "The use of confidence or fiducial limits illustrated in the case of the
   binomial." Biometrika 1934.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import __version__
from .._random import as_generator, derive_seed
from ..datasets.base import Dataset
from ..datasets.population import Population, population_of
from ..domain import Domain
from ..exceptions import ConfigError, DomainError
from ..models.adapters import as_model
from ..models.training import TrainedModel
from ..oracle import DiscriminationCheck
from .counts import GAP_EDGES, VerdictCounts
from .params import check_estimate_params
from .result import (
    Verdict,
    binomial_interval,
    counterparts_that_could_exist,
    look_confidence,
    unplaced_by_attribute,
)
from .rule_tree import fitted_leaves, rule_shape

# The favourable label of each benchmark, known only with the positive class the benchmark encodes as 1.
FAVOURABLE = {
    ("census", ">50K"): (1, "income >50K is favourable"),
    ("bank", "yes"): (1, "subscribing a term deposit (yes) is favourable"),
    ("german", "1 (good credit)"): (1, "good credit is favourable"),
    ("compas", "> 5"): (0, "a COMPAS decile score > 5 (high risk) is unfavourable, so label 0 is favourable"),
}

# Most model rows one batch may ask for (individuals x combinations), to bound the batch's arrays.
MAX_BATCH_ROWS = 1 << 21
# Fewest individuals a follow-up batch checks, so that the last steps to the margin are not one by one.
MIN_STEP = 64
# Most queries an enumeration forced with exact=True may cost.
MAX_ENUMERATION = 10**8
GAP_QUANTILES = ("0.5", "0.9", "0.99", "1.0")
TREE_DEPTH = 3
MAX_RULES = 3


_TALLY_FIELDS = ("X", "combination", "affected", "harmed", "gap", "affected_possible", "affected_plausible",
                 "n_counterparts", "n_implausible")


@dataclass
class _Tally:
    """Per-individual outcomes of the checked individuals, batch after batch.

    ``affected`` is the headline (through a possible, or with ``plausible_only`` a plausible, counterpart);
    ``affected_possible`` and ``affected_plausible`` are both kinds, ``n_counterparts`` and ``n_implausible`` the
    possible counterparts of each individual and how many of them are implausible (None without a support).
    """

    X: list
    combination: list
    affected: list
    harmed: list
    gap: list
    affected_possible: list
    affected_plausible: list
    n_counterparts: list
    n_implausible: list
    n_population: int | None = None

    @classmethod
    def empty(cls) -> _Tally:
        return cls([], [], [], [], [], [], [], [], [])

    def add(self, X, combination, affected, harmed, gap, affected_possible, affected_plausible, n_counterparts,
            n_implausible) -> None:
        for name, value in (("X", X), ("combination", combination), ("affected", affected), ("harmed", harmed),
                            ("gap", gap), ("affected_possible", affected_possible),
                            ("affected_plausible", affected_plausible), ("n_counterparts", n_counterparts),
                            ("n_implausible", n_implausible)):
            getattr(self, name).append(value)

    def arrays(self):
        gap = None if self.gap[0] is None else np.concatenate(self.gap)
        return (np.concatenate(self.X), np.concatenate(self.combination), np.concatenate(self.affected),
                np.concatenate(self.harmed), gap)

    def countable(self) -> tuple[_Tally, int, np.ndarray | None]:
        """The individuals with at least one possible counterpart, how many others were left out, the unplaced.

        An individual every counterpart of which breaks a constraint cannot be affected whatever the model does:
        counting them would dilute the share with people the question does not apply to. An individual whose own
        protected value is not among the attribute's values (combination -1) is in no group and has no counterpart
        (:func:`~chiralfair.verdict.result.left_out_mask`): its codes are returned apart (None when there is none),
        and the count left out does not include them.
        """
        keep = np.concatenate(self.n_counterparts) > 0
        if keep.all():
            return self, 0, None
        unplaced = np.concatenate(self.combination) < 0
        out = _Tally.empty()
        out.n_population = self.n_population
        out.add(*(None if getattr(self, f)[0] is None else np.concatenate(getattr(self, f))[keep]
                  for f in _TALLY_FIELDS))
        return out, int((~keep & ~unplaced).sum()), np.concatenate(self.X)[unplaced] if unplaced.any() else None

    def total(self, name: str) -> int | None:
        """Sum of a per-individual count or flag over every individual, None when it was not scored."""
        parts = getattr(self, name)
        return None if parts[0] is None else int(sum(int(np.sum(p)) for p in parts))


def estimate(model, dataset: Dataset, *, population: str = "rows", confidence: float = 0.95,
             margin: float = 0.005, max_queries: int | None = None, method: str = "clopper-pearson",
             gamma: float | None = None, favourable: int | None = None, exact: bool | None = None,
             test_index=None, random_state=0, batch_size: int = 8192, plausible_only: bool = False,
             threshold: float | None = None) -> Verdict:
    """Estimate the share of a population discriminated by ``model``, whom it harms and how badly.

    Parameters
    ----------
    model : TrainedModel, CountingModel, or anything :func:`~chiralfair.models.as_model` accepts
        The model under test (black boxes included: without ``predict_proba`` there is no probability gap).
    dataset : Dataset
        Its domain sets the protected attributes under test (one or several).
    population : {"rows", "test", "domain"}
        The dataset's rows, its test split (the rows the model was not trained on), or uniform draws from the
        domain (:meth:`Domain.sample`: protected attributes uniform over their value sets).
    confidence : float
        Confidence level of the overall interval, in (0, 1).
    margin : float
        Checking stops once the interval lies within ``margin`` of the estimate, in (0, 0.5].
    max_queries : int, optional
        Query budget; checking stops before exceeding it (the verdict then says the margin was not reached).
    method : {"clopper-pearson", "wilson"}, default="clopper-pearson"
        Interval method of :func:`statsmodels.stats.proportion.proportion_confint`; the default is the gate's and
        the exact verdict's people interval's, so that every door shows one interval for one sample.
    gamma : float, optional
        Count a pair as discriminatory only if the labels differ and their positive-class probabilities differ
        by at least ``gamma``, in [0, 1] (KOSEI's γ). Needs ``predict_proba``.
    favourable : {0, 1}, optional
        The favourable label. Default: the benchmark's (1 for census, bank and german; 0 for compas, whose
        label 1 is a high risk score); for other data it must be given.
    exact : bool, optional
        True: enumerate the population; False: always sample; None (default): enumerate when that costs no
        more queries than the worst-case sample for ``margin`` (and fits ``max_queries``).
    test_index : array-like of int, optional
        Test rows for ``population="test"`` when ``model`` is not a :class:`TrainedModel` (which carries them).
    random_state : int, numpy.random.Generator or None
        Drives the sampling and the rule tree.
    batch_size : int
        Most individuals checked per batch (each costs one model query per protected-value combination).
    plausible_only : bool, default False
        Count an individual as affected only through a plausible counterpart (one whose protected and
        categorical values occur together in the data), and make that the headline share, groups, gap and
        rules. Either way ``Verdict.plausibility`` holds both shares (when the dataset's domain has a support).
    threshold : float, optional
        A share in [0, 1) to decide against (the gate's ``max_share``): sampling also stops once the interval
        lies wholly at or below it or wholly above it (``stopped_by="threshold"``), with the confidence spent
        over the looks (see the module docstring); ``meta["sequential"]`` records the looks and the last look's
        level, at which the reported intervals are computed.

    Returns
    -------
    Verdict

    Raises
    ------
    ConfigError
        For a parameter outside its bounds, ``population="test"`` without test rows, an unknown favourable
        label, a budget below the cost of one individual, or an enumeration that is too large.
        ``plausible_only=True`` on a dataset whose domain has no support (not built from data) is refused too.
    ModelCapabilityError
        If ``gamma`` is given and the model has no ``predict_proba``.
    DomainError
        If the dataset's domain has no protected attribute, or, with ``plausible_only``, no individual checked has a
        plausible counterpart (the share would be 0 with nothing checked).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.datasets import from_frame
    >>> from chiralfair.verdict import estimate
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
    >>> data = from_frame(people, label="y", positive_class="yes", protected="sex")
    >>> model = LogisticRegression().fit(data.X, data.y)
    >>> verdict = estimate(model, data, population="rows", favourable=1)
    >>> verdict.population, verdict.exact, verdict.n_individuals
    ('rows', True, 600)
    >>> [g["group"] for g in verdict.groups]
    ['sex=f', 'sex=m']
    >>> sampled = estimate(model, data, population="rows", favourable=1, exact=False, margin=0.05)
    >>> sampled.exact, sampled.lower <= sampled.share <= sampled.upper
    (False, True)

    References
    ----------
    .. [1] Galhotra, Brun, Meliou. "Fairness testing: testing software for discrimination." FSE 2017.
    .. [2] Zhang et al. "Efficient white-box fairness testing through gradient search." ISSTA 2021 (EIDIG: share
       over uniform samples with a 95% interval).
    """
    checked = check_estimate_params(population=population, confidence=confidence, margin=margin, method=method,
                                    max_queries=max_queries, gamma=gamma, threshold=threshold, exact=exact,
                                    batch_size=batch_size, plausible_only=plausible_only)
    population, confidence, margin, method = (checked[k] for k in ("population", "confidence", "margin", "method"))
    max_queries, gamma, threshold, batch_size = (checked[k] for k in ("max_queries", "gamma", "threshold",
                                                                      "batch_size"))
    if plausible_only and dataset.domain.support is None:
        raise ConfigError("plausible_only=True needs the data's support of (protected value, categorical value) "
                          "pairs, which a domain built from data carries (Domain.from_data, Domain.with_support); "
                          f"the domain of dataset {dataset.name!r} has none")
    favourable, favourable_note = resolve_favourable(dataset, favourable)

    test_rows = test_index
    if isinstance(model, TrainedModel):
        test_rows = model.test_index if test_index is None else test_index
        model = model.model
    counting = as_model(model)
    if gamma is not None:
        counting.require("predict_proba", by="estimate(gamma=...)")
    domain = dataset.domain
    check = DiscriminationCheck(counting, domain)
    rows, people = _population_rows(dataset, population, test_rows, counting)
    rng = as_generator(random_state)
    judge = _Judge(check, favourable, gamma, counting.has_proba, plausible_only)

    start_queries, start = counting.n_queries, time.perf_counter()
    n_worst = _worst_case_sample_size(confidence, margin)
    # labels and probabilities from two calls of the model are two queries a row (architecture: the model under test)
    calls = 2 if judge.with_proba and not counting.one_pass else 1
    enumeration = _enumeration_cost(domain, rows, check, people) * calls
    limit = min(n_worst * check.n_combinations * calls, max_queries or math.inf)
    if exact is True or (exact is None and enumeration <= limit):
        if enumeration > (max_queries or MAX_ENUMERATION):
            raise ConfigError(f"enumerating the population costs {enumeration:,} queries, more than "
                              f"{'max_queries' if max_queries else 'the limit'} {max_queries or MAX_ENUMERATION:,}; "
                              "use exact=False to sample it")
        tally = _enumerate(judge, domain, rows, people)
        stopped_by, looks = "exact", 0
    else:
        tally, stopped_by, looks = _sample(judge, domain, rows, rng, confidence=confidence, margin=margin,
                                           method=method, max_queries=max_queries, batch_size=batch_size,
                                           start_queries=start_queries, threshold=threshold, people=people)
    n_queries = counting.n_queries - start_queries
    is_exact = stopped_by in ("exact", "exhausted")
    tally, n_left_out, unplaced_X = tally.countable()
    unplaced = {} if unplaced_X is None else unplaced_by_attribute(domain, unplaced_X)
    n_unplaced = 0 if unplaced_X is None else len(unplaced_X)
    if (n_left_out or n_unplaced) and not sum(len(a) for a in tally.affected):
        why = ([f"{n_left_out:,} break a constraint of the domain with each counterpart ("
                + "; ".join(domain.describe_constraints()) + "; check the constraints)"] if n_left_out else [])
        why += [f"{v:,} hold a {k} that is missing or not among its values (check the data)"
                for k, v in unplaced.items()]
        raise DomainError(f"none of the {n_left_out + n_unplaced:,} individuals read has a counterpart that could "
                          "exist, so the question cannot be asked of anyone: " + "; ".join(why))

    X, combination, affected, harmed, gap = tally.arrays()
    level = confidence if threshold is None or is_exact else look_confidence(confidence, looks)
    counts = VerdictCounts.of_batch([m for _, _, m in _group_masks(domain, X, combination)], affected, harmed, gap,
                                    X[:, domain.non_protected], plausibility=_plausibility_totals(tally),
                                    n_left_out=n_left_out, n_unplaced=n_unplaced, unplaced=unplaced,
                                    rule_shape=rule_shape(domain))
    population_size = tally.n_population if tally.n_population is not None else _population_size(domain, rows)
    return verdict_from_counts(
        counts, domain=domain, population=population, population_size=population_size, favourable=favourable,
        favourable_note=favourable_note, confidence=confidence, level=level, method=method, margin=margin,
        stopped_by=stopped_by, looks=looks, threshold=threshold, gamma=gamma, has_proba=counting.has_proba,
        plausible_only=plausible_only, seed=derive_seed(rng), n_queries=n_queries, started=start,
        rows_text=None if rows is None else len(rows),
        binned=dataset.codec.binned if people is not None and dataset.codec is not None else None,
        meta={"chiralfair_version": __version__, "statsmodels_version": _statsmodels_version(),
              "dataset": dataset.name, "model": counting.name, "random_state": random_state
              if isinstance(random_state, int) else None,
              "params": {"population": population, "confidence": confidence, "margin": margin,
                         "max_queries": max_queries, "method": method, "gamma": gamma, "favourable": favourable,
                         "exact": exact, "batch_size": batch_size, "plausible_only": plausible_only},
              "n_combinations": check.n_combinations, "worst_case_sample_size": n_worst,
              "positive_class": dataset.positive_class, "negative_class": dataset.negative_class,
              "label_column": getattr(dataset, "label", None),
              "individuals_as": "rows as given" if people is not None else "codes"})


def verdict_from_counts(counts: VerdictCounts, *, domain: Domain, population: str, population_size: int | None,
                        favourable: int, favourable_note: str, confidence: float, level: float, method: str,
                        margin: float, stopped_by: str, looks: int, threshold: float | None, gamma: float | None,
                        has_proba: bool, plausible_only: bool, seed: int, n_queries: int, started: float,
                        rows_text: int | None, binned: dict | None, meta: dict) -> Verdict:
    """The :class:`Verdict` decided from the counts of every individual checked, however they were split.

    The one place the figures are decided from :class:`~chiralfair.verdict.counts.VerdictCounts`, for
    :func:`estimate` and for a streamed verdict (:mod:`chiralfair.verdict.streaming`), so both give the same
    verdict on the same rows.

    Parameters
    ----------
    counts : VerdictCounts
        Of the individuals checked (merged over batches).
    domain : Domain
    population, population_size, favourable, favourable_note, confidence, method, margin, stopped_by, gamma
        As the verdict records them.
    level : float
        The intervals' level (``confidence``, or the last look's of a sequential decision).
    looks : int
        Looks of a sequential decision (0 otherwise).
    threshold : float or None
    has_proba, plausible_only : bool
    seed : int
        Seeds the rule tree.
    n_queries : int
    started : float
        :func:`time.perf_counter` when checking started.
    rows_text : int or None
        Rows the sample was drawn from (None for the domain).
    binned : dict or None
        The binned columns, when people were checked as given.
    meta : dict

    Returns
    -------
    Verdict

    Raises
    ------
    DomainError
        With ``plausible_only``, when no individual checked has a plausible counterpart.
    """
    is_exact = stopped_by in ("exact", "exhausted")
    n, n_affected = counts.n, counts.n_affected
    n_left_out, n_unplaced, unplaced = counts.n_left_out, counts.n_unplaced, counts.unplaced
    share = n_affected / n
    lower, upper = (share, share) if is_exact else binomial_interval(n_affected, n, level, method)
    plausibility = _plausibility_summary(counts, domain, is_exact, level, method)
    if plausible_only:
        _check_some_counterpart_is_plausible(plausibility, n)
    groups, group_confidence = _group_table(domain, counts, level, method, is_exact)
    rules, rule_notes = _rules(domain, counts, seed)
    seconds = time.perf_counter() - started

    notes = _notes(population, rows_text, stopped_by, margin, max(share - lower, upper - share), method,
                   len(groups), gamma, has_proba, favourable_note) + rule_notes
    notes += _counterpart_notes(domain, plausibility, plausible_only)
    if n_left_out:
        notes.insert(0, left_out_text(n_left_out, n + n_left_out + n_unplaced, domain))
    if n_unplaced:
        notes.insert(0, f"{n_unplaced:,} of the {n + n_left_out + n_unplaced:,} individuals read are left out of "
                     "the share and of every group: their own " + ", ".join(
                         f"{k} ({v:,})" for k, v in unplaced.items()) + " is missing or not among its values, so "
                     "they belong to no group and have no counterpart")
    if binned:
        notes.append("checked on the rows as given (" + ", ".join(binned) + " at their own values, "
                     "each counterpart changing only the protected and coupled columns); the bins of those columns "
                     "are the search's only")
    if threshold is not None and not is_exact:
        notes.append(f"sequential decision against the threshold {threshold:g}: the interval was looked at after "
                     f"each of {looks} batches, with the confidence spent over the looks (look k at level "
                     f"1 - alpha 6/(pi^2 k^2), alpha = {1 - confidence:.3g}), so the intervals reported, at the last "
                     f"look's level {level:.6f}, hold with at least {confidence:.0%} confidence despite the "
                     "repeated looks")
    meta = dict(meta)
    if threshold is not None:
        meta["sequential"] = {"threshold": threshold, "looks": looks, "look_confidence": level}
    gap = _gap_summary(counts)
    if counts.gaps is not None:
        counts.gaps.close()
    if counts.rules is not None:
        counts.rules.close()
    return Verdict(population=population, population_size=population_size,
                   protected=tuple(domain.protected_names), favourable=favourable, n_individuals=n,
                   n_affected=n_affected, n_harmed=counts.n_harmed, share=float(share), lower=float(lower),
                   upper=float(upper), confidence=confidence, method=method, margin=margin, exact=is_exact,
                   stopped_by=stopped_by, gamma=gamma, groups=groups, group_confidence=group_confidence,
                   gap=gap, rules=rules, n_queries=int(n_queries), seconds=float(seconds),
                   notes=tuple(notes), meta=meta, counterparts="plausible" if plausible_only else "possible",
                   plausibility=plausibility, couplings=tuple(domain.describe_couplings()),
                   constraints=tuple(domain.describe_constraints()), n_left_out=n_left_out,
                   unplaced=unplaced, n_unplaced=n_unplaced)


def left_out_text(n_left_out: int, n_checked: int, domain: Domain) -> str:
    """Why ``n_left_out`` of the ``n_checked`` individuals are not in the share, in one sentence.

    Parameters
    ----------
    n_left_out, n_checked : int
    domain : Domain

    Returns
    -------
    str
    """
    rules = "; ".join(domain.describe_constraints()) or "the domain's constraints"
    return (f"{n_left_out:,} of the {n_checked:,} individuals read are left out of the share: every counterpart "
            f"of theirs breaks a rule ({rules}), so no decision of the model could treat them differently")


def resolve_favourable(dataset: Dataset, favourable: int | None) -> tuple[int, str]:
    """The favourable label (0 or 1) and a note that says where it comes from.

    Parameters
    ----------
    dataset : Dataset
    favourable : {0, 1} or None
        The label given, or None for the dataset's default.

    Returns
    -------
    favourable : int
    note : str

    Raises
    ------
    ConfigError
        If ``favourable`` is not 0 or 1, or is None for a dataset whose favourable label is not known.
    """
    if favourable is not None:
        if isinstance(favourable, bool) or favourable not in (0, 1):
            raise ConfigError(f"favourable must be the label 0 or 1, got {favourable!r}")
        side = "the positive class" if favourable == 1 else "the negative class"
        return int(favourable), (f"favourable label {favourable} ({side}; positive class "
                                 f"{dataset.positive_class!r}), as given")
    known = FAVOURABLE.get((dataset.name, dataset.positive_class))
    if known is None:
        raise ConfigError(
            f"favourable is needed: for dataset {dataset.name!r} (label 1 = positive class "
            f"{dataset.positive_class!r}) chiralfair cannot tell whether label 1 is the favourable outcome; pass "
            "favourable=1 if it is, favourable=0 if label 0 is")
    label, why = known
    return label, f"favourable label {label}: {why} (the {dataset.name} default; set favourable to change it)"


class _Judge:
    """Checks a batch and reduces it to per-individual outcomes: affected, harmed, probability gap."""

    def __init__(self, check: DiscriminationCheck, favourable: int, gamma: float | None, with_proba: bool,
                 plausible_only: bool = False):
        self.check = check
        self.favourable = favourable
        self.gamma = gamma
        self.with_proba = with_proba
        self.plausible_only = plausible_only
        self.with_plausibility = check.domain.support is not None

    def outcomes(self, labels, own_label, proba, own_proba, own, possible, plausible):
        """Per-individual outcomes, each of shape (n,) (see :meth:`_Tally.add` for their order).

        ``labels`` and ``proba`` are every combination's label and P(y=1), shape (n, n_combinations); ``own`` each
        individual's own combination (-1 outside the PA domains); ``possible`` and ``plausible`` (n,
        n_combinations) or None. Only possible counterparts other than the individual itself are read.
        """
        others = counterparts_that_could_exist(own, possible, labels.shape[1])
        differs = (labels != own_label[:, None]) & others
        distance = None
        if proba is not None:
            distance = np.where(others, np.abs(proba - own_proba[:, None]), 0.0)
            if self.gamma is not None:
                differs &= distance >= self.gamma
        affected_possible = differs.any(axis=1)
        affected_plausible = None if plausible is None else (differs & plausible).any(axis=1)
        affected = affected_plausible if self.plausible_only else affected_possible
        counted = others & plausible if self.plausible_only else others
        gap = None if distance is None else np.where(counted, distance, 0.0).max(axis=1)
        harmed = affected & (own_label != self.favourable)
        n_implausible = None if plausible is None else (others & ~plausible).sum(axis=1)
        return affected, harmed, gap, affected_possible, affected_plausible, others.sum(axis=1), n_implausible

    def check_rows(self, X, people=None, *, with_labels: bool = False):
        """Check ``X`` (the codes of ``people``, if given) in one batch: combination indices, then :meth:`outcomes`.

        With ``with_labels``, returns (each row's own predicted label, that tuple).
        """
        res = self.check.check(X, with_proba=self.with_proba, with_plausibility=self.with_plausibility,
                               population=people)
        own = self.check.own_combination(X)
        out = (own, *self.outcomes(res.counterpart_labels, res.labels, res.proba, res.own_proba, own,
                                   res.possible, res.plausible))
        return (np.asarray(res.labels), out) if with_labels else out


@dataclass(frozen=True)
class PeopleOutcomes:
    """Each person of some data rows as the verdict counts them (:func:`people_outcomes`).

    Attributes
    ----------
    labels : numpy.ndarray of int64, shape (n,)
        The model's label of each person as given (1 = the positive class).
    affected : numpy.ndarray of bool, shape (n,)
        Counted and affected: some counterpart that could exist (a plausible one with ``plausible_only``; a
        probability gap of at least ``gamma`` when given) gets another label. False for the left out.
    left_out : numpy.ndarray of bool, shape (n,)
        In no share and no group (:func:`~chiralfair.verdict.result.left_out_mask`).
    unplaced : numpy.ndarray of bool, shape (n_samples, n_attributes)
        Which protected attributes' own values are missing or not among their values (such a person is left out).
    """

    labels: np.ndarray
    affected: np.ndarray
    left_out: np.ndarray
    unplaced: np.ndarray


def people_outcomes(model, dataset: Dataset, rows, *, gamma: float | None = None,
                    plausible_only: bool = False) -> PeopleOutcomes:
    """Who of ``dataset``'s ``rows`` the verdict counts and who of them is affected, from one checked batch.

    The verdict's own rule, person by person (its judge, :func:`~chiralfair.verdict.result.left_out_mask`),
    for every per-person table and group figure (``held_out_rows``, the group metrics' IDI rate), so that they
    count the people the verdict counts.

    Parameters
    ----------
    model : CountingModel
    dataset : Dataset
    rows : array-like of int, shape (n,)
        Row numbers of ``dataset``; for a model fed frames, the people as given are sent.
    gamma : float, optional
        As :func:`estimate` (needs ``predict_proba``; then labels and probabilities are asked for).
    plausible_only : bool, default=False
        As :func:`estimate`.

    Returns
    -------
    PeopleOutcomes
        Costs ``n × n_combinations`` model queries (fewer with constraints).
    """
    rows = np.asarray(rows, dtype=np.int64)
    counting = as_model(model)
    if plausible_only and dataset.domain.support is None:
        raise ConfigError(f"plausible_only=True needs the data's support; the domain of dataset {dataset.name!r} "
                          "has none")
    if gamma is not None:
        counting.require("predict_proba", by="the held-out rows with gamma=")
    judge = _Judge(DiscriminationCheck(counting, dataset.domain), 1, gamma, gamma is not None, plausible_only)
    X = dataset.X[rows]
    labels, outcome = judge.check_rows(X, _people(dataset, rows, counting), with_labels=True)
    left_out = outcome[6] == 0  # no counterpart that could exist (left_out_mask): the own value's too
    return PeopleOutcomes(labels=np.asarray(labels, dtype=np.int64), affected=outcome[1] & ~left_out,
                          left_out=left_out, unplaced=dataset.domain.protected_value_index(X) < 0)


def _population_rows(dataset: Dataset, population: str, test_rows, model) -> tuple[np.ndarray | None,
                                                                                   Population | None]:
    """The individuals' codes (None for the domain) and, for a model fed frames, the same people as given."""
    if population == "domain":
        return None, None
    if population == "rows":
        return dataset.X, _people(dataset, None, model)
    if test_rows is None:
        raise ConfigError("population='test' needs the test rows the model was not trained on: pass the "
                          "TrainedModel from train_model, or test_index=")
    idx = np.asarray(test_rows)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ConfigError(f"test_index must be a non-empty 1-D array of row numbers, got shape {idx.shape}")
    if idx.min() < 0 or idx.max() >= dataset.n_samples:
        raise ConfigError(f"test_index holds rows outside [0, {dataset.n_samples - 1}]")
    return dataset.X[idx], _people(dataset, idx, model)


def _people(dataset: Dataset, index, model) -> Population | None:
    """The people at ``index`` as given, when the model is fed frames and the dataset holds raw rows."""
    return population_of(dataset, index) if model.reads_people else None


def _population_size(domain: Domain, rows) -> int:
    if rows is not None:
        return int(len(rows))
    return _n_keys(domain) * len(domain.combinations)


def _n_keys(domain: Domain) -> int:
    return math.prod(domain.features[i].size for i in domain.non_protected)


def _worst_case_sample_size(confidence: float, margin: float) -> int:
    """Sample size at which an interval at share 0.5 has half-width ``margin`` (normal approximation)."""
    z = _z(confidence)
    return math.ceil(z * z * 0.25 / (margin * margin))


def _z(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


def _enumeration_cost(domain: Domain, rows, check: DiscriminationCheck, people=None) -> int:
    """Queries an enumeration costs: every key (person, if as given) once per combination, plus rows outside PAs."""
    k = check.n_combinations
    if rows is None:
        return _n_keys(domain) * k
    outside = int((check.own_combination(rows) < 0).sum())
    if people is not None:
        return (len(rows) - outside) * k + outside
    return len(np.unique(domain.keys(rows))) * k + outside


def _enumerate(judge: _Judge, domain: Domain, rows, people=None) -> _Tally:
    """Check every individual of the population, each key once (its counterparts cover the other rows).

    People as given (``people``) are checked one by one: two people with one key differ in their own values.

    The rows of one key are one orbit of the counterpart map (:meth:`Domain.keys`), so the row whose own
    combination is ``c`` is the key's counterpart ``c``: its outcome is read from the key's check. The domain
    population keeps only the points that satisfy the constraints; a data row that breaks one (its own
    combination was then not queried) is checked on its own, like a row outside the PA domains.
    """
    check = judge.check
    k = check.n_combinations
    n_population = None
    if people is not None:
        return _enumerate_people(judge, rows, people)
    if rows is None:
        sizes = [domain.features[i].size for i in domain.non_protected]
        codes = np.unravel_index(np.arange(_n_keys(domain)), sizes)
        keys_X = np.empty((len(codes[0]), domain.n_features), dtype=np.int64)
        for j, col in enumerate(domain.non_protected):
            keys_X[:, col] = codes[j] + domain.features[col].lo
        keys_X[:, list(domain.protected)] = domain.combinations[0]
        rows = domain.counterparts(keys_X).reshape(-1, domain.n_features)
        key_of_row = np.repeat(np.arange(len(keys_X)), k)
        if domain.constraints:
            keep = domain.satisfies(rows)
            rows, key_of_row = rows[keep], key_of_row[keep]
            n_population = int(len(rows))
    else:
        _, first, key_of_row = np.unique(domain.keys(rows), return_index=True, return_inverse=True)
        keys_X = rows[first]
    combination = check.own_combination(rows)
    tally = _Tally.empty()
    tally.n_population = n_population
    res = check.check(keys_X, with_proba=judge.with_proba, with_plausibility=judge.with_plausibility)
    readable = combination >= 0
    if res.possible is not None:
        readable &= res.possible[key_of_row, np.maximum(combination, 0)]
    step = max(1, MAX_BATCH_ROWS // k)
    inside = np.flatnonzero(readable)
    for s in range(0, len(inside), step):
        idx = inside[s:s + step]
        key, own = key_of_row[idx], combination[idx]
        labels = res.counterpart_labels[key]
        proba = None if res.proba is None else res.proba[key]
        own_proba = None if proba is None else proba[np.arange(len(idx)), own]
        outcome = judge.outcomes(labels, labels[np.arange(len(idx)), own], proba, own_proba, own,
                                 None if res.possible is None else res.possible[key],
                                 None if res.plausible is None else res.plausible[key])
        tally.add(rows[idx], own, *outcome)
    outside = np.flatnonzero(~readable)
    if len(outside):
        tally.add(rows[outside], *judge.check_rows(rows[outside]))
    return tally


def _enumerate_people(judge: _Judge, rows: np.ndarray, people: Population) -> _Tally:
    """Check every person of ``people`` (codes ``rows``) in batches of at most :data:`MAX_BATCH_ROWS` model rows."""
    tally = _Tally.empty()
    step = max(1, MAX_BATCH_ROWS // judge.check.n_combinations)
    for s in range(0, len(rows), step):
        index = np.arange(s, min(s + step, len(rows)))
        tally.add(rows[index], *judge.check_rows(rows[index], people.take(index)))
    return tally


def _sample(judge: _Judge, domain: Domain, rows, rng, *, confidence, margin, method, max_queries, batch_size,
            start_queries, threshold=None, people=None) -> tuple[_Tally, str, int]:
    """Check random individuals batch by batch until the interval is within the margin or the budget is spent.

    Each batch asks for about as many individuals as the current estimate says the margin still needs (at most
    as many as already checked), so that the sample ends close to the analytic sample size. With a
    ``threshold``, also until the interval (at :func:`look_confidence` of the look) lies on one side of it.
    Returns the tally, why it stopped and the number of looks.
    """
    check = judge.check
    model = check.model
    cost = check.n_combinations + (int((check.own_combination(rows) < 0).any()) if rows is not None else 0)
    cost *= 2 if judge.with_proba and not model.one_pass else 1  # as in estimate(): the real cost of a row
    if max_queries is not None and max_queries < cost:
        raise ConfigError(f"max_queries {max_queries} is below the cost of one individual ({cost} queries: one per "
                          "protected-value combination)")
    cap = min(batch_size, max(1, MAX_BATCH_ROWS // cost))
    order = rng.permutation(len(rows)) if rows is not None else None
    z2 = _z(confidence) ** 2
    fewest = max(1, math.ceil(z2 / margin - z2))  # share 0 needs this many before its upper bound fits the margin
    tally = _Tally.empty()
    n = n_countable = n_affected = looks = 0
    while True:
        share = n_affected / n_countable if n_countable else 0.0
        needed = max(fewest, math.ceil(z2 * share * (1 - share) / (margin * margin)))
        # at most doubling: an early estimate of the share is too noisy to jump straight to its sample size
        want = min(cap, needed if n == 0 else max(MIN_STEP, min(needed - n_countable, n)))
        if threshold is not None and n:
            # a sequential decision doubles the sample at each look: few looks, so little confidence spent on each
            want = min(cap, n)
        if rows is not None:
            want = min(want, len(rows) - n)
        if max_queries is not None:
            want = min(want, (max_queries - (model.n_queries - start_queries)) // cost)
        if want <= 0:
            return tally, "budget", looks
        index = None if order is None else order[n:n + want]
        X = rows[index] if index is not None else domain.sample(want, rng)
        outcome = judge.check_rows(X, None if people is None or index is None else people.take(index))
        tally.add(X, *outcome)
        affected, countable = outcome[1], outcome[6] > 0  # those with no possible counterpart are left out
        n += want
        n_countable += int(countable.sum())
        n_affected += int(affected.sum())
        if rows is not None and n == len(rows):
            return tally, "exhausted", looks
        if not n_countable:
            if n >= fewest:  # no one drawn has a counterpart that could exist: estimate() refuses with the reason
                return tally, "budget", looks
            continue
        looks += 1
        level = confidence if threshold is None else look_confidence(confidence, looks)
        lower, upper = binomial_interval(n_affected, n_countable, level, method)
        if threshold is not None and (upper <= threshold or lower > threshold):
            return tally, "threshold", looks
        if max(n_affected / n_countable - lower, upper - n_affected / n_countable) <= margin:
            return tally, "margin", looks


def _plausibility_totals(tally: _Tally) -> dict | None:
    """The additive plausibility counts of the tally's individuals (None without a support)."""
    if tally.affected_plausible[0] is None:
        return None
    with_implausible = int(sum(int((p > 0).sum()) for p in tally.n_implausible))
    without_plausible = int(sum(int((c == p).sum()) for c, p in zip(tally.n_counterparts, tally.n_implausible,
                                                                      strict=True)))
    return {"n_affected_possible": cast(int, tally.total("affected_possible")),
            "n_affected_plausible": cast(int, tally.total("affected_plausible")),
            "n_counterparts": cast(int, tally.total("n_counterparts")),
            "n_implausible": cast(int, tally.total("n_implausible")),
            "n_with_implausible": with_implausible, "n_without_plausible": without_plausible}


def _plausibility_summary(counts: VerdictCounts, domain: Domain, exact: bool, confidence: float,
                          method: str) -> dict | None:
    """Both shares (through any possible counterpart, through a plausible one), with intervals; None without support."""
    n = counts.n
    support = domain.support
    totals = counts.plausibility
    if support is None or totals is None or n == 0:
        return None
    out: dict = {}
    for kind in ("possible", "plausible"):
        count = totals[f"n_affected_{kind}"]
        lower, upper = _bounds(count, n, confidence, method, exact)
        out.update({f"n_affected_{kind}": count, f"share_{kind}": count / n, f"lower_{kind}": lower,
                    f"upper_{kind}": upper})
    out.update(n_counterparts=totals["n_counterparts"], n_implausible_counterparts=totals["n_implausible"],
               n_with_implausible_counterpart=totals["n_with_implausible"],
               n_without_plausible_counterpart=totals["n_without_plausible"],
               min_lift=support.min_lift, min_expected=support.min_expected)
    return out


def _check_some_counterpart_is_plausible(plausibility: dict | None, n: int) -> None:
    """Refuse a plausible-only share over individuals none of whom has a plausible counterpart (0%, nothing checked)."""
    if plausibility is not None and plausibility["n_without_plausible_counterpart"] == n:
        raise DomainError(
            f"plausible_only: none of the {n:,} individuals checked has a plausible counterpart (all "
            f"{plausibility['n_implausible_counterparts']:,} counterparts pair a protected value with a categorical "
            "value the data hardly ever shows, e.g. a column that copies the protected attribute), so the share "
            "would be 0% with nothing checked. Couple that column to the protected attribute (couple=, --couple) "
            "or drop plausible_only")


def _counterpart_notes(domain: Domain, plausibility: dict | None, plausible_only: bool) -> list[str]:
    """What the counterparts were: couplings, constraints, and how many were implausible."""
    notes = [f"counterparts change coupled columns with their protected attribute: {text}"
             for text in domain.describe_couplings() if "inactive" not in text]
    if domain.constraints:
        notes.append(f"counterparts that break a constraint cannot exist and are not counted: "
                     f"{'; '.join(domain.describe_constraints())}")
    if plausibility is not None:
        notes.append(
            f"{plausibility['n_implausible_counterparts']:,} of the {plausibility['n_counterparts']:,} counterparts "
            f"checked {'is' if plausibility['n_implausible_counterparts'] == 1 else 'are'} implausible (a protected "
            "value with a categorical value the data hardly ever shows: "
            f"fewer than {plausibility['min_lift']:g} x the rows independence predicts, where it predicts at least "
            f"{plausibility['min_expected']:g}); "
            + ("the headline counts plausible counterparts only" if plausible_only else
               f"through plausible counterparts only, {plausibility['share_plausible']:.2%} are affected"))
        without = plausibility["n_without_plausible_counterpart"]
        if plausible_only and without:
            notes.append(f"{without:,} individuals have no plausible counterpart: the plausible-only headline counts "
                         "them as unaffected, though nothing was checked for them")
    return notes


def _group_masks(domain: Domain, X: np.ndarray, combination: np.ndarray):
    """(attribute, group label, mask) for each protected value and, with several PAs, each combination.

    A PA spanning several columns (a one-hot group) counts as one attribute whose values are its valid rows.
    """
    position = domain.protected_value_index(X)
    masks = [position[:, j] == v for j, values in enumerate(domain.protected_value_labels())
             for v in range(len(values))]
    if len(domain.attributes) > 1:
        masks += [combination == c for c in range(len(domain.combinations))]
    return [(attribute, text, mask) for (attribute, text), mask in zip(_group_names(domain), masks, strict=True)]


def _group_names(domain: Domain) -> list[tuple[str, str]]:
    """(attribute, group label) of each group, in the order of :func:`_group_masks`."""
    out = []
    labels = domain.protected_value_labels()
    for j, attribute in enumerate(domain.attributes):
        for text in labels[j]:
            out.append((attribute.name, f"{attribute.name}={text}"))
    if len(domain.attributes) > 1:
        name = ",".join(domain.protected_names)
        for combo in itertools.product(*labels):
            out.append((name, ", ".join(f"{a.name}={t}" for a, t in zip(domain.attributes, combo, strict=True))))
    return out


def _group_table(domain, counts: VerdictCounts, confidence, method, exact):
    """Per group: share affected, share harmed, share harmed among affected; Bonferroni over all group intervals."""
    names = _group_names(domain)
    group_confidence = 1 - (1 - confidence) / (3 * len(names))
    groups = []
    per_group = cast(tuple[np.ndarray, np.ndarray, np.ndarray], (counts.group_n, counts.group_affected,
                                                                 counts.group_harmed))
    for (attribute, text), n, n_aff, n_harm in zip(names, *per_group, strict=True):
        n, n_aff, n_harm = int(n), int(n_aff), int(n_harm)
        lo, hi = _bounds(n_aff, n, group_confidence, method, exact)
        harmed_lo, harmed_hi = _bounds(n_harm, n, group_confidence, method, exact)
        h_lo, h_hi = _bounds(n_harm, n_aff, group_confidence, method, exact)
        groups.append({"attribute": attribute, "group": text, "n": n, "n_affected": n_aff,
                       "share_affected": n_aff / n if n else None, "lower": lo, "upper": hi, "n_harmed": n_harm,
                       "share_harmed": n_harm / n if n else None, "share_harmed_lower": harmed_lo,
                       "share_harmed_upper": harmed_hi,
                       "harmed_share": n_harm / n_aff if n_aff else None, "harmed_lower": h_lo, "harmed_upper": h_hi})
    return tuple(groups), float(group_confidence)


def _bounds(count: int, nobs: int, confidence: float, method: str, exact: bool):
    if nobs == 0:
        return None, None
    if exact:
        return count / nobs, count / nobs
    return binomial_interval(count, nobs, confidence, method)


def _gap_summary(counts: VerdictCounts) -> dict | None:
    gaps = counts.gaps
    if gaps is None or counts.gap_counts is None or counts.gap_counts_affected is None:
        return None
    levels = [float(q) for q in GAP_QUANTILES]
    return {"quantiles": dict(zip(GAP_QUANTILES, gaps.quantiles(levels, affected=False), strict=True)),
            "quantiles_affected": (dict(zip(GAP_QUANTILES, gaps.quantiles(levels, affected=True), strict=True))
                                   if counts.n_affected else {}),
            "histogram": {"edges": GAP_EDGES.tolist(), "counts": counts.gap_counts.tolist(),
                          "counts_affected": counts.gap_counts_affected.tolist()}}


def _rules(domain: Domain, counts: VerdictCounts, seed: int) -> tuple[tuple[dict, ...], list[str]]:
    """Leaves of a depth-3 tree (affected vs not, non-protected features) richer in affected individuals.

    Fitted level by level from additive histograms (:mod:`chiralfair.verdict.rule_tree`), so a streamed and an
    in-memory verdict on the same rows get the same tree. ``seed`` is not used: the tree is deterministic.
    """
    del seed
    if counts.n_affected in (0, counts.n):
        return (), []
    cols = domain.non_protected
    lo = [domain.features[int(c)].lo for c in cols]
    overall = counts.n_affected / counts.n
    total = counts.n_affected
    rules: list[dict[str, Any]] = []
    for leaf in fitted_leaves(counts.rules, TREE_DEPTH):
        if leaf.n == 0 or leaf.n_affected / leaf.n <= overall:
            continue
        bounds = [(b0 + low, b1 + low) for (b0, b1), low in zip(leaf.bounds, lo, strict=True)]
        rules.append({"rule": _rule_text(domain, cols, bounds), "n": leaf.n, "n_affected": leaf.n_affected,
                      "affected_share": float(leaf.n_affected / leaf.n), "coverage": float(leaf.n_affected / total)})
    rules.sort(key=lambda r: (-r["n_affected"], -r["affected_share"], r["rule"]))
    notes = [] if rules else ["no rule separates affected from unaffected individuals (depth-3 tree)"]
    return tuple(rules[:MAX_RULES]), notes


def _rule_text(domain: Domain, cols, bounds) -> str:
    parts = []
    for j, c in enumerate(cols):
        f = domain.features[c]
        lo, hi = bounds[j]
        if (lo, hi) == (f.lo, f.hi):
            continue
        if f.kind == "categorical":
            inside = [f.label(v) for v in range(lo, hi + 1)]
            outside = [f.label(v) for v in range(f.lo, f.hi + 1) if not lo <= v <= hi]
            parts.append(f"{f.name} in {{{', '.join(inside)}}}" if len(inside) <= len(outside)
                         else f"{f.name} not in {{{', '.join(outside)}}}")
        elif _names_ranges(f):  # labels such as "40-49" (a bin): "age <= 40-49" would not read as a rule
            parts.append(_range_rule(f, lo, hi))
        elif lo == hi:
            parts.append(f"{f.name} = {f.label(lo)}")
        elif lo == f.lo:
            parts.append(f"{f.name} <= {f.label(hi)}")
        elif hi == f.hi:
            parts.append(f"{f.name} >= {f.label(lo)}")
        else:
            parts.append(f"{f.name} in {f.label(lo)} .. {f.label(hi)}")
    return " and ".join(parts) or "every individual"


def _names_ranges(feature) -> bool:
    """Whether an ordinal feature's codes carry labels that are not plain numbers (bins such as ``"40-49"``)."""
    if not feature.labels:
        return False
    try:
        [float(text) for text in feature.labels.values()]
    except ValueError:
        return True
    return False


def _range_rule(feature, lo: int, hi: int) -> str:
    """A rule over a binned ordinal feature in the bins' own words: ``age 40-49 or above``."""
    if lo == hi:
        return f"{feature.name} in {feature.label(lo)}"
    if lo == feature.lo:
        return f"{feature.name} {feature.label(hi)} or below"
    if hi == feature.hi:
        return f"{feature.name} {feature.label(lo)} or above"
    return f"{feature.name} from {feature.label(lo)} to {feature.label(hi)}"


def _notes(population, n_rows, stopped_by, margin, half_width, method, n_groups, gamma, has_proba,
           favourable_note) -> list[str]:
    notes = []
    if stopped_by == "exact":
        notes.append("exact: every individual of the population was checked (each key once, its counterparts "
                     "give the other rows), so shares are exact and intervals have width 0")
    elif stopped_by == "exhausted":
        notes.append("every row of the population was sampled, so shares are exact and intervals have width 0")
    elif population == "domain":
        notes.append("individuals drawn uniformly with replacement from the domain (an effectively infinite "
                     "population): no finite-population correction is needed")
    else:
        notes.append(f"rows sampled without replacement from {n_rows:,}; intervals take no finite-population "
                     "correction, so they are conservative (at least as wide as needed)")
    if stopped_by == "budget":
        notes.append(f"the query budget ran out before the margin was reached: the interval's half-width is "
                     f"{half_width:.4f} > margin {margin:g}")
    if stopped_by in ("margin", "budget", "threshold"):
        notes.append(f"group intervals: {method} at a Bonferroni-corrected level over the {3 * n_groups} group "
                     "intervals (share affected, share harmed and harmed among affected per group), so that all hold "
                     "at once; with many groups they are wide")
    notes.append(favourable_note)
    if gamma is not None:
        notes.append(f"a pair counts as discriminatory only if the labels differ and |P(x) - P(x')| >= {gamma:g}")
    if not has_proba:
        notes.append("the model gives no probabilities: no probability gap")
    return notes


def _statsmodels_version() -> str:
    from importlib.metadata import version  # its version only: importing statsmodels costs half a second

    return version("statsmodels")
