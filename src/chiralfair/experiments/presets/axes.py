"""The axes of a reproduction and how they are named.

The seed strategy expected to win, the labels of the strategies in tables and plots, the figures of a search, and
the counting-rule caveat every table carries. Shared by :mod:`.reproduction` (running a preset) and
:mod:`.paper_tables` (its tables and plots), below both.
"""

from __future__ import annotations

from collections.abc import Sequence

WINNER = "iandd"
LABELS = {"random": "random", "rows": "rows", "cluster": "cluster", "i": "I", "iandd": "I&D", "expga": "ExpGA"}
SEARCH_FIGURES = ("n_idis", "n_global", "n_local", "n_queries", "initialization_rate", "seconds_search")
AXIS_COLUMNS = ("row", "model", "generator", "seeds", "max_global", "max_local")
COUNTING_CAVEAT = (
    "**Counting rule.** Ours: unique non-protected projections (an IDI and its counterpart count once), global "
    "and local disjoint, n_idis = n_global + n_local. I&D's: (counterpart vector, vote label) tuples "
    "(algorithms.md §8 \"I&D counting\"), so the paper's numbers are not directly comparable with ours; the claims "
    "below compare directions (which seeds find more), not values.")


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
