"""The fairness gate: a verdict's interval against a threshold on the share affected, as pass, fail or undecided.

A deploy gate asks one question: is the share of individuals the model discriminates at most ``max_share``? The
verdict answers with an interval, so there are three answers, each with its exit code:

- **pass** (0): the interval's upper bound is at most ``max_share``;
- **fail** (1): its lower bound is above ``max_share``;
- **undecided** (2): the interval straddles ``max_share`` (more queries, or a threshold further from the share,
  are needed).

An exact verdict (every individual checked) has an interval of width 0 and is never undecided. The decision
quotes the worst group: the protected group with the largest share harmed (its individuals get the unfavourable
label while a counterpart differing only in the protected attributes gets the favourable one).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from .._validation import check_float
from ..exceptions import ConfigError
from .result import Verdict

EXIT_CODES = {"pass": 0, "fail": 1, "undecided": 2}
# Exit code of a refusal (bad flag, file or value) or a usage error of ``chiralfair check``: never 0, 1 or 2.
REFUSED_EXIT_CODE = 3
# Exit code of an unexpected error (a bug) in ``chiralfair check``: never read as a decision either.
CRASHED_EXIT_CODE = 4


@dataclass(frozen=True)
class GateDecision:
    """Pass, fail or undecided: the verdict's share affected and its interval against ``max_share``.

    Attributes
    ----------
    outcome : {"pass", "fail", "undecided"}
    exit_code : int
        0, 1 or 2 (:data:`EXIT_CODES`).
    max_share : float
        The threshold on the share affected, in [0, 1].
    share, lower, upper : float
        The verdict's share affected and its interval (``confidence``; width 0 when ``exact``).
    confidence : float
    method : str
    exact : bool
    population : str
        The rows the verdict checked, in words (:attr:`Verdict.population_text`; e.g. "a held-out split of the
        given data (...) that may include rows the model was fitted on").
    n_individuals, n_queries : int
    worst_group : dict or None
        The group with the largest share harmed (``group``, ``n``, ``n_harmed``, ``share_harmed``,
        ``share_harmed_lower``, ``share_harmed_upper``, ``share_affected``); None when no group was harmed.
    verdict : Verdict
        The verdict the decision was made on.
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

    @property
    def passed(self) -> bool:
        """Whether the gate passed (the whole interval is at most ``max_share``)."""
        return self.outcome == "pass"

    def line(self) -> str:
        """One line for a CI log: decision, share and interval, threshold, population, worst group.

        Returns
        -------
        str
        """
        head = {"pass": "PASS", "fail": "FAIL", "undecided": "UNDECIDED"}[self.outcome]
        relation = {"pass": "<=", "fail": ">", "undecided": "straddles"}[self.outcome]
        how = "exact" if self.exact else f"{self.confidence:.0%} {self.method}"
        share = _interval_text(self.share, self.lower, self.upper, self.exact)
        text = (f"chiralfair check {head}: share affected {share} ({how}; {self.n_individuals:,} individuals of "
                f"{self.population}, {self.n_queries:,} queries) {relation} max share {self.max_share:.2%}; "
                f"{self._worst_text()}")
        if self.outcome == "undecided":
            text += "; undecided: raise --max-queries, or lower --margin, to narrow the interval"
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
        out["verdict"] = json.loads(self.verdict.to_json())
        return out

    def _worst_text(self) -> str:
        g = self.worst_group
        if g is None:
            return "no group harmed"
        share = _interval_text(g["share_harmed"], g["share_harmed_lower"], g["share_harmed_upper"], self.exact)
        return f"worst group {g['group']}: {share} harmed ({g['n_harmed']:,} of {g['n']:,})"


def decide(verdict: Verdict, max_share: float) -> GateDecision:
    """Decide pass, fail or undecided on ``verdict`` against ``max_share``.

    Parameters
    ----------
    verdict : Verdict
        Best estimated with ``threshold=max_share`` (:func:`chiralfair.verdict.estimate`), so that sampling stops
        as soon as the interval lies on one side of the threshold, with the confidence kept over the looks.
    max_share : float
        Largest acceptable share of individuals affected, in [0, 1].

    Returns
    -------
    GateDecision

    Raises
    ------
    ConfigError
        If ``max_share`` lies outside [0, 1].
    """
    max_share = check_float(max_share, "max_share", minimum=0.0, maximum=1.0)
    if not isinstance(verdict, Verdict):
        raise ConfigError(f"decide() needs a Verdict, got {type(verdict).__name__}")
    if verdict.upper <= max_share:
        outcome = "pass"
    elif verdict.lower > max_share:
        outcome = "fail"
    else:
        outcome = "undecided"
    return GateDecision(outcome=outcome, exit_code=EXIT_CODES[outcome], max_share=max_share, share=verdict.share,
                        lower=verdict.lower, upper=verdict.upper, confidence=verdict.confidence,
                        method=verdict.method, exact=verdict.exact,
                        population=verdict.population_text,
                        n_individuals=verdict.n_individuals, n_queries=verdict.n_queries,
                        worst_group=worst_group(verdict), verdict=verdict)


def worst_group(verdict: Verdict) -> dict[str, Any] | None:
    """The group with the largest share harmed (ties: the larger group); None when no group was harmed.

    Parameters
    ----------
    verdict : Verdict

    Returns
    -------
    dict or None
        The group's record (keys of :data:`~chiralfair.verdict.GROUP_COLUMNS`).
    """
    harmed = [g for g in verdict.groups if g.get("n_harmed") and g.get("share_harmed") is not None]
    if not harmed:
        return None
    g = max(harmed, key=lambda g: (g["share_harmed"], g["n"]))
    keys = ("attribute", "group", "n", "n_harmed", "share_harmed", "share_harmed_lower", "share_harmed_upper",
            "share_affected")
    return {k: g.get(k) for k in keys}


def _interval_text(share, lower, upper, exact: bool) -> str:
    if exact or lower is None:
        return f"{share:.2%}"
    return f"{share:.2%} [{lower:.2%}, {upper:.2%}]"
