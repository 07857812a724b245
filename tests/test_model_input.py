"""What a model is fed is declared, never guessed (architecture: the model under test).

A torch network, a bare callable and a LogisticRegression fitted on a numpy array of the raw numbers record no
column names. Fed the search's bin codes instead of the values they were trained on, the network was reported 0%
affected where flipping sex changes 47% of the held-out labels. Here, at each door (audit, estimate, check,
certify, retrain), ``model_input="values"`` gives the share a recount through the user's own model finds (flip
``sex`` on every held-out row, call the model on the raw floats, count changed labels); ``"auto"`` is refused,
naming ``model_input``; data whose codes are their values keep working with ``"auto"``.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.datasets import from_frame
from chiralfair.exceptions import ConfigError, ModelCapabilityError
from chiralfair.models import as_model
from chiralfair.models.probe import codes_differ_from_values, resolve_model_input, wrap_model
from chiralfair.pipeline import check_fairness

COLUMNS = ["x", "sex"]
KW = {"label": "y", "positive_class": 1, "protected": "sex"}


@pytest.fixture(scope="module")
def people():
    """The reproduction: a float column (~30) and a 0/1 sex column, the label biased by sex."""
    rng = np.random.default_rng(0)
    n = 1600
    x = rng.normal(30, 5, n)
    s = rng.integers(0, 2, n)
    y = ((x + 6 * s + rng.normal(0, 3, n)) > 33).astype(int)
    df = pd.DataFrame({"x": x, "sex": s, "y": y})
    return df.iloc[:1000].reset_index(drop=True), df.iloc[1000:].reset_index(drop=True)


class _Standardised(torch.nn.Module):
    def __init__(self, inner, mu, sd):
        super().__init__()
        self.inner = inner
        self.register_buffer("mu", mu)
        self.register_buffer("sd", sd)

    def forward(self, z):
        return self.inner((z - self.mu) / self.sd)


@pytest.fixture(scope="module")
def net(people):
    """A 2-input ReLU net trained on the raw floats (standardised inside), ending in a sigmoid."""
    train, _ = people
    torch.manual_seed(0)
    inner = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1), torch.nn.Sigmoid())
    X = torch.tensor(train[COLUMNS].to_numpy(), dtype=torch.float32)
    Y = torch.tensor(train["y"].to_numpy(), dtype=torch.float32)[:, None]
    model = _Standardised(inner, X.mean(0), X.std(0))
    opt = torch.optim.Adam(model.parameters(), 0.05)
    for _ in range(300):
        opt.zero_grad()
        torch.nn.functional.binary_cross_entropy(model(X), Y).backward()
        opt.step()
    return model.eval()


def _net_labels(net, X: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return (net(torch.tensor(X, dtype=torch.float32))[:, 0].numpy() > 0.5).astype(int)


@pytest.fixture(scope="module")
def models(people, net):
    """The three kinds without column names, each with how the test itself calls it on raw floats."""
    train, _ = people
    lr = LogisticRegression().fit(train[COLUMNS].to_numpy(), train["y"].to_numpy())

    def callable_net(X):
        return _net_labels(net, np.asarray(X, dtype=np.float64))

    return {
        "torch": (net, {"model_output": "probability"}, lambda X: _net_labels(net, X)),
        "callable": (callable_net, {}, callable_net),
        "lr": (lr, {}, lambda X: lr.predict(X)),
    }


def recount(predict, test: pd.DataFrame) -> float:
    """Share of held-out rows whose label changes when only sex flips, through the user's own model."""
    X = test[COLUMNS].to_numpy(dtype=np.float64)
    flipped = X.copy()
    flipped[:, 1] = 1 - flipped[:, 1]
    return float(np.mean(predict(X) != predict(flipped)))


KINDS = ["torch", "callable", "lr"]


@pytest.mark.parametrize("kind", KINDS)
def test_estimate_with_values_finds_the_recounted_share(people, models, kind):
    train, test = people
    model, extra, predict = models[kind]
    expected = recount(predict, test)
    assert expected > 0.2  # the bias is there to be found; fed bin codes the network showed none
    verdict = chiralfair.estimate(model, train, test=test, **KW, **extra, model_input="values")
    assert verdict.n_affected == round(expected * len(test)) and verdict.share == pytest.approx(expected)


@pytest.mark.parametrize("kind", KINDS)
def test_auto_is_refused_naming_model_input(people, models, kind):
    train, test = people
    model, extra, _ = models[kind]
    with pytest.raises(ConfigError, match=r"model_input= \(--model-input on the command line\): 'values'.*'frame'"
                                          r".*'codes'") as err:
        chiralfair.estimate(model, train, test=test, **KW, **extra)
    assert "x: 10 quantile bins" in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_audit_check_and_retrain_with_values_find_the_recounted_share(people, models, kind):
    train, test = people
    model, extra, predict = models[kind]
    expected = recount(predict, test)
    result = chiralfair.audit(model, train, test=test, **KW, **extra, model_input="values", seeds="random",
                              max_global=20, max_local=5)
    assert result.verdict.share == pytest.approx(expected)
    assert result.to_dict()["meta"]["source"]["model_input"] == "values"
    decision = check_fairness(model, train, test=test, **KW, **extra, model_input="values",
                                         max_share=0.05)
    assert decision.share == pytest.approx(expected) and decision.outcome == "fail"
    if kind == "lr":  # an sklearn estimator is refitted in its own language: numbers in, numbers out
        fairer = chiralfair.retrain(model, train, test=test, **KW, model_input="values", method="counterfactual",
                                    seeds="random", max_global=10, max_local=2)
        before, after = fairer.rows
        assert before["test_idi_rate"] == pytest.approx(expected)
        # the refitted copy is fed values too: its rate is a recount through it
        refitted = fairer.model_of("counterfactual")
        assert after["test_idi_rate"] == pytest.approx(recount(refitted.predict, test))


def test_retrain_gives_a_trainer_the_values_and_feeds_its_model_values(people, models):
    train, test = people
    net, extra, predict = models["torch"]
    seen = []

    def trainer(X, y, random_state):
        seen.append(np.asarray(X))
        return LogisticRegression().fit(X, y)

    fairer = chiralfair.retrain(net, train, test=test, **KW, **extra, model_input="values", method="paper",
                                trainer=trainer, seeds="random", max_global=10, max_local=2, share=1.0)
    before, after = fairer.rows
    assert before["test_idi_rate"] == pytest.approx(recount(predict, test))
    # every training row the trainer saw is a person's own values (x exact, not a bin's representative)
    X = seen[-1]
    assert X.dtype == np.float64 and np.isin(train["x"].to_numpy(), X[:, 0]).all()
    retrained = fairer.model_of("paper")
    assert after["test_idi_rate"] == pytest.approx(recount(retrained.predict, test))


def test_certify_refuses_a_network_fed_values(people):
    """A network of Linear/ReLU layers certification reads, trained on raw floats: refused, never 100% certified."""
    train, test = people
    torch.manual_seed(1)
    seq = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    with torch.no_grad():  # a net that leans on sex at raw x values: codes 0..9 of x would never reach them
        seq[0].weight.normal_()
    with pytest.raises(ConfigError, match="model_input="):
        chiralfair.certify(seq, train, test=test, **KW, model_output="logit", max_seconds=5)
    with pytest.raises(ModelCapabilityError, match=r"model_input='values'.*cannot certify this model"):
        chiralfair.certify(seq, train, test=test, **KW, model_output="logit", model_input="values", max_seconds=5)


def test_gradient_generators_are_refused_and_auto_picks_a_black_box(people, models):
    train, test = people
    net, extra, predict = models["torch"]
    with pytest.raises(ModelCapabilityError, match="needs input_gradient"):
        chiralfair.audit(net, train, test=test, **KW, **extra, model_input="values", generator="adf",
                         seeds="random", max_global=5, max_local=2)
    result = chiralfair.audit(net, train, test=test, **KW, **extra, model_input="values", seeds="random",
                              max_global=10, max_local=2)
    assert result.to_dict()["generator"] not in ("adf", "eidig", "eidig-inf", "eidig-5")
    assert result.verdict.share == pytest.approx(recount(predict, test))


def test_codes_equal_values_keep_auto_and_the_gradient(people, net):
    """Integer columns whose codes are their values: 'auto' feeds codes, as before, and 'values' is the same."""
    train, test = people
    ints = [frame.assign(x=frame["x"].round().astype(int)) for frame in (train, test)]
    data = from_frame(ints[0], label="y", positive_class=1, protected="sex")
    assert codes_differ_from_values(data) == [] and resolve_model_input(net, data) == "codes"
    expected = recount(lambda X: _net_labels(net, X), ints[1])
    for model_input in ("auto", "values"):
        verdict = chiralfair.estimate(net, ints[0], test=ints[1], **KW, model_output="probability",
                                      model_input=model_input)
        assert verdict.share == pytest.approx(expected)
    assert as_model(net).has_gradient


def test_benchmark_codes_keep_working_with_auto():
    from chiralfair.testing.toys import toy_dataset

    data = toy_dataset()
    assert data.codec is None and resolve_model_input(object(), data) == "codes"
    X, y = data.X, data.y
    lr = LogisticRegression(max_iter=500).fit(X, y)
    model = wrap_model(lr, data)
    assert model.language.input_kind == "codes" and model.has_gradient
    np.testing.assert_array_equal(model.predict(X), lr.predict(X))


def test_a_text_column_with_values_is_refused_naming_it(people):
    train, test = people
    text = [frame.assign(job=np.where(frame["x"] > 30, "clerk", "smith")) for frame in (train, test)]
    lr = LogisticRegression().fit(train[COLUMNS].to_numpy(), train["y"])
    with pytest.raises(ConfigError, match=r"columns \['job'\] are not numeric.*model_input='frame'"):
        chiralfair.estimate(lr, text[0], test=text[1], **KW, model_input="values")


@pytest.mark.parametrize("model_input", ["frame", "values", "codes"])
def test_the_chiral_model_learns_in_the_models_own_language(people, model_input):
    """I&D seeds: the chiral model is a clone fitted on what the model takes (a frame, values or codes)."""
    from chiralfair.seeds.chiral import train_chiral_model

    train, _ = people
    data = from_frame(train, label="y", positive_class=1, protected="sex")
    fit_on = {"frame": train[COLUMNS], "values": train[COLUMNS].to_numpy(), "codes": data.X}[model_input]
    rf = RandomForestClassifier(n_estimators=10, random_state=0).fit(fit_on, train["y"])
    model = wrap_model(rf, data, model_input=model_input)
    assert model.language.input_kind == model_input
    chiral, info = train_chiral_model(model, data, np.random.default_rng(0))
    fitted = chiral.estimator
    assert info["how"] == "sklearn-clone" and chiral.language.input_kind == model_input
    if model_input == "frame":
        assert list(fitted.feature_names_in_) == COLUMNS
    # it answers in the model's language: its labels on the data's codes are its own predictions on that input
    inputs = {"frame": data.to_frame(data.X), "values": data.to_frame(data.X).to_numpy(dtype=np.float64),
              "codes": data.X}[model_input]
    np.testing.assert_array_equal(chiral.predict(data.X), fitted.predict(inputs))
    if model_input != "codes":  # trained on the people's own x values, not on bins' representatives
        assert fitted.n_features_in_ == 2


def test_the_command_line_takes_model_input_and_the_run_folder_keeps_it(people, net, tmp_path):
    train, test = people
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    torch.jit.script(net).save(str(tmp_path / "net.pt"))
    common = ("--data", tmp_path / "train.csv", "--test", tmp_path / "test.csv", "--label", "y", "--protected",
              "sex", "--model", tmp_path / "net.pt", "--model-output", "probability")
    runner = CliRunner()
    refused = runner.invoke(app, ["estimate", *map(str, common)])
    assert refused.exit_code == 2 and "--model-input" in " ".join(refused.output.split())
    done = runner.invoke(app, ["estimate", *map(str, common), "--model-input", "values", "--json"])
    assert done.exit_code == 0, done.output
    verdict = json.loads(done.stdout[done.stdout.index("{"):])
    assert verdict["share"] == pytest.approx(recount(lambda X: _net_labels(net, X), test))
    ran = runner.invoke(app, ["run", *map(str, common), "--model-input", "values", "--seeds", "random",
                              "--max-global", "5", "--max-local", "2", "--out", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    meta = json.loads((tmp_path / "run" / "result.json").read_text())["meta"]
    assert meta["source"]["model_input"] == "values"


def test_retrain_from_a_run_folder_rebuilds_the_model_fed_values(people, models, tmp_path):
    import skops.io as sio

    train, test = people
    lr, _, predict = models["lr"]
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    sio.dump(lr, tmp_path / "lr.skops")
    runner = CliRunner()
    ran = runner.invoke(app, ["run", "--data", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"),
                              "--label", "y", "--protected", "sex", "--model", str(tmp_path / "lr.skops"),
                              "--trust-model-file", "--model-input", "values", "--seeds", "random", "--max-global",
                              "5", "--max-local", "2", "--out", str(tmp_path / "run")])
    assert ran.exit_code == 0, ran.output
    again = runner.invoke(app, ["retrain", "--from-run", str(tmp_path / "run"), "--trust-model-file", "--method",
                                "counterfactual", "--out", str(tmp_path / "fairer"), "--json"])
    assert again.exit_code == 0, again.output
    before = json.loads(again.stdout[again.stdout.index("{"):])["rows"][0]
    assert before["test_idi_rate"] == pytest.approx(recount(predict, test))


@pytest.mark.slow
def test_a_to_frame_of_the_users_own_means_the_model_reads_codes_and_is_never_sent_the_raw_rows():
    """as_model(rf, to_frame=<codes -> the frame rf was fitted on>): the people are the codes, decoded by that
    to_frame; the data's raw rows (text) are never sent to it, at the verdict nor to train I&D's chiral model."""
    rng = np.random.default_rng(0)
    n = 600
    frame = pd.DataFrame({"sex": rng.choice(["Female", "Male"], n), "hours": rng.integers(20, 60, n),
                          "job": rng.choice(["a", "b", "c"], n)})
    frame["y"] = np.where(frame["hours"] + 10 * (frame["sex"] == "Male") > 45, "yes", "no")
    dataset = from_frame(frame, label="y", positive_class="yes", protected="sex")
    names = list(dataset.domain.names)

    def codes_frame(X):
        return pd.DataFrame(np.asarray(X), columns=names)

    rf = RandomForestClassifier(n_estimators=20, random_state=0).fit(codes_frame(dataset.X), dataset.y)
    model = as_model(rf, to_frame=codes_frame)
    held_out = np.arange(400, 600)
    X = dataset.X[held_out]
    sex = names.index("sex")
    flipped = X.copy()
    flipped[:, sex] = 1 - flipped[:, sex]
    recount = float(np.mean(rf.predict(codes_frame(X)) != rf.predict(codes_frame(flipped))))
    assert chiralfair.estimate(model, dataset, test=held_out).share == pytest.approx(recount, abs=0)
    audited = chiralfair.audit(model, dataset, test=held_out, seeds="iandd", max_global=20, max_local=10)
    assert audited.verdict.share == pytest.approx(recount, abs=0)
