"""ProPublica COMPAS in the 10,577-row I&D version, built from ``compas/raw/compas-scores.csv``.

Fifteen columns of compas-scores.csv are kept and the 1,180 rows without ``days_b_screening_arrest`` are
dropped (the 742 rows without ``c_days_from_compas`` are among them), leaving 10,577 rows × 14 features in the
file's order. Encoding (data README §3): sex Male=0/Female=1; age // 10; race Hispanic=0, African-American=1,
Caucasian=2, Asian=3, Other=4, Native American=5; juvenile counts unchanged; priors_count // 10;
days_b_screening_arrest / 100 truncated toward zero; c_days_from_compas // 100; charge degrees F=0, O=1, M=2;
is_recid, is_violent_recid and v_decile_score unchanged. A missing categorical value is a category of its
own (next code, labelled ``"missing"``). Label: ``decile_score > 5`` = 1 (the risk score is the label, not a
feature).

References
----------
Angwin, J., Larson, J., Mattu, S. and Kirchner, L. (2016). Machine bias. ProPublica.
Ma, M. et al. (2022). I&D: enhancing individual fairness testing with seed selection. arXiv:2209.08321.
"""

from __future__ import annotations

import numpy as np

from ..exceptions import DatasetError
from ._parse import Table, bin_labels, codes, integers
from ._spec import Column, DatasetSpec, Encoded

SEX = ["Male", "Female"]
RACE = ["Hispanic", "African-American", "Caucasian", "Asian", "Other", "Native American"]
CHARGE_DEGREE = ["F", "O", "M"]
COUNTS = ("juv_fel_count", "juv_misd_count", "juv_other_count")
NAMES = ("sex", "age", "race", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
         "days_b_screening_arrest", "c_days_from_compas", "c_charge_degree", "is_recid", "r_charge_degree",
         "is_violent_recid", "v_decile_score")
USECOLS = (*NAMES, "decile_score")
REQUIRED = ("days_b_screening_arrest", "c_days_from_compas")


def _truncated_day_labels(values: np.ndarray) -> dict[int, str]:
    # Truncation toward zero: code 0 holds -99..99 days, code k > 0 holds 100k..100k+99, k < 0 100k-99..100k.
    labels = {}
    for code in range(int(values.min()), int(values.max()) + 1):
        if code == 0:
            labels[code] = "-99 to 99 days"
        elif code > 0:
            labels[code] = f"{100 * code} to {100 * code + 99} days"
        else:
            labels[code] = f"{100 * code - 99} to {100 * code} days"
    return labels


def _encode(table: Table) -> Encoded:
    """Encode ``compas-scores.csv`` (see the module docstring)."""
    # Every field is checked before rows are dropped, so a malformed value is reported wherever it is.
    days = {col: integers(table, col, allow_missing=True).astype(float) for col in REQUIRED}
    ints = {col: integers(table, col) for col in ("age", *COUNTS, "priors_count", "is_recid",
                                                  "is_violent_recid", "v_decile_score", "decile_score")}
    cats = {col: codes(table, col, categories, missing_label="missing")
            for col, categories in (("sex", SEX), ("race", RACE), ("c_charge_degree", CHARGE_DEGREE),
                                    ("r_charge_degree", CHARGE_DEGREE))}
    # I&D drops the rows missing a numeric value: exactly those without days_b_screening_arrest.
    keep = np.isfinite(days[REQUIRED[0]]) & np.isfinite(days[REQUIRED[1]])
    if not keep.any():
        raise DatasetError(f"{table.display}: no row has both {REQUIRED[0]} and {REQUIRED[1]}")
    ints = {col: values[keep] for col, values in ints.items()}
    age = ints["age"] // 10
    priors = ints["priors_count"] // 10
    screening = np.trunc(days["days_b_screening_arrest"][keep] / 100).astype(np.int64)
    c_days = (days["c_days_from_compas"][keep] // 100).astype(np.int64)

    def categorical(name):
        values, labels = cats[name]
        return Column(name, values[keep], "categorical", labels)

    columns = [
        categorical("sex"),
        Column("age", age, "ordinal", bin_labels(age, 10)),
        categorical("race"),
        *(Column(c, ints[c], "ordinal") for c in COUNTS),
        Column("priors_count", priors, "ordinal", bin_labels(priors, 10)),
        Column("days_b_screening_arrest", screening, "ordinal", _truncated_day_labels(screening)),
        Column("c_days_from_compas", c_days, "ordinal", bin_labels(c_days, 100, unit=" days")),
        categorical("c_charge_degree"),
        Column("is_recid", ints["is_recid"], "ordinal"),
        categorical("r_charge_degree"),
        Column("is_violent_recid", ints["is_violent_recid"], "ordinal"),
        Column("v_decile_score", ints["v_decile_score"], "ordinal"),
    ]
    y = (ints["decile_score"] > 5).astype(np.int64)
    return Encoded.from_columns(columns, y)


SPEC = DatasetSpec(
    name="compas",
    raw="compas/raw/compas-scores.csv",
    protected=("sex", "age", "race"),
    label="decile_score",
    positive_class="> 5",
    description="ProPublica compas-scores.csv, I&D selection (10,577 rows with days_b_screening_arrest)",
    read={"delimiter": ",", "usecols": USECOLS},
    encode=_encode,
)
