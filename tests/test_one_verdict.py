"""One verdict, one answer at every door: the worst group, its interval, the share's interval and who is left out.

The verdict decides them once (``Verdict``: the people's interval, the worst group, the groups too small to tell,
the left-out rule); the console, the report, the gate, the model card and BOM, MLflow's figures and the per-person
certificates read them. Each is checked here against a recount written in the test: plain pandas/numpy through the
user's own pipeline, Clopper-Pearson from ``scipy.stats.beta``.
"""

import json

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import beta
from typer.testing import CliRunner

import chiralfair
from chiralfair.certification import certify_domain, certify_individuals
from chiralfair.certification.certificates import with_individuals
from chiralfair.cli import app
from chiralfair.exceptions import DataWarning
from chiralfair.reporting.model_card import cyclonedx_bom, cyclonedx_model_card, fairness_markdown
from chiralfair.reporting.report import verdict_lines
from chiralfair.reporting.tracking import figures_of
from chiralfair.verdict import Verdict, estimate

runner = CliRunner()
RACES = ("a", "b", "c", "d")
BIAS = {"a": 0.0, "b": -0.9, "c": -3.0, "d": -0.4}
SHARE = {"a": 0.55, "b": 0.33, "c": 0.03, "d": 0.09}  # c is small, d mid-sized: both too small to tell
KW = dict(label="y", positive_class="yes", favourable="yes", protected="race")


def people(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"race": rng.choice(RACES, n, p=list(SHARE.values())),
                       "job": rng.choice(["clerk", "nurse", "smith"], n), "hours": rng.integers(10, 70, n),
                       "score": np.round(rng.normal(0, 1, n), 2)})
    z = ((df["hours"] - 40) / 12 + df["score"] + df["race"].map(BIAS) + 0.5 * (df["job"] == "nurse")
         + rng.normal(0, 0.5, n))
    df["y"] = np.where(z > -0.3, "yes", "no")
    return df


def clopper_pearson(k, n, confidence=0.95):
    alpha = 1 - confidence
    lower = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


def recount(pipe, test):
    """Flip every held-out row's race to every value; affected when the label changes; harmed: gets "no" then."""
    X = test.drop(columns="y")
    own = pipe.predict(X)
    affected = np.zeros(len(X), dtype=bool)
    for race in RACES:
        affected |= pipe.predict(X.assign(race=race)) != own
    harmed = affected & (own == "no")
    groups = {}
    for race in RACES:
        at = (X["race"] == race).to_numpy()
        n, k = int(at.sum()), int(harmed[at].sum())
        lower, upper = clopper_pearson(k, n)
        groups[f"race={race}"] = {"n": n, "n_harmed": k, "share": k / n, "lower": lower, "upper": upper,
                                  "too_small": n < 30 or (upper - lower) / 2 > 0.10}
    ranked = [g for g in groups if groups[g]["n_harmed"] and not groups[g]["too_small"]]
    worst = max(ranked, key=lambda g: (groups[g]["share"], groups[g]["n"]))
    return {"n": len(X), "n_affected": int(affected.sum()), "share_lower_upper": clopper_pearson(
        int(affected.sum()), len(X)), "groups": groups, "worst": worst,
        "too_small": sorted(g for g in groups if groups[g]["too_small"])}


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    import skops.io as sio
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    train, test = people(1500, 0), people(600, 1)
    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["race", "job"]),
                             ("num", StandardScaler(), ["hours", "score"])])
    pipe = Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=1000))]).fit(train.drop(columns="y"),
                                                                                    train["y"])
    folder = tmp_path_factory.mktemp("one_verdict")
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sio.dump(pipe, folder / "model.skops")
    truth = recount(pipe, test)
    # the case the rules are about: the small group is the most harmed, a mid-sized one too wide to tell
    assert truth["too_small"] == ["race=c", "race=d"] and truth["worst"] == "race=b"
    assert truth["groups"]["race=c"]["share"] > truth["groups"]["race=b"]["share"]
    assert truth["groups"]["race=d"]["n"] >= 30
    return pipe, train, test, folder, truth


def pct(x):
    return f"{x:.2%}"


def interval(lower, upper):
    return f"[{lower:.2%}, {upper:.2%}]"


def test_every_door_gives_the_worst_group_its_interval_and_the_share_interval_of_the_recount(case):
    from chiralfair.pipeline import check_fairness

    pipe, train, test, folder, truth = case
    worst = truth["groups"][truth["worst"]]
    lo, hi = truth["share_lower_upper"]
    worst_text = interval(worst["lower"], worst["upper"])
    share_text = interval(lo, hi)

    # the verdict itself (chiralfair.estimate) and its console
    v = chiralfair.estimate(pipe, train, test=test, **KW)
    assert v.exact and v.n_individuals == truth["n"] and v.n_affected == truth["n_affected"]
    assert (v.people_lower, v.people_upper) == pytest.approx((lo, hi), abs=1e-12)
    assert v.worst_group == truth["worst"] and sorted(v.too_small) == truth["too_small"]
    for name, g in truth["groups"].items():
        got = v.group(name)
        assert (got["n"], got["n_harmed"], got["too_small"]) == (g["n"], g["n_harmed"], g["too_small"])
        assert (got["people_harmed_lower"], got["people_harmed_upper"]) == pytest.approx((g["lower"], g["upper"]),
                                                                                          abs=1e-12)
    text = v.summary()
    assert f"{share_text}, 95% Clopper-Pearson" in text
    assert f"most harmed group: {truth['worst']} ({pct(worst['share'])}" in text and worst_text in text
    assert "too small to tell, not ranked: race=c (" in text and "race=d (" in text

    # the gate (chiralfair check): decided on the same interval, quoting the same worst group and interval
    d = check_fairness(pipe, train, test=test, **KW, max_share=0.5)
    assert (d.lower, d.upper) == pytest.approx((lo, hi), abs=1e-12)
    assert d.worst_group["group"] == truth["worst"]
    assert (d.worst_group["share_harmed_lower"], d.worst_group["share_harmed_upper"]) == pytest.approx(
        (worst["lower"], worst["upper"]), abs=1e-12)
    assert f"share affected {pct(v.share)} {share_text}" in d.line()
    assert f"worst group {truth['worst']}: {pct(worst['share'])} {worst_text} harmed" in d.line()
    assert f"harmed ({worst['n_harmed']:,} of {worst['n']:,}, 95% Clopper-Pearson for the group's people)" in d.line()
    assert "too small to tell, not ranked (intervals 95% Clopper-Pearson for the group's people): race=c" in d.line()

    # chiralfair.audit: its printed summary, report.md, result.json and the run's MLflow figures
    audit = chiralfair.audit(pipe, train, test=test, **KW, seeds="random", max_global=20, max_local=5,
                             out=folder / "run")
    printed = audit.summary()
    assert f"[{pct(lo)}, {pct(hi)}], 95% Clopper-Pearson" in printed
    assert f"most harmed group: {truth['worst']} ({pct(worst['share'])}" in printed and worst_text in printed
    assert "too small to tell, not ranked: race=c (" in printed
    assert verdict_lines(audit.to_dict())[0] == printed.splitlines()[0]
    report = (folder / "run" / "report.md").read_text()
    assert f"Most harmed group: **{truth['worst']}**" in report and worst_text in report and share_text in report
    stored = json.loads((folder / "run" / "result.json").read_text())["verdict"]
    assert stored["worst_group"] == truth["worst"] and stored["people_upper"] == pytest.approx(hi, abs=1e-12)

    # the model card and the BOM: the exact share has no interval; the people's is the recount's
    for subject in (v, d, audit):
        card = cyclonedx_model_card(subject)
        bom = cyclonedx_bom(card, name="model")
        for metrics in (card["quantitativeAnalysis"]["performanceMetrics"],
                        bom["components"][0]["modelCard"]["quantitativeAnalysis"]["performanceMetrics"]):
            share = [m for m in metrics if m["type"].startswith("share affected (")]
            exact, people_share = share
            assert "confidenceInterval" not in exact and "exact share of these 600" in exact["slice"]
            assert "people the model will meet" in people_share["slice"]
            ci = people_share["confidenceInterval"]
            assert (float(ci["lowerBound"]), float(ci["upperBound"])) == pytest.approx((lo, hi), rel=1e-5)
            for m in metrics:
                ci = m.get("confidenceInterval")
                assert ci is None or ci["lowerBound"] != ci["upperBound"], m  # no zero-width interval anywhere
            harmed = [m for m in metrics if m["type"].startswith("share harmed")
                      and m["slice"].startswith(f"group {truth['worst']}:")]
            (worst_metric,) = harmed
            assert "the worst group" in worst_metric["slice"]
            ci = worst_metric["confidenceInterval"]
            assert (float(ci["lowerBound"]), float(ci["upperBound"])) == pytest.approx(
                (worst["lower"], worst["upper"]), rel=1e-5)
        table = fairness_markdown(subject)  # the skops card's section
        assert f"| {pct(v.share)} | {share_text} |" in table and f"| {pct(v.share)} | - |" in table
        assert f"| {pct(worst['share'])} | {worst_text} |" in table
        risks = card["considerations"]["fairnessAssessments"]
        assert risks[0]["groupAtRisk"] == truth["worst"] and risks[0]["harms"].startswith("the worst group")
        assert worst_text in risks[0]["harms"]
        small = {r["groupAtRisk"] for r in risks if r["harms"].startswith("too small to tell")}
        assert small == set(truth["too_small"])

    # MLflow's figures (what --mlflow logs), for the verdict, the gate and the audit
    key = "group/race.3D" + truth["worst"].split("=")[1]
    for subject in (v, d, audit):
        params, metrics, _, _ = figures_of(subject)
        assert params["worst_group"] == truth["worst"] and sorted(params["too_small"]) == truth["too_small"]
        assert (metrics["share_affected_people_lower"], metrics["share_affected_people_upper"]) == pytest.approx(
            (lo, hi), abs=1e-12)
        assert "share_affected_lower" not in metrics  # the exact share's width-0 interval is not logged as one
        assert (metrics[f"{key}/people_harmed_lower"], metrics[f"{key}/people_harmed_upper"]) == pytest.approx(
            (worst["lower"], worst["upper"]), abs=1e-12)
        assert metrics["group/race.3Dc/too_small"] == 1 and metrics[f"{key}/too_small"] == 0
    _, gate_metrics, _, _ = figures_of(d)
    assert (gate_metrics["gate_lower"], gate_metrics["gate_upper"]) == pytest.approx((lo, hi), abs=1e-12)


def test_the_command_line_prints_the_same_worst_group_and_intervals(case):
    _, _, _, folder, truth = case
    worst = truth["groups"][truth["worst"]]
    lo, hi = truth["share_lower_upper"]
    own = ["--data", folder / "train.csv", "--test", folder / "test.csv", "--model", folder / "model.skops",
           "--label", "y", "--positive-class", "yes", "--favourable", "yes", "--protected", "race",
           "--trust-model-file"]
    estimated = runner.invoke(app, [str(a) for a in ["estimate", *own, "--model-card", folder / "card.json"]])
    assert estimated.exit_code == 0, estimated.output
    assert f"{interval(lo, hi)}, 95% Clopper-Pearson" in estimated.output
    assert (f"most harmed group: {truth['worst']} ({pct(worst['share'])}" in estimated.output
            and interval(worst["lower"], worst["upper"]) in estimated.output)
    checked = runner.invoke(app, [str(a) for a in ["check", *own, "--max-share", 0.5, "--json"]])
    assert checked.exit_code == 0, checked.output
    decision = json.loads(checked.stdout)
    assert decision["worst_group"]["group"] == truth["worst"] == decision["verdict"]["worst_group"]
    assert (decision["lower"], decision["upper"]) == pytest.approx((lo, hi), abs=1e-12)
    card = json.loads((folder / "card.json").read_text())
    assert card["considerations"]["fairnessAssessments"][0]["groupAtRisk"] == truth["worst"]


# ------------------------------------------------------------------ the left-out rule, verdict and certificates
SEX, ROLE = 0, 1  # sex {0: Female, 1: Male}; role {0: Wife, 1: Husband, 2: Single}


def coupled_case():
    from chiralfair.datasets.base import Dataset
    from chiralfair.domain import Domain, Feature

    rng = np.random.default_rng(3)
    n = 400
    sex = rng.integers(0, 2, n)
    role = np.where(rng.random(n) < 0.5, np.where(sex == 0, 0, 1), 2)
    role[[5, 17, 60]], sex[[5, 17, 60]] = 0, 1  # three men recorded as "Wife": no counterpart of theirs can exist
    X = np.column_stack([sex, role, rng.integers(0, 10, n), rng.integers(0, 10, n)]).astype(np.int64)
    domain = Domain((Feature("sex", 0, 1, "categorical", {0: "Female", 1: "Male"}),
                     Feature("role", 0, 2, "categorical", {0: "Wife", 1: "Husband", 2: "Single"}),
                     Feature("a", 0, 9), Feature("b", 0, 9))).with_protected(["sex"])
    domain = domain.with_couplings({"sex": {"role": {0: 1, 1: 0}}}).with_constraints(
        ("sex=Female excludes role=Husband", "sex=Male excludes role=Wife"))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 1), torch.nn.Sigmoid())
    with torch.no_grad():  # a ReLU net whose label depends on sex for part of the people
        net[0].weight.copy_(torch.tensor([[3.0, 0, 1, 1], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0],
                                          [-1, 0, 0, 0], [0, 0, 0, 0]]))
        net[0].bias.zero_()
        net[2].weight.copy_(torch.tensor([[1.0, 0, 0, 0, 0, 0]]))
        net[2].bias.fill_(-10.5)
    y = (X[:, 2] + X[:, 3] > 9).astype(np.int64)
    return net.eval(), Dataset("married", X, y, domain, label="y", positive_class="1")


def coupled_recount(net, X):
    """Flip sex, move Wife <-> Husband with it; a counterpart that makes a female husband or a male wife is out."""
    other = X.copy()
    other[:, SEX] = 1 - X[:, SEX]
    other[:, ROLE] = np.select([X[:, ROLE] == 0, X[:, ROLE] == 1], [1, 0], X[:, ROLE])
    possible = ~(((other[:, SEX] == 0) & (other[:, ROLE] == 1)) | ((other[:, SEX] == 1) & (other[:, ROLE] == 0)))
    with torch.no_grad():
        own = net(torch.tensor(X, dtype=torch.float32))[:, 0].numpy() > 0.5
        flipped = net(torch.tensor(other, dtype=torch.float32))[:, 0].numpy() > 0.5
    return ~possible, possible & (own != flipped)


def test_a_person_no_counterpart_of_whom_could_exist_is_left_out_of_the_verdict_and_of_the_certificates():
    net, data = coupled_case()
    left_out, affected = coupled_recount(net, data.X)
    assert left_out.sum() == 3 and 0 < affected.sum() < (~left_out).sum()
    counted = int((~left_out).sum())
    share = affected.sum() / counted

    v = estimate(net, data, population="rows", favourable=1)
    assert v.n_left_out == 3 and v.n_individuals == counted and v.n_affected == int(affected.sum())
    assert v.share == pytest.approx(share, abs=1e-12)

    people = certify_individuals(net, data)
    assert people.n_left_out == 3 and people.n_individuals == counted
    assert (people.to_frame()["status"].to_numpy()[left_out] == "left out").all()
    assert people.affected_share == pytest.approx(share, abs=1e-12) == pytest.approx(v.share, abs=1e-12)
    assert people.certified_share == pytest.approx(1 - share, abs=1e-12)
    assert people.summary()["n_left_out"] == 3
    with pytest.raises(ValueError, match="left out are in no share"):
        people.share("left out")

    boxed = certify_individuals(net, data, boxes=(data.X, data.X), max_seconds=None)  # the branch and bound's answer
    assert (boxed.status == people.status).all()

    result = with_individuals(certify_domain(net, data, max_seconds=None), people)
    text = "\n".join(result.lines())
    assert "left out: 3 individuals, none of whose counterparts could exist" in text
    assert "3 rows left out, outside the domain" in text
    frame = result.to_frame()
    assert frame["row_share"].sum() == pytest.approx(1.0) and frame["rows"].sum() == counted


def test_a_person_whose_own_protected_value_is_missing_or_unknown_is_in_no_share_and_no_group(case):
    """Groups and share count the same people: a held-out race that is NaN or never in the data is left out, named."""
    pipe, train, test, _, _ = case
    test = test.copy()
    test.loc[test.index[:3], "race"] = np.nan
    test.loc[test.index[3], "race"] = "zz"  # a value the data never hold
    with pytest.warns(DataWarning, match="zz"):
        v = chiralfair.estimate(pipe, train, test=test, **KW)
    known = test[test["race"].isin(RACES)]
    truth = recount(pipe, known)
    assert v.n_individuals == truth["n"] == len(test) - 4
    assert sum(g["n"] for g in v.groups) == v.n_individuals
    assert v.n_affected == truth["n_affected"]
    assert v.unplaced == {"race": 4} and v.n_unplaced == 4 and v.n_left_out == 0
    assert "4 individuals whose own race is missing or not among its values" in v.summary()
    assert Verdict.from_json(v.to_json()).unplaced == {"race": 4}
    from chiralfair.pipeline import check_fairness

    with pytest.warns(DataWarning, match="zz"):
        g = check_fairness(pipe, train, test=test, max_share=0.5, **KW)
    assert g.verdict.n_individuals == truth["n"] and sum(x["n"] for x in g.verdict.groups) == truth["n"]
    assert f"4 of the {len(test)} individuals read were left out, their own race missing" in g.line()


class CountingRows:
    """The user's pipeline behind a wrapper that counts every row it receives (labels and probabilities)."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0
        self.classes_, self.feature_names_in_ = inner.classes_, inner.feature_names_in_

    def predict(self, X):
        self.rows += len(X)
        return self.inner.predict(X)

    def predict_proba(self, X):
        self.rows += len(X)
        return self.inner.predict_proba(X)


def test_estimate_and_the_gate_say_every_row_the_model_received_inside_and_outside_the_budget(case):
    from chiralfair.pipeline import check_fairness

    pipe, train, test, _, _ = case
    model = CountingRows(pipe)
    v = chiralfair.estimate(model, train, test=test, max_queries=1000, **KW)
    outside = v.meta["queries"]["outside_budget"]["probes"]
    assert not v.exact and v.n_queries <= 1000 and outside > 0
    assert model.rows == v.n_queries + outside
    assert f"{v.n_queries:,} queries of the budget 1,000; outside it: {outside:,} probe rows" in v.summary()

    model.rows = 0
    g = check_fairness(model, train, test=test, max_share=0.5, max_queries=1000, **KW)
    outside = g.verdict.meta["queries"]["outside_budget"]["probes"]
    assert model.rows == g.n_queries + outside
    assert f"{g.n_queries:,} queries of the budget 1,000; outside it: {outside:,} probe rows" in g.line()
    assert g.to_dict()["verdict"]["meta"]["queries"]["outside_budget"]["probes"] == outside


def test_a_sampled_verdict_shows_one_interval_named_at_every_door_and_the_gate_names_its_own(case):
    from chiralfair.pipeline import check_fairness

    pipe, train, test, _, _ = case
    v = chiralfair.estimate(pipe, train, test=test, max_queries=1000, **KW)  # the default method: Clopper-Pearson
    own = clopper_pearson(v.n_affected, v.n_individuals)
    assert not v.exact and v.method == "clopper-pearson"
    assert (v.lower, v.upper) == pytest.approx(own) and (v.people_lower, v.people_upper) == pytest.approx(own)
    assert f"{pct(v.share)} {interval(*own)}" in v.summary() and "95% Clopper-Pearson interval" in v.summary()

    a = chiralfair.audit(pipe, train, test=test, seeds="random", max_global=5, max_local=2,
                         verdict_params={"max_queries": 1000}, **KW)
    assert a.verdict.n_affected == v.n_affected and a.verdict.n_individuals == v.n_individuals
    assert f"{pct(v.share)} {interval(*own)} (95% Clopper-Pearson)" in verdict_lines(a.to_dict())[0]
    assert verdict_lines(a.to_dict())[0] in a.summary()

    g = check_fairness(pipe, train, test=test, max_share=0.5, max_queries=1000, **KW)
    looks = g.verdict.meta["sequential"]["looks"]
    level = 1 - 0.05 * 6 / (np.pi ** 2 * looks ** 2)
    decided = clopper_pearson(g.verdict.n_affected, g.verdict.n_individuals, level)
    sample = clopper_pearson(g.verdict.n_affected, g.verdict.n_individuals)
    line = g.line()
    assert f"{pct(g.share)} {interval(*decided)}" in line
    # each interval named by what it is: the decision's at the look's level, the sample's read once at 95%
    assert (f"{level:.2%} Clopper-Pearson (the level of look {looks} of a sequential decision, so that 95% holds "
            "over all its looks); the gate decided on that interval") in line
    assert f"The same sample read once, as estimate reads it: {interval(*sample)}, 95% Clopper-Pearson" in line
    assert "spent over" not in line


def test_the_certificates_say_why_a_person_with_a_missing_protected_value_is_left_out():
    """Sex code 2 ("missing") is not among sex's values: that person is in no group and has no counterpart, and the
    certificates leave them out saying so (not "each breaks a constraint": there is none)."""
    from chiralfair.datasets.base import Dataset
    from chiralfair.domain import Domain, Feature

    rng = np.random.default_rng(5)
    n = 300
    X = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 10, n)]).astype(np.int64)
    X[[3, 9], 0] = 2
    domain = Domain((Feature("sex", 0, 2, "categorical", {0: "Female", 1: "Male", 2: "missing"}),
                     Feature("a", 0, 9))).with_protected(["sex"], values={"sex": [0, 1]})
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[2.0, 1.0], [0, 1.0], [0, 0], [0, 0]]))
        net[0].bias.zero_()
        net[2].weight.copy_(torch.tensor([[1.0, 0, 0, 0]]))
        net[2].bias.fill_(-8.5)
    data = Dataset("missing-sex", X, (X[:, 1] > 6).astype(np.int64), domain, label="y", positive_class="1")
    placed = X[:, 0] < 2
    with torch.no_grad():  # the recount: flip sex of everyone whose own sex is known
        own = net(torch.tensor(X[placed], dtype=torch.float32))[:, 0].numpy() > 0.5
        other = X[placed].copy()
        other[:, 0] = 1 - other[:, 0]
        flipped = net(torch.tensor(other, dtype=torch.float32))[:, 0].numpy() > 0.5
    people = certify_individuals(net.eval(), data)
    assert people.n_left_out == 2 and people.n_individuals == int(placed.sum())
    assert people.affected_share == pytest.approx(float(np.mean(own != flipped)), abs=1e-12)
    text = people.left_out_text()
    assert text is not None and "2 individuals whose own sex is missing or not among its values" in text
    assert "none of whose counterparts could exist" not in text
