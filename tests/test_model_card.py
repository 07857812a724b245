"""The verdict as a CycloneDX modelCard, validated against the official schema, and as a skops card section."""

import json

import pytest
from toys import biased_module, toy_dataset

import chiralfair
from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model
from chiralfair.reporting.model_card import (
    add_to_skops_card,
    cyclonedx_bom,
    cyclonedx_model_card,
    write_model_card,
)
from chiralfair.verdict import decide, estimate


def validate(card):
    """Errors of the card wrapped in a minimal BOM, against cyclonedx-python-lib's bundled 1.6 JSON schema."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(cyclonedx_bom(card, name="toy")),
                                                                  all_errors=True)
    return [] if errors is None else [str(e) for e in errors]


@pytest.fixture(scope="module")
def verdict():
    return estimate(as_model(biased_module()), toy_dataset(50), population="domain", exact=False, margin=0.03,
                    favourable=1, random_state=0)


def test_the_card_of_a_verdict_is_valid_cyclonedx_and_holds_its_figures(verdict):
    card = cyclonedx_model_card(verdict)
    assert validate(card) == []
    metrics = card["quantitativeAnalysis"]["performanceMetrics"]
    overall = metrics[0]
    assert overall["type"].startswith("share affected") and float(overall["value"]) == pytest.approx(verdict.share)
    assert float(overall["confidenceInterval"]["lowerBound"]) == pytest.approx(verdict.lower, rel=1e-5)
    assert float(overall["confidenceInterval"]["upperBound"]) == pytest.approx(verdict.upper, rel=1e-5)
    assert "uniform draws" in overall["slice"]
    female = [m for m in metrics if m["type"].startswith("share harmed") and "sex=Female" in m["slice"]]
    assert len(female) == 1 and float(female[0]["value"]) > 0
    at_risk = card["considerations"]["fairnessAssessments"]
    assert [a["groupAtRisk"] for a in at_risk] == ["sex=Female"]  # the biased toy favours sex = Male
    assert "unfavourable outcome (label 0)" in at_risk[0]["harms"] and "sex" in at_risk[0]["harms"]
    assert card["considerations"]["technicalLimitations"] == list(verdict.notes)


def test_the_schema_refuses_a_broken_card(verdict):
    card = cyclonedx_model_card(verdict)
    card["quantitativeAnalysis"]["performanceMetrics"][0]["value"] = 0.5  # the schema wants strings
    card["considerations"]["fairnessAssessments"][0]["group"] = "not a field"
    assert len(validate(card)) >= 2


def test_the_same_verdict_gives_the_same_card_byte_for_byte(verdict, tmp_path):
    a = write_model_card(verdict, tmp_path / "a.json").read_text()
    b = write_model_card(verdict, tmp_path / "b.json").read_text()
    assert a == b and json.loads(a)["bom-ref"].startswith("chiralfair-model-card-")


def test_a_gate_decision_states_its_threshold_in_the_card(verdict):
    card = cyclonedx_model_card(decide(verdict, 0.5))
    assert validate(card) == []
    assert card["considerations"]["technicalLimitations"][0].startswith("fairness gate: pass against a largest share")


def test_an_audit_card_has_the_group_metrics_and_the_held_out_f1(tmp_path):
    result = chiralfair.audit(biased_module(), toy_dataset(400), protected="sex", favourable=1, seeds="random",
                              max_global=10, max_local=5)
    card = cyclonedx_model_card(result)
    assert validate(card) == []
    kinds = {m["type"] for m in card["quantitativeAnalysis"]["performanceMetrics"]}
    assert {"F1", "accuracy", "selection rate", "true positive rate", "false positive rate"} <= kinds
    f1 = next(m for m in card["quantitativeAnalysis"]["performanceMetrics"] if m["type"] == "F1")
    assert float(f1["value"]) == pytest.approx(result.to_dict()["model"]["f1"], rel=1e-5)
    assert "held-out split" in f1["slice"]


def test_a_retraining_card_is_valid():
    result = chiralfair.retrain(_sklearn_model(), _frame(), label="y", positive_class=1, protected="sex",
                                seeds="cluster", max_global=20, max_local=5, random_state=0)
    card = cyclonedx_model_card(result)
    assert validate(card) == []
    slices = [m["slice"] for m in card["quantitativeAnalysis"]["performanceMetrics"]]
    assert any("before retraining" in s for s in slices) and any("after retraining" in s for s in slices)


def test_skops_card_section_holds_the_same_figures(verdict, tmp_path):
    import skops.card

    model = _sklearn_model()
    card = add_to_skops_card(skops.card.Card(model), verdict)
    text = card.render()
    assert "Individual fairness (chiralfair)" in text
    assert f"{verdict.share:.2%}" in text and f"[{verdict.lower:.2%}, {verdict.upper:.2%}]" in text
    assert "sex=Female" in text
    path = write_model_card(verdict, tmp_path / "README.md", model=model)
    assert "Individual fairness (chiralfair)" in path.read_text()


def test_a_skops_card_needs_an_sklearn_model_and_a_known_suffix(verdict, tmp_path):
    with pytest.raises(ConfigError, match="describes an sklearn model"):
        write_model_card(verdict, tmp_path / "README.md", model=None)
    with pytest.raises(ConfigError, match="use a .json file"):
        write_model_card(verdict, tmp_path / "card.yaml")


def _frame():
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.integers(0, 2, 400), "a": rng.integers(0, 10, 400), "b": rng.integers(0, 10, 400)})
    df["y"] = ((df["a"] + df["b"] + 3 * df["sex"]) > 10).astype(int)
    return df


def _sklearn_model():
    from sklearn.linear_model import LogisticRegression

    df = _frame()
    return LogisticRegression(max_iter=500).fit(df.drop(columns="y"), df["y"])
