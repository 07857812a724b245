"""The fairness gate: a verdict's interval against a threshold on the share affected, as pass, fail or undecided.

A deploy gate asks one question: is the share of individuals the model discriminates at most ``max_share``? The
verdict answers with an interval, so there are three answers, each with its exit code:

- **pass** (0): the interval's upper bound is at most ``max_share``, and every protected group was tested;
- **fail** (1): its lower bound is above ``max_share``;
- **undecided** (2): the interval straddles ``max_share`` (more held-out rows or queries, or a threshold further
  from the share, are needed), or the interval is below it but a protected group could not be tested (a value the
  model refuses, whose rows were left out; a group no checked individual belongs to): a pass would speak for people
  the gate never saw.

Which interval, that is which population the decision speaks about (:data:`READINGS`):

- ``"superpopulation"`` (default): the people the model will meet. The held-out rows are read as a sample of
  them, so even when every row was checked (an exact verdict, "exact for these N rows") the decision is made on
  the exact binomial (Clopper-Pearson) interval of the count affected among those N rows, the one the verdict
  decided (:attr:`Verdict.people_lower <chiralfair.verdict.Verdict>`, :func:`superpopulation_interval`); 2 of 600
  affected is 0.33% [0.04%, 1.20%], not 0.33% exactly. A sampled verdict's interval already is such an interval
  (its individuals are a sample, drawn without replacement, of the rows). Uniform draws from the input domain are
  no sample of people: for ``population="domain"`` the reading is the domain's own.
- ``"rows"``: the rows checked themselves. An exact verdict then has an interval of width 0 and is never
  undecided by its share.

The decision quotes the worst group the verdict decided (:attr:`Verdict.worst_group
<chiralfair.verdict.Verdict>`: the largest share harmed among the groups not too small to tell, whose
individuals get the unfavourable label while a counterpart differing only in the protected attributes gets the
favourable one), with the interval the verdict gave it, and names the groups too small to tell.

References
----------
.. [1] Clopper, Pearson. "The use of confidence or fiducial limits illustrated in the case of the binomial."
   Biometrika 26(4), 1934.
.. [2] Cochran. *Sampling Techniques*, 3rd ed., Wiley 1977, ch. 3 (a finite population as a sample of a
   superpopulation).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .._validation import check_choice, check_float
from ..exceptions import ConfigError
from .result import (
    Verdict,
    _level_text,
    interval_name,
    one_label_line,
    sample_interval,
    too_small_text,
    verdict_queries_text,
)

EXIT_CODES = {"pass": 0, "fail": 1, "undecided": 2}
# Which population a decision speaks about: the people the model will meet, or the rows checked.
READINGS = ("superpopulation", "rows")
# Exit code of a refusal (bad flag, file or value) or a usage error of ``chiralfair check``: never 0, 1 or 2.
REFUSED_EXIT_CODE = 3
# Exit code of an unexpected error (a bug) in ``chiralfair check``: never read as a decision either.
CRASHED_EXIT_CODE = 4
METHOD_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson"}


@dataclass(frozen=True)
class GateDecision:
    """Pass, fail or undecided: the share affected and its interval, in the decision's reading, against ``max_share``.

    Attributes
    ----------
    outcome : {"pass", "fail", "undecided"}
    exit_code : int
        0, 1 or 2 (:data:`EXIT_CODES`).
    max_share : float
        The threshold on the share affected, in [0, 1].
    share, lower, upper : float
        The share affected and the interval the decision was made on (``reading``; ``confidence``).
    confidence : float
    method : str
    exact : bool
        Whether every individual of the population was checked (the verdict's share is exact for those rows).
    population : str
        The rows the verdict checked, in words (:attr:`Verdict.population_text`; e.g. "the given test rows (600)").
    n_individuals, n_queries : int
    worst_group : dict or None
        The verdict's worst group (:func:`worst_group`: ``group``, ``n``, ``n_harmed``, ``share_harmed``,
        ``share_harmed_lower``, ``share_harmed_upper``, ``share_affected``), its interval in the decision's
        reading; None when no group large enough to tell was harmed.
    verdict : Verdict
        The verdict the decision was made on.
    reading : {"superpopulation", "rows", "domain"}
        Which population the interval speaks about (see the module docstring); ``"domain"`` for uniform draws.
    n_affected : int
        Individuals affected among those checked.
    rows_lower, rows_upper : float
        The verdict's own interval, over the rows checked (width 0 when ``exact``: "exact for these N rows").
    untested : tuple of dict
        The protected groups the gate could not test (:func:`untested_groups`): ``group``, ``why`` and
        ``n_rows`` (rows left out, for a value the model refuses). Any of them turns a pass into undecided.
    """

    outcome: str
    exit_code: int
    max_share: float
    share: float
    lower: float
    upper: float
    confidence: float
    method: str
    exact: bool
    population: str
    n_individuals: int
    n_queries: int
    worst_group: dict[str, Any] | None
    verdict: Verdict
    reading: str = "superpopulation"
    n_affected: int = 0
    rows_lower: float | None = None
    rows_upper: float | None = None
    untested: tuple[dict[str, Any], ...] = ()

    @property
    def passed(self) -> bool:
        """Whether the gate passed (the whole interval is at most ``max_share``, every group tested)."""
        return self.outcome == "pass"

    def line(self) -> str:
        """One line for a CI log: decision, share and interval, threshold, population and reading, groups.

        Returns
        -------
        str
        """
        head = {"pass": "PASS", "fail": "FAIL", "undecided": "UNDECIDED"}[self.outcome]
        straddles = self.lower <= self.max_share < self.upper
        relation = "straddles" if straddles else ("<=" if self.upper <= self.max_share else ">")
        share = _interval_text(self.share, self.lower, self.upper, self.lower == self.upper == self.share)
        text = (f"chiralfair check {head}: share affected {share} {relation} max share {self.max_share:.2%}, "
                f"{self._reading_text()}; {verdict_queries_text(self.verdict)}; {self._worst_text()}")
        if one_label := one_label_line(self.verdict.meta):
            text += f"; {one_label}"
        if self.n_affected == 0 and (proxies := self.verdict.meta.get("proxies")):
            from .proxies import blind_spot_line

            text += f"; {blind_spot_line(proxies)}"
        if self.verdict.n_left_out or self.verdict.n_unplaced:
            text += f"; left out: {self._left_out_text()}"
        if small := too_small_text(self.verdict):
            level = ("" if self.verdict.people_confidence is None else
                     f" (intervals {_level(self.verdict.people_confidence)} Clopper-Pearson for the group's people)")
            text += f"; too small to tell, not ranked{level}: {small}"
        if self.untested:
            text += "; not tested: " + "; ".join(f"{g['group']} ({g['why']})" for g in self.untested)
        if self.outcome == "undecided":
            text += f"; undecided: {self._undecided_hint(straddles)}"
        return text

    def message(self) -> str:
        """:meth:`line`, then the verdict's summary (what a failed test prints).

        Returns
        -------
        str
        """
        return f"{self.line()}\n{self.verdict.summary()}"

    def to_dict(self) -> dict[str, Any]:
        """The decision's figures (the verdict as :meth:`Verdict.to_json` holds it).

        Returns
        -------
        dict
        """
        out = {k: v for k, v in asdict(self).items() if k != "verdict"}
        out["untested"] = [dict(g) for g in self.untested]
        out["line"] = self.line()
        out["verdict"] = json.loads(self.verdict.to_json())
        return out

    def _reading_text(self) -> str:
        how = f"{self.confidence:.0%} {METHOD_NAMES.get(self.method, self.method)}"
        if not self.exact:
            how = interval_name(self.verdict)
            if (own := sample_interval(self.verdict)) is not None:
                how += (f"; the gate decided on that interval. The same sample read once, as estimate reads it: "
                        f"[{own[0]:.2%}, {own[1]:.2%}], {self.verdict.confidence:.0%} "
                        f"{METHOD_NAMES.get(self.verdict.method, self.verdict.method)}, narrower as it holds for "
                        "one look only")
        n = self.n_individuals
        if self.reading == "domain":
            what = "every point checked" if self.exact else f"{n:,} draws, {how}"
            return f"over {self.population} ({what})"
        if self.reading == "rows":
            if self.exact:
                return (f"exact for these {n:,} rows: every individual of {self.population} checked (the people the "
                        "model will meet may differ: the default reading, superpopulation, says how much)")
            return f"over {self.population} ({n:,} individuals sampled from them, {how})"
        if self.exact:
            exact = _interval_text(self.verdict.share, None, None, True)
            return (f"for the people the model will meet ({how}, the {n:,} individuals of {self.population} read as "
                    f"a sample of them; exact for these {n:,} rows: {exact})")
        return (f"for the people the model will meet ({how}; {n:,} individuals sampled from {self.population}, read "
                "as a sample of them)")

    def _undecided_hint(self, straddles: bool) -> str:
        if not straddles:
            return "the interval lies below the threshold, but a pass would speak for the groups not tested"
        if self.exact and self.reading == "superpopulation":
            few = f"{self.n_individuals:,} held-out rows are too few to tell at this confidence"
            if self.verdict.n_left_out:
                return (f"{few}, because the constraint(s) left the other {self.verdict.n_left_out:,} out (above): "
                        "loosen them, give more held-out rows (--test), or a threshold further from the share")
            return f"{few}: give more held-out rows (--test), or a threshold further from the share"
        return "raise --max-queries, or lower --margin, to narrow the interval"

    def _left_out_text(self) -> str:
        v = self.verdict
        n_read = v.n_individuals + v.n_left_out + v.n_unplaced  # the share's individuals are n_individuals
        parts = []
        if v.n_left_out:
            rules = "; ".join(v.constraints) or "the domain's constraints"
            parts.append(f"{v.n_left_out:,} of the {n_read:,} individuals read were left out, none of whose "
                         f"counterparts could exist (each breaks: {rules})")
        parts += [f"{n:,} of the {n_read:,} individuals read were left out, their own {attribute} missing or "
                  "not among its values (in no group)" for attribute, n in v.unplaced.items()]
        return "; ".join(parts)

    def _worst_text(self) -> str:
        g = self.worst_group
        if g is None:
            return "no group harmed"
        exact = g["share_harmed_lower"] is None or g["share_harmed_lower"] == g["share_harmed_upper"]
        share = _interval_text(g["share_harmed"], g["share_harmed_lower"], g["share_harmed_upper"], exact)
        level = "" if exact else f", {_group_interval_name(self.verdict, self.reading)}"
        return f"worst group {g['group']}: {share} harmed ({g['n_harmed']:,} of {g['n']:,}{level})"


def _group_interval_name(verdict: Verdict, reading: str) -> str:
    """The worst group's interval named, level and rule, as :func:`worst_group` picked it for ``reading``."""
    g = verdict.worst() or {}
    people = verdict.people_confidence  # set whenever the groups have people's intervals
    if reading == "superpopulation" and g.get("people_harmed_lower") is not None and people is not None:
        return f"{_level(people)} Clopper-Pearson for the group's people"
    return (f"{_level(verdict.group_confidence)} {METHOD_NAMES.get(verdict.method, verdict.method)}, "
            f"Bonferroni over the {3 * len(verdict.groups)} group intervals")


def _level(level: float) -> str:
    """95% as "95%", 96.96% as "96.96%" (never rounded to a level it is not)."""
    whole = f"{level:.0%}"
    return whole if abs(round(level, 2) - level) < 1e-12 else _level_text(level)


def decide(verdict: Verdict, max_share: float, *, reading: str = "superpopulation") -> GateDecision:
    """Decide pass, fail or undecided on ``verdict`` against ``max_share``.

    Parameters
    ----------
    verdict : Verdict
        Best estimated with ``threshold=max_share`` (:func:`chiralfair.verdict.estimate`), so that sampling stops
        as soon as the interval lies on one side of the threshold, with the confidence kept over the looks.
    max_share : float
        Largest acceptable share of individuals affected, in [0, 1].
    reading : {"superpopulation", "rows"}, default="superpopulation"
        Decide for the people the model will meet (the rows checked as a sample of them) or for the rows checked
        themselves (see the module docstring). Uniform draws from the domain are read as the domain either way.

    Returns
    -------
    GateDecision

    Raises
    ------
    ConfigError
        If ``max_share`` lies outside [0, 1], or ``reading`` is not one of :data:`READINGS`.
    """
    max_share = check_float(max_share, "max_share", minimum=0.0, maximum=1.0)
    reading = check_choice(reading, "reading", READINGS)
    if not isinstance(verdict, Verdict):
        raise ConfigError(f"decide() needs a Verdict, got {type(verdict).__name__}")
    if verdict.population == "domain":
        reading = "domain"
    lower, upper = superpopulation_interval(verdict) if reading == "superpopulation" else (verdict.lower,
                                                                                            verdict.upper)
    if lower is None or upper is None:
        raise ConfigError("the verdict checked no individual, so there is no interval to decide on")
    untested = untested_groups(verdict)
    if lower > max_share:
        outcome = "fail"
    elif upper <= max_share and not untested:
        outcome = "pass"
    else:
        outcome = "undecided"
    return GateDecision(outcome=outcome, exit_code=EXIT_CODES[outcome], max_share=max_share, share=verdict.share,
                        lower=lower, upper=upper, confidence=verdict.confidence,
                        method=(verdict.people_method or verdict.method) if reading == "superpopulation"
                        else verdict.method, exact=verdict.exact,
                        population=verdict.population_text,
                        n_individuals=verdict.n_individuals, n_queries=verdict.n_queries,
                        worst_group=worst_group(verdict, reading=reading), verdict=verdict, reading=reading,
                        n_affected=verdict.n_affected, rows_lower=verdict.lower, rows_upper=verdict.upper,
                        untested=untested)


def superpopulation_interval(verdict: Verdict) -> tuple[float, float]:
    """The interval of the share among the people the model will meet, as the verdict decided it.

    :attr:`Verdict.people_lower <chiralfair.verdict.Verdict>` and ``people_upper``
    (:func:`chiralfair.verdict.result.people_interval`): a sampled verdict's own interval, or, for a verdict exact
    over its rows, the Clopper-Pearson interval of its count, the rows read as a sample of the people. Uniform
    draws from the domain are no sample of people: their own interval.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    (float, float)
        Lower and upper bounds, in [0, 1].
    """
    if verdict.people_lower is None or verdict.people_upper is None:
        return verdict.lower, verdict.upper
    return verdict.people_lower, verdict.people_upper


def untested_groups(verdict: Verdict) -> tuple[dict[str, Any], ...]:
    """The protected groups the verdict could not test: values the model refuses, groups nobody checked is in.

    A protected value the model cannot take (its encoder never saw it) is left out of the protected domain, with
    the rows holding it (``verdict.meta["left_out"]``, written by the pipeline); a group (a value, or a
    combination of values) that no individual checked belongs to has ``n == 0``. The share harmed of neither is
    known.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    tuple of dict
        ``group`` (``"race=c"``), ``why`` (in words) and ``n_rows`` (rows left out; 0 for an empty group).
    """
    out = []
    for value in verdict.meta.get("left_out") or ():
        rows = int(value.get("n_rows", 0))
        held_out = value.get("n_held_out")
        where = f"{rows:,} data rows" + (f", {held_out:,} of them held out," if held_out is not None else "")
        out.append({"group": f"{value['attribute']}={value['value']}", "n_rows": rows,
                    "why": f"the model refuses this value: {where} left out"})
    rows_word = "draw" if verdict.population == "domain" else "row checked"
    for g in verdict.groups:
        if not g.get("n"):
            out.append({"group": g["group"], "n_rows": 0, "why": f"no {rows_word} holds it"})
    return tuple(out)


def worst_group(verdict: Verdict, *, reading: str = "rows") -> dict[str, Any] | None:
    """The verdict's worst group (:attr:`Verdict.worst_group <chiralfair.verdict.Verdict>`), with its interval.

    Which group it is, and which groups are too small to tell, the verdict decided once
    (:func:`chiralfair.verdict.result.decide_groups`); this only picks the interval of the reading.

    Parameters
    ----------
    verdict : Verdict
    reading : {"rows", "superpopulation", "domain"}, default="rows"
        The interval of its share harmed: the verdict's own (width 0 when exact), or, for ``"superpopulation"``,
        the one for the people of that group (``people_harmed_lower``, ``people_harmed_upper``).

    Returns
    -------
    dict or None
        The group's record (keys of :data:`~chiralfair.verdict.GROUP_COLUMNS`); None when no group large enough to
        tell was harmed.
    """
    g = verdict.worst()
    if g is None:
        return None
    keys = ("attribute", "group", "n", "n_harmed", "share_harmed", "share_harmed_lower", "share_harmed_upper",
            "share_affected")
    out = {k: g.get(k) for k in keys}
    if reading == "superpopulation" and g.get("people_harmed_lower") is not None:
        out["share_harmed_lower"], out["share_harmed_upper"] = g["people_harmed_lower"], g["people_harmed_upper"]
    return out


def _interval_text(share, lower, upper, exact: bool) -> str:
    if exact or lower is None:
        return f"{share:.2%}"
    return f"{share:.2%} [{lower:.2%}, {upper:.2%}]"
