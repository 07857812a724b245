"""UCI Adult ("census") encoded as in ADF / AEQUITAS, built from ``census/raw/adult.data``.

32,561 rows × 13 features (``education-num`` dropped). Categoricals are coded by their position in the value
lists of ``adult.names``; a missing ``?`` is a category of its own (the next code, labelled ``"?"``), where
AEQUITAS wrote the sentinel 100. age // 10, fnlwgt // 20,000, capital-gain // 1,000, capital-loss // 100,
hours-per-week unchanged. Label: income ``>50K`` = 1.

Coupling (architecture: counterparts that could exist), on by default: ``relationship`` changes with ``sex``, Husband
<-> Wife. In the data a husband is a man and a wife a woman (1 female husband and 2 male wives among 32,561 rows), so
flipping sex alone makes every married person's counterpart someone who does not exist; with the coupling a husband's
counterpart is a wife. Two rules come with the coupling, active while it is (sex protected): ``sex=Female excludes
relationship=Husband`` and ``sex=Male excludes relationship=Wife``, so that no search proposes a female husband
(whose coupled counterpart would be a male wife): measured on the quick start, the coupling alone left 6.5% of the
IDI pairs with an impossible side, the coupling with the rules 0% (``benchmarks/results/counterparts.md``).
``load_dataset("census", couple=False)`` turns both off (the I&D paper's and its reference tools' setting).

References
----------
Kohavi, R. and Becker, B. (1996). Adult. UCI Machine Learning Repository. doi:10.24432/C5XW20.
Udeshi, S., Arora, P. and Chattopadhyay, S. (2018). Automated directed fairness testing. ASE.
"""

from __future__ import annotations

from ._parse import Table, bin_labels, binary_label, codes, integers
from ._spec import Column, DatasetSpec, Encoded

RAW_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
               "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
               "native-country", "income")

# Value lists in the order printed in adult.names (the order that defines the codes).
CATEGORIES = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc",
                  "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th",
                  "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
                       "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
                       "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico",
                       "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan",
                       "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand",
                       "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands"],
}

# (feature name, raw column, bin width or None for a categorical)
LAYOUT = (
    ("age", "age", 10), ("workclass", "workclass", None), ("fnlwgt", "fnlwgt", 20000),
    ("education", "education", None), ("marital_status", "marital-status", None),
    ("occupation", "occupation", None), ("relationship", "relationship", None), ("race", "race", None),
    ("sex", "sex", None), ("capital_gain", "capital-gain", 1000), ("capital_loss", "capital-loss", 100),
    ("hours_per_week", "hours-per-week", 1), ("native_country", "native-country", None),
)


def _column(table: Table, name: str, raw: str, width: int | None) -> Column:
    if width is None:
        values, labels = codes(table, raw, CATEGORIES[raw], missing_label="?")
        return Column(name, values, "categorical", labels)
    values = integers(table, raw) // width
    return Column(name, values, "ordinal", bin_labels(values, width) if width > 1 else None)


def _encode(table: Table) -> Encoded:
    """Encode ``adult.data`` (see the module docstring)."""
    columns = [_column(table, name, raw, width) for name, raw, width in LAYOUT]
    return Encoded.from_columns(columns, binary_label(table, "income", ">50K", "<=50K"))


SPEC = DatasetSpec(
    name="census",
    raw="census/raw/adult.data",
    protected=("age", "race", "sex"),
    label="income",
    positive_class=">50K",
    description="UCI Adult (adult.data), ADF/AEQUITAS encoding; missing '?' is its own category",
    read={"delimiter": ",", "names": RAW_COLUMNS, "skipinitialspace": True},
    encode=_encode,
    couple={"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}},
    couple_constraints=("sex=Female excludes relationship=Husband", "sex=Male excludes relationship=Wife"),
)
