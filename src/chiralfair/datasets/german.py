"""UCI Statlog German Credit encoded as in ADF, built from ``german/raw/german.data``.

1,000 rows × 20 features in file order. Every qualitative ``A..`` code becomes its 0-based position within its
attribute (A11→0 … A14→3, A40→0 … A410→10, …); credit_amount // 100 and age // 10; the other numbers are
unchanged. Attribute 9 (personal status and sex) becomes ``sex``: 1 = female (A92, A95), 0 = male. Label:
1 = good credit (UCI class 1), 0 = bad (class 2). ADF's ``credit_sample`` is a balanced 600-row sample of
these rows.

References
----------
Hofmann, H. (1994). Statlog (German Credit Data). UCI Machine Learning Repository. doi:10.24432/C5NC77.
Zhang, P. et al. (2020). White-box fairness testing through adversarial sampling. ICSE (ADF).
"""

from __future__ import annotations

import numpy as np

from ._parse import Table, bin_labels, binary_label, codes, integers
from ._spec import Column, DatasetSpec, Encoded

# Labels from german.doc, in code order (the code is the position of the A-code in its attribute).
QUALITATIVE = {
    "checking_status": ("A1", ["< 0 DM", "0-199 DM", ">= 200 DM", "no checking account"]),
    "credit_history": ("A3", ["no credits taken/all paid back duly",
                              "all credits at this bank paid back duly",
                              "existing credits paid back duly till now", "delay in paying off in the past",
                              "critical account/other credits existing"]),
    "purpose": ("A4", ["car (new)", "car (used)", "furniture/equipment", "radio/television",
                       "domestic appliances", "repairs", "education", "vacation", "retraining", "business",
                       "others"]),
    "savings_status": ("A6", ["< 100 DM", "100-499 DM", "500-999 DM", ">= 1000 DM",
                              "unknown/no savings account"]),
    "employment": ("A7", ["unemployed", "< 1 year", "1-3 years", "4-6 years", ">= 7 years"]),
    "other_parties": ("A10", ["none", "co-applicant", "guarantor"]),
    "property_magnitude": ("A12", ["real estate", "building society savings/life insurance",
                                   "car or other", "unknown/no property"]),
    "other_payment_plans": ("A14", ["bank", "stores", "none"]),
    "housing": ("A15", ["rent", "own", "for free"]),
    "job": ("A17", ["unemployed/unskilled non-resident", "unskilled resident", "skilled employee/official",
                    "management/self-employed/highly qualified"]),
    "own_telephone": ("A19", ["none", "yes"]),
    "foreign_worker": ("A20", ["yes", "no"]),
}
PERSONAL_STATUS = ["A91", "A92", "A93", "A94", "A95"]
FEMALE = (1, 4)  # positions of A92 (female divorced/separated/married) and A95 (female single)

NAMES = ("checking_status", "duration", "credit_history", "purpose", "credit_amount", "savings_status",
         "employment", "installment_commitment", "sex", "other_parties", "residence", "property_magnitude",
         "age", "other_payment_plans", "housing", "existing_credits", "job", "num_dependents",
         "own_telephone", "foreign_worker")
RAW_COLUMNS = (*NAMES, "class")


def _qualitative(table: Table, name: str) -> Column:
    prefix, labels = QUALITATIVE[name]
    # Attributes 3 and 4 count from 0 (A30, A40 … A49, A410); the others from 1 (A11, A61, A101, …).
    first = 0 if prefix in ("A3", "A4") else 1
    a_codes = [f"{prefix}{first + i}" for i in range(len(labels))]
    values, _ = codes(table, name, a_codes)
    return Column(name, values, "categorical", dict(enumerate(labels)))


def _encode(table: Table) -> Encoded:
    """Encode ``german.data`` (see the module docstring)."""
    status, _ = codes(table, "sex", PERSONAL_STATUS)
    sex = np.isin(status, FEMALE).astype(np.int64)
    amount = integers(table, "credit_amount") // 100
    age = integers(table, "age") // 10
    columns = []
    for name in NAMES:
        if name in QUALITATIVE:
            columns.append(_qualitative(table, name))
        elif name == "sex":
            columns.append(Column("sex", sex, "categorical", {0: "male", 1: "female"}))
        elif name == "credit_amount":
            columns.append(Column(name, amount, "ordinal", bin_labels(amount, 100, unit=" DM")))
        elif name == "age":
            columns.append(Column(name, age, "ordinal", bin_labels(age, 10)))
        else:
            columns.append(Column(name, integers(table, name), "ordinal"))
    return Encoded.from_columns(columns, binary_label(table, "class", "1", "2"))


SPEC = DatasetSpec(
    name="german",
    raw="german/raw/german.data",
    protected=("sex", "age"),
    label="class",
    positive_class="1 (good credit)",
    description="UCI Statlog German Credit (german.data), ADF encoding, all 1,000 rows",
    read={"delimiter": " ", "names": RAW_COLUMNS, "skipinitialspace": True},
    encode=_encode,
)
