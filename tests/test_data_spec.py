"""One description of the data and the model's language, taken by every door (`chiralfair.DataSpec`).

Each door given ``spec=`` must answer exactly as when given the same fields one by one, and both answers must equal
a recount written here through the user's own pipeline; a field given both ways is refused; ``retrain`` given an
audit's IDIs reads them in the audit's description.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder

import chiralfair
from chiralfair.exceptions import ConfigError

FIELDS = dict(label="y", positive_class="yes", protected="sex")


@pytest.fixture(scope="module")
def people():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], 500), "hours": rng.integers(20, 60, 500),
                          "city": rng.choice(["a", "b", "c"], 500)})
    frame["y"] = np.where(frame["hours"] + 8 * (frame["sex"] == "m") + 3 * (frame["city"] == "a") > 45, "yes", "no")
    train, test = frame.iloc[:300].reset_index(drop=True), frame.iloc[300:].reset_index(drop=True)
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), ["sex", "city"]), remainder="passthrough"),
                         LogisticRegression()).fit(train.drop(columns="y"), train["y"])
    return pipe, train, test


def recount_share(pipe, test) -> float:
    """Share of held-out people whose label changes when sex flips, through the pipeline itself."""
    X = test.drop(columns="y")
    flipped = X.assign(sex=np.where(X["sex"] == "m", "f", "m"))
    return float(np.mean(pipe.predict(X) != pipe.predict(flipped)))


def test_estimate_with_spec_equals_fields_and_the_recount(people):
    pipe, train, test = people
    spec = chiralfair.DataSpec(**FIELDS)
    by_spec = chiralfair.estimate(pipe, train, test=test, spec=spec)
    by_fields = chiralfair.estimate(pipe, train, test=test, **FIELDS)
    assert by_spec.share == by_fields.share == pytest.approx(recount_share(pipe, test), abs=0)
    assert by_spec.n_individuals == len(test)


def test_audit_records_its_spec_and_retrain_reads_the_idis_in_it(people):
    pipe, train, test = people
    spec = chiralfair.DataSpec(**FIELDS)
    result = chiralfair.audit(pipe, train, test=test, spec=spec, max_global=10, max_local=5)
    assert result.spec == spec
    assert result.verdict.share == pytest.approx(recount_share(pipe, test), abs=0)
    fairer = chiralfair.retrain(pipe, train, test=test, idis=result, method="unaware")
    before = fairer.rows[0]
    assert before["test_idi_rate"] == pytest.approx(recount_share(pipe, test), abs=0)


@pytest.mark.parametrize("door", ["audit", "estimate", "retrain", "certify"])
def test_a_field_given_both_ways_is_refused_by_every_door(people, door):
    pipe, train, test = people
    spec = chiralfair.DataSpec(**FIELDS)
    with pytest.raises(ConfigError, match="protected given both in spec= and as keyword"):
        getattr(chiralfair, door)(pipe, train, test=test, spec=spec, protected="sex")


def test_spec_lays_its_fields_over_a_schema(people, tmp_path):
    pipe, train, test = people
    schema = tmp_path / "schema.toml"
    schema.write_text('label = "y"\npositive_class = "no"\nprotected = ["city"]\n')
    spec = chiralfair.DataSpec(schema=str(schema), positive_class="yes", protected="sex")
    verdict = chiralfair.estimate(pipe, train, test=test, spec=spec)
    assert verdict.share == pytest.approx(recount_share(pipe, test), abs=0)


def test_spec_normalises_once_and_a_door_refuses_an_unknown_model_input(people):
    pipe, train, test = people
    assert chiralfair.DataSpec(protected="race, sex").protected == ("race", "sex")
    assert chiralfair.DataSpec(constraints="a=1 excludes b=2").constraints == ("a=1 excludes b=2",)
    with pytest.raises(ConfigError, match="model_input must be one of 'auto', 'frame', 'codes', 'values'"):
        chiralfair.estimate(pipe, train, test=test, spec=chiralfair.DataSpec(**FIELDS, model_input="bytes"))
    with pytest.raises(ConfigError, match="spec= takes a chiralfair.DataSpec, got dict"):
        chiralfair.estimate(None, None, spec=dict(FIELDS))  # type: ignore[arg-type]


def test_replace_makes_a_variant_without_repeating_the_rest(people):
    pipe, train, test = people
    spec = chiralfair.DataSpec(**FIELDS)
    other = dataclasses.replace(spec, favourable="no")
    verdict = chiralfair.estimate(pipe, train, test=test, spec=other)
    assert verdict.share == pytest.approx(recount_share(pipe, test), abs=0)
    assert verdict.favourable == 0
