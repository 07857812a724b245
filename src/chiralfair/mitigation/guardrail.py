"""The guardrail: a method that does not lower the IDI rate, costs too much F1 or widens a group gap, says so.

Three tests, every figure on the held-out test rows (no choice is made on them):

- **groups**: the demographic-parity and equalized-odds differences after may exceed the ones before by at most
  ``max_group_increase`` (default 0.02); a method that raises one further is not an improvement, and this is said
  first, with both figures and their 95% bootstrap intervals. An equalized-odds difference that is undefined
  (a group without positive or negative test rows) is not judged.
- **individuals**: the 95% interval of the IDI rate over the test rows after lies wholly below the interval before:
  a point estimate that moved inside the noise is not an improvement.
- **F1**: F1 before minus F1 after may be at most the budget: the larger of ``max_f1_loss`` and the model's own F1
  spread over training seeds (:mod:`.spread`), when it was measured; the loss is also stated in units of the spread.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_F1_LOSS = 0.01
DEFAULT_MAX_GROUP_INCREASE = 0.02
# The share of the model's own IDI rate a mitigation sets out to remove (auto's goal; judged again on the test rows).
IDI_GOAL = 0.9
GROUP_METRICS = (("equalized_odds", "equalized-odds difference"),
                 ("demographic_parity", "demographic-parity difference"))


def f1_budget(max_f1_loss: float, spread: dict[str, Any] | None) -> float:
    """The F1 a method may lose: ``max(max_f1_loss, spread)``.

    Parameters
    ----------
    max_f1_loss : float
    spread : dict or None
        :func:`chiralfair.mitigation.spread.measure_spread`'s, or None when not measured.

    Returns
    -------
    float
    """
    return max(float(max_f1_loss), float(spread["spread"])) if spread else float(max_f1_loss)


def judge(before: dict[str, Any], after: dict[str, Any], max_f1_loss: float = DEFAULT_MAX_F1_LOSS, *,
          max_group_increase: float = DEFAULT_MAX_GROUP_INCREASE, spread: dict[str, Any] | None = None
          ) -> tuple[bool, str]:
    """Whether ``after`` improves on ``before``, and the words that say why not (the group metrics first).

    Parameters
    ----------
    before, after : dict
        Rows with ``test_idi_rate``, ``test_idi_lower``, ``test_idi_upper``, ``f1`` and, when measured,
        ``demographic_parity_difference`` / ``equalized_odds_difference`` with their ``_lower`` / ``_upper``.
    max_f1_loss : float, default=0.01
    max_group_increase : float, default=0.02
        How much either group metric may rise.
    spread : dict, optional
        The model's own F1 spread over training seeds.

    Returns
    -------
    improved : bool
    words : str
        Empty when improved; else one sentence per failure.
    """
    reasons = group_reasons(before, after, max_group_increase)
    if not after["test_idi_upper"] < before["test_idi_lower"]:
        where = "is higher" if after["test_idi_lower"] > before["test_idi_upper"] else "is not lower"
        reasons.append(f"the held-out IDI rate {where}: {_rate(after)} after against {_rate(before)} before "
                       "(95% intervals over the test rows; the after interval is not wholly below the before one)")
    loss = before["f1"] - after["f1"]
    budget = f1_budget(max_f1_loss, spread)
    if loss > budget:
        reasons.append(f"it costs {loss:.3f} F1 on the test rows ({before['f1']:.3f} -> {after['f1']:.3f}"
                       f"{_in_spreads(loss, spread)}), more than the budget of {budget:g}"
                       + (f" (the larger of {max_f1_loss:g} and the model's own spread)" if spread else ""))
    return not reasons, "; ".join(reasons)


def goal_misses(before: dict[str, Any], after: dict[str, Any], *, f1_budget: float, max_group_increase: float,
                idi_goal: float = IDI_GOAL) -> list[str]:
    """Each part of the goal ``after`` misses on the held-out test rows, in words with both figures.

    The goal: the IDI rate lowered by at least ``idi_goal`` of its value before, an F1 loss of at most ``f1_budget``,
    and neither group metric raised by more than ``max_group_increase`` (an undefined one is not judged). Unlike
    :func:`judge`, which asks whether a method improved at all, this asks whether it reached what ``auto`` promised
    on its validation rows, so a claim made there is checked where it matters.

    Parameters
    ----------
    before, after : dict
        Rows with ``test_idi_rate``, ``f1`` and, when measured, the group metrics' ``_difference``.
    f1_budget : float
        :func:`f1_budget`'s.
    max_group_increase : float
    idi_goal : float, default=IDI_GOAL
        A share in [0, 1].

    Returns
    -------
    list of str
        Empty when every part is met.
    """
    misses = []
    rate_before, rate_after = before["test_idi_rate"], after["test_idi_rate"]
    if rate_before and 1.0 - rate_after / rate_before < idi_goal:
        misses.append(f"the IDI rate falls by {1.0 - rate_after / rate_before:.1%} ({rate_before:.2%} -> "
                      f"{rate_after:.2%}), short of {idi_goal:.0%}")
    loss = before["f1"] - after["f1"]
    if loss > f1_budget:
        misses.append(f"F1 loss {loss:.4g} ({before['f1']:.4f} -> {after['f1']:.4f}) > {f1_budget:g}")
    for key, words in GROUP_METRICS:
        b, a = before.get(f"{key}_difference"), after.get(f"{key}_difference")
        if a is not None and b is not None and a - b > max_group_increase:
            misses.append(f"{words} {b:.3f} -> {a:.3f} (+{a - b:.4g} > {max_group_increase:g})")
    return misses


def group_reasons(before: dict[str, Any], after: dict[str, Any], bound: float) -> list[str]:
    """One sentence per group metric that rose by more than ``bound``.

    Parameters
    ----------
    before, after : dict
        Rows with the group metrics (a missing or undefined one is not judged).
    bound : float

    Returns
    -------
    list of str
    """
    out = []
    for key, words in GROUP_METRICS:
        b, a = before.get(f"{key}_difference"), after.get(f"{key}_difference")
        if a is None or b is None or a - b <= bound:
            continue
        out.append(f"it raises the {words} by {a - b:.4g} ({_group(before, key)} -> {_group(after, key)}), more "
                   f"than the bound of {bound:g}")
    return out


def _group(row: dict[str, Any], key: str) -> str:
    value, low, high = row.get(f"{key}_difference"), row.get(f"{key}_lower"), row.get(f"{key}_upper")
    return f"{value:.3f}" + ("" if low is None or high is None else f" [{low:.3f}, {high:.3f}]")


def _in_spreads(loss: float, spread: dict[str, Any] | None) -> str:
    if not spread or not spread["spread"]:  # not measured, or a model no seed moves: the budget says it all
        return ""
    return (f"; {loss / spread['spread']:.1f}x the model's own spread {spread['spread']:.3f} over "
            f"{len(spread['seeds'])} training seeds on validation rows")


def _rate(row: dict[str, Any]) -> str:
    return f"{row['test_idi_rate']:.2%} [{row['test_idi_lower']:.2%}, {row['test_idi_upper']:.2%}]"
