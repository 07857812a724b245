"""UCI Bank Marketing encoded as in ADF (``bank_process.py``), built from ``bank/raw/bank-full.csv``.

45,211 rows × 16 features in file order. Encoding (data README §3–4): age // 10 clipped to 1..9; categoricals
by ADF's hand-written lists (``unknown`` is a category of the data; an empty field would become a category of
its own, labelled ``"missing"``); balance **floor**-divided by 50 and clipped to -20..179 (ADF ran under
Python 2, where integer division floors); duration // 10 capped at 99; day and campaign unchanged; pdays
becomes the flag "never contacted before" (pdays == -1); previous clipped to 0..1. Label: y ``yes`` = 1.

References
----------
Moro, S., Laureano, R. and Cortez, P. (2011). Using data mining for bank direct marketing. ESM 2011.
Zhang, P. et al. (2020). White-box fairness testing through adversarial sampling. ICSE (ADF).
"""

from __future__ import annotations

import numpy as np

from ._parse import Table, bin_labels, binary_label, codes, integers
from ._spec import Column, DatasetSpec, Encoded

CATEGORIES = {
    "job": ["admin.", "unknown", "unemployed", "management", "housemaid", "entrepreneur", "student",
            "blue-collar", "self-employed", "retired", "technician", "services"],
    "marital": ["married", "divorced", "single"],
    "education": ["unknown", "secondary", "primary", "tertiary"],
    "default": ["no", "yes"],
    "housing": ["no", "yes"],
    "loan": ["no", "yes"],
    "contact": ["unknown", "telephone", "cellular"],
    "month": ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    "poutcome": ["unknown", "other", "failure", "success"],
}
NAMES = ("age", "job", "marital", "education", "default", "balance", "housing", "loan", "contact", "day",
         "month", "duration", "campaign", "pdays", "previous", "poutcome")


def _categorical(table: Table, name: str) -> Column:
    values, labels = codes(table, name, CATEGORIES[name], missing_label="missing")
    return Column(name, values, "categorical", labels)


def _binned(table: Table, name: str, width: int, lowest: int | None, highest: int, unit: str = "") -> Column:
    values = np.clip(integers(table, name) // width, lowest, highest)
    labels = bin_labels(values, width, unit=unit, lowest=lowest, highest=highest)
    return Column(name, values, "ordinal", labels)


def _encode(table: Table) -> Encoded:
    """Encode ``bank-full.csv`` (see the module docstring)."""
    never_contacted = (integers(table, "pdays") == -1).astype(np.int64)
    contacted_before = np.clip(integers(table, "previous"), 0, 1)
    columns = []
    for name in NAMES:
        if name in CATEGORIES:
            columns.append(_categorical(table, name))
        elif name == "age":
            # 1 is the lowest bin by construction (18 // 10); ages of 90 and over share bin 9.
            columns.append(_binned(table, "age", 10, lowest=None, highest=9))
        elif name == "balance":
            columns.append(_binned(table, "balance", 50, lowest=-20, highest=179, unit=" EUR"))
        elif name == "duration":
            columns.append(_binned(table, "duration", 10, lowest=None, highest=99, unit=" s"))
        elif name == "pdays":
            columns.append(Column("pdays", never_contacted, "categorical",
                                  {0: "contacted before", 1: "never contacted"}))
        elif name == "previous":
            columns.append(Column("previous", contacted_before, "ordinal", {0: "0", 1: "1+"}))
        else:  # day, campaign: unchanged
            columns.append(Column(name, integers(table, name), "ordinal"))
    return Encoded.from_columns(columns, binary_label(table, "y", "yes", "no"))


SPEC = DatasetSpec(
    name="bank",
    raw="bank/raw/bank-full.csv",
    protected=("age",),
    label="y",
    positive_class="yes",
    description="UCI Bank Marketing (bank-full.csv), ADF encoding",
    read={"delimiter": ";", "usecols": (*NAMES, "y")},
    encode=_encode,
)
