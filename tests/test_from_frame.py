import numpy as np
import pandas as pd
import pytest

from chiralfair.datasets import from_frame
from chiralfair.exceptions import DatasetError, DomainError


def frame():
    return pd.DataFrame({
        "sex": ["m", "f", "f", "m", None, "f"],
        "age": [23, 35, 47, 51, 62, 29],
        "income": [1200.0, 2500.0, 3100.0, 800.0, 4000.0, 1900.0],
        "score": [1.0, 2.0, 3.0, 2.0, 1.0, 3.0],
        "outcome": ["yes", "no", "yes", "no", "yes", "no"],
    })


def test_codes_labels_and_kinds():
    ds = from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"],
                    bins={"income": [0, 1000, 2000, 5000]}, name="mine")
    dom = ds.domain
    assert ds.name == "mine" and ds.label == "outcome" and ds.positive_class == "yes" and ds.sources == {}
    assert dom.names == ["sex", "age", "income", "score"]
    assert ds.y.tolist() == [1, 0, 1, 0, 1, 0]
    sex = dom.features[0]
    # sorted categories f=0, m=1; the missing value is a category of its own
    assert ds.X[:, 0].tolist() == [1, 0, 0, 1, 2, 0]
    assert sex.kind == "categorical" and sex.labels == {0: "f", 1: "m", 2: "missing"}
    # the missing sex (code 2) is not a value of the protected attribute: never a counterpart
    assert dom.protected_names == ["sex"] and dom.protected_values == ((0, 1),)
    assert sex.missing == 2 and ds.missing_protected.tolist() == [False] * 4 + [True, False]
    assert ds.X[:, 1].tolist() == [23, 35, 47, 51, 62, 29] and dom.features[1].kind == "ordinal"
    assert ds.X[:, 2].tolist() == [1, 2, 2, 0, 2, 1]
    assert dom.features[2].labels == {0: "0-1000", 1: "1000-2000", 2: "2000-5000"}
    assert ds.X[:, 3].tolist() == [1, 2, 3, 2, 1, 3]  # integer-valued floats are kept
    assert ds.X.dtype == np.int64
    assert dom.lower.tolist() == [0, 23, 0, 1] and dom.upper.tolist() == [2, 62, 2, 3]


def test_equal_width_bins_and_missing_bin():
    df = frame()
    df.loc[2, "income"] = np.nan
    ds = from_frame(df, label="outcome", positive_class="yes", protected="sex", bins={"income": 2})
    col = ds.X[:, 2]
    assert col.tolist() == [0, 1, 2, 0, 1, 0]
    assert ds.domain.features[2].labels[2] == "missing" and len(ds.domain.features[2].labels) == 3


def test_categorical_dtype_keeps_order_and_bool():
    df = frame().assign(size=pd.Categorical(["S", "L", "M", "S", "L", "M"], categories=["S", "M", "L"],
                                            ordered=True),
                        member=[True, False, True, True, False, False])
    ds = from_frame(df, label="outcome", positive_class="yes", protected=["sex"],
                    bins={"income": [0, 5000]})
    size = ds.domain.features[ds.domain.index("size")]
    assert ds.X[:, ds.domain.index("size")].tolist() == [0, 2, 1, 0, 2, 1]
    assert size.kind == "ordinal" and size.labels == {0: "S", 1: "M", 2: "L"}
    member = ds.domain.features[ds.domain.index("member")]
    assert ds.X[:, ds.domain.index("member")].tolist() == [1, 0, 1, 1, 0, 0] and member.kind == "categorical"


def test_mixed_object_column_sorts_numbers_before_text():
    df = pd.DataFrame({"g": [2, "b", 1, "a"], "x": [1, 2, 3, 4], "y": [0, 1, 0, 1]})
    ds = from_frame(df, label="y", positive_class=1, protected=["g"])
    assert ds.domain.features[0].labels == {0: "1", 1: "2", 2: "a", 3: "b"}
    assert ds.X[:, 0].tolist() == [1, 3, 0, 2]


def test_non_integer_float_names_column_and_suggests_bins():
    with pytest.raises(DatasetError, match=r"column 'income' holds the non-integer value 1200.5 \(row 0\).*"
                                           r"bins=\{'income': 10\}"):
        df = frame()
        df.loc[0, "income"] = 1200.5
        from_frame(df, label="outcome", positive_class="yes", protected=["sex"])


def test_missing_numeric_without_bins():
    df = frame()
    df.loc[3, "age"] = np.nan
    with pytest.raises(DatasetError, match=r"column 'age' has a missing value at row 3.*bins="):
        from_frame(df, label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})


def test_value_outside_bin_edges():
    with pytest.raises(DatasetError, match=r"column 'income' value 3100.0 \(row 2\) lies outside the bin "
                                           r"edges \[0, 3000\]"):
        from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"],
                   bins={"income": [0, 1000, 3000]})


@pytest.mark.parametrize(("bins", "message"), [
    ({"nope": 3}, r"bins names columns that are not features: \['nope'\]"),
    ({"sex": 3}, r"bins given for column 'sex', which is not numeric"),
    ({"income": [5, 1]}, r"bins\['income'\] must be an int or at least two increasing edges"),
    ({"income": 0}, r"bins\['income'\] must be at least 1"),
])
def test_bad_bins(bins, message):
    with pytest.raises(DatasetError, match=message):
        from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"], bins=bins)


def test_label_errors():
    with pytest.raises(DatasetError, match=r"label column 'target' is not in the frame; columns: 'sex', 'age'"):
        from_frame(frame(), label="target", positive_class="yes", protected=["sex"])
    with pytest.raises(DatasetError, match=r"positive_class 'Yes' does not occur in label column 'outcome'; "
                                           r"its values include 'no', 'yes'"):
        from_frame(frame(), label="outcome", positive_class="Yes", protected=["sex"], bins={"income": 2})
    df = frame()
    df.loc[1, "outcome"] = None
    with pytest.raises(DatasetError, match=r"label column 'outcome' has a missing value at row 1"):
        from_frame(df, label="outcome", positive_class="yes", protected=["sex"], bins={"income": 2})


def test_protected_errors():
    with pytest.raises(DomainError, match=r"unknown feature 'gender'; valid names: 'sex', 'age', 'income', 'score'"):
        from_frame(frame(), label="outcome", positive_class="yes", protected=["gender"], bins={"income": 2})
    df = frame().assign(country=["x"] * 6)
    with pytest.raises(DomainError, match=r"protected attribute 'country' has only one value"):
        from_frame(df, label="outcome", positive_class="yes", protected=["country"], bins={"income": 2})


def test_not_a_frame_or_empty():
    with pytest.raises(DatasetError, match="df must be a pandas DataFrame, got ndarray"):
        from_frame(np.zeros((3, 2)), label="a", positive_class=1, protected=["b"])
    with pytest.raises(DatasetError, match="df has no rows"):
        from_frame(frame().iloc[:0], label="outcome", positive_class="yes", protected=["sex"])
    with pytest.raises(DatasetError, match="no column besides the label 'outcome'"):
        from_frame(frame()[["outcome"]], label="outcome", positive_class="yes", protected=["sex"])


def test_split_works_on_own_data():
    ds = from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 2})
    train, test = ds.split(0)
    assert len(train) + len(test) == 6 and set(train).isdisjoint(test)
