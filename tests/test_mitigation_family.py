"""Mitigation methods as a family: a user's plugin (in Python and through an entry point) is run by name, refused
names list it, ``auto`` tries it unless its class says it is not a candidate; a method that cannot train a model's
kind is skipped with a note naming both; auto says first which bound no candidate met, by how much."""

import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from chiralfair.datasets import from_frame
from chiralfair.exceptions import ConfigError
from chiralfair.mitigation import retrain
from chiralfair.mitigation.base import METHODS, MitigationMethod, fit_plain, register_method
from chiralfair.models import ModelSpec
from chiralfair.oracle import DiscriminationCheck

FAST = {"margin": 0.2, "spread_seeds": 2, "validation_repeats": 2, "random_state": 0}
PLUGIN, SHY = "test-blind-sex", "test-shy"


class BlindSex(MitigationMethod):
    """A user's method: the estimator fitted and applied with sex (and its couplings) at its first value."""

    def __init__(self, estimator=None, domain=None):
        self.estimator = estimator
        self.domain = domain

    def _fit(self, X, y, sample_weight=None) -> None:
        self.estimator_ = fit_plain(clone(self.estimator), self._model_input(X), y)
        self.info_ = {}

    def _model_input(self, X):
        return self.domain.counterpart_rows(np.asarray(X, dtype=np.int64), np.zeros(len(X), dtype=np.int64))


class Shy(BlindSex):
    """The same method, but its class says auto must not pick it."""

    not_a_candidate = "it is a test's method that auto must leave out"


@pytest.fixture
def plugins():
    register_method(PLUGIN)(BlindSex)
    register_method(SHY)(Shy)
    yield
    for name in (PLUGIN, SHY):
        METHODS._entries.pop(name, None)


def people(n=600, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "job": rng.choice(["a", "b", "c"], n),
                          "hours": rng.integers(20, 60, n)})
    score = (frame["job"] == "c") * 1.0 + 0.05 * (frame["hours"] - 40) + 1.2 * (frame["sex"] == "m")
    frame["y"] = np.where(score + rng.normal(0, 0.4, n) > 0.8, "yes", "no")
    data = from_frame(frame, label="y", positive_class="yes", protected="sex", bins={"hours": 8})
    train, test = data.split(0)
    return data, train, test


def test_a_plugin_runs_by_name_and_a_refused_name_lists_it(plugins):
    data, train, test = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method=PLUGIN, train_index=train, **FAST)
    fitted = result.model_of(PLUGIN)
    # recount: the held-out IDI rate through the user's own fitted object, every counterpart of every test row
    rate = DiscriminationCheck(_wrapped(fitted), data.domain).is_idi(data.X[test]).mean()
    assert result.after[0]["test_idi_rate"] == rate == 0.0 < result.rows[0]["test_idi_rate"]
    with pytest.raises(ConfigError, match=f"unknown mitigation method 'nope'; valid: .*{PLUGIN}"):
        retrain(model, data, method="nope", train_index=train)


def _wrapped(estimator):
    from chiralfair.models import as_model
    return as_model(estimator, name="recount")


@pytest.mark.slow  # trains every candidate of auto on three validation splits
def test_auto_tries_a_plugin_unless_its_class_says_it_is_not_a_candidate(plugins):
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="auto", train_index=train, **FAST)
    table = result.meta["auto_candidates"]
    assert PLUGIN in {t["method"] for t in table["tried"]}
    assert SHY not in {t["method"] for t in table["tried"]}
    assert table["left_out"][SHY] == Shy.not_a_candidate and "paper" in table["left_out"]
    # recount which candidates are within the bounds from their validation figures
    ref, budget, bound = table["reference"], table["f1_budget"], table["max_group_increase"]
    # the F1 loss within the budget with its noise margin (the pooled rows' bootstrap and the seed spread)
    within = [ref["f1"] - t["f1"] + t["f1_margin"] <= budget and t["f1_margin"] >= t["f1_margin_rows"] >= 0
              and all(t[k] is None or ref[k] is None or t[k] <= ref[k] + bound
                      for k in ("demographic_parity_difference", "equalized_odds_difference"))
              for t in table["tried"]]
    assert [not t["broken"] for t in table["tried"]] == within
    assert result.meta["auto_pick"]["within_bounds"] == any(within)
    assert table["n_splits"] == 2 and table["tried"][0]["n_splits"] == 2


def test_auto_says_first_which_bound_no_candidate_met_and_by_how_much(plugins):
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    # no candidate can lose 0 F1 and 0 group gap while removing the use of sex
    result = retrain(model, data, method="auto", train_index=train, max_f1_loss=0.0, max_group_increase=0.0, **FAST)
    table, pick = result.meta["auto_candidates"], result.meta["auto_pick"]
    ref = table["reference"]
    f1_gap = min(ref["f1"] - t["f1"] + t["f1_margin"] - table["f1_budget"] for t in table["tried"])
    dpd_gap = min(t["demographic_parity_difference"] - ref["demographic_parity_difference"] for t in table["tried"])
    expected = (["F1"] if f1_gap > 0 else []) + (["DPD"] if dpd_gap > 0 else [])
    assert [u.split(" ")[0] for u in pick["unmet"] if not u.startswith("EOD")] == expected and expected
    assert not pick["within_bounds"]
    choice = result.after[0]["choice"]
    assert choice.startswith("no candidate meets every bound on the validation rows: ")
    picked = table["tried"][table["picked"]]
    head = result.verdict_lines()[0]  # the headline names every bound the pick itself breaks, not only the unmet
    assert head.startswith("**auto: no candidate met every bound") and picked["broken"]
    assert f"it picked {picked['label']}, which breaks {', '.join(picked['broken'])}, by the rule" in head
    if f1_gap > 0:
        assert f"by {f1_gap:.3f})" in choice
    if dpd_gap > 0:
        assert f"by {dpd_gap:.3f})" in choice


def test_a_method_that_cannot_train_a_kind_is_skipped_with_a_note_naming_the_kind_and_the_method():
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method=["consistency", "unaware"], train_index=train, **FAST)
    assert result.methods == ("unaware",)
    assert "not the zoo DNN" in result.skipped["consistency"] and "zoo model 'lr'" in result.skipped["consistency"]
    assert any(n.startswith("method 'consistency' skipped") and "zoo model 'lr'" in n for n in result.notes)


ENTRY = "ep-blind"
MODULE = "chiralfair_test_mitigation_plugin"
SOURCE = '''
import numpy as np
from sklearn.base import clone

from chiralfair.mitigation.base import MitigationMethod, fit_plain


class EpBlind(MitigationMethod):
    def __init__(self, estimator=None, domain=None):
        self.estimator = estimator
        self.domain = domain

    def _fit(self, X, y, sample_weight=None):
        self.estimator_ = fit_plain(clone(self.estimator), self._model_input(X), y)
        self.info_ = {}

    def _model_input(self, X):
        return self.domain.counterpart_rows(np.asarray(X, dtype=np.int64), np.zeros(len(X), dtype=np.int64))
'''


@pytest.fixture
def installed(tmp_path, monkeypatch):
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    info = tmp_path / f"{MODULE}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {MODULE.replace('_', '-')}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [chiralfair.mitigation_methods]
        {ENTRY} = {MODULE}:EpBlind
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    METHODS._entries.pop(ENTRY, None)
    sys.modules.pop(MODULE, None)


@pytest.mark.slow  # installs a package and runs auto over every candidate
def test_an_installed_plugin_is_known_to_the_command_line_run_by_name_and_a_candidate_of_auto(installed):
    from chiralfair.pipeline.checks import check_retrain_options

    assert check_retrain_options(method=[ENTRY], share=[1.0]) == (ENTRY,)
    with pytest.raises(ConfigError, match=f"valid: .*{ENTRY}"):
        check_retrain_options(method=["nope"], share=[1.0])
    data, train, test = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method=[ENTRY, "auto"], train_index=train, **FAST)
    assert DiscriminationCheck(_wrapped(result.model_of(ENTRY)), data.domain).is_idi(data.X[test]).sum() == 0
    assert ENTRY in {t["method"] for t in result.meta["auto_candidates"]["tried"]}


@pytest.mark.slow  # trains every candidate of auto on three validation splits
def test_the_retrain_folder_shows_every_candidate_of_auto_as_a_table_and_a_plot(tmp_path):
    from chiralfair.reporting.report import write_retrain_folder

    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="auto", train_index=train, **FAST)
    write_retrain_folder(result, tmp_path)
    report = (tmp_path / "report.md").read_text()
    tried = result.meta["auto_candidates"]["tried"]
    section = report.split("## auto's candidates")[1].split("\n\n")[1].splitlines()
    rows = [line for line in section if line.startswith("| ")][2:]  # below the header and the reference
    assert len(rows) == len(tried)
    for t, line in zip(tried, rows, strict=True):
        assert line.startswith(f"| {t['label']}") and f"{t['idi_rate']:.4f}" in line and f"{t['f1']:.4f}" in line
    assert (tmp_path / "auto_candidates.png").stat().st_size > 10_000
    assert "auto_candidates.png" in report


def test_reductions_predict_deterministically_the_mixtures_expected_label_and_blind_make_no_idi():
    from sklearn.linear_model import LogisticRegression

    from chiralfair.mitigation import make_method
    from chiralfair.mitigation.reductions import ExpectedPositive

    data, train, test = people()
    method = make_method("reductions", estimator=LogisticRegression(), domain=data.domain,
                         constraint="demographic_parity").fit(data.X[train], data.y[train])
    mixture = method.estimator_
    assert isinstance(mixture, ExpectedPositive)
    # recount: the expected positive probability of the randomized classifier, on the blinded test rows
    blinded = data.domain.counterpart_rows(data.X[test], np.zeros(len(test), dtype=np.int64))
    p = sum(w * h.predict(blinded) for h, w in zip(mixture.predictors, mixture.weights, strict=True))
    labels = method.predict(data.X[test])
    np.testing.assert_array_equal(labels, (p >= 0.5).astype(int))
    np.testing.assert_array_equal(labels, method.predict(data.X[test]))  # the same label every time
    assert DiscriminationCheck(_wrapped(method), data.domain).is_idi(data.X[test]).sum() == 0
    # the constraint acts: on the training rows the demographic-parity gap is below the plain blind model's
    groups = data.X[train, list(data.domain.names).index("sex")]
    plain = make_method("unaware", estimator=LogisticRegression(), domain=data.domain).fit(data.X[train],
                                                                                          data.y[train])

    def gap(model):
        yhat = model.predict(data.X[train])
        return abs(yhat[groups == 0].mean() - yhat[groups == 1].mean())

    assert gap(method) < gap(plain)
    grid = make_method("reductions", estimator=LogisticRegression(), domain=data.domain, algorithm="grid",
                       grid_size=5).fit(data.X[train], data.y[train])
    assert not isinstance(grid.estimator_, ExpectedPositive)  # grid search: its best predictor, one estimator


def test_consistency_with_a_group_term_narrows_the_networks_equalized_odds_gap():
    from chiralfair.mitigation.dnn import PaperDNNClassifier

    data, train, _ = people(n=1500)
    X, y = data.X[train], data.y[train]
    sex = X[:, list(data.domain.names).index("sex")]

    def eo_gap(net):  # recount: per label, the gap of the mean P(positive) between the two groups
        p = net.predict_proba(X)[:, 1]
        return sum(abs(p[(y == k) & (sex == 0)].mean() - p[(y == k) & (sex == 1)].mean()) for k in (0, 1))

    plain = PaperDNNClassifier(epochs=5, random_state=0, domain=data.domain).fit(X, y)
    grouped = PaperDNNClassifier(epochs=5, random_state=0, domain=data.domain, group=3.0).fit(X, y)
    assert eo_gap(grouped) < 0.5 * eo_gap(plain)


def test_consistency_fine_tuned_with_a_group_term_trains_with_it():
    """auto's fine-tuned candidates with a group term: the term reaches the fine-tuning (it once did not, and the
    candidates with group 1 and 3 were the network fine-tuned without it)."""
    from chiralfair.mitigation import make_method
    from chiralfair.mitigation.dnn import PaperDNNClassifier

    data, train, _ = people(n=1500)
    X, y = data.X[train], data.y[train]
    sex = X[:, list(data.domain.names).index("sex")]

    def eo_gap(method):  # recount through the fitted method: per label, the gap of the mean P(positive)
        p = method.predict_proba(X)[:, 1]
        return sum(abs(p[(y == k) & (sex == 0)].mean() - p[(y == k) & (sex == 1)].mean()) for k in (0, 1))

    start = PaperDNNClassifier(epochs=5, random_state=0).fit(X, y)
    tuned = {g: make_method("consistency", estimator=start, domain=data.domain, lam=0.0, group=g,
                            fine_tune_epochs=5, random_state=0).fit(X, y) for g in (0.0, 3.0)}
    assert tuned[3.0].estimator_.group == 3.0
    assert eo_gap(tuned[3.0]) < 0.5 * eo_gap(tuned[0.0])


def _pooled_setup(n=900, seed=1):
    """Two validation splits of ``people``'s rows, a reference's and a candidate's predictions on them."""
    from types import SimpleNamespace

    data, _, _ = people(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    rows = [np.sort(rng.choice(data.n_samples, data.n_samples // 3, replace=False)) for _ in range(2)]
    sex = data.X[:, list(data.domain.names).index("sex")]
    reference = np.where(rng.random(data.n_samples) < 0.85, data.y, 1 - data.y)
    # the candidate: the reference with some positives of sex code 1 turned negative (a true-positive gap)
    candidate = np.where((sex == 1) & (data.y == 1) & (rng.random(data.n_samples) < 0.2), 0, reference)
    splits = [SimpleNamespace(validation_rows=r, reference={"predicted": reference[r]}) for r in rows]
    return data, rows, splits, np.concatenate([candidate[r] for r in rows])


def test_auto_checks_the_group_bounds_within_the_noise_of_the_rows_and_of_the_training_seed():
    from fairlearn.metrics import equalized_odds_difference

    from chiralfair.mitigation.auto import _PooledRows, broken_bounds, unmet_bounds

    data, rows, splits, predicted = _pooled_setup()
    pooled = _PooledRows(data, splits)
    y = np.concatenate([data.y[r] for r in rows])
    sex = np.concatenate([data.X[r, list(data.domain.names).index("sex")] for r in rows])
    # recount over the pooled rows with fairlearn
    eod_ref = equalized_odds_difference(y, pooled.reference, sensitive_features=sex)
    eod = equalized_odds_difference(y, predicted, sensitive_features=sex)
    fine, anew = pooled.figures(predicted, None), pooled.figures(predicted, {
        "demographic_parity_difference": 0.0, "equalized_odds_difference": 0.05})
    key = "equalized_odds_difference"
    assert pooled.reference_figures()[key] == pytest.approx(eod_ref)
    assert fine[key] == pytest.approx(eod) and fine["rise"][key] == pytest.approx(eod - eod_ref)
    margin = fine["rise_bound"][key] - fine["rise"][key]
    assert margin > 0  # the rows' noise
    assert anew["rise_bound"][key] == pytest.approx(eod - eod_ref + np.hypot(margin, 0.05))
    reference = {"f1": 0.8, **pooled.reference_figures()}
    figures = {"label": "c", "f1": 0.8 + fine["f1_margin"], "idi_rate": 0.0, **fine}  # F1 within, with its noise
    bound = (fine["rise"][key] + fine["rise_bound"][key]) / 2  # the rise within it, its noise not
    assert 0 < fine["rise"][key] < bound
    broken = broken_bounds(figures, reference, f1_budget=0.01, max_group_increase=bound)
    assert len(broken) == 1 and broken[0].startswith("EOD") and "within the noise" in broken[0]
    assert unmet_bounds([figures], reference, f1_budget=0.01, max_group_increase=bound)[0].startswith("EOD (no")
    assert not broken_bounds(figures, reference, f1_budget=0.01, max_group_increase=fine["rise_bound"][key])


def test_auto_says_a_group_bound_it_cannot_check_on_the_validation_rows():
    from chiralfair.mitigation.auto import _PooledRows, broken_bounds, unmet_bounds

    data, rows, splits, predicted = _pooled_setup()
    positive = np.flatnonzero(data.y == 1)
    sex = data.X[:, list(data.domain.names).index("sex")]
    # the validation rows keep no positive row of sex code 0: its true-positive rate, and so the EOD, is undefined
    for split in splits:
        keep = ~np.isin(split.validation_rows, positive[sex[positive] == 0])
        split.reference["predicted"] = split.reference["predicted"][keep]
        split.validation_rows = split.validation_rows[keep]
    pooled = _PooledRows(data, splits)
    predicted = pooled.reference.copy()  # a candidate that predicts as the reference
    figures = {"label": "c", "f1": 0.9, "idi_rate": 0.0, **pooled.figures(predicted, None)}
    reference = {"f1": 0.8, **pooled.reference_figures()}
    assert reference["equalized_odds_difference"] is None
    broken = broken_bounds(figures, reference, f1_budget=0.01, max_group_increase=0.02)
    assert broken == ["EOD undefined on the validation rows (a group without a positive or a negative row)"]
    unmet = unmet_bounds([figures], reference, f1_budget=0.01, max_group_increase=0.02)
    assert unmet and unmet[-1].startswith("EOD (undefined") and "cannot be checked" in unmet[-1]


def test_a_zero_bound_gives_the_miss_in_the_figures_own_units_not_a_ratio_to_zero():
    from chiralfair.mitigation.auto import choose

    tried = [{"label": "a", "f1": 0.628, "idi_rate": 0.0, "demographic_parity_difference": 0.1,
              "equalized_odds_difference": 0.1}]
    reference = {"f1": 0.631, "demographic_parity_difference": 0.1, "equalized_odds_difference": 0.1}
    _, zero = choose(tried, reference, f1_budget=0.0, max_group_increase=0.0, n_validation=800)
    assert "F1 0.628 < 0.631 - 0.000" in zero and "of a bound beyond" not in zero
    _, some = choose(tried, reference, f1_budget=0.001, max_group_increase=0.02, n_validation=800)
    assert "2.00 of a bound beyond" in some


def test_auto_never_picks_a_candidate_that_labels_no_positive_row_right():
    """A one-label model has no IDIs and no group gap; measured on the census race DNN it won on group noise alone."""
    from chiralfair.mitigation.auto import choose

    def cand(label, f1, dpd, eod):
        return {"label": label, "f1": f1, "idi_rate": 0.0, "demographic_parity_difference": dpd,
                "equalized_odds_difference": eod}

    reference = {"f1": 0.61, "demographic_parity_difference": 0.10, "equalized_odds_difference": 0.10}
    tried = [cand("real", 0.60, 0.25, 0.30), cand("one label", 0.0, 0.0, 0.0)]
    pick, why = choose(tried, reference, f1_budget=0.065, max_group_increase=0.02, n_validation=3908)
    assert tried[pick]["label"] == "real"
    assert "1 candidate with validation F1 0" in why
    within_f1 = [cand("real", 0.60, 0.10, 0.10), cand("one label", 0.0, 0.0, 0.0)]
    pick, _ = choose(within_f1, reference, f1_budget=0.7, max_group_increase=0.02, n_validation=3908)
    assert within_f1[pick]["label"] == "real"


def test_the_f1_loss_margin_is_a_paired_bootstrap_of_the_rows_recounted_with_sklearn():
    from sklearn.metrics import f1_score

    from chiralfair.mitigation.evaluation import pooled_f1_loss

    rng = np.random.default_rng(3)
    n = 3000
    y = (rng.random(n) < 0.3).astype(int)
    reference = np.where(rng.random(n) < 0.85, y, 1 - y)
    predicted = np.where(rng.random(n) < 0.05, 1 - reference, reference)  # 5% of the rows labelled otherwise
    out = pooled_f1_loss(y, predicted, reference)
    assert out["loss"] == pytest.approx(f1_score(y, reference) - f1_score(y, predicted))
    # recount: resample row indices with replacement, both models' F1 on the same rows
    draws = rng.integers(0, n, size=(400, n))
    boot = np.array([f1_score(y[i], reference[i]) - f1_score(y[i], predicted[i]) for i in draws])
    recount = np.percentile(boot, 95) - out["loss"]
    assert out["margin"] > 0.005 and out["margin"] == pytest.approx(recount, rel=0.25)
    assert out["loss_upper"] == pytest.approx(out["loss"] + out["margin"])
    # a candidate that predicts as the reference loses nothing, with no noise
    same = pooled_f1_loss(y, reference, reference)
    assert same["loss"] == 0 and same["margin"] == 0


def test_the_f1_margin_adds_the_held_out_rows_and_two_training_seeds_in_quadrature():
    from chiralfair.mitigation.auto import f1_margin

    assert f1_margin(0.006, None) == pytest.approx(np.sqrt(2) * 0.006)  # no seed measured: the rows' parts only
    assert f1_margin(0.0, 0.004) == pytest.approx(1.6448536 * np.sqrt(2) * 0.004)
    assert f1_margin(0.006, 0.004) == pytest.approx(np.hypot(np.sqrt(2) * 0.006, 1.6448536 * np.sqrt(2) * 0.004))


def test_the_headline_counts_only_the_methods_that_ran_and_names_the_skipped():
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    loose = retrain(model, data, method=["consistency", "unaware"], train_index=train, max_f1_loss=0.5,
                    max_group_increase=1.0, **FAST)
    assert loose.improved and loose.methods == ("unaware",)
    head = loose.verdict_lines()[0]
    assert "every method" not in head and "the one method that ran (unaware)" in head
    assert "Not run: consistency (skipped" in head
    strict = retrain(model, data, method=["consistency", "unaware"], train_index=train, **FAST)
    assert not strict.improved  # unaware costs more than 0.01 F1 here
    assert strict.verdict_lines()[0].startswith("**Not an improvement** (1 of 1 that ran): Not run: consistency")


def test_the_spread_line_says_whose_f1_each_figure_is_and_on_which_rows():
    from sklearn.metrics import f1_score

    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="unaware", train_index=train, **FAST)
    test = np.setdiff1d(np.arange(data.n_samples), train)
    before = f1_score(data.y[test], model.predict(data.X[test]))  # recount through the user's model
    line = next(x for x in result.to_markdown().splitlines() if "own F1 spread" in x)
    assert f"the table's F1 before, {before:.3f}, is the model under test's on the {len(test)} test rows" in line
    values = ", ".join(f"{v:.3f}" for v in result.spread["validation_f1"])
    assert f"trained again on the training split's other rows with 2 training seeds: validation F1 {values}" in line


# The census HGB cells at model state 2 (benchmarks/results/retrain_family_hgb.json of commit 8517cc0, the bare
# F1 loss rule): auto's pick on its pooled
# validation rows, as counts per (label, pick's prediction, reference's prediction), label-major; the validation
# F1 of the reference (mean over the 3 splits) and of the pick; the model's own F1 standard deviation over 3
# training seeds; and the held-out F1 loss the pick had when the bare loss said "within".
FAILED_CELLS = {
    "census:sex, counterfactual reweigh 0.75": {
        "counts": [8292, 97, 75, 437, 1024, 100, 73, 1626], "reference_f1": 0.6791373169961267,
        "f1": 0.6750086695381964, "seed_std": 0.00391824463696191, "test_loss": 0.015178816184559296},
    "census:race, counterfactual reweigh 1": {
        "counts": [8303, 77, 64, 457, 1041, 66, 56, 1660], "reference_f1": 0.6791373169961267,
        "f1": 0.6783096767602362, "seed_std": 0.00391824463696191, "test_loss": 0.010600617222518705},
}


@pytest.mark.parametrize("cell", sorted(FAILED_CELLS))
def test_the_f1_bound_is_not_claimed_where_the_bare_validation_loss_claimed_it_and_the_test_rows_missed(cell):
    from chiralfair.mitigation.auto import broken_bounds, f1_margin, unmet_bounds
    from chiralfair.mitigation.evaluation import pooled_f1_loss

    c = FAILED_CELLS[cell]
    code = np.repeat(np.arange(8), c["counts"])
    y, predicted, reference = code // 4, code // 2 % 2, code % 2
    rows = pooled_f1_loss(y, predicted, reference)
    budget, groups = 0.01, {"demographic_parity_difference": 0.1, "equalized_odds_difference": 0.1}
    ref = {"f1": c["reference_f1"], **groups}
    bare = {"label": cell, "f1": c["f1"], "idi_rate": 0.0, **groups}
    assert c["reference_f1"] - c["f1"] < budget < c["test_loss"]  # the old rule said within; the test rows missed
    assert broken_bounds(bare, ref, f1_budget=budget, max_group_increase=0.02) == []
    noisy = {**bare, "f1_margin": f1_margin(rows["margin"], c["seed_std"])}
    broken = broken_bounds(noisy, ref, f1_budget=budget, max_group_increase=0.02)
    assert len(broken) == 1 and broken[0].startswith("F1") and "within the noise" in broken[0]
    unmet = unmet_bounds([noisy], ref, f1_budget=budget, max_group_increase=0.02)
    miss = c["reference_f1"] - c["f1"] + noisy["f1_margin"] - budget
    assert unmet == [f"F1 (no candidate within {budget:.3f} of the reference's {c['reference_f1']:.3f} within the "
                     f"noise of the validation rows and training seeds; the closest, {cell}, by {miss:.3f})"]
    # the held-out loss lies within the loss plus its margin: the margin covers what the bare loss missed
    assert c["test_loss"] <= c["reference_f1"] - c["f1"] + noisy["f1_margin"]


def test_auto_says_first_when_its_pick_removes_less_than_its_idi_goal():
    """The LR census sex cell whose pick was within every bound yet removed 67% of the IDIs: said first now."""
    from chiralfair.mitigation.auto import first_sentence, idi_goal_unmet

    reference = {"idi_rate": 0.0300}
    short = idi_goal_unmet({"idi_rate": 0.0099}, reference, within=True)
    assert short == ("no candidate within the bounds lowers the IDI rate by 90% on the validation rows: the pick "
                     "lowers it by 67% (3.00% -> 0.99%)")
    assert idi_goal_unmet({"idi_rate": 0.0030}, reference, within=True) is None  # exactly 90% removed
    assert idi_goal_unmet({"idi_rate": 0.0}, {"idi_rate": 0.0}, within=True) is None  # nothing to remove
    assert first_sentence(True, [], short) == short + ". "
    assert first_sentence(True, [], None) == ""
    both = first_sentence(False, ["F1 (...)"], idi_goal_unmet({"idi_rate": 0.02}, reference, within=False))
    assert both == ("no candidate meets every bound on the validation rows: F1 (...). The IDI rate is not lowered by "
                    "90% on the validation rows: the pick lowers it by 33% (3.00% -> 2.00%). ")


def test_auto_states_its_idi_goal_in_the_choice_and_the_headline():
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="auto", train_index=train, max_f1_loss=0.5, max_group_increase=1.0, **FAST)
    table, pick = result.meta["auto_candidates"], result.meta["auto_pick"]
    assert pick["within_bounds"]
    before, after = table["reference"]["idi_rate"], table["tried"][table["picked"]]["idi_rate"]
    short = before > 0 and 1 - after / before < 0.9  # recounted from the table
    lines = result.verdict_lines()
    assert any(line.startswith("**auto: short of its IDI goal**") for line in lines) == short
    assert result.after[0]["choice"].startswith("no candidate within the bounds lowers the IDI rate by 90%") == short


def test_the_goal_is_judged_again_on_the_test_rows_with_the_cell_that_missed_it_by_five_hundred_thousandths():
    """LR census sex, state 1: within every bound on validation, F1 loss 0.01005 and -67% IDIs on the test rows."""
    from chiralfair.mitigation.guardrail import goal_misses

    before = {"test_idi_rate": 0.0393, "f1": 0.4935, "demographic_parity_difference": 0.13,
              "equalized_odds_difference": None}
    after = {"test_idi_rate": 0.0128, "f1": 0.4935 - 0.01005, "demographic_parity_difference": 0.16,
             "equalized_odds_difference": 0.9}
    misses = goal_misses(before, after, f1_budget=0.01, max_group_increase=0.02)
    assert misses == ["the IDI rate falls by 67.4% (3.93% -> 1.28%), short of 90%",
                      f"F1 loss 0.01005 (0.4935 -> {0.4935 - 0.01005:.4f}) > 0.01",
                      "demographic-parity difference 0.130 -> 0.160 (+0.03 > 0.02)"]  # EOD undefined before
    met = {**after, "test_idi_rate": 0.0039, "f1": 0.4935 - 0.00995, "demographic_parity_difference": 0.15}
    assert goal_misses(before, met, f1_budget=0.01, max_group_increase=0.02) == []  # 90.08% fewer, each within


@pytest.mark.parametrize("max_f1_loss", [0.5, 0.0])
def test_autos_headline_checks_its_pick_on_the_test_rows(max_f1_loss):
    data, train, test = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="auto", train_index=train, max_f1_loss=max_f1_loss, max_group_increase=1.0,
                     **FAST)
    before, after = result.rows[0], next(r for r in result.after if r["method"] == "auto")
    budget = max(max_f1_loss, result.spread["spread"]) if result.spread else max_f1_loss
    missed = (before["f1"] - after["f1"] > budget
              or (before["test_idi_rate"] > 0 and after["test_idi_rate"] > 0.1 * before["test_idi_rate"]))
    lines = result.verdict_lines()
    test_line = [line for line in lines if line.startswith("**auto on the held-out test rows")]
    assert len(test_line) == 1
    assert test_line[0].startswith("**auto on the held-out test rows: goal missed**") == missed
    first_guardrail = next(i for i, line in enumerate(lines) if "mprove" in line.split("**")[1])
    assert lines.index(test_line[0]) < first_guardrail  # auto's lines come before the guardrail's


@pytest.mark.parametrize("params, words", [
    ({}, "fairlearn ExponentiatedGradient under equalized odds (bound 0.01), the estimator blind"),
    ({"constraint": "demographic_parity", "algorithm": "grid", "blind": False, "augment": True},
     "fairlearn GridSearch under demographic parity (bound 0.01), the estimator seeing the protected attributes, on "
     "counterfactually augmented rows; 1 predictor, made deterministic by grid search's best predictor")])
def test_the_report_names_the_reductions_constraint_and_algorithm(params, words):
    data, train, _ = people()
    model = ModelSpec("lr").fit(data.X[train], data.y[train], random_state=0)
    result = retrain(model, data, method="reductions", train_index=train, method_params={"reductions": params},
                     **FAST)
    assert result.after[0]["choice"].startswith(words)
    assert f"- reductions: {words}" in result.to_markdown()


def test_autos_test_line_says_there_was_no_idi_to_remove_for_a_model_that_never_reads_the_protected_column():
    """A fresh user's blind LR: the line said 'goal met' beside the guardrail's 'the IDI rate is not lower'."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from chiralfair.models import as_model

    data, train, _ = people()
    sex = [f.name for f in data.domain.features].index("sex")
    blind = Pipeline([("drop", ColumnTransformer([("sex", "drop", [sex])], remainder="passthrough")),
                      ("lr", LogisticRegression())]).fit(data.X[train], data.y[train])
    test = np.setdiff1d(np.arange(data.n_samples), train)
    X = data.X[test]
    assert all((blind.predict(np.where(np.arange(X.shape[1]) == sex, v, X)) == blind.predict(X)).all()
               for v in np.unique(data.X[:, sex]))  # recount: no test row has a counterpart with another label
    result = retrain(as_model(blind, name="blind"), data, method="auto", train_index=train, max_f1_loss=0.5,
                     max_group_increase=1.0, **FAST)
    line = next(line for line in result.verdict_lines() if line.startswith("**auto on the held-out test rows"))
    assert line.startswith("**auto on the held-out test rows: no IDI to remove**")
    assert "goal met" not in " ".join(result.verdict_lines())
