import numpy as np
import pandas as pd
import pytest

from chiralfair.datasets import from_frame
from chiralfair.exceptions import DomainError


def raw():
    return pd.DataFrame({
        "sex": ["m", "f", "f", "m", None, "f", "m", "f"],
        "age": np.array([23, 35, 47, 51, 62, 29, 40, 33], dtype=np.int32),
        "income": [1200.0, 2500.0, 3100.0, 800.0, np.nan, 1900.0, 2100.0, 1500.0],
        "size": pd.Categorical(["S", "L", None, "S", "L", "M", "M", "S"], categories=["S", "M", "L"],
                               ordered=True),
        "member": [True, False, True, True, False, False, True, False],
        "mixed": pd.Series([1, "a", 1, "b", "a", 1, "b", None], dtype=object),
        "outcome": ["yes", "no", "yes", "no", "yes", "no", "yes", "no"],
    })


def test_round_trip_unbinned_columns_equal_with_dtypes():
    df = raw()
    ds = from_frame(df, label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})
    back = ds.to_frame(ds.X)
    assert list(back.columns) == ["sex", "age", "income", "size", "member", "mixed"]
    for col in ["sex", "age", "size", "member", "mixed"]:
        pd.testing.assert_series_equal(back[col], df[col], check_names=True)
    assert back["age"].dtype == np.int32 and back["member"].dtype == bool
    assert isinstance(back["size"].dtype, pd.CategoricalDtype) and back["size"].cat.ordered
    assert back["mixed"].iloc[0] == 1 and back["mixed"].iloc[1] == "a" and back["mixed"].iloc[7] is None
    assert pd.isna(back["sex"].iloc[4])


def test_binned_column_decodes_to_a_value_inside_its_bin():
    df = raw()
    ds = from_frame(df, label="outcome", positive_class="yes", protected=["sex"],
                    bins={"income": [0, 1000, 2000, 5000], "age": [0, 30, 45, 100]})
    back = ds.to_frame(ds.X)
    edges = np.array([0, 1000, 2000, 5000])
    codes = ds.X[:, 2]
    present = codes < 3
    assert np.isnan(back["income"].to_numpy()[~present]).all()
    vals = back["income"].to_numpy()[present]
    assert ((edges[codes[present]] <= vals) & (vals <= edges[codes[present] + 1])).all()
    # the lower median of the data values in each bin: 1000-2000 holds 1200, 1900, 1500 -> 1500
    assert back["income"].iloc[0] == 1500.0 and back["income"].iloc[3] == 800.0
    # the 2000-5000 bin holds 2500, 3100, 2100: lower median 2500, an actual value
    assert back["income"].iloc[1] == 2500.0
    # an integer column stays integer: 30-45 holds 35, 40, 33 -> 35
    assert back["age"].dtype == np.int32 and back["age"].iloc[1] == 35 and back["age"].iloc[0] == 23


def test_empty_bin_gets_its_midpoint():
    ds = from_frame(raw(), label="outcome", positive_class="yes", protected=["sex"],
                    bins={"income": [0, 1000, 2000, 5000, 9000]})
    back = ds.to_frame(np.tile(ds.X[:1], (1, 1)).copy())
    X = ds.X[:1].copy()
    X[0, 2] = 3
    assert ds.to_frame(X)["income"].iloc[0] == 7000.0
    assert back.shape == (1, 6)


def test_integer_column_names_kept():
    df = pd.DataFrame({0: ["a", "b", "a", "b"], 1: [1, 2, 3, 4], 2: [0, 1, 0, 1]})
    ds = from_frame(df, label=2, positive_class=1, protected=["0"])
    back = ds.to_frame(ds.X)
    assert list(back.columns) == [0, 1]
    pd.testing.assert_frame_equal(back, df[[0, 1]])


def test_float_codes_accepted_and_bad_codes_refused():
    ds = from_frame(raw(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})
    assert ds.to_frame(ds.X.astype(float)).equals(ds.to_frame(ds.X))
    X = ds.X.copy()
    X[0, 0] = 7
    with pytest.raises(DomainError, match="column 'sex': code 7"):
        ds.to_frame(X)
    with pytest.raises(DomainError, match="not an integer"):
        ds.to_frame(ds.X + 0.5)
    with pytest.raises(DomainError, match="shape"):
        ds.to_frame(ds.X[:, :2])


def test_large_batch_decodes_like_its_rows():
    ds = from_frame(raw(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})
    X = np.tile(ds.X, (12_500, 1))  # 100,000 rows
    back = ds.to_frame(X)
    assert back.shape == (100_000, 6)
    pd.testing.assert_frame_equal(back.iloc[-8:].reset_index(drop=True), ds.to_frame(ds.X))


def test_benchmark_like_dataset_without_codec_decodes_to_labels():
    from dataclasses import replace
    ds = from_frame(raw(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})
    bare = replace(ds, codec=None)
    back = bare.to_frame(bare.X)
    assert back["sex"].tolist()[:3] == ["m", "f", "f"] and back["income"].iloc[0].startswith("800")
