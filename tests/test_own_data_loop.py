"""The whole loop on your own data and model: one raw CSV and a saved raw-frame pipeline, through the CLI
(``run``, ``estimate``, ``retrain --from-run``) and through Python (``audit``, ``estimate``, ``retrain``), gives the
same figures; the retrained model saved by ``retrain`` loads back with ``--model FILE``."""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app

runner = CliRunner()


def invoke(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res


def people(n, seed):
    """Strings, missing values, a numeric column to bin; the label depends on sex (so there are IDIs)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "race": rng.choice(["a", "b", "c", None], n),
                       "age": rng.integers(18, 80, n).astype(float), "hours": rng.normal(40, 10, n).round(1)})
    df.loc[rng.random(n) < 0.1, "age"] = np.nan
    df["y"] = np.where(((df["sex"] == "m") & (df["hours"] > 38)) | (df["hours"] > 50), ">50K", "<=50K")
    return df


def fitted(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "race"]),
                             ("num", make_pipeline(SimpleImputer(), StandardScaler()), ["age", "hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression())]).fit(df.drop(columns="y"), df["y"])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import skops.io as sio

    folder = tmp_path_factory.mktemp("own")
    train, test = people(400, 0), people(200, 1)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sio.dump(fitted(train), folder / "pipe.skops")
    return folder


FLAGS = ("--label", "y", "--positive-class", ">50K", "--protected", "sex", "--bins", "age=0:30:50:90,hours=10",
         "--trust-model-file")
KW = dict(label="y", positive_class=">50K", protected=["sex"], bins={"age": [0, 30, 50, 90], "hours": 10},
          trust_model_file=True)
SEARCH = dict(seeds="cluster", generator="aequitas", max_global=20, max_local=5, random_state=3)


def verdict_figures(v: dict):
    return (v["share"], v["lower"], v["upper"], v["n_individuals"],
            [(g["group"], g["n"], g["n_affected"], g["n_harmed"]) for g in v["groups"]])


@pytest.mark.slow
def test_cli_and_python_give_the_same_figures_on_the_same_held_out_rows(files, tmp_path):
    data, test, model = files / "train.csv", files / "test.csv", files / "pipe.skops"
    run = invoke("run", "--data", data, "--test", test, "--model", model, *FLAGS, "--seeds", "cluster",
                 "--max-global", 20, "--max-local", 5, "--random-state", 3, "--out", tmp_path / "run", "--json")
    summary = json.loads(run.stdout)
    audited = chiralfair.audit(str(model), str(data), test=str(test), **KW, **SEARCH)
    python = audited.to_dict()
    assert summary["verdict"] is not None, "the verdict is computed whenever the positive class is known"
    assert verdict_figures(summary["verdict"]) == verdict_figures(python["verdict"])
    assert summary["n_idis"] == python["n_idis"] > 0
    assert summary["model"]["f1"] == python["model"]["f1"]
    assert summary["model"]["evaluated_on"] == "the given test rows (200)"
    assert summary["verdict"]["n_individuals"] <= 200  # the held-out rows, never the 400 the model was fitted on
    assert summary["meta"]["source"]["kind"] == "files"

    estimated = json.loads(invoke("estimate", "--data", data, "--test", test, "--model", model, *FLAGS, "--json",
                                  "--random-state", 3).stdout)
    verdict = chiralfair.estimate(str(model), str(data), test=str(test), **KW, random_state=3)
    assert verdict_figures(estimated) == verdict_figures(json.loads(verdict.to_json()))
    assert verdict_figures(estimated) == verdict_figures(summary["verdict"])

    retrained_cli = json.loads(invoke("retrain", "--from-run", tmp_path / "run", "--trust-model-file", "--out",
                                      tmp_path / "retrain", "--json", "--random-state", 3).stdout)
    retrained_py = chiralfair.retrain(str(model), str(data), test=str(test), idis=audited, **KW, random_state=3)
    for cli_row, py_row in zip(retrained_cli["rows"], retrained_py.rows, strict=True):
        assert (cli_row["f1"], cli_row["test_idi_rate"], cli_row["n_rows_added"]) == (
            py_row["f1"], py_row["test_idi_rate"], py_row["n_rows_added"])
    assert retrained_cli["rows"][0]["f1"] == summary["model"]["f1"]  # before = the model as tested, same rows


@pytest.mark.slow
def test_a_retrained_own_model_loads_back_with_the_figures_retrain_printed(files, tmp_path):
    data, test, model = files / "train.csv", files / "test.csv", files / "pipe.skops"
    out = tmp_path / "retrain"
    result = json.loads(invoke("retrain", "--data", data, "--test", test, "--model", model, *FLAGS, "--seeds",
                               "cluster", "--max-global", 20, "--max-local", 5, "--out", out, "--json").stdout)
    saved = out / "model-paper.skops"
    assert saved.is_file() and (out / "search" / "result.json").is_file()
    after = result["rows"][-1]
    again = json.loads(invoke("estimate", "--data", data, "--test", test, "--model", saved, *FLAGS, "--json").stdout)
    assert again["meta"]["model_f1"] == pytest.approx(after["f1"], abs=0)
    assert again["share"] == pytest.approx(after["test_idi_rate"], abs=0)


def test_counterfactual_and_unaware_retrain_a_raw_frame_pipeline(files, tmp_path):
    # The README's own model (Pipeline(ColumnTransformer, LR) on the raw frame) inside chiralfair's codes -> frame
    # Pipeline: counterfactual refused it ("Pipeline.fit takes no sample_weight"), unaware crashed ("codes must
    # have shape (n_samples, 4), got (n, 3)"): the ColumnTransformer needs the protected column by name.
    data, test, model = files / "train.csv", files / "test.csv", files / "pipe.skops"
    out = tmp_path / "retrain"
    result = json.loads(invoke("retrain", "--data", data, "--test", test, "--model", model, *FLAGS, "--method",
                               "counterfactual,unaware", "--out", out, "--json").stdout)
    after = {r["method"]: r for r in result["rows"][1:]}
    assert set(after) == {"counterfactual", "unaware"}
    assert after["unaware"]["test_idi_rate"] == 0.0  # no counterpart can change a label the input cannot see
    # Both refit the user's own pipeline in its raw frame and labels: counterfactual on the augmented rows, unaware
    # on the blinded rows, saved with its blinding in raw values (unaware was once measured but not saved).
    # Each file loads back with --model and gives the figures retrain printed.
    assert sorted(p.name for p in out.glob("model-*")) == ["model-counterfactual.skops", "model-unaware.skops"]
    assert "not saved" not in (out / "report.md").read_text()
    for method in ("counterfactual", "unaware"):
        again = json.loads(invoke("estimate", "--data", data, "--test", test, "--model", out / f"model-{method}.skops",
                                  *FLAGS, "--json").stdout)
        assert again["meta"]["model_f1"] == pytest.approx(after[method]["f1"], abs=0)
        assert again["share"] == pytest.approx(after[method]["test_idi_rate"], abs=0)


def test_the_search_of_a_retraining_takes_seeds_from_training_rows_only(files):
    data, test, model = files / "train.csv", files / "test.csv", files / "pipe.skops"
    from chiralfair.pipeline import SearchPlan, prepare_search, resolve_inputs, select_seeds

    inputs = resolve_inputs(str(model), str(data), test=str(test), **KW)

    prepared = prepare_search(SearchPlan(seeds="rows", max_global=150, random_state=0), inputs)
    seeds = select_seeds(prepared, inputs, dataset=inputs.training_rows()).seeds
    training = set(inputs.domain.keys(inputs.dataset.X[inputs.train_index]).tolist())
    everything = set(inputs.domain.keys(inputs.dataset.X).tolist())
    chosen = set(inputs.domain.keys(seeds).tolist())
    assert chosen <= training and not everything <= training  # held-out rows exist, and none was drawn
    drawn_from_all = select_seeds(prepared, inputs).seeds
    assert not set(inputs.domain.keys(drawn_from_all).tolist()) <= training  # the default draws from every row


def test_one_frame_and_a_fitted_model_say_the_held_out_rows_may_include_training_rows(files):
    df = pd.read_csv(files / "train.csv")
    res = chiralfair.audit(fitted(df), df, **{k: v for k, v in KW.items() if k != "trust_model_file"}, **SEARCH)
    assert "may include rows the model was fitted on" in res.to_dict()["model"]["evaluated_on"]
    assert any("pass test=" in n for n in res.notes)
    assert res.verdict is not None and res.verdict.n_individuals <= 160  # the 40% split of 400 rows


def test_counterfactual_augmentation_fits_a_raw_frame_pipeline_and_removes_the_planted_dependence(files):
    # The wrapped model is Pipeline(codes -> frame, the user's Pipeline(pre, lr)): the weights must reach lr.
    data, test, model = files / "train.csv", files / "test.csv", files / "pipe.skops"
    res = chiralfair.retrain(str(model), str(data), test=str(test), **KW, method="counterfactual", **SEARCH)
    before, after = res.rows[0], res.rows[1]
    assert before["test_idi_rate"] > 0.05  # y depends on sex: the model under test has IDIs
    assert after["test_idi_rate"] < before["test_idi_rate"] / 2


def test_test_rows_and_a_test_size_together_are_refused_before_any_work(files):
    # --test gives the held-out rows; a --test-size beside it would be ignored without a word.
    with pytest.raises(chiralfair.exceptions.ConfigError, match=r"test_size=0.2 \(--test-size\) and test= \(--test\)"):
        chiralfair.estimate(files / "missing-model.skops", files / "train.csv", test=files / "test.csv", test_size=0.2,
                            **KW)
    res = runner.invoke(app, [str(a) for a in ("estimate", "--data", files / "train.csv", "--test", files / "test.csv",
                                               "--test-size", "0.3", "--model", files / "pipe.skops", *FLAGS)])
    assert res.exit_code == 2 and "both choose the held-out rows" in res.output, res.output
    without = chiralfair.estimate(files / "pipe.skops", files / "train.csv", **KW)  # the default split: 40%
    assert without.n_individuals == 160 and "40%" in without.meta["population_rows"]


def test_a_favourable_outcome_the_label_never_holds_is_refused(files):
    # favourable="yes" on a label of ">50K"/"<=50K" was read as "not the positive class": the harm direction was a
    # guess that read as an answer.
    with pytest.raises(chiralfair.exceptions.DatasetError, match=r"favourable 'yes' does not occur in label column"):
        chiralfair.estimate(files / "pipe.skops", files / "train.csv", test=files / "test.csv", favourable="yes", **KW)
    given = chiralfair.estimate(files / "pipe.skops", files / "train.csv", test=files / "test.csv",
                                favourable="<=50K", **KW)
    assert given.favourable == 0 and any("favourable outcome '<=50K' (label 0" in n for n in given.notes)


def test_a_model_whose_label_1_is_the_other_class_is_said_to_be_read_the_wrong_way_round(files):
    # A callable answering 1 for "<=50K": the share affected is the same, F1 and who is harmed are inverted.
    pipe = fitted(pd.read_csv(files / "train.csv"))
    kw = {k: v for k, v in KW.items() if k != "trust_model_file"}

    def inverted(frame):
        return (pipe.predict(frame) == "<=50K").astype(int)

    verdict = chiralfair.estimate(inverted, files / "train.csv", test=files / "test.csv", model_input="frame", **kw)
    assert verdict.meta["model_accuracy"] < 0.5
    assert any("below a coin's 50%: its label 1 is probably not the positive class '>50K'" in n for n in verdict.notes)
    right = chiralfair.estimate(pipe, files / "train.csv", test=files / "test.csv", **kw)
    assert not any("below a coin" in n for n in right.notes) and right.share == verdict.share


def test_test_rows_that_repeat_the_data_are_said_to_maybe_be_training_rows(files):
    # test=train (or a test file cut from the training file) read as "the given test rows": held out in name only.
    kw = {k: v for k, v in KW.items() if k != "trust_model_file"}
    df = pd.read_csv(files / "train.csv")
    pipe = fitted(df)
    same = chiralfair.estimate(pipe, df, test=df.iloc[:150], **kw)
    assert "150 of which (100%) are also rows of the data" in same.meta["population_rows"]
    assert any("may include rows the model was fitted on" in n and "pass test=" in n for n in same.notes)
    other = chiralfair.estimate(pipe, df, test=pd.read_csv(files / "test.csv"), **kw)
    assert other.meta["population_rows"] == "the given test rows (200)"
    assert not any("pass test=" in n for n in other.notes)
