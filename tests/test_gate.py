"""The fairness gate: a sequential verdict against a threshold, its decision and exit codes."""

import json

import numpy as np
import pandas as pd
import pytest
from toys import biased_module, fair_module, toy_dataset
from typer.testing import CliRunner

from chiralfair.cli import app
from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model
from chiralfair.testing import assert_individually_fair
from chiralfair.verdict import decide, estimate, look_confidence

runner = CliRunner()
BIASED_SHARE = 28 / 100  # tests/toys.py: an IDI iff 8 <= a + b <= 10


def test_spent_confidence_adds_up_to_at_most_alpha():
    misses = [1 - look_confidence(0.95, k) for k in range(1, 10_000)]
    assert sum(misses) <= 0.05 + 1e-12
    assert misses[0] == pytest.approx(0.05 * 6 / np.pi ** 2)


@pytest.mark.slow
def test_repeated_looks_keep_the_confidence_with_the_threshold_at_the_true_share():
    # With the threshold at the true share, every stop "by threshold" is a wrong decision. One fixed 95% level at
    # each look gets it wrong 15% of the time here; the confidence spent over the looks keeps it within 5%.
    model, data = as_model(biased_module()), toy_dataset(50)
    wrong, looks = 0, []
    for seed in range(200):
        v = estimate(model, data, population="domain", exact=False, margin=0.03, favourable=1, random_state=seed,
                     threshold=BIASED_SHARE, method="clopper-pearson")
        wrong += v.stopped_by == "threshold"
        looks.append(v.meta["sequential"]["looks"])
    assert wrong <= 10, f"{wrong} wrong decisions of 200"
    assert max(looks) <= 8  # the sample doubles from look to look


def test_sampling_stops_as_soon_as_the_interval_lies_on_one_side():
    model, data = as_model(biased_module()), toy_dataset(50)
    common = dict(population="domain", exact=False, margin=0.005, favourable=1, random_state=0)
    plain = estimate(model, data, **common)
    gated = estimate(model, data, threshold=0.10, **common)
    assert gated.stopped_by == "threshold" and gated.lower > 0.10
    assert gated.n_queries < plain.n_queries / 10
    level = gated.meta["sequential"]["look_confidence"]
    assert level == look_confidence(0.95, gated.meta["sequential"]["looks"]) > 0.95
    assert any("sequential decision" in n for n in gated.notes)


def test_decide_on_each_side_and_straddling():
    model, data = as_model(biased_module()), toy_dataset(50)
    v = estimate(model, data, population="domain", exact=False, margin=0.02, favourable=1, random_state=1)
    assert decide(v, v.lower - 0.01).outcome == "fail" and decide(v, v.lower - 0.01).exit_code == 1
    assert decide(v, v.upper).outcome == "pass" and decide(v, v.upper).exit_code == 0
    mid = decide(v, v.share)
    assert mid.outcome == "undecided" and mid.exit_code == 2 and "UNDECIDED" in mid.line()
    assert mid.worst_group["group"] == "sex=Female"  # the biased toy favours sex = 1 (Male)
    with pytest.raises(ConfigError, match="max_share"):
        decide(v, 1.5)


def test_an_exact_verdict_read_for_its_rows_is_never_undecided():
    model, data = as_model(biased_module()), toy_dataset(200)
    v = estimate(model, data, population="rows", favourable=1)
    assert v.exact
    rows = decide(v, v.share, reading="rows")
    assert rows.outcome == "pass" and decide(v, v.share - 1e-9, reading="rows").outcome == "fail"
    assert rows.lower == rows.upper == v.share and "exact for these 200 rows" in rows.line()


def test_by_default_an_exact_verdict_is_read_as_a_sample_of_the_people_the_model_will_meet():
    from scipy.stats import binomtest

    model, data = as_model(biased_module()), toy_dataset(200)
    v = estimate(model, data, population="rows", favourable=1, method="clopper-pearson")
    d = decide(v, v.share)
    exact = binomtest(v.n_affected, v.n_individuals).proportion_ci(0.95, method="exact")
    assert d.reading == "superpopulation" and (d.lower, d.upper) == pytest.approx((exact.low, exact.high))
    assert d.outcome == "undecided" and d.exit_code == 2  # 200 rows cannot tell the share from itself
    assert "too few to tell" in d.line() and "give more held-out rows" in d.line()
    assert decide(v, exact.high + 1e-9).outcome == "pass" and decide(v, exact.low - 1e-9).outcome == "fail"
    line = decide(v, exact.high + 1e-9).line()
    assert "for the people the model will meet" in line and f"exact for these 200 rows: {v.share:.2%}" in line
    assert f"[{exact.low:.2%}, {exact.high:.2%}]" in line and "the dataset's rows" in line
    with pytest.raises(ConfigError, match="reading"):
        decide(v, 0.5, reading="people")


def test_two_of_600_held_out_rows_is_a_clopper_pearson_interval_not_an_exact_share():
    from chiralfair.verdict.result import binomial_interval

    lower, upper = binomial_interval(2, 600, 0.95)
    assert f"{lower:.2%} {upper:.2%}" == "0.04% 1.20%"
    assert binomial_interval(0, 600, 0.95)[0] == 0.0 and binomial_interval(600, 600, 0.95)[1] == 1.0


def test_a_sampled_verdict_keeps_its_interval_in_either_reading():
    model, data = as_model(biased_module()), toy_dataset(50)
    v = estimate(model, data, population="domain", exact=False, margin=0.02, favourable=1, random_state=1)
    assert (decide(v, 0.5).lower, decide(v, 0.5).upper) == (v.lower, v.upper)
    assert decide(v, 0.5).reading == "domain" and "uniform draws" in decide(v, 0.5).line()


def test_a_group_no_row_holds_makes_a_pass_undecided_and_is_named():
    from dataclasses import replace

    model, data = as_model(fair_module()), toy_dataset(300, biased=False)
    v = estimate(model, data, population="rows", favourable=1)
    assert decide(v, 0.5).outcome == "pass"
    empty = replace(v, groups=(*v.groups[:1], {**v.groups[1], "n": 0, "n_affected": 0, "n_harmed": 0,
                                               "share_affected": None, "share_harmed": None}))
    d = decide(empty, 0.5)
    assert d.outcome == "undecided" and d.exit_code == 2
    assert f"not tested: {v.groups[1]['group']} (no row checked holds it)" in d.line()
    assert "a pass would speak for the groups not tested" in d.line()
    assert decide(replace(empty, n_affected=v.n_individuals, share=1.0), 0.5).outcome == "fail"  # fail stays fail


# ------------------------------------------------------------------------------------------ own data and model
def people(n, seed, bias):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "hours": rng.integers(0, 1000, n)})
    score = df["hours"] + bias * (df["sex"] == "m") + rng.normal(0, 50, n)
    df["y"] = np.where(score > 550, "high", "low")
    return df


def fitted(df, *, use_sex=True):
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    pre = ColumnTransformer([("sex", OneHotEncoder() if use_sex else "drop", ["sex"]),
                             ("num", StandardScaler(), ["hours"])])
    return Pipeline([("pre", pre), ("lr", LogisticRegression(max_iter=500))]).fit(df.drop(columns="y"), df["y"])


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    import skops.io as sio

    folder = tmp_path_factory.mktemp("gate")
    train, test = people(600, 0, bias=150), people(300, 1, bias=150)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    sio.dump(fitted(train), folder / "unfair.skops")
    sio.dump(fitted(train, use_sex=False), folder / "fair.skops")
    return folder


def gate(own, model, *extra):
    args = ["check", "--data", own / "train.csv", "--test", own / "test.csv", "--model", own / model, "--label", "y",
            "--positive-class", "high", "--protected", "sex", "--trust-model-file", *extra]
    return runner.invoke(app, [str(a) for a in args])


def test_exit_codes_of_a_fair_an_unfair_and_a_borderline_model(own):
    fair = gate(own, "fair.skops", "--max-share", 0.02)
    assert fair.exit_code == 0, fair.output
    assert fair.output.startswith("chiralfair check PASS: share affected 0.00%") and "no group harmed" in fair.output
    unfair = gate(own, "unfair.skops", "--max-share", 0.02)
    assert unfair.exit_code == 1, unfair.output
    assert "FAIL" in unfair.output and "> max share 2.00%" in unfair.output and "worst group sex=f" in unfair.output
    share = json.loads(gate(own, "unfair.skops", "--max-share", 0.02, "--json").stdout)["share"]
    # The held-out rows are enumerated exactly; 100 draws from the domain (2 x 1000 points) straddle the share.
    borderline = gate(own, "unfair.skops", "--max-share", round(share, 3), "--population", "domain", "--max-queries",
                      200, "--random-state", 1)
    assert borderline.exit_code == 2, borderline.output
    assert "UNDECIDED" in borderline.output and "straddles" in borderline.output
    assert len(unfair.output.strip().splitlines()) == 1


def test_the_gate_line_names_the_rows_it_was_measured_on(own):
    # Without --test the held-out rows are a split of --data, the model's training rows perhaps: the line says so.
    args = ["check", "--data", own / "train.csv", "--model", own / "unfair.skops", "--label", "y", "--positive-class",
            "high", "--protected", "sex", "--trust-model-file", "--max-share", 0.02]
    split = runner.invoke(app, [str(a) for a in args])
    assert split.exit_code == 1, split.output
    assert "the 240 individuals of a held-out split of the given data (240 rows" in split.output
    assert "may include rows the model was fitted on" in split.output
    given = gate(own, "unfair.skops", "--max-share", 0.02)
    assert "the 300 individuals of the given test rows (300)" in given.output and "may include" not in given.output
    assert "for the people the model will meet" in given.output and "exact for these 300 rows: 13" in given.output


@pytest.mark.parametrize("args, message", [
    (["--max-share", "x"], "Invalid value for '--max-share'"),
    ([], "Missing option '--max-share'"),
    (["--max-share", "0.1", "--modle", "lr"], "No such option: --modle"),
    (["--max-share", "1.5"], "--max-share must lie in [0, 1]"),
    (["--max-share", "0.1", "--dataset", "adult"], "unknown dataset 'adult'"),
    (["--max-share", "0.1", "--model-card", "card.txt"], "use a .json file"),
    (["--max-share", "0.1", "--confidence", "2"], "--confidence"),
])
def test_every_refusal_and_usage_error_of_check_exits_3(args, message):
    res = runner.invoke(app, ["check", *args])
    assert res.exit_code == 3, res.output
    assert message in res.output


def test_a_misspelt_command_exits_3_not_the_gates_undecided():
    assert runner.invoke(app, ["chek", "--max-share", "0.1"]).exit_code == 3
    assert runner.invoke(app, ["--max-share", "0.1", "check"]).exit_code == 3
    assert runner.invoke(app, ["estimate", "--modle", "lr"]).exit_code == 2  # other commands keep click's 2


def test_an_unexpected_error_exits_4_with_its_traceback(own, monkeypatch):
    import chiralfair.pipeline

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(chiralfair.pipeline, "check_fairness", broken)
    res = gate(own, "fair.skops", "--max-share", 0.02)
    assert res.exit_code == 4 and "unexpected RuntimeError: boom" in res.output


def test_assert_individually_fair_passes_a_fair_model_and_names_the_worst_group_of_an_unfair_one(own):
    kw = dict(label="y", positive_class="high", test=str(own / "test.csv"), trust_model_file=True)
    decision = assert_individually_fair(str(own / "fair.skops"), str(own / "train.csv"), max_share=0.02,
                                        protected="sex", **kw)
    assert decision.passed and decision.share == 0.0
    with pytest.raises(AssertionError) as err:
        assert_individually_fair(str(own / "unfair.skops"), str(own / "train.csv"), max_share=0.02, protected="sex",
                                 **kw)
    text = str(err.value)
    assert text.startswith("chiralfair check FAIL") and "worst group sex=f" in text and "Who is harmed" in text


def test_assert_individually_fair_takes_a_model_object_and_a_dataset():
    data = toy_dataset(300, biased=False)
    # 0 of 150 held-out rows affected: 2.43% at most among the people the model will meet (95% Clopper-Pearson)
    kw = dict(protected="sex", favourable=1, test_size=0.5)
    assert assert_individually_fair(fair_module(), data, max_share=0.03, **kw).passed
    with pytest.raises(AssertionError, match="UNDECIDED.*too few to tell"):
        assert_individually_fair(fair_module(), data, max_share=0.01, **kw)
    assert assert_individually_fair(fair_module(), data, max_share=0.01, reading="rows", **kw).passed


def refusing(own):
    """Held-out rows holding sex=x, which the models' encoder never saw: the value is left out, with its rows."""
    test = pd.read_csv(own / "test.csv")
    test.loc[test.index[:7], "sex"] = "x"
    test.to_csv(own / "test-x.csv", index=False)
    return own


def test_a_protected_value_the_model_refuses_is_named_in_the_line_and_makes_a_pass_undecided(own):
    folder = refusing(own)
    args = ["check", "--data", folder / "train.csv", "--test", folder / "test-x.csv", "--model",
            folder / "unfair.skops", "--label", "y", "--positive-class", "high", "--protected", "sex",
            "--trust-model-file"]
    res = runner.invoke(app, [str(a) for a in [*args, "--max-share", 0.99, "--json"]])
    assert res.exit_code == 2, res.output
    decided = json.loads(res.stdout)
    why = "the model refuses this value: 7 data rows, 7 of them held out, left out"
    assert decided["untested"] == [{"group": "sex=x", "n_rows": 7, "why": why}]
    assert decided["line"].startswith("chiralfair check UNDECIDED") and f"not tested: sex=x ({why})" in decided["line"]
    assert "a pass would speak for the groups not tested" in decided["line"]


@pytest.mark.slow
def test_check_writes_a_valid_cyclonedx_card_and_a_skops_card_of_the_model_file(own, tmp_path):
    from test_model_card import validate, validate_bom

    res = gate(own, "unfair.skops", "--max-share", 0.02, "--model-card", tmp_path / "card.json", "--bom",
               tmp_path / "bom.json")
    assert res.exit_code == 1, res.output
    card = json.loads((tmp_path / "card.json").read_text())
    assert validate(card) == []
    assert card["considerations"]["technicalLimitations"][0].startswith("fairness gate: fail")
    bom = json.loads((tmp_path / "bom.json").read_text())
    assert validate_bom(bom) == [] and bom["components"][0]["name"] == "unfair.skops"
    assert [c["name"] for c in bom["components"][1:]] == ["train.csv", "test.csv"]
    assert bom["components"][0]["modelCard"]["quantitativeAnalysis"] == card["quantitativeAnalysis"]
    assert res.stdout.startswith("chiralfair check FAIL") and f"BOM: {tmp_path / 'bom.json'}" in res.output
    res = gate(own, "unfair.skops", "--max-share", 0.02, "--model-card", tmp_path / "README.md")
    assert res.exit_code == 1, res.output
    text = (tmp_path / "README.md").read_text()
    assert "Individual fairness (chiralfair)" in text and "sex=f" in text and "LogisticRegression" in text


def test_a_card_over_a_hand_written_file_is_refused_before_any_work_with_exit_3(own, tmp_path):
    (tmp_path / "README.md").write_text("# Our model\n")
    (tmp_path / "sbom.json").write_text('{"bomFormat": "CycloneDX", "components": []}')
    for flag, name in (("--model-card", "README.md"), ("--bom", "sbom.json"), ("--bom", "bom.xml")):
        res = gate(own, "no-such-model.skops", "--max-share", 0.02, flag, tmp_path / name)
        assert res.exit_code == 3 and "no-such-model" not in res.output, res.output  # refused before the model
    assert "has no chiralfair section" in gate(own, "x.skops", "--max-share", 0.1, "--model-card",
                                               tmp_path / "README.md").output
    assert (tmp_path / "README.md").read_text() == "# Our model\n"


def test_a_skops_card_of_a_benchmark_zoo_model_is_refused_with_exit_3(tmp_path):
    res = runner.invoke(app, ["check", "--dataset", "census", "--model", "lr", "--protected", "sex", "--max-share",
                              "0.5", "--model-card", str(tmp_path / "README.md")])
    assert res.exit_code == 3 and "describes an sklearn model" in res.output


def clopper_pearson(k, n, level):
    from scipy.stats import beta

    a = 1 - level
    return (0.0 if k == 0 else beta.ppf(a / 2, k, n - k + 1), 1.0 if k == n else beta.ppf(1 - a / 2, k + 1, n - k))


@pytest.mark.parametrize("population", ["domain", "test"])
def test_the_worst_groups_interval_is_printed_with_its_level_and_rule(own, population):
    import re

    extra = ("--population", "domain", "--max-queries", 2000, "--random-state", 1) if population == "domain" else ()
    res = gate(own, "unfair.skops", "--max-share", 0.02, *extra)
    assert res.exit_code in (1, 2), res.output
    verdict = json.loads(gate(own, "unfair.skops", "--max-share", 0.02, *extra, "--json").stdout)["verdict"]
    found = re.search(r"worst group (sex=\w): [\d.]+% \[([\d.]+)%, ([\d.]+)%\] harmed \((\d+) of (\d+), ([^)]*)\)",
                      res.output)
    assert found, res.output
    group, lower, upper, harmed, n, name = found.groups()
    harmed, n = int(harmed), int(n)
    if population == "domain":  # each of the 6 group intervals (2 groups x 3 shares) at the look's level / 6
        looks = verdict["meta"]["sequential"]["looks"]
        level = 1 - (1 - look_confidence(0.95, looks)) / 6
        assert name == f"{level:.2%} Clopper-Pearson, Bonferroni over the 6 group intervals"
    else:  # every held-out row checked: the group's count read as a sample of its people, at 95%
        level = 0.95
        assert name == "95% Clopper-Pearson for the group's people"
    assert (float(lower), float(upper)) == pytest.approx(
        tuple(100 * b for b in clopper_pearson(harmed, n, level)), abs=0.006)
