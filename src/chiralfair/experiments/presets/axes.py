"""The axes of a reproduction and how they are named.

The seed strategy expected to win, the labels of the strategies in tables and plots, the figures of a search, and
the counting-rule caveat every table carries. Shared by :mod:`.reproduction` (running a preset) and
:mod:`.paper_tables` (its tables and plots), below both.
"""

from __future__ import annotations

from collections.abc import Sequence

WINNER = "iandd"
LABELS = {"random": "random", "rows": "rows", "cluster": "cluster", "i": "I", "iandd": "I&D", "expga": "ExpGA"}
SEARCH_FIGURES = ("n_idis", "n_global", "n_local", "n_queries", "initialization_rate", "seconds_search",
                  "n_seed_queries", "n_search_queries", "n_total_queries", "budget_hit", "seeds_over_budget")
AXIS_COLUMNS = ("row", "model", "generator", "seeds", "max_global", "max_local", "max_queries")
# How I&D seeds are padded, said the same way in every table (the paper's seed selection and ours).
PADDING_RULE = (
    "**Padding, the paper and chiralfair alike.** I&D seeds are the initial IDIs (the chiral model's disagreement "
    "rows that pass the discrimination check) first; when there are fewer of them than the seeds asked (1,000 in the "
    "paper, `max_global` here), both fill the rest with data rows that are not initial IDIs (the paper in data "
    "order, chiralfair drawn at random); a filler row that happens to be an IDI counts as one. With at least as "
    "many initial IDIs as seeds asked, every seed is an IDI: I&D's initialization rate is then 100% by "
    "construction.")
COUNTING_CAVEAT = (
    "**Counting rule.** Ours: unique non-protected projections (an IDI and its counterpart count once), global "
    "and local disjoint, n_idis = n_global + n_local. I&D's: (counterpart vector, vote label) tuples "
    "(the paper's driver code), so the paper's numbers are not directly comparable with ours: compare ratios "
    "and directions, not values.")


def strategy_label(name: str) -> str:
    """How a seed strategy is named in tables and plots (``iandd`` -> ``I&D``).

    Parameters
    ----------
    name : str
        A seed strategy name.

    Returns
    -------
    str
    """
    return LABELS.get(name, name)


def ordered(values: Sequence, order: Sequence | None) -> list:
    """``values`` without duplicates, in the order of ``order`` first, then in their own order.

    Parameters
    ----------
    values : sequence
    order : sequence or None
        The preferred order (None: ``values``' own).

    Returns
    -------
    list
    """
    seen = list(dict.fromkeys(values))
    first = [v for v in (order or ()) if v in seen]
    return first + [v for v in seen if v not in first]
