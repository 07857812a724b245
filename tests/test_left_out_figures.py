"""One rule for who is left out, in every per-person table and group figure.

The verdict leaves out a person whose protected value is missing, or none of whose counterparts could exist under
the constraints (architecture: counterparts that could exist). ``held_out_rows()``, the group metrics' IDI rate
(``AuditResult.group_metrics``, ``result.json``, the report page) and the CLI's run folder count the same people:
each figure is checked against a recount written here with plain pandas and the user's own sklearn pipeline (flip
each person's sex to every other value, keep the people with a counterpart that could exist, count label changes),
and the "all" row against the verdict's share, to the last person.
"""

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import chiralfair
from chiralfair.cli import app
from chiralfair.exceptions import ConfigError
from chiralfair.verdict.group_metrics import group_metrics

SEXES = ("Female", "Male")
CONSTRAINT = "sex=Female excludes relationship=Husband"
SEARCH = dict(seeds="random", max_global=5, max_local=5, random_state=0)


def people(n, seed, *, missing_sex):
    """Sex (some missing when asked), relationship (no Female husband), hours; the label leans on sex."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(SEXES, n).astype(object)
    relationship = np.where(sex == "Male", rng.choice(["Husband", "Not-in-family", "Own-child"], n),
                            rng.choice(["Wife", "Not-in-family", "Own-child"], n))
    df = pd.DataFrame({"sex": sex, "relationship": relationship, "hours": rng.normal(40, 10, n).round(1)})
    if missing_sex:
        df.loc[rng.random(n) < 0.1, "sex"] = np.nan
    score = df["hours"] + 8 * (df["sex"] == "Male") + 4 * df["sex"].isna() + rng.normal(0, 3, n)
    df["y"] = np.where(score > 44, "yes", "no")
    return df


def fitted(df):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), ["sex", "relationship"]),
                             ("num", StandardScaler(), ["hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression(C=10.0))]).fit(df.drop(columns="y"), df["y"])


def recount(model, test, constrained):
    """Each person's (left out, IDI) with pandas and the model alone: every other sex, possible counterparts only."""
    X = test.drop(columns="y").reset_index(drop=True)
    own = model.predict(X)
    counted = np.zeros(len(X), dtype=bool)
    idi = np.zeros(len(X), dtype=bool)
    for value in SEXES:
        other = X.assign(sex=value)
        possible = X["sex"].notna().to_numpy() & (X["sex"] != value).to_numpy()
        if constrained:
            possible &= ~((other["sex"] == "Female") & (other["relationship"] == "Husband")).to_numpy()
        counted |= possible
        idi |= possible & (model.predict(other) != own)
    return pd.DataFrame({"sex": X["sex"].fillna("missing"), "left_out": ~counted, "is_idi": idi})


def expected_groups(truth):
    """Per sex value (and "all"): rows, left out, IDIs among the counted, and their share (None if none counted)."""
    out = {}
    for name, part in [("all", truth), *((f"sex={v}", g) for v, g in truth.groupby("sex"))]:
        counted = part[~part["left_out"]]
        out[name] = (len(part), int(part["left_out"].sum()), int(counted["is_idi"].sum()),
                     None if counted.empty else counted["is_idi"].sum() / len(counted))
    return out


CASES = {"missing sex": (True, False), "a constraint": (False, True), "both": (True, True)}


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    missing_sex, constrained = CASES[request.param]
    train, test = people(400, 1, missing_sex=missing_sex), people(300, 2, missing_sex=missing_sex)
    model = fitted(train)
    truth = recount(model, test, constrained)
    # the case shows the defect: people the old code counted though the verdict leaves them out
    assert truth["left_out"].any() and truth["is_idi"].any()
    kw = dict(label="y", positive_class="yes", protected="sex", constraints=[CONSTRAINT] if constrained else None)
    out = tmp_path_factory.mktemp("run") / "run"
    audited = chiralfair.audit(model, train, test=test, **kw, **SEARCH, out=out)
    return dict(model=model, train=train, test=test, truth=truth, kw=kw, audited=audited, out=out,
                constrained=constrained, name=request.param)


def test_held_out_rows_flag_whom_the_verdict_leaves_out_and_never_count_them_as_idis(case):
    truth, audited = case["truth"], case["audited"]
    rows = audited.held_out_rows()
    assert (rows["left_out"].to_numpy() == truth["left_out"].to_numpy()).all()
    assert (rows["is_idi"].to_numpy() == truth["is_idi"].to_numpy()).all()
    assert (rows["sex"].to_numpy() == truth["sex"].to_numpy()).all()
    verdict = audited.verdict
    assert rows["is_idi"].sum() == verdict.n_affected == truth["is_idi"].sum()
    assert rows.loc[~rows["left_out"], "is_idi"].mean() == verdict.share
    assert (~rows["left_out"]).sum() == verdict.n_individuals
    why = rows.loc[rows["left_out"], "why_left_out"]
    assert why.notna().all() and rows.loc[~rows["left_out"], "why_left_out"].isna().all()
    missing = rows["sex"] == "missing"
    assert why[missing[rows["left_out"]]].str.contains("sex missing").all()
    assert why[~missing[rows["left_out"]]].str.contains("constraint").all()


def test_group_metrics_count_the_verdicts_people_and_the_all_row_is_its_share(case):
    truth, audited = case["truth"], case["audited"]
    expected = expected_groups(truth)
    gm = audited.group_metrics
    records = {r["group"]: r for r in [gm.overall, *gm.groups]}
    assert set(records) == set(expected)
    for name, (n, left_out, n_idis, rate) in expected.items():
        r = records[name]
        assert (r["n"], r["n_left_out"], r["n_idis"]) == (n, left_out, n_idis), name
        assert r["idi_rate"] == (None if rate is None else pytest.approx(rate, abs=0)), name
    verdict = audited.verdict
    assert gm.overall["idi_rate"] == verdict.share and gm.overall["n_idis"] == verdict.n_affected
    assert gm.overall["n"] - gm.overall["n_left_out"] == verdict.n_individuals
    if "sex=missing" in records:  # shown as left out, not as a rate
        assert records["sex=missing"]["idi_rate"] is None
        assert any("sex=missing left out" in line or "left out (" in line for line in gm.lines())
    # selection rate, TPR and FPR stay over every held-out row (the model's decisions on all of them)
    own = case["model"].predict(case["test"].drop(columns="y"))
    assert gm.overall["n"] == len(case["test"])
    assert gm.overall["selection_rate"] == pytest.approx((own == "yes").mean(), abs=0)


def test_result_json_and_the_report_page_say_the_verdicts_share(case):
    expected = expected_groups(case["truth"])
    stored = json.loads((case["out"] / "result.json").read_text())
    figures = {g["group"]: g for g in [stored["group_metrics"]["overall"], *stored["group_metrics"]["groups"]]}
    assert figures["all"]["idi_rate"] == stored["verdict"]["share"]
    for name, (_, left_out, n_idis, _) in expected.items():
        assert (figures[name]["n_left_out"], figures[name]["n_idis"]) == (left_out, n_idis), name
    report = (case["out"] / "report.md").read_text()
    n, left_out, n_idis, share = expected["all"]
    all_row = next(line for line in report.splitlines() if line.startswith("| all |"))
    assert all_row.endswith(f"| {share:.2%} ({n_idis:,} of {n - left_out:,}; {left_out:,} left out) |")
    if "sex=missing" in expected:
        missing_row = next(line for line in report.splitlines() if line.startswith("| sex=missing |"))
        assert missing_row.endswith(f"| left out ({expected['sex=missing'][1]:,}) |")
    assert f"{share:.2%} ({n_idis:,} of {n - left_out:,}" in (case["out"] / "report.html").read_text()


def test_the_cli_run_folder_counts_the_same_people(case, tmp_path):
    import skops.io as sio

    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    case["train"].to_csv(train, index=False)
    case["test"].to_csv(test, index=False)
    sio.dump(case["model"], tmp_path / "pipe.skops")
    flags = ["--label", "y", "--positive-class", "yes", "--protected", "sex", "--trust-model-file"]
    if case["constrained"]:
        flags += ["--constraint", CONSTRAINT]
    res = CliRunner().invoke(app, ["run", "--data", str(train), "--test", str(test), "--model",
                                   str(tmp_path / "pipe.skops"), *flags, "--seeds", "random", "--max-global", "5",
                                   "--max-local", "5", "--out", str(tmp_path / "run"), "--json"])
    assert res.exit_code == 0, res.output
    stored = json.loads((tmp_path / "run" / "result.json").read_text())
    n, left_out, n_idis, share = expected_groups(case["truth"])["all"]
    overall = stored["group_metrics"]["overall"]
    assert (overall["n"], overall["n_left_out"], overall["n_idis"]) == (n, left_out, n_idis)
    assert overall["idi_rate"] == stored["verdict"]["share"] == pytest.approx(share, abs=0)
    assert stored["verdict"]["n_affected"] == n_idis


@pytest.mark.parametrize("rule", [{"plausible_only": True}, {"gamma": 0.6}], ids=["plausible_only", "gamma"])
def test_the_verdicts_own_rule_is_followed_by_its_per_person_table(rule):
    # the per-person table and the group figures read the verdict's own rule, not only its left-out mask: with
    # plausible_only a Female wife's Male counterpart (a male wife, never seen) does not make her an IDI; with
    # gamma a label change with a small probability gap does not
    train, test = people(400, 1, missing_sex=True), people(300, 2, missing_sex=True)
    model, kw = fitted(train), dict(label="y", positive_class="yes", protected="sex", constraints=[CONSTRAINT])
    default = recount(model, test, constrained=True)
    audited = chiralfair.audit(model, train, test=test, **kw, **SEARCH, verdict_params=rule)
    rows, verdict = audited.held_out_rows(), audited.verdict
    assert verdict.n_affected < default["is_idi"].sum()  # the rule counts fewer people than any label change
    assert rows["is_idi"].sum() == verdict.n_affected and not (rows["is_idi"] & ~default["is_idi"]).any()
    assert (rows["left_out"].to_numpy() == default["left_out"].to_numpy()).all()
    assert audited.group_metrics.overall["idi_rate"] == verdict.share
    assert audited.group_metrics.overall["n_idis"] == verdict.n_affected


def test_a_frame_without_left_out_is_refused_naming_the_column():
    frame = pd.DataFrame({"y_true": [0, 1], "y_pred": [0, 1], "is_idi": [True, False], "sex": ["f", "m"]})
    with pytest.raises(ConfigError, match="left_out"):
        group_metrics(frame, ["sex"])
