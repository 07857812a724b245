import warnings

import numpy as np
import pandas as pd
import pytest

from chiralfair.datasets import from_frame
from chiralfair.exceptions import DatasetError, DataWarning, DomainError


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


def test_a_continuous_column_is_searched_on_quantile_bins_and_kept_exact_in_the_raw_rows():
    df = frame()
    df.loc[0, "income"] = 1200.5
    ds = from_frame(df, label="outcome", positive_class="yes", protected=["sex"])
    income = ds.domain.index("income")
    # six distinct values, fewer than AUTO_BINS: one bin per value, in the order of the values
    assert ds.X[:, income].tolist() == [1, 3, 4, 0, 5, 2]
    assert ds.codec.binned == {"income": "6 quantile bins, chosen automatically"}
    assert ds.raw["income"].tolist() == df["income"].tolist()  # the people keep their own values
    assert ds.to_frame(ds.X)["income"].tolist() == df["income"].tolist()  # each bin's representative is its value


def test_quantile_bins_of_a_column_with_many_values():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], 500), "fare": rng.lognormal(3, 1, 500),
                       "y": rng.choice(["no", "yes"], 500)})
    ds = from_frame(df, label="y", positive_class="yes", protected="sex")
    codes = ds.X[:, 1]
    assert codes.min() == 0 and codes.max() == 9
    assert np.bincount(codes).tolist() == [50] * 10  # deciles: each bin holds a tenth of the rows
    assert ds.codec.binned == {"fare": "10 quantile bins, chosen automatically"}


def test_a_missing_number_gets_a_bin_of_its_own():
    df = frame()
    df.loc[3, "age"] = np.nan
    ds = from_frame(df, label="outcome", positive_class="yes", protected=["sex"], bins={"income": 3})
    age = ds.domain.features[ds.domain.index("age")]
    assert age.labels[ds.X[3, 1]] == "missing" and age.missing == ds.X[3, 1]
    assert np.isnan(ds.raw["age"].iloc[3]) and ds.raw["age"].iloc[0] == 23


def test_a_continuous_protected_attribute_still_needs_bins():
    df = frame().assign(score=[1.5, 2.0, 3.0, 2.0, 1.0, 3.0])
    with pytest.raises(DatasetError, match=r"column 'score' holds the non-integer value 1.5.*bins=\{'score': 10\}"):
        from_frame(df.drop(columns="sex"), label="outcome", positive_class="yes", protected="score")


def test_an_infinite_value_in_a_continuous_column_is_refused():
    df = frame()
    df.loc[1, "income"] = np.inf
    with pytest.raises(DatasetError, match="column 'income' holds an infinite value"):
        from_frame(df, label="outcome", positive_class="yes", protected=["sex"])


def test_value_outside_bin_edges():
    with pytest.raises(DatasetError, match=r"column 'income' value 3100.0 \(row with index label 2\) "
                                                r"lies outside the bin "
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
    with pytest.raises(DatasetError, match=r"label column 'outcome' has a missing value at row with index label 1"):
        from_frame(df, label="outcome", positive_class="yes", protected=["sex"], bins={"income": 2})


def test_protected_errors():
    with pytest.raises(DomainError, match=r"unknown feature 'gender'; valid names: 'sex', 'age', 'income', 'score'"):
        from_frame(frame(), label="outcome", positive_class="yes", protected=["gender"], bins={"income": 2})
    df = frame().assign(country=["x"] * 6)
    with pytest.raises(DomainError, match=r"protected attribute 'country' has only one value"):
        from_frame(df, label="outcome", positive_class="yes", protected=["country"], bins={"income": 2})


def test_not_a_frame_or_empty():
    with pytest.raises(DatasetError, match="df must be a DataFrame .*got ndarray"):
        from_frame(np.zeros((3, 2)), label="a", positive_class=1, protected=["b"])
    with pytest.raises(DatasetError, match="df has no rows"):
        from_frame(frame().iloc[:0], label="outcome", positive_class="yes", protected=["sex"])
    with pytest.raises(DatasetError, match="no column besides the label 'outcome'"):
        from_frame(frame()[["outcome"]], label="outcome", positive_class="yes", protected=["sex"])


def test_split_works_on_own_data():
    ds = from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 2})
    train, test = ds.split(0)
    assert len(train) + len(test) == 6 and set(train).isdisjoint(test)


# ---------------------------------------------------------------- names, missing PAs, groups, warnings
def int_named_frame(n=8):
    rng = np.random.default_rng(0)
    return pd.DataFrame({0: rng.integers(0, 3, n), 1: ["a", "b"] * (n // 2), 2: rng.integers(0, 5, n),
                         5: ["y", "n", "n", "y"] * (n // 4)})


def test_integer_column_names_match_by_text():
    df = int_named_frame()
    ds = from_frame(df, label=5, positive_class="y", protected=[1])
    assert ds.domain.names == ["0", "1", "2"] and ds.domain.protected_names == ["1"] and ds.label == "5"
    same = from_frame(df, label="5", positive_class="y", protected=["1"], bins={"2": 2})
    assert same.domain.protected == ds.domain.protected and same.domain.features[2].labels is not None
    with pytest.raises(DomainError, match=r"unknown feature 7; valid names: '0', '1', '2'"):
        from_frame(df, label=5, positive_class="y", protected=[7])
    with pytest.raises(DatasetError, match=r"columns 1 and '1' have the same name as text"):
        from_frame(df.assign(**{"1": 0}), label=5, positive_class="y", protected=[0])


def test_protected_naming_the_label_is_refused():
    with pytest.raises(DatasetError, match=r"protected attribute 'outcome' is the label column 'outcome'"):
        from_frame(frame(), label="outcome", positive_class="yes", protected=["sex", "outcome"],
                   bins={"income": 2})
    with pytest.raises(DatasetError, match=r"protected attribute 5 is the label column 5"):
        from_frame(int_named_frame(), label=5, positive_class="y", protected=[5])


def titanic_like(n=1000, seed=0):
    """Ages with 20% missing; the label depends on fare only, the model will depend on the age bin."""
    rng = np.random.default_rng(seed)
    age = rng.uniform(0, 80, n)
    age[rng.random(n) < 0.2] = np.nan
    return pd.DataFrame({"age": age, "sex": rng.choice(["female", "male"], n),
                         "fare": rng.integers(0, 10, n), "survived": rng.choice([0, 1], n)})


def test_missing_protected_value_is_never_a_counterpart_by_default():
    df = titanic_like()
    ds = from_frame(df, label="survived", positive_class=1, protected=["age"], bins={"age": [0, 20, 40, 60, 80]})
    age = ds.domain.features[0]
    assert age.missing == 4 and age.labels[4] == "missing"
    assert ds.domain.protected_values == ((0, 1, 2, 3),)
    assert ds.n_missing_protected == int(df["age"].isna().sum()) > 150
    np.testing.assert_array_equal(ds.missing_protected, df["age"].isna().to_numpy())
    old = from_frame(df, label="survived", positive_class=1, protected=["age"],
                     bins={"age": [0, 20, 40, 60, 80]}, missing_protected="value")
    assert old.domain.protected_values == ((0, 1, 2, 3, 4),) and old.n_missing_protected == 0
    again = old.with_protected(["age"])  # the default policy, on the same data
    assert again.domain.protected_values == ((0, 1, 2, 3),)


def test_missing_protected_rows_are_checked_but_not_counterparts_nor_seeds():
    from chiralfair.models import as_model
    from chiralfair.oracle import DiscriminationCheck
    from chiralfair.seeds import make_seed_strategy

    ds = from_frame(titanic_like(), label="survived", positive_class=1, protected=["age"],
                    bins={"age": [0, 20, 40, 60, 80]})

    def predict(X):  # discriminates "age missing" (code 4) against the last bin, the case this guards
        return ((X[:, 0] >= 3) & (X[:, 2] >= 5)).astype(np.int64)

    model = as_model(predict)
    res = DiscriminationCheck(model, ds.domain).check(ds.X)
    assert model.n_queries == 4 * ds.n_samples + ds.n_missing_protected
    cps = res.counterparts(ds.domain)[res.is_idi]
    assert res.is_idi.sum() > 50 and not (cps[:, 0] == 4).any()
    assert res.is_idi[ds.missing_protected].any()  # a missing-age row is still checked
    rep = make_seed_strategy("rows").select(model, ds, 300, random_state=0)
    assert not (rep.seeds[:, 0] == 4).any()
    assert any("missing protected value are not drawn as seeds" in n for n in rep.notes)


def test_protected_groups_from_frame():
    rng = np.random.default_rng(0)
    race = rng.choice(["A", "B", "C"], 200)
    df = pd.concat([pd.get_dummies(pd.Series(race, name="race"), prefix="race", dtype=int),
                    pd.DataFrame({"x": rng.integers(0, 5, 200), "y": rng.integers(0, 2, 200)})], axis=1)
    ds = from_frame(df, label="y", positive_class=1, protected=["race"],
                    protected_groups={"race": ["race_A", "race_B", "race_C"]})
    assert ds.domain.protected_names == ["race"] and len(ds.domain.combinations) == 3
    same = from_frame(df, label="y", positive_class=1, protected=[("race_A", "race_B", "race_C")])
    assert same.domain == ds.domain
    with pytest.warns(DataWarning, match=r"protected=\[\.\.\., \('race_A', 'race_B', 'race_C'\)\]"):
        from_frame(df, label="y", positive_class=1, protected=["race_A", "race_B", "race_C"])
    with pytest.raises(DatasetError, match=r"protected attribute 'y' is the label column"):
        from_frame(df, label="y", positive_class=1, protected=["race"], protected_groups={"race": ["race_A", "y"]})


def test_identifier_column_warns():
    df = pd.DataFrame({"id": np.arange(40), "sex": ["f", "m"] * 20, "y": [0, 1, 1, 0] * 10})
    with pytest.warns(DataWarning, match=r"column 'id' has a distinct value on each of the 40 rows"):
        from_frame(df, label="y", positive_class=1, protected=["sex"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        from_frame(df.iloc[:10], label="y", positive_class=1, protected=["sex"])  # too few rows to tell


def test_label_spellings_warn_with_counts():
    df = pd.DataFrame({"sex": ["f", "m"] * 10, "x": range(20),
                       "income": [">50K"] * 10 + ["<=50K"] * 6 + ["<=50K."] * 4})
    with pytest.warns(DataWarning) as record:
        ds = from_frame(df, label="income", positive_class=">50K", protected=["sex"], bins={"x": 2})
    message = str(record[0].message)
    assert "'<=50K' (6 rows) and '<=50K.' (4 rows)" in message
    assert "(10 rows) are encoded as 1" in message
    assert ds.y.sum() == 10
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        from_frame(frame(), label="outcome", positive_class="yes", protected=["sex"], bins={"income": 2})


def test_label_spellings_of_the_positive_class_are_refused_with_counts():
    df = pd.DataFrame({"sex": ["f", "m"] * 10, "x": range(20),
                       "income": [">50K"] * 7 + [">50K."] * 3 + ["<=50K"] * 6 + ["<=50K."] * 4})
    with pytest.raises(DatasetError, match=r"spells the positive class '>50K' \(7 rows\) in other ways too: "
                                           r"'>50K\.' \(3 rows\)"):
        from_frame(df, label="income", positive_class=">50K", protected=["sex"], bins={"x": 2})


def _married_frame():
    return pd.DataFrame({"sex": ["Male", "Female", "Male", "Female", "Male", "Female"],
                         "relationship": ["Husband", "Wife", "Own-child", "Own-child", "Husband", "Wife"],
                         "age": [40, 38, 19, 21, 50, 47], "y": [1, 0, 0, 0, 1, 1]})


def test_a_frame_takes_couplings_and_constraints_in_its_own_values():
    ds = from_frame(_married_frame(), label="y", positive_class=1, protected=["sex"],
                    couple={"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}},
                    constraints=["sex=Female excludes relationship=Husband", "age >= sex"])
    dom = ds.domain
    assert dom.describe_couplings() == ["sex -> relationship: Husband <-> Wife"]
    C = dom.counterparts(ds.X)
    rel = dom.features[1]
    assert [rel.label(c) for c in C[0, :, 1]] == ["Wife", "Husband"]  # a husband's counterparts: wife, himself
    assert dom.describe_constraints()[0] == "sex=Female excludes relationship=Husband"
    with pytest.raises(DomainError, match="has no value 'husband'"):
        from_frame(_married_frame(), label="y", positive_class=1, protected=["sex"],
                   couple={"sex": {"relationship": {"husband": "wife", "wife": "husband"}}})


def test_a_schema_declares_couplings_and_constraints(tmp_path):
    from chiralfair.datasets.schema import read_schema

    path = tmp_path / "schema.toml"
    path.write_text('label = "y"\nprotected = ["sex"]\nconstraints = ["sex=Female excludes relationship=Husband"]\n'
                    '\n[couple.sex]\nrelationship = {Husband = "Wife", Wife = "Husband"}\n')
    settings = read_schema(path)
    assert settings["couple"] == {"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}
    assert settings["constraints"] == ["sex=Female excludes relationship=Husband"]
    ds = from_frame(_married_frame(), label="y", positive_class=1, protected=["sex"], couple=settings["couple"],
                    constraints=settings["constraints"])
    assert ds.domain.coupled_columns == (1,)
    path.write_text('label = "y"\nprotected = ["sex"]\ncouple = "sex:relationship"\n')
    with pytest.raises(DatasetError, match="couple must be a table"):
        read_schema(path)


def test_observed_values_only_beside_a_constraint():
    # Constraint.columns is a property: calling it failed with "'tuple' object is not callable" on any domain with a
    # constraint, instead of re-encoding a column the rule does not name and refusing one it does.
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 50), "years": rng.integers(0, 10, 50),
                       "hours": rng.integers(1, 9, 50) * 5, "y": rng.integers(0, 2, 50)})
    df["age"] = df["years"] + 20 + rng.integers(0, 8, 50) * 5
    ds = from_frame(df, label="y", positive_class=1, protected=["sex"], constraints=["age >= years + 20"])
    hours = ds.with_observed_values_only(["hours"]).domain.features[ds.domain.index("hours")]
    assert hours.size == df["hours"].nunique()
    with pytest.raises(DomainError, match="feature 'age' is named by a constraint or coupling"):
        ds.with_observed_values_only(["age"])
