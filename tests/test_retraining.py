"""Retraining with IDIs: labels, the planted-bias fixture, a fair model, determinism, refusals."""

import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from toys import NAMES, toy_dataset
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.generators import make_generator
from chiralfair.mitigation.retraining import (
    RetrainResult,
    check_shares,
    fit_ensemble,
    idis_from_frame,
    retrain,
    vote_labels,
)
from chiralfair.models import ModelSpec, as_model
from chiralfair.results import SearchResult
from chiralfair.seeds import make_seed_strategy


@pytest.fixture(scope="module")
def biased():
    """A model that uses sex by construction (LR on labels that depend on sex), its split and its IDIs."""
    data = toy_dataset(n=2000, protected=("sex",))
    train, test = data.split(0)
    model = as_model(LogisticRegression().fit(data.X[train], data.y[train]), name="biased-lr")
    seeds = make_seed_strategy("random").select(model, data, 50, random_state=0)
    found = make_generator("aequitas", max_global=50, max_local=50).run(model, data.domain, seeds, random_state=0)
    assert found.n_idis > 50
    return data, train, model, found


def test_planted_bias_retraining_lowers_the_held_out_idi_rate(biased):
    data, train, model, found = biased
    result = retrain(model, data, found, train_index=train, random_state=0)
    before, after = result.rows
    assert after["test_idi_upper"] < before["test_idi_lower"]  # non-overlapping 95% intervals
    assert after["domain_idi_rate"] < before["domain_idi_rate"]
    assert after["search_n_idis"] < before["search_n_idis"]
    assert after["n_rows_added"] == 2 * result.n_idis
    assert result.n_idis + result.leakage["n_idis_excluded"] == found.n_idis  # test projections are not added
    assert result.how == {"paper": "sklearn-clone"} and result.ensemble["test_accuracy"] > 0.6
    assert result.model is result.models[0].estimator and result.models[0].name == "retrained-biased-lr"


def test_fair_model_stays_fair_and_keeps_its_f1(biased):
    data, train, _, found = biased
    blind = ColumnTransformer([("drop_protected", "drop", [0, 1])], remainder="passthrough")
    fair = as_model(make_pipeline(blind, LogisticRegression()).fit(data.X[train], data.y[train]), name="fair")
    result = retrain(fair, data, found, train_index=train, random_state=0)
    before, after = result.rows
    for row in (before, after):
        assert row["test_idi_rate"] == 0 and row["domain_idi_rate"] == 0 and row["search_n_idis"] == 0
    assert abs(after["f1"] - before["f1"]) < 0.05


def test_an_idi_and_its_counterpart_get_one_label(biased):
    data, train, _, found = biased
    test = np.setdiff1d(np.arange(data.n_samples), train)
    voter, info = fit_ensemble(data, train, test, random_state=0)
    np.testing.assert_array_equal(vote_labels(voter, found.idis, data.domain),
                                  vote_labels(voter, found.counterparts, data.domain))
    assert info["members"] == ["lr", "svc", "dtc", "mlp"]


def test_the_vote_ignores_the_protected_attributes():
    data = toy_dataset(n=1000, protected=("sex", "race"))
    train, test = data.split(0)
    voter, _ = fit_ensemble(data, train, test, random_state=0)
    assert voter.n_features_in_ == 3  # a, b, c: sex and race removed
    X = data.domain.sample(500, np.random.default_rng(1))
    Z = X.copy()
    Z[:, 0], Z[:, 1] = 1 - X[:, 0], (X[:, 1] + 1) % 3
    labels = vote_labels(voter, X, data.domain)
    np.testing.assert_array_equal(labels, vote_labels(voter, Z, data.domain))
    assert set(np.unique(labels)) == {0, 1}


@pytest.mark.slow
def test_same_random_state_same_json_and_round_trip(biased):
    data, train, model, found = biased
    kwargs = {"protocol": "both", "share": [1.0, 0.2], "train_index": train, "random_state": 3}
    first, second = retrain(model, data, found, **kwargs), retrain(model, data, found, **kwargs)
    assert replace(first, seconds={}).to_json() == replace(second, seconds={}).to_json()
    back = RetrainResult.from_json(first.to_json())
    assert back.same_figures(first) and back.models == ()
    assert list(back.to_frame()["share"]) == [0.0, 1.0, 0.2]
    assert back.to_frame().loc[2, "n_pairs_added"] == round(0.2 * first.n_idis)
    with pytest.raises(ConfigError, match="no retrained model"):
        _ = back.model
    other = retrain(model, data, found, **{**kwargs, "random_state": 4, "protocol": "paper"})
    assert [r["f1"] for r in other.rows[1:]] != [r["f1"] for r in first.rows[1:]]


def test_paper_protocol_rechecks_the_union_and_says_it_leaks(biased):
    data, train, model, found = biased
    extra = data.domain.sample(40, np.random.default_rng(5))
    result = retrain(model, data, found, protocol="paper", recheck=extra, train_index=train)
    before, after = result.rows
    n_union = len(np.unique(data.domain.keys(np.vstack([found.idis, extra]))))
    assert before["n_rechecked"] == after["n_rechecked"] <= n_union
    assert before["remaining_idis"] >= result.n_idis and after["remaining_idis"] < before["remaining_idis"]
    # the test IDI rate is the headline under every protocol; the paper's remaining IDIs come with the leak note
    assert before["test_idi_rate"] is not None and before["domain_idi_rate"] is None
    assert any("leak" in n for n in result.notes)


def test_pairs_idi_adds_one_row_per_pair_and_user_trainer_is_called(biased):
    data, train, model, found = biased
    calls = []

    def trainer(X, y, random_state):
        calls.append((len(X), random_state))
        return LogisticRegression().fit(X, y)

    black_box = as_model(lambda X: model.predict(X), name="black-box")
    result = retrain(black_box, data, found, pairs="idi", share=0.5, trainer=trainer, protocol="paper",
                     train_index=train)
    added = round(0.5 * result.n_idis)
    assert result.how == {"paper": "trainer"} and result.rows[1]["n_rows_added"] == added
    # three trainings on the fitting rows of the validation split measure the model's own F1 spread, the model's
    # own seed first; then the retraining on the training rows plus the IDI rows
    n_fit = len(train) - result.spread["n_validation"]
    assert calls == [(n_fit, s) for s in result.spread["seeds"]] + [(len(train) + added,
                                                                     result.meta["train_random_state"])]
    assert result.spread["seeds"][0] == result.meta["train_random_state"]


@pytest.mark.slow
def test_zoo_dnn_fine_tune_leaves_the_original_and_retrain_trains_anew(biased, tmp_path):
    data, train, _, found = biased
    dnn = ModelSpec("dnn", {"epochs": 2}).fit(data.X[train], data.y[train], random_state=0)
    weights = {k: v.clone() for k, v in dnn.estimator.state_dict().items()}
    tuned = retrain(dnn, data, found, mode="fine-tune", protocol="paper", train_index=train)
    assert tuned.how == {"paper": "fine-tune"} and tuned.meta["fine_tune_epochs"] == 10
    auto = retrain(dnn, data, found, protocol="paper", train_index=train)  # mode="auto": the DNN is fine-tuned
    assert auto.how == {"paper": "fine-tune"} and auto.meta["params"]["paper_mode"] == "fine-tune"
    assert all(torch.equal(v, dnn.estimator.state_dict()[k]) for k, v in weights.items())
    assert not torch.equal(tuned.model.estimator.layers[0].weight, dnn.estimator.layers[0].weight)
    fresh = retrain(dnn, data, found, protocol="paper", mode="retrain", train_index=train, cache_dir=tmp_path)
    assert fresh.how == {"paper": "spec"} and fresh.model.spec == dnn.spec


@pytest.mark.parametrize("share", [0, 1.5, -0.1, True, [], [0.5, 2.0]])
def test_share_outside_zero_one_is_refused(share):
    with pytest.raises(ConfigError, match="share"):
        check_shares(share)


def test_refusals(biased):
    data, train, model, found = biased
    empty = replace(found, n_idis=0, idis=found.idis[:0], counterparts=found.counterparts[:0])
    with pytest.raises(ConfigError, match="no IDIs to add"):
        retrain(model, data, empty, train_index=train)
    with pytest.raises(ModelCapabilityError, match="trainer="):
        retrain(as_model(lambda X: model.predict(X), name="bb"), data, found, train_index=train)
    with pytest.raises(ModelCapabilityError, match="fine-tune"):
        retrain(model, data, found, mode="fine-tune", train_index=train)
    with pytest.raises(ConfigError, match="counterparts"):
        retrain(model, data, found.idis, train_index=train)
    with pytest.raises(ConfigError, match="shape"):
        retrain(model, data, (found.idis[:, :3], found.counterparts[:, :3]), train_index=train)
    with pytest.raises(ConfigError, match="share"):
        retrain(model, data, found, share=0.0, train_index=train)


def test_idis_parquet_frame_encodes_back_to_codes(biased, tmp_path):
    import pandas as pd

    data, _, _, found = biased
    path = tmp_path / "idis.parquet"
    found.to_frame(data.domain).to_parquet(path)
    idis, counterparts = idis_from_frame(pd.read_parquet(path), data.domain)
    np.testing.assert_array_equal(idis, found.idis)
    np.testing.assert_array_equal(counterparts, found.counterparts)
    bad = found.to_frame(data.domain).assign(sex="Unknown")
    with pytest.raises(ConfigError, match="'sex'.*Unknown|Unknown.*'sex'"):
        idis_from_frame(bad, data.domain)


# ------------------------------------------------------------------------------------- command line
runner = CliRunner()


def _fake_run(folder, found: SearchResult, domain, *, dataset="census", n_idis=None):
    folder.mkdir()
    found.to_frame(domain).to_parquet(folder / "idis.parquet")
    meta = {"chiralfair_version": "0", "config": {"dataset": dataset, "model": "dnn", "generator": "aequitas",
                                                  "seeds": "random", "max_global": 50, "max_local": 50,
                                                  "random_state": 0},
            "domain": domain.to_dict(), "protected": domain.protected_names}
    summary = {"n_idis": found.n_idis if n_idis is None else n_idis, "meta": meta}
    (folder / "result.json").write_text(json.dumps(summary))
    return folder


@pytest.mark.parametrize("share", ["0", "1.5", "0.5,abc"])
def test_cli_refuses_a_share_outside_zero_one(share, tmp_path):
    res = runner.invoke(app, ["retrain", "--share", share, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "share" in res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--method", "fairer"], "unknown mitigation method 'fairer'"),
    (["--method", "consistency", "--model", "lr"], "consistency trains the zoo DNN"),
    (["--max-f1-loss", "2"], "--max-f1-loss must lie in [0, 1]"),
])
def test_cli_refuses_a_bad_method_or_budget_before_any_work(args, message, tmp_path):
    res = runner.invoke(app, ["retrain", *args, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and message in res.output
    assert not (tmp_path / "o").exists()


def test_cli_refuses_a_run_of_another_dataset_or_without_idis(biased, tmp_path):
    data, _, _, found = biased
    other = _fake_run(tmp_path / "compas-run", found, data.domain, dataset="compas")
    res = runner.invoke(app, ["retrain", "--dataset", "census", "--from-run", str(other), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "searched dataset 'compas'" in res.output
    empty = _fake_run(tmp_path / "empty-run", found, data.domain, n_idis=0)
    res = runner.invoke(app, ["retrain", "--from-run", str(empty), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "found no IDIs" in res.output
    res = runner.invoke(app, ["retrain", "--from-run", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "not a chiralfair run folder" in res.output
    assert not (tmp_path / "o").exists()
    assert NAMES[0] == "sex"


def test_cli_refuses_an_unrelated_output_folder(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    res = runner.invoke(app, ["retrain", "--out", str(out)])
    assert res.exit_code == 2 and "not an earlier chiralfair retrain" in res.output


# ------------------------------------------------------------------------------------- real data (slow)
def _real_args(tmp_path, *extra):
    from realdata import real_data_home_or_skip

    home = str(real_data_home_or_skip())
    return ["retrain", "--data-home", home, "--cache-dir", str(tmp_path / "cache"), "--dataset", "german",
            "--protected", "sex", "--model", "lr", "--seeds", "random", "--generator", "aequitas", "--max-global",
            "20", "--max-local", "20", *extra]


@pytest.mark.slow
def test_cli_retrain_writes_the_folder_and_is_deterministic(tmp_path):
    runs = []
    for name in ("a", "b"):
        res = runner.invoke(app, _real_args(tmp_path, "--share", "1.0,0.5", "--out", str(tmp_path / name)))
        assert res.exit_code == 0, res.output
        runs.append(json.loads((tmp_path / name / "retrain.json").read_text()))
    for name in ("retrain.json", "report.md", "report.html", "tradeoff.png", "model-paper.skops",
                 "search/result.json"):
        assert (tmp_path / "a" / name).is_file()
    assert "![F1 against the held-out IDI rate](tradeoff.png)" in (tmp_path / "a" / "report.md").read_text()
    assert 'src="data:image/png;base64,' in (tmp_path / "a" / "report.html").read_text()
    leakage = runs[0]["leakage"]
    assert leakage["n_test_projections_added"] == 0 and leakage["n_test_rows_seen"] == 0
    assert "n_idis_excluded" in leakage and leakage["n_test"] == 400
    for run in runs:
        run.pop("seconds")
    assert runs[0] == runs[1] and [r["share"] for r in runs[0]["rows"]] == [0.0, 1.0, 0.5]


@pytest.mark.slow
def test_cli_from_run_reuses_the_idis_and_refuses_another_protected_set(tmp_path):
    from realdata import real_data_home_or_skip

    home = str(real_data_home_or_skip())
    run = ["run", "--data-home", home, "--cache-dir", str(tmp_path / "cache"), "--dataset", "german", "--protected",
           "sex", "--model", "lr", "--seeds", "random", "--generator", "aequitas", "--max-global", "20",
           "--max-local", "20", "--out", str(tmp_path / "run")]
    assert runner.invoke(app, run).exit_code == 0
    res = runner.invoke(app, _real_args(tmp_path, "--from-run", str(tmp_path / "run"), "--protocol", "paper",
                                        "--out", str(tmp_path / "re")))
    assert res.exit_code == 0, res.output
    done = json.loads((tmp_path / "re" / "retrain.json").read_text())
    searched = json.loads((tmp_path / "run" / "result.json").read_text())
    assert done["n_idis"] + done["leakage"]["n_idis_excluded"] == searched["n_idis"]
    assert done["rows"][0]["remaining_idis"] >= done["n_idis"]
    args = _real_args(tmp_path, "--from-run", str(tmp_path / "run"), "--out", str(tmp_path / "age"))
    args[args.index("--protected") + 1] = "age"
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "tested protected attribute(s) sex, not age" in res.output


@pytest.mark.slow  # trains the DNN and its chiral model on german (a few seconds)
def test_cli_fine_tune_after_iandd_writes_a_small_model_pt_that_a_fresh_paper_dnn_loads(tmp_path):
    # Fixed: explaining by DeepLIFT left shap's saved tensors on the zoo DNN as nn.Parameters; the fine-tuned
    # model.pt was 103 MB and a fresh PaperDNN refused it (unexpected keys).
    from chiralfair.models.dnn import PaperDNN

    args = _real_args(tmp_path, "--mode", "fine-tune", "--share", "1.0", "--out", str(tmp_path / "o"))
    args[args.index("--model") + 1] = "dnn"
    args[args.index("--seeds") + 1] = "iandd"
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    (path,) = (tmp_path / "o").glob("model*.pt")  # TorchScript (models.files.save_model_file), one per method
    state = torch.jit.load(str(path)).state_dict()
    fresh = PaperDNN(state["input_mean"].shape[0])
    fresh.load_state_dict(state)  # strict: no unexpected key
    assert set(state) == set(fresh.state_dict())
    assert path.stat().st_size < 100_000


@pytest.mark.slow
def test_cli_require_improvement_exits_non_zero_exactly_when_a_method_does_not_improve(tmp_path):
    out = tmp_path / "m"
    res = runner.invoke(app, _real_args(tmp_path, "--method", "paper,unaware", "--require-improvement",
                                        "--out", str(out)))
    done = json.loads((out / "retrain.json").read_text())
    assert [r["method"] for r in done["rows"][1:]] == ["paper", "unaware"]
    assert done["improved"] == all(r["improved"] for r in done["rows"][1:])
    assert (res.exit_code == 1) == (not done["improved"]), res.output
    if not done["improved"]:
        first = res.output.strip().splitlines()
        assert any("**Not an improvement**" in line for line in first[:3])
    assert (out / "model-unaware.skops").is_file()
