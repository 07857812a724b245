"""Selection rate, TPR and FPR per protected group on the held-out rows (fairlearn), and each row's is_idi."""

import json

import numpy as np
import pandas as pd
import pytest
from toys import biased_module, is_biased_idi, toy_dataset

import chiralfair
from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model
from chiralfair.verdict.group_metrics import group_metrics, held_out_rows


class CallCounter:
    """A biased toy model as a predict callable that counts its calls."""

    def __init__(self):
        self.calls = 0
        self.module = as_model(biased_module())

    def __call__(self, X):
        self.calls += 1
        return self.module.predict(X)


def test_held_out_rows_come_from_one_checked_batch_and_match_the_ground_truth():
    data = toy_dataset(300)
    rows = np.arange(100, 300)
    counter = CallCounter()
    model = as_model(counter, name="counter")
    frame = held_out_rows(model, data, rows)
    assert counter.calls == 1 and model.n_queries == len(rows) * 2  # sex has 2 values: one query per combination
    assert list(frame.columns) == ["row", "y_true", "y_pred", "is_idi", "left_out", "why_left_out", "sex"]
    assert not frame["left_out"].any() and frame["why_left_out"].isna().all()  # no missing sex, no constraint
    assert (frame["row"].to_numpy() == rows).all()
    assert (frame["is_idi"].to_numpy() == is_biased_idi(data.X[rows])).all()
    assert (frame["y_pred"].to_numpy() == counter.module.predict(data.X[rows])).all()
    assert set(frame["sex"]) == {"Female", "Male"}


def test_group_metrics_are_fairlearns_with_wilson_intervals_on_the_counts():
    from fairlearn.metrics import MetricFrame, false_positive_rate, selection_rate, true_positive_rate
    from statsmodels.stats.proportion import proportion_confint

    data = toy_dataset(400)
    frame = held_out_rows(as_model(biased_module()), data, np.arange(400))
    gm = group_metrics(frame, ["sex"])
    mf = MetricFrame(metrics={"selection_rate": selection_rate, "tpr": true_positive_rate,
                              "fpr": false_positive_rate}, y_true=frame.y_true, y_pred=frame.y_pred,
                     sensitive_features=frame["sex"])
    for g in gm.groups:
        value = g["group"].split("=")[1]
        for m in ("selection_rate", "tpr", "fpr"):
            assert g[m] == pytest.approx(mf.by_group.loc[value, m])
        part = frame[frame["sex"] == value]
        lo, hi = proportion_confint(int(part.y_pred.sum()), len(part), alpha=0.05, method="wilson")
        assert (g["selection_rate_lower"], g["selection_rate_upper"]) == pytest.approx((lo, hi))
        assert g["idi_rate"] == pytest.approx(part.is_idi.mean())
    assert gm.overall["n"] == 400 and gm.overall["selection_rate"] == pytest.approx(frame.y_pred.mean())


def test_a_group_without_positive_rows_has_an_undefined_tpr_not_a_number():
    data = toy_dataset(400)
    frame = held_out_rows(as_model(biased_module()), data, np.arange(400))
    frame.loc[frame["sex"] == "Female", "y_true"] = 0
    gm = group_metrics(frame, ["sex"])
    female = next(g for g in gm.groups if g["group"] == "sex=Female")
    assert female["tpr"] is None and female["tpr_lower"] is None and female["fpr"] is not None
    assert "undefined" in "\n".join(gm.lines()) and any("sex=Female (TPR)" in n for n in gm.notes)
    assert np.isnan(gm.to_frame().set_index("group").loc["sex=Female", "tpr"])


def test_no_protected_attribute_is_refused():
    # It gave GroupMetrics(overall=None), whose to_dict() and lines() then failed on None.
    frame = held_out_rows(as_model(biased_module()), toy_dataset(100), np.arange(100))
    with pytest.raises(ConfigError, match="at least one protected attribute"):
        group_metrics(frame, [])


def test_fairlearns_bootstrap_on_request():
    frame = held_out_rows(as_model(biased_module()), toy_dataset(200), np.arange(200))
    gm = group_metrics(frame, ["sex"], n_boot=20, random_state=0)
    for g in gm.groups:
        assert g["selection_rate_lower"] <= g["selection_rate"] <= g["selection_rate_upper"]
    assert gm.n_boot == 20 and "bootstrap" in gm.lines()[0]


def test_the_audit_carries_group_metrics_into_result_json_the_report_and_held_out_rows(tmp_path):
    from fairlearn.metrics import MetricFrame, selection_rate

    data = toy_dataset(400, protected=("sex", "race"))
    result = chiralfair.audit(biased_module(), data, favourable=1, seeds="random", max_global=10, max_local=5,
                              out=tmp_path / "run")
    stored = json.loads((tmp_path / "run" / "result.json").read_text())["group_metrics"]
    groups = [g["group"] for g in stored["groups"]]
    assert "sex=Female" in groups and "race=A" in groups and "sex=Female, race=A" in groups
    assert stored == result.group_metrics.to_dict()
    assert "## Group metrics" in (tmp_path / "run" / "report.md").read_text()
    rows = result.held_out_rows()
    assert len(rows) == len(result.inputs.test_index) and rows["is_idi"].dtype == bool
    mf = MetricFrame(metrics=selection_rate, y_true=rows.y_true, y_pred=rows.is_idi, sensitive_features=rows["sex"])
    female = next(g for g in stored["groups"] if g["group"] == "sex=Female")
    assert mf.by_group["Female"] == pytest.approx(female["idi_rate"])


@pytest.mark.parametrize("n_boot", [0, 4])
def test_the_rates_are_fairlearns_own_to_the_last_bit(n_boot, monkeypatch):
    # group_metrics hands MetricFrame its own rate functions (fairlearn's checks and confusion matrices cost most of
    # its time); the figures must be those of fairlearn's selection_rate, true_positive_rate and false_positive_rate
    from fairlearn.metrics import false_positive_rate, selection_rate, true_positive_rate

    from chiralfair.verdict import group_metrics as gm

    rng = np.random.default_rng(11)
    n = 997
    frame = pd.DataFrame({"y_true": rng.integers(0, 2, n), "y_pred": rng.integers(0, 2, n),
                          "is_idi": rng.random(n) < 0.2, "left_out": False, "sex": rng.choice(["f", "m"], n),
                          "race": rng.choice(["a", "b", "c", "d"], n)})
    frame.loc[frame["race"] == "c", "y_true"] = 0  # a group with no positive row: TPR undefined
    frame.loc[frame["race"] == "d", "y_true"] = 1  # and one with no negative row: FPR undefined
    frame.loc[frame["race"] == "b", "y_pred"] = 1
    ours = gm.group_metrics(frame, ["sex", "race"], n_boot=n_boot, random_state=3)
    monkeypatch.setattr(gm, "_selection_rate", selection_rate)
    monkeypatch.setattr(gm, "_true_positive_rate", true_positive_rate)
    monkeypatch.setattr(gm, "_false_positive_rate", false_positive_rate)
    theirs = gm.group_metrics(frame, ["sex", "race"], n_boot=n_boot, random_state=3)
    assert ours.groups == theirs.groups and ours.overall == theirs.overall
    assert any(g["tpr"] is None for g in ours.groups) and any(g["fpr"] is None for g in ours.groups)
    for g in ours.groups:  # and a recount from the rows
        if g["attribute"] != "race" or g["tpr"] is None:
            continue
        rows = frame[frame["race"] == g["group"].split("=")[1]]
        positives = rows["y_true"] == 1
        assert g["tpr"] == (rows["y_pred"][positives] == 1).sum() / positives.sum()


def test_without_a_bootstrap_the_rates_are_metricframes_bit_for_bit_from_the_same_functions():
    # the default path calls the rate functions on each group's rows itself: MetricFrame's figures, every group of
    # one attribute and of the intersection, and all rows
    from fairlearn.metrics import MetricFrame

    from chiralfair.verdict import group_metrics as gm

    rng = np.random.default_rng(5)
    n = 1201
    frame = pd.DataFrame({"y_true": rng.integers(0, 2, n), "y_pred": rng.integers(0, 2, n),
                          "is_idi": rng.random(n) < 0.3, "left_out": False, "sex": rng.choice(["f", "m"], n),
                          "race": rng.choice(["a", "b", "c"], n)})
    frame.loc[(frame["race"] == "c") & (frame["sex"] == "f"), "race"] = "b"  # a combination no row holds
    frame.loc[frame["race"] == "a", "y_true"] = 0  # a group without positive rows
    ours = gm.group_metrics(frame, ["sex", "race"])
    metrics = {"selection_rate": gm._selection_rate, "tpr": gm._true_positive_rate, "fpr": gm._false_positive_rate}
    seen = 0
    for columns in (["sex"], ["race"], ["sex", "race"]):
        mf = MetricFrame(metrics=metrics, y_true=frame["y_true"].to_numpy(), y_pred=frame["y_pred"].to_numpy(),
                         sensitive_features=frame[columns[0]] if len(columns) == 1 else frame[columns])
        for key, row in mf.by_group.iterrows():
            key = key if isinstance(key, tuple) else (key,)
            text = ", ".join(f"{c}={v}" for c, v in zip(columns, key, strict=True))
            found = [g for g in ours.groups if g["attribute"] == ",".join(columns) and g["group"] == text]
            if np.isnan(row["selection_rate"]):  # no row holds it: no record
                assert not found
                continue
            (g,) = found
            seen += 1
            for m in ("selection_rate", "tpr", "fpr"):
                assert g[m] == (None if np.isnan(row[m]) else row[m]), (text, m)
        for m in ("selection_rate", "tpr", "fpr"):
            assert ours.overall[m] == mf.overall[m]
    assert seen == 2 + 3 + 5 and any(g["tpr"] is None for g in ours.groups)


def test_the_default_group_metrics_do_not_import_fairlearn():
    # fairlearn's import and MetricFrame's per-row conversions were most of the quick start's group metrics
    import subprocess
    import sys

    code = ("import sys, numpy as np, pandas as pd; from chiralfair.verdict.group_metrics import group_metrics; "
            "f = pd.DataFrame({'y_true': [0, 1, 1, 0], 'y_pred': [0, 1, 0, 0], 'is_idi': [True, False, False, True], "
            "'left_out': False, "
            "'sex': ['f', 'm', 'f', 'm']}); g = group_metrics(f, ['sex']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'fairlearn'), g.meta['fairlearn_version'], "
            "g.overall['selection_rate'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    from importlib.metadata import version

    assert out == ["[]", version("fairlearn"), "0.25"]
