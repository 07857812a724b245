"""Values that look alike and values that stand for "missing", told apart before they become codes.

A category value becomes one code per distinct Python value (:func:`~chiralfair.datasets.from_frame`), so two
spellings of one value ("Zürich" composed, NFC, and decomposed, NFD; ``"Male"`` and ``" Male"``) become two
codes, and a protected attribute would then have counterparts that differ only in spelling: IDIs that mean
nothing. :func:`spelling_key` is the form two values share when they differ only in Unicode normal form or
whitespace, and :func:`alike_groups` finds them. Adult's missing-value token ``"?"`` often keeps the space that
follows the comma in the raw file (``" ?"``): :func:`is_missing_token` recognises it, so that it is a missing
value (a category of its own, architecture: the population and the domain) while the model is still fed the original
text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

# Text that stands for a missing value once stripped of surrounding whitespace (UCI Adult writes "?").
MISSING_TOKENS = ("?",)


def spelling_key(value) -> str | None:
    """The text two spellings of one value share: Unicode NFC, outer whitespace stripped, inner runs as one space.

    Parameters
    ----------
    value : object

    Returns
    -------
    str or None
        None for a value that is not text (numbers, booleans, None): only text has spellings.
    """
    if not isinstance(value, str):
        return None
    return " ".join(unicodedata.normalize("NFC", value).split())


def alike_groups(values: Iterable) -> list[list]:
    """Groups of two or more distinct values that share a :func:`spelling_key`, in first-seen order.

    Parameters
    ----------
    values : iterable
        Distinct values of a column (its categories).

    Returns
    -------
    list of list
        Each inner list holds the spellings of one value, e.g. ``[["Zürich" (NFC), "Zürich" (NFD)]]``; empty
        when no two values look alike.
    """
    by_key: dict[str, list] = {}
    for v in values:
        key = spelling_key(v)
        if key is not None:
            by_key.setdefault(key, []).append(v)
    return [group for group in by_key.values() if len(group) > 1]


def show_spelling(value) -> str:
    r"""``repr`` of a value, with its code points spelled out when they differ from what it looks like.

    ``'Zürich'`` composed shows as ``'Zürich' ('Zürich')`` and decomposed as ``'Zürich' ('Zürich')``, so
    that two values printed side by side can be told apart.

    Parameters
    ----------
    value : object

    Returns
    -------
    str
    """
    if isinstance(value, str) and not value.isascii():
        return f"{value!r} ({ascii(value)})"
    return repr(value.item() if hasattr(value, "item") else value)


def is_missing_token(value) -> bool:
    """Whether ``value`` is text that stands for a missing value (``"?"``, ``" ?"``, ...; :data:`MISSING_TOKENS`).

    Parameters
    ----------
    value : object

    Returns
    -------
    bool
    """
    return isinstance(value, str) and value.strip() in MISSING_TOKENS
