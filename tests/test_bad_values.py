"""Values that look alike, values that stand for missing, integers near the limits, and what a protected attribute
may be: each kind as a property over its space of inputs where it is one."""

import unicodedata
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chiralfair.datasets import from_frame
from chiralfair.datasets.base import Dataset
from chiralfair.datasets.protected import MAX_NUMERIC_PROTECTED_VALUES
from chiralfair.datasets.values import alike_groups, spelling_key
from chiralfair.domain import Domain, Feature
from chiralfair.exceptions import DatasetError, DataWarning, DomainError
from chiralfair.generators import make_generator
from chiralfair.models import as_model
from chiralfair.seeds import make_seed_strategy

ZURICH_NFC = unicodedata.normalize("NFC", "Zürich")
ZURICH_NFD = unicodedata.normalize("NFD", "Zürich")


def _frame(column):
    """A frame with the given column ``c``, a numeric feature ``h`` and a label ``y``."""
    values = list(column)
    n = len(values)
    rng = np.random.default_rng(0)
    return pd.DataFrame({"c": pd.Series(values, dtype=object), "h": rng.integers(0, 9, n), "y": np.arange(n) % 2})


# ------------------------------------------------------------------ values equal after NFC / whitespace
SPELLINGS = st.sampled_from(["Zürich", "Genève", "São Paulo", "Male", "New York", "x"])


def _variants(word: str):
    """Spellings of one word that look alike: normal forms and whitespace around or inside it."""
    return st.tuples(st.sampled_from(["NFC", "NFD"]), st.sampled_from(["", " ", "\t", "  "]),
                     st.sampled_from(["", " ", "\u00a0"]), st.booleans()).map(
        lambda t: t[1] + unicodedata.normalize(t[0], word.replace(" ", "  ") if t[3] else word) + t[2])


@given(word=SPELLINGS, data=st.data())
def test_values_that_differ_only_in_normal_form_or_whitespace_share_a_spelling_key(word, data):
    a, b = data.draw(_variants(word)), data.draw(_variants(word))
    assert spelling_key(a) == spelling_key(b) == " ".join(unicodedata.normalize("NFC", word).split())
    groups = alike_groups([a, b, "other"]) if a != b else alike_groups([a, "other"])
    assert groups == ([[a, b]] if a != b else [])


@given(word=SPELLINGS, data=st.data())
def test_two_spellings_of_a_protected_value_are_refused_naming_them(word, data):
    # Fixed: "Zürich" in NFC and NFD were two categories: 121 of 272 IDIs were "Zürich" vs "Zürich".
    a = data.draw(_variants(word))
    b = data.draw(_variants(word).filter(lambda v: v != a))
    df = _frame([a, b, "other", a, b, "other"] * 5)
    with pytest.raises(DatasetError, match="protected attribute 'c' holds values that differ only in Unicode normal "
                                           "form or whitespace") as err:
        from_frame(df, label="y", positive_class=1, protected=["c"])
    assert repr(a) in str(err.value) and repr(b) in str(err.value) and "str.normalize('NFC')" in str(err.value)


@given(word=SPELLINGS, data=st.data())
def test_two_spellings_of_a_feature_value_warn_and_stay_apart_so_the_model_is_fed_each_row_as_it_is(word, data):
    a = data.draw(_variants(word))
    b = data.draw(_variants(word).filter(lambda v: v != a))
    df = _frame([a, b, "other", a, b, "other"] * 5)
    df["s"] = np.arange(len(df)) % 2
    with pytest.warns(DataWarning, match="column 'c' has values that differ only in Unicode normal form"):
        ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    assert ds.to_frame(ds.X)["c"].tolist() == df["c"].tolist()  # each row decodes to its own spelling


def test_zurich_nfc_and_nfd_as_protected_values_via_with_protected_are_refused_too():
    df = _frame([ZURICH_NFC, ZURICH_NFD, "Bern"] * 10)
    df["s"] = np.arange(len(df)) % 2
    with pytest.warns(DataWarning, match="Zürich"):
        ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    with pytest.raises(DatasetError, match="protected attribute 'c' holds values that differ") as err:
        ds.with_protected(["c"])
    assert f"{ZURICH_NFD!r} ('Zu\\u0308rich') (10 rows) and {ZURICH_NFC!r} ('Z\\xfcrich') (10 rows)" in str(err.value)


def test_label_spellings_of_the_negative_class_warn():
    df = _frame(["a", "b"] * 10)
    df["y"] = ["yes", ZURICH_NFC] * 9 + ["yes", ZURICH_NFD]
    with pytest.warns(DataWarning, match="label column 'y' has values that differ only in spelling"):
        ds = from_frame(df, label="y", positive_class="yes", protected=["c"])
    assert ds.y.tolist() == [1, 0] * 10  # every spelling of the negative class is 0, as it should be


@pytest.mark.parametrize("positive, other", [(ZURICH_NFC, ZURICH_NFD), (">50K", ">50K."), (">50K", " >50K")])
def test_another_spelling_of_the_positive_class_is_refused(positive, other):
    # Adult's test file spells the labels ">50K." and "<=50K.": read as 0, F1 would be 0 and a retraining wrong.
    df = _frame(["a", "b"] * 10)
    df["y"] = [positive, "no"] * 9 + [other, "no"]
    with pytest.raises(DatasetError, match=r"spells the positive class .* in other ways too") as err:
        from_frame(df, label="y", positive_class=positive, protected=["c"])
    assert f"{other!r}" in str(err.value) and "(1 rows)" in str(err.value)


# ------------------------------------------------------------------ Adult's " ?" is a missing value
@pytest.mark.parametrize("token", ["?", " ?", "? ", "  ?"])
def test_a_question_mark_token_is_a_missing_value_and_is_fed_to_the_model_as_it_is(token):
    df = _frame(["Private", token, "Self-emp", "Private", token, "Gov"] * 5)
    ds = from_frame(df, label="y", positive_class=1, protected=["c"])
    c = ds.domain.features[0]
    code = ds.X[1, 0]
    assert c.missing == code and c.labels[code] == "missing"
    assert code not in ds.domain.protected_values[0]  # never a counterpart (missing_protected="exclude")
    assert ds.missing_protected.sum() == 10
    assert ds.to_frame(ds.X)["c"].tolist() == df["c"].tolist()  # the model still sees the token itself


def test_a_question_mark_besides_nan_warns_that_only_one_is_the_missing_value():
    df = _frame(["a", " ?", None, "b"] * 5)
    df["s"] = np.arange(len(df)) % 2
    with pytest.warns(DataWarning, match=r"column 'c' has several missing markers: ' \?' \(5 rows\)"):
        ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    feature = ds.domain.features[0]
    assert feature.labels[feature.missing] == "missing" and ds.to_frame(ds.X)["c"].isna().sum() == 5


# ------------------------------------------------------------------ integers near the int64 limits
@given(values=st.lists(st.integers(-2**63, 2**63 - 1), min_size=2, max_size=30))
def test_int64_values_survive_encoding_exactly(values):
    # Fixed: from_frame went through float64: 2**63 - 1 became -2**63, 2**53 + 1 became 2**53.
    values = values + values[:1]  # one value twice: 'big' is not an identifier column (test_from_frame warns on those)
    df = pd.DataFrame({"big": np.array(values, dtype=np.int64), "s": np.arange(len(values)) % 2,
                       "y": np.arange(len(values)) % 2})
    ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    back = ds.to_frame(ds.X)["big"]
    assert back.dtype == np.int64 and back.tolist() == values
    # every code survives the float64 that models are called with, and decodes to the same value
    assert ds.to_frame(ds.X.astype(np.float64))["big"].tolist() == values
    if max(abs(v) for v in values) <= 2**53:
        assert ds.X[:, 0].tolist() == values  # small integers are their own codes, as before


@pytest.mark.parametrize("dtype", ["Int64", "uint64"])
def test_other_integer_dtypes_near_their_limits_survive_encoding(dtype):
    if dtype == "Int64":
        values, column = [2**63 - 1, 1, 2**53 + 1], pd.array([2**63 - 1, 1, 2**53 + 1], dtype="Int64")
    else:  # numpy: pandas' pd.array(..., dtype="uint64") itself turns 2**64 - 1 into 0
        values = [2**64 - 1, 0, 2**63]
        column = np.array(values, dtype=np.uint64)
    df = pd.DataFrame({"big": column, "s": [0, 1, 0], "y": [0, 1, 1]})
    ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    assert ds.to_frame(ds.X.astype(np.float64))["big"].tolist() == values


def test_the_issue_values_and_a_model_fed_them():
    values = [2**63 - 1, 2**53 + 1, 1_700_000_000_123_456_789, 0]
    df = pd.DataFrame({"big": values, "s": [0, 1, 0, 1], "y": [0, 1, 1, 0]})
    ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    seen = []

    def model(frame):
        seen.extend(frame["big"].tolist())
        return np.zeros(len(frame), dtype=int)

    as_model(model, to_frame=ds.to_frame).predict(ds.X)
    assert seen == values


@pytest.mark.parametrize(("lo", "hi"), [(2**53 - 5, 2**53 + 1), (-2**53 - 1, 0), (2**61, 2**61 + 3)])
def test_a_feature_coded_past_2_53_is_refused_naming_it(lo, hi):
    # Fixed: a search moves codes as float64 (steps, gradients, clipping); past 2**53 a move rounded onto a code
    # outside the bounds, and such inputs were recorded as IDIs
    with pytest.raises(DomainError, match=r"feature 'x': codes \[-?\d+, -?\d+\] reach past ±2\*\*53, where float64"):
        Feature("x", lo, hi)
    limits = Feature("x", -2**53, 2**53)  # the limits themselves: every integer up to them is a float64
    assert limits.size == 2**54 + 1


# ------------------------------------------------------------------ a numeric protected attribute
def test_age_in_whole_years_as_a_protected_attribute_is_refused_with_bins_suggested():
    # Fixed: 52 ages were enumerated as categories, 52 queries per check, no warning.
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"age": rng.integers(17, 69, 500), "h": rng.integers(0, 5, 500), "y": rng.integers(0, 2, 500)})
    n_ages = df["age"].nunique()
    with pytest.raises(DatasetError, match=f"protected attribute 'age' is a number with {n_ages} distinct values "
                                           r"\(17 to 68\) and no bins.*bins=\{'age': \[17, "):
        from_frame(df, label="y", positive_class=1, protected=["age"])
    binned = from_frame(df, label="y", positive_class=1, protected=["age"], bins={"age": [0, 30, 50, 120]})
    feature = binned.domain.features[0]
    # the bins used are stated in the domain every result records (meta.domain)
    assert binned.domain.to_dict()["features"][0]["labels"] == {"0": "0-30", "1": "30-50", "2": "50-120"}
    assert binned.domain.protected_value_labels() == [["0-30", "30-50", "50-120"]] and feature.kind == "ordinal"
    as_category = from_frame(df.assign(age=df["age"].astype("category")), label="y", positive_class=1,
                             protected=["age"])
    assert len(as_category.domain.protected_values[0]) == n_ages  # asked for: every age a category


@given(n_values=st.integers(2, 3 * MAX_NUMERIC_PROTECTED_VALUES), dtype=st.sampled_from(["int64", "float64"]))
def test_a_numeric_protected_attribute_is_refused_from_more_than_the_limit_of_values(n_values, dtype):
    df = pd.DataFrame({"n": (np.arange(60) % n_values).astype(dtype), "h": np.arange(60) % 3, "y": np.arange(60) % 2})
    if n_values <= MAX_NUMERIC_PROTECTED_VALUES:
        assert from_frame(df, label="y", positive_class=1, protected=["n"]).domain.protected_values[0] == tuple(
            range(n_values))
    else:
        with pytest.raises(DatasetError, match=f"'n' is a number with {n_values} distinct values"):
            from_frame(df, label="y", positive_class=1, protected=["n"])


def test_a_numeric_protected_attribute_via_with_protected_is_refused_unless_its_values_are_declared():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"age": rng.integers(17, 69, 300), "s": rng.integers(0, 2, 300), "y": rng.integers(0, 2, 300)})
    ds = from_frame(df, label="y", positive_class=1, protected=["s"])
    with pytest.raises(DatasetError, match="'age' is a number with"):
        ds.with_protected(["age"])
    declared = ds.with_protected(["age"], values={"age": [25, 45, 65]})
    assert declared.domain.protected_values == ((25, 45, 65),)


# ------------------------------------------------------------------ declared values the data never holds
def test_a_declared_value_the_data_never_holds_is_accepted_with_a_warning_naming_it():
    # Fixed: with_protected(values=[0, 1]) on data holding only 1 was refused ("values [0] lie outside its
    # bounds [1, 1]"); a declared value that never occurs gave 470 IDIs and no warning.
    X = np.column_stack([np.ones(50, dtype=np.int64), np.arange(50) % 10])
    domain = Domain.from_data(X, ["sex", "a"], kinds=["categorical", "ordinal"], labels={"sex": {1: "Male"}})
    ds = Dataset("d", X, np.arange(50) % 2, domain)
    with pytest.warns(DataWarning) as record:
        declared = ds.with_protected(["sex"], values={"sex": [0, 1]})
    text = " ".join(str(w.message) for w in record)
    assert "declared values [0] lie outside the bounds [1, 1] of feature 'sex'" in text and "widened to [0, 1]" in text
    assert "the data never holds (sex: '0')" in text
    sex = declared.domain.features[0]
    assert (sex.lo, sex.hi) == (0, 1) and declared.domain.protected_values == ((0, 1),)
    assert declared.domain.validate(X).shape == X.shape


def test_a_hand_built_domain_with_a_value_the_data_never_holds_is_noted_in_the_seed_report(caplog):
    feats = (Feature("sex", 0, 2, "categorical", {0: "F", 1: "M", 2: "X"}), Feature("a", 0, 9), Feature("b", 0, 9))
    domain = Domain(feats, protected=(0,), protected_values=((0, 1, 2),))
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, 200), rng.integers(0, 10, 200), rng.integers(0, 10, 200)])
    ds = Dataset("d", X, (X[:, 1] + X[:, 2] > 9).astype(np.int64), domain)
    model = as_model(lambda Z: (Z[:, 1] + Z[:, 2] + 3 * (Z[:, 0] == 2) > 9).astype(int))
    with caplog.at_level("WARNING", logger="chiralfair.seeds.base"):
        report = make_seed_strategy("rows").select(model, ds, 100, random_state=0)
    assert any("protected values that no data row holds: sex = 'X'" in n for n in report.notes)
    assert any("sex = 'X'" in r.getMessage() for r in caplog.records)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        ds.domain.unobserved_protected_values(X)  # a query, not a warning
    result = make_generator("aequitas", max_global=100, max_local=5).run(model, domain, report, random_state=0)
    assert result.n_idis > 0  # the declared value is still tried as a counterpart


def test_declared_group_rows_outside_their_columns_are_still_refused():
    feats = (Feature("r_A", 0, 1), Feature("r_B", 0, 1), Feature("a", 0, 3))
    with pytest.raises(DomainError, match="lie outside"):
        Domain(feats).with_protected({"r": ["r_A", "r_B"]}, values={"r": [(1, 0), (0, 2)]})


# ------------------------------------------------------------------ a column that is missing on every row
@pytest.mark.parametrize("column", ["c", "s"])
def test_a_column_missing_on_every_row_is_named_with_the_right_advice(column):
    # An all-NaN text column reads as float64: the advice was "pass bins={'c': ...}", which refuses a text column.
    df = _frame(["a", "b", "c"] * 10)
    df["s"] = np.arange(len(df)) % 2
    df[column] = np.nan
    with pytest.raises(DatasetError, match=rf"column '{column}' is missing on every row \(30\): .* drop it"):
        from_frame(df, label="y", positive_class=1, protected=["s"])
