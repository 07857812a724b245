import numpy as np
import pandas as pd
import pytest
import realdata

from chiralfair.datasets import DATASETS, dataset_names, describe_datasets, load_dataset
from chiralfair.datasets import census as census_module
from chiralfair.exceptions import DatasetError, DomainError

pytestmark = pytest.mark.usefixtures("offline")


@pytest.fixture(scope="module")
def real_home():
    return realdata.real_data_home_or_skip()

# Measured on the raw files (data README §2-3); census adds the missing-value codes 8, 14 and 41.
BOUNDS = {
    "census": ([1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0], [9, 8, 74, 15, 6, 14, 5, 4, 1, 99, 43, 99, 41]),
    "compas": ([0, 1, 0, 0, 0, 0, 0, -5, 0, 0, -1, 0, 0, -1],
               [1, 9, 5, 20, 13, 11, 4, 10, 94, 2, 1, 2, 1, 10]),
    "bank": ([1, 0, 0, 0, 0, -20, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0],
             [9, 11, 2, 3, 1, 179, 1, 1, 2, 31, 11, 99, 63, 1, 1, 3]),
    "german": ([0, 4, 0, 0, 2, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0],
               [3, 72, 4, 10, 184, 4, 4, 4, 1, 2, 4, 3, 7, 2, 2, 4, 3, 2, 1, 1]),
}
SHAPES = {"census": (32561, 13), "compas": (10577, 14), "bank": (45211, 16), "german": (1000, 20)}
POSITIVES = {"census": 7841, "compas": 3724, "bank": 5289, "german": 700}


def _preprocessed(real_home, relpath):
    return pd.read_csv(real_home / relpath).to_numpy(dtype=np.int64)


def test_names():
    assert dataset_names() == ["census", "compas", "bank", "german"] == list(DATASETS)


@pytest.mark.parametrize("name", ["census", "compas", "bank", "german"])
def test_shape_bounds_labels(real_home, name):
    ds = load_dataset(name, data_home=real_home)
    assert ds.name == name
    assert ds.X.shape == SHAPES[name] and ds.X.dtype == np.int64
    assert ds.y.shape == (SHAPES[name][0],) and int(ds.y.sum()) == POSITIVES[name]
    lo, hi = BOUNDS[name]
    assert ds.domain.lower.tolist() == lo and ds.domain.upper.tolist() == hi
    assert ds.domain.protected_names == [DATASETS[name].protected[0]]
    assert ds.sources == {DATASETS[name].raw: str((real_home / DATASETS[name].raw).resolve())}
    ds.domain.validate(ds.X)
    for f in ds.domain.features:  # every categorical code has a label
        if f.kind == "categorical":
            assert set(range(f.lo, f.hi + 1)) <= set(f.labels), f.name


def test_census_equals_aequitas_file_except_missing_code(real_home):
    ds = load_dataset("census", data_home=real_home)
    reference = _preprocessed(real_home, "census/preprocessed_adf/census.csv")
    expected = reference[:, :13].copy()
    for column, missing_code in (("workclass", 8), ("occupation", 14), ("native_country", 41)):
        j = ds.domain.index(column)
        assert ds.domain.features[j].labels[missing_code] == "?"
        assert (expected[:, j] == 100).sum() == (ds.X[:, j] == missing_code).sum() > 0
        expected[:, j] = np.where(expected[:, j] == 100, missing_code, expected[:, j])
    assert not (ds.X == 100).any()
    np.testing.assert_array_equal(ds.X, expected)
    np.testing.assert_array_equal(ds.y, reference[:, 13])
    assert ds.domain.names == ["age", "workclass", "fnlwgt", "education", "marital_status", "occupation",
                               "relationship", "race", "sex", "capital_gain", "capital_loss",
                               "hours_per_week", "native_country"]
    assert ds.domain.features[0].labels[3] == "30-39"


def test_compas_equals_iandd_file_as_multiset(real_home):
    ds = load_dataset("compas", data_home=real_home)
    reference = _preprocessed(real_home, "compas/preprocessed_iandd/compas.csv")
    ours = np.column_stack([ds.X, ds.y])
    rows, counts = np.unique(ours, axis=0, return_counts=True)
    ref_rows, ref_counts = np.unique(reference, axis=0, return_counts=True)
    np.testing.assert_array_equal(rows, ref_rows)
    np.testing.assert_array_equal(counts, ref_counts)


def test_bank_equals_adf_file(real_home):
    ds = load_dataset("bank", data_home=real_home)
    reference = _preprocessed(real_home, "bank/preprocessed_adf/bank.csv")
    np.testing.assert_array_equal(ds.X, reference[:, :16])
    np.testing.assert_array_equal(ds.y, reference[:, 16])
    assert ds.domain.features[ds.domain.index("balance")].labels[-20] == "<=-951 EUR"


def test_german_contains_every_adf_sample_row(real_home):
    ds = load_dataset("german", data_home=real_home)
    reference = _preprocessed(real_home, "german/preprocessed_adf/credit_sample.csv")
    ours = {tuple(r) for r in np.column_stack([ds.X, ds.y]).tolist()}
    missing = [r for r in reference.tolist() if tuple(r) not in ours]
    assert reference.shape == (600, 21) and missing == []
    assert np.bincount(ds.X[:, ds.domain.index("sex")]).tolist() == [690, 310]


@pytest.mark.parametrize(("name", "domains"), [
    ("census", {"age": tuple(range(1, 10)), "race": (0, 1, 2, 3, 4), "sex": (0, 1)}),
    ("compas", {"sex": (0, 1), "age": tuple(range(1, 10)), "race": (0, 1, 2, 3, 4, 5)}),
    ("bank", {"age": tuple(range(1, 10))}),
    ("german", {"sex": (0, 1), "age": tuple(range(1, 8))}),
])
def test_protected_domains(real_home, name, domains):
    ds = load_dataset(name, protected=list(domains), data_home=real_home)
    assert ds.domain.protected_names == list(domains)
    assert ds.domain.protected_values == tuple(domains.values())


def test_protected_as_a_string(real_home):
    assert load_dataset("census", protected="race", data_home=real_home).domain.protected_names == ["race"]


def test_fresh_arrays(real_home):
    first = load_dataset("german", data_home=real_home)
    first.X[:] = -7
    first.y[:] = 3
    second = load_dataset("german", data_home=real_home)
    assert second.X.min() >= 0 and set(np.unique(second.y)) == {0, 1}


def test_environment_variable_is_the_default_home(real_home, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_DATA", str(real_home))
    assert load_dataset("german").X.shape == (1000, 20)


# ---------------------------------------------------------------- bad input
def test_unknown_dataset():
    with pytest.raises(DatasetError, match="unknown dataset 'adult'; valid names: census, compas, bank"):
        load_dataset("adult")


def test_unknown_protected_attribute(real_home):
    with pytest.raises(DomainError, match="unknown protected attribute 'gender' for census; its protected attributes "
                                          "are age, race, sex"):
        load_dataset("census", protected=["gender"], data_home=real_home)


def test_protected_attribute_with_one_observed_value(tmp_path, real_home):
    # A german.data whose rows are all male: sex has one observed value, so no counterpart exists.
    lines = (real_home / "german" / "raw" / "german.data").read_text().splitlines()
    males = [line for line in lines if " A93 " in line][:50]
    (tmp_path / "german" / "raw").mkdir(parents=True)
    (tmp_path / "german" / "raw" / "german.data").write_text("\n".join(males) + "\n")
    ds = load_dataset("german", protected=["age"], data_home=tmp_path, allow_checksum_mismatch=True)
    assert ds.X.shape == (50, 20)
    with pytest.raises(DomainError, match="protected attribute 'sex' has only one value"):
        load_dataset("german", protected=["sex"], data_home=tmp_path, allow_checksum_mismatch=True)


# ---------------------------------------------------------------- describe
def test_describe_with_real_home(real_home):
    entries = {e["name"]: e for e in describe_datasets(real_home)}
    assert list(entries) == dataset_names()
    census = entries["census"]
    assert census["status"] == "found" and census["rows"] == 32561 and census["n_attributes"] == 13
    assert census["label"] == "income" and census["positive_class"] == ">50K"
    assert census["positive_rows"] == 7841
    assert census["protected"]["sex"] == {0: "Female", 1: "Male"}
    assert census["protected"]["race"][4] == "Black"
    assert census["path"] == str(real_home / "census/raw/adult.data")
    assert entries["compas"]["protected"]["race"][1] == "African-American"
    bank_ages = {a: f"{10 * a}-{10 * a + 9}" for a in range(1, 9)} | {9: ">=90"}
    assert entries["bank"]["protected"] == {"age": bank_ages}
    assert entries["german"]["protected"]["sex"] == {0: "male", 1: "female"}


def test_describe_missing_and_broken_files(tmp_path):
    (tmp_path / "census" / "raw").mkdir(parents=True)
    (tmp_path / "census" / "raw" / "adult.data").write_text("39, State-gov\n")
    entries = {e["name"]: e for e in describe_datasets(tmp_path)}
    assert entries["census"]["status"].startswith("error: census/raw/adult.data")
    assert "line 1" in entries["census"]["status"] and entries["census"]["rows"] is None
    german = entries["german"]
    assert german["status"].startswith("missing") and german["path"] is None and german["rows"] is None
    assert "statlog/german/german.data" in german["status"] and str(tmp_path) in german["status"]
    assert german["protected"] == {"sex": None, "age": None}


def test_census_categories_follow_adult_names():
    assert census_module.CATEGORIES["race"] == ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other",
                                                "Black"]


@pytest.mark.parametrize("name", ["census", "compas", "bank", "german"])
def test_published_facts_match_the_parsed_file(real_home, name):
    # describe_datasets and the command line's refusals read these facts instead of parsing the raw file.
    from chiralfair.datasets.published import PUBLISHED

    assert list(PUBLISHED) == dataset_names()

    facts = PUBLISHED[name]
    spec = DATASETS[name]
    assert (facts["raw"], facts["label"], facts["positive_class"], facts["description"]) == (
        spec.raw, spec.label, spec.positive_class, spec.description)
    assert facts.get("couple") == spec.couple  # grids read the default couplings from this table
    ds = load_dataset(name, protected=list(DATASETS[name].protected), data_home=real_home)
    assert facts["attributes"] == tuple(ds.domain.names)
    assert (facts["rows"], facts["positive_rows"]) == (ds.n_samples, int(ds.y.sum()))
    assert tuple(facts["protected"]) == DATASETS[name].protected
    for i, values in zip(ds.domain.protected, ds.domain.protected_values, strict=True):
        feature = ds.domain.features[i]
        assert facts["protected"][feature.name] == {v: feature.label(v) for v in values}


def test_describe_parses_a_raw_file_that_is_not_the_published(tmp_path, real_home):
    raw = tmp_path / "german" / "raw"
    raw.mkdir(parents=True)
    lines = (real_home / "german/raw/german.data").read_text().splitlines()[:60]
    (raw / "german.data").write_text("\n".join(lines) + "\n")
    german = {e["name"]: e for e in describe_datasets(tmp_path)}["german"]
    assert german["status"].startswith("error:") and "SHA-256" in german["status"]
    assert german["rows"] is None
