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


def validate_bom(bom):
    """Errors of a BOM against cyclonedx-python-lib's bundled CycloneDX 1.6 JSON schema (the official one)."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    errors = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(bom), all_errors=True)
    return [] if errors is None else [str(e) for e in errors]


def validate(card):
    """Errors of the card in the BOM chiralfair writes around it."""
    return validate_bom(cyclonedx_bom(card, name="toy"))


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


# ------------------------------------------------------------------------------------------- the whole BOM
def test_the_bom_is_a_complete_cyclonedx_document_with_the_model_its_hash_and_the_data(verdict, tmp_path):
    import hashlib

    from chiralfair.reporting.model_card import write_bom

    (tmp_path / "model.skops").write_bytes(b"model bytes")
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    path = write_bom(verdict, tmp_path / "bom.json", name="model.skops", model_file=tmp_path / "model.skops",
                     data_files={"data": tmp_path / "data.csv"})
    bom = json.loads(path.read_text())
    assert validate_bom(bom) == []
    assert bom["bomFormat"] == "CycloneDX" and bom["specVersion"] == "1.6" and bom["serialNumber"].startswith("urn:")
    model, data = bom["components"]
    assert model["type"] == "machine-learning-model" and model["name"] == "model.skops"
    assert model["hashes"] == [{"alg": "SHA-256", "content": hashlib.sha256(b"model bytes").hexdigest()}]
    assert model["modelCard"]["quantitativeAnalysis"] == cyclonedx_model_card(verdict)["quantitativeAnalysis"]
    assert model["modelCard"]["modelParameters"]["datasets"] == [{"ref": data["bom-ref"]}]
    assert data["type"] == "data" and data["hashes"][0]["alg"] == "SHA-256"
    assert bom["metadata"]["component"]["name"] == "model.skops"
    assert write_bom(verdict, tmp_path / "again.json", name="model.skops", model_file=tmp_path / "model.skops",
                     data_files={"data": tmp_path / "data.csv"}).read_text() == path.read_text()  # byte for byte
    broken = {k: v for k, v in bom.items() if k != "bomFormat"}
    assert any("'bomFormat' is a required property" in e for e in validate_bom(broken))


def test_a_card_or_bom_never_overwrites_a_file_chiralfair_did_not_write(verdict, tmp_path):
    from chiralfair.reporting.model_card import write_bom

    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "notes"}')
    for write in (write_model_card, write_bom):
        with pytest.raises(ConfigError, match="not a model card or BOM chiralfair wrote: chiralfair never overwrites"):
            write(verdict, mine)
    assert mine.read_text() == '{"my": "notes"}'
    card = write_model_card(verdict, tmp_path / "card.json")
    bom = write_bom(verdict, tmp_path / "bom.json")
    assert write_model_card(verdict, card) == card and write_bom(verdict, bom) == bom  # its own: replaced
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ConfigError, match="is a folder"):
        write_model_card(verdict, tmp_path / "folder.json")


def test_a_hand_written_readme_is_refused_unless_it_marks_where_chiralfair_writes(verdict, tmp_path):
    from chiralfair.reporting.model_card import MARK_BEGIN, MARK_END

    readme = tmp_path / "README.md"
    readme.write_text("# My model\n\nHand-written.\n")
    with pytest.raises(ConfigError, match="has no chiralfair section: chiralfair never overwrites"):
        write_model_card(verdict, readme, model=_sklearn_model())
    assert readme.read_text() == "# My model\n\nHand-written.\n"
    readme.write_text(f"# My model\n\nHand-written.\n\n{MARK_BEGIN}\nold figures\n{MARK_END}\n\nFooter.\n")
    write_model_card(verdict, readme)  # no model needed: only the section is written
    text = readme.read_text()
    assert text.startswith(f"# My model\n\nHand-written.\n\n{MARK_BEGIN}\n")
    assert text.endswith(f"{MARK_END}\n\nFooter.\n")
    assert "old figures" not in text and f"{verdict.share:.2%}" in text
    write_model_card(verdict, readme)
    assert readme.read_text() == text


def test_a_skops_card_chiralfair_wrote_has_only_its_section_replaced_the_next_time(verdict, tmp_path):
    card = write_model_card(verdict, tmp_path / "card.md", model=_sklearn_model())
    text = card.read_text().replace("# Model description\n", "# Model description\n\nEdited by hand.\n", 1)
    card.write_text(text)
    other = estimate(as_model(biased_module()), toy_dataset(50), population="domain", exact=False, margin=0.05,
                     favourable=1, random_state=1)
    write_model_card(other, card)
    again = card.read_text()
    assert "Edited by hand." in again and f"{other.share:.2%}" in again
