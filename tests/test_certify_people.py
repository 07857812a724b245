"""Per-person certificates as the user reads them: shares with intervals, each status, witness pairs, bad input.

Every figure is recounted here independently: each person's box enumerated point by point and every point and its
counterpart sent through the user's own torch module (plain numpy and torch), the Clopper-Pearson ends from the
beta distribution (scipy), the witnesses read back from ``individuals.parquet`` in the user's values.
"""

import functools
import itertools
import json

import numpy as np
import pandas as pd
import pytest
import torch
from scipy.stats import beta
from sklearn.svm import SVC

import chiralfair
from chiralfair.certification import IndividualCertificates
from chiralfair.certification.certificates import people_verdict
from chiralfair.exceptions import ConfigError, ModelCapabilityError

FEATURES = ["sex", "hours", "years"]
SIMILAR = {"hours": 2, "years": 1}


@functools.lru_cache(maxsize=1)
def people_and_net(seed=0):
    """Integer columns (their codes are their values) and a ReLU net trained on those values (once per process)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"sex": rng.integers(0, 2, 900), "hours": rng.integers(20, 61, 900),
                          "years": rng.integers(0, 31, 900)})
    frame["y"] = (frame["hours"] + frame["years"] + 4 * frame["sex"] > 62).astype(int)
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1), torch.nn.Sigmoid())
    x = torch.tensor(frame[FEATURES].to_numpy(), dtype=torch.float32)
    target = torch.tensor(frame["y"].to_numpy(), dtype=torch.float32)[:, None]
    optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a shared machine: spinning threads make this tiny fit slow
    try:
        for _ in range(200):
            optimizer.zero_grad()
            torch.nn.functional.binary_cross_entropy(net(x), target).backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return frame, net.eval()


def labels(net, values) -> np.ndarray:
    """The user's own module on rows of (sex, hours, years): 1 where P(y=1) > 0.5."""
    with torch.no_grad():
        return (net(torch.tensor(np.asarray(values, dtype=np.float64), dtype=torch.float32))[:, 0] > 0.5).numpy()


def recount(net, test: pd.DataFrame, similar: dict | None) -> np.ndarray:
    """Whether each test person is affected: some point of their box whose sex flipped gets another label."""
    own = test[FEATURES].to_numpy()
    radius = {"hours": 0, "years": 0, **(similar or {})}
    steps = list(itertools.product(range(-radius["hours"], radius["hours"] + 1),
                                   range(-radius["years"], radius["years"] + 1)))
    affected = np.zeros(len(own), dtype=bool)
    for dh, dy in steps:
        z = own.copy()
        z[:, 1] = np.clip(z[:, 1] + dh, 20, 60)
        z[:, 2] = np.clip(z[:, 2] + dy, 0, 30)
        flipped = z.copy()
        flipped[:, 0] = 1 - flipped[:, 0]
        affected |= labels(net, z) != labels(net, flipped)
    return affected


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    alpha = 1 - level
    lower = 0.0 if k == 0 else beta.ppf(alpha / 2, k, n - k + 1)
    upper = 1.0 if k == n else beta.ppf(1 - alpha / 2, k + 1, n - k)
    return lower, upper


@pytest.mark.parametrize("similar, enumerate_keys", [(None, 4096), (SIMILAR, 4096), (SIMILAR, 0)],
                         ids=["own row", "similar, small boxes checked key by key", "similar, branch and bound"])
def test_each_persons_status_interval_and_witness_match_a_recount(tmp_path, monkeypatch, similar, enumerate_keys):
    from chiralfair.certification import certificates

    monkeypatch.setattr(certificates, "ENUMERATE_KEYS", enumerate_keys)
    frame, net = people_and_net()
    train, test = frame.iloc[:600], frame.iloc[600:]
    result = chiralfair.certify(net, train, test=test, label="y", protected="sex", max_seconds=None,
                                similar=similar, out=tmp_path / "run")
    people = result.individuals
    expected = recount(net, test, similar)
    assert people.n_left_out == 0 and people.undecided_share == 0 and 0 < expected.mean() < 0.5
    assert (people.status == np.where(expected, 1, 0)).all()

    # the shares' intervals for the people: Clopper-Pearson of the counts, in the console and result.json
    record = json.loads((tmp_path / "run" / "result.json").read_text())["individuals"]
    k = int(expected.sum())
    assert record["people_intervals"]["affected"] == pytest.approx(clopper_pearson(k, 300), abs=1e-9)
    assert record["people_intervals"]["certified_unaffected"] == pytest.approx(clopper_pearson(300 - k, 300),
                                                                                abs=1e-9)
    assert record["counts"] == {"certified_unaffected": 300 - k, "affected": k, "undecided": 0}
    lower, upper = clopper_pearson(k, 300)
    assert f"{k / 300:.2%} affected [{lower:.2%}, {upper:.2%}]" in str(result)

    # individuals.parquet: every person's status; each affected person's witness in the user's values
    table = pd.read_parquet(tmp_path / "run" / "individuals.parquet")
    assert list(table["status"]) == list(np.where(expected, "affected", "certified unaffected"))
    assert (table["row"].to_numpy() == result.individuals.rows).all()
    hit = table[table["status"] == "affected"]
    assert len(hit) == k and hit[FEATURES + ["prediction"]].notna().all().all()
    assert table.loc[table["status"] != "affected", "prediction"].isna().all()
    x = hit[FEATURES].to_numpy(dtype=np.int64)
    x_cf = hit[[f"{c}_counterpart" for c in FEATURES]].to_numpy(dtype=np.int64)
    person = test[FEATURES].to_numpy()[np.flatnonzero(expected)]
    assert (x[:, 0] == person[:, 0]).all()  # the witness keeps the person's own sex
    gap = np.abs(x[:, 1:] - person[:, 1:])
    bound = np.array([(similar or {}).get("hours", 0), (similar or {}).get("years", 0)])
    assert (gap <= bound).all()  # inside the person's box
    if similar is None:
        assert (x == person).all()  # on their own row, the witness is the person
    assert (x_cf[:, 1:] == x[:, 1:]).all() and (x_cf[:, 0] != x[:, 0]).all()  # only sex differs
    assert (labels(net, x) == hit["prediction"].to_numpy()).all()
    assert (labels(net, x_cf) == hit["prediction_counterpart"].to_numpy()).all()
    assert (hit["prediction"] != hit["prediction_counterpart"]).all()
    assert people.n_witnesses == k and people.meta["n_witnesses_refuted"] == 0
    if similar is not None:  # which way the boxes were decided
        own = people.meta["stats"]["n_own_row_idis"]  # their own row an IDI: witnessed there, box not searched
        assert own == int(recount(net, test, None).sum()) > 0
        assert people.meta["stats"]["n_enumerated_boxes"] == (300 - own if enumerate_keys else 0)
        assert (people.meta["stats"]["n_boxes"] > 0) == (not enumerate_keys)

    # the same people as a Verdict: the people's interval, the groups by own sex, who is harmed, the worst group
    verdict = people.verdict
    assert verdict is not None and verdict.exact and verdict.n_individuals == 300 and verdict.n_affected == k
    assert (verdict.people_lower, verdict.people_upper) == pytest.approx(clopper_pearson(k, 300), abs=1e-9)
    sex = test["sex"].to_numpy()
    harmed = np.zeros(300, dtype=bool)  # the witness x gets the unfavourable label (0; favourable: 1, by default)
    harmed[np.flatnonzero(expected)] = labels(net, x) == 0
    if similar is None:
        assert (harmed == (expected & (labels(net, test[FEATURES].to_numpy()) == 0))).all()
    shares = {}
    for value in (0, 1):
        group = verdict.group(f"sex={value}")
        mask = sex == value
        assert (group["n"], group["n_affected"], group["n_harmed"]) == (
            int(mask.sum()), int((expected & mask).sum()), int((harmed & mask).sum()))
        assert (group["people_harmed_lower"], group["people_harmed_upper"]) == pytest.approx(
            clopper_pearson(int((harmed & mask).sum()), int(mask.sum()), verdict.people_confidence), abs=1e-9)
        shares[f"sex={value}"] = (harmed & mask).sum() / mask.sum()
    assert verdict.worst_group == max(shares, key=shares.get)
    assert f"most harmed group: {verdict.worst_group}" in str(result)
    assert record["verdict"]["worst_group"] == verdict.worst_group
    again = IndividualCertificates.from_json(people.to_json())
    assert again.verdict.to_json() == verdict.to_json() and (again.witness == people.witness).all()


def test_witnesses_and_intervals_round_trip_and_undecided_widen_the_affected_bounds():
    rows = np.arange(10, dtype=np.int64)
    status = np.array([0, 0, 1, 2, 2, 0, 3, 1, 0, 0], dtype=np.int8)
    witness = np.full((10, 3), -1, dtype=np.int64)
    witness[[2, 7]] = [[0, 30, 4], [1, 41, 9]]
    labels_ = np.full((10, 2), -1, dtype=np.int64)
    labels_[[2, 7]] = [[0, 1], [1, 0]]
    people = IndividualCertificates(rows=rows, status=status, seconds=0.1, witness=witness,
                                    witness_counterpart=witness, witness_labels=labels_)
    again = IndividualCertificates.from_json(people.to_json())
    assert (again.witness == witness).all() and (again.witness_labels == labels_).all()
    assert again.summary() == people.summary()
    assert people.n_individuals == 9 and people.count("affected") == 2 and people.n_witnesses == 2
    assert people.interval("undecided") == pytest.approx(clopper_pearson(2, 9), abs=1e-9)
    assert people.affected_bounds() == pytest.approx((clopper_pearson(2, 9)[0], clopper_pearson(4, 9)[1]), abs=1e-9)
    with pytest.raises(ConfigError, match="left out"):
        people.interval("left out")
    with pytest.raises(ConfigError, match="2 people are undecided, so the share affected is not known"):
        people_verdict(people, None, None, 1)


# ------------------------------------------------------------------ bad input, refused by name (Python and CLI)
def test_a_model_neither_relu_network_nor_tree_ensemble_is_refused_with_what_certify_takes():
    frame, _ = people_and_net()
    svc = SVC().fit(frame[FEATURES].to_numpy(), frame["y"])
    with pytest.raises(ModelCapabilityError) as refused:
        chiralfair.certify(svc, frame.iloc[:600], test=frame.iloc[600:], label="y", protected="sex")
    text = str(refused.value)
    assert "SVC" in text and "ReLU network" in text and "tree ensemble" in text


@pytest.mark.parametrize("similar, message", [
    ({"hour": 2}, "unknown feature 'hour'; the features are hours, years"),
    ({"hours": -1}, "the radius of 'hours' must be a finite number >= 0, got -1"),
    ({"hours": float("nan")}, "the radius of 'hours' must be a finite number >= 0, got nan"),
    ({"hours": float("inf")}, "the radius of 'hours' must be a finite number >= 0, got inf"),
    ({"sex": 1}, "'sex' is a protected attribute")])
def test_a_bad_neighbourhood_is_refused_by_name_before_any_work(similar, message):
    frame, net = people_and_net()
    with pytest.raises(ConfigError) as refused:
        chiralfair.certify(net, frame.iloc[:600], test=frame.iloc[600:], label="y", protected="sex",
                           similar=similar)
    assert message in str(refused.value)


@pytest.mark.parametrize("flag, message", [
    ("hour=2", "unknown feature 'hour'; the features are hours, years"),
    ("hours=-1", "the radius of 'hours' must be a finite number >= 0, got -1"),
    ("hours=nan", "the radius of 'hours' must be a finite number >= 0, got nan"),
    ("hours=inf", "the radius of 'hours' must be a finite number >= 0, got inf"),
    ("sex=1", "'sex' is a protected attribute")])
def test_the_certify_command_refuses_a_bad_neighbourhood_by_name(tmp_path, flag, message):
    from typer.testing import CliRunner

    from chiralfair.cli import app

    frame, net = people_and_net()
    frame.to_csv(tmp_path / "people.csv", index=False)
    torch.jit.script(net).save(str(tmp_path / "net.pt"))
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "people.csv"), "--model",
                                   str(tmp_path / "net.pt"), "--label", "y", "--protected", "sex",
                                   "--similar", flag, "--out", str(tmp_path / "run")])
    assert res.exit_code == 2 and message in " ".join(res.output.split()), res.output
    assert not (tmp_path / "run").exists()  # refused before any work: no run folder


def test_the_certify_command_refuses_a_model_it_cannot_read_by_name(tmp_path):
    import pickle

    from typer.testing import CliRunner

    from chiralfair.cli import app

    frame, _ = people_and_net()
    frame.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "svc.pkl").write_bytes(pickle.dumps(SVC().fit(frame[FEATURES].to_numpy(), frame["y"])))
    res = CliRunner().invoke(app, ["certify", "--data", str(tmp_path / "people.csv"), "--model",
                                   str(tmp_path / "svc.pkl"), "--trust-model-file", "--label", "y", "--protected",
                                   "sex"])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "SVC" in text and "ReLU network" in text and "tree ensemble" in text, res.output


def test_the_boxes_holding_each_idi_are_every_box_a_brute_force_finds():
    from chiralfair.certification.certificates import _holders

    rng = np.random.default_rng(0)
    for _ in range(100):
        d, n_boxes, n_keys = int(rng.integers(1, 5)), int(rng.integers(1, 30)), int(rng.integers(1, 40))
        lo = rng.integers(0, 4, (n_boxes, d))
        hi = lo.copy()
        wide = rng.random(d) < 0.5
        lo[:, wide] -= rng.integers(0, 2, (n_boxes, int(wide.sum())))
        hi[:, wide] += rng.integers(0, 2, (n_boxes, int(wide.sum())))
        keys = rng.integers(-1, 5, (n_keys, d))
        box, first = _holders(keys, lo, hi, np.arange(n_keys)[:, None])
        held = np.all((keys[:, None] >= lo[None]) & (keys[:, None] <= hi[None]), axis=2)  # (key, box)
        assert list(box) == list(np.flatnonzero(held.any(axis=0)))
        assert list(first[:, 0]) == [int(np.flatnonzero(held[:, b]).min()) for b in box]


def test_boxes_partly_inside_the_domain_are_checked_key_by_key_or_left_undecided(monkeypatch):
    from test_certification import all_keys, inside_box, toy_case, truth

    from chiralfair.certification import KeySpace, certificates, certify_individuals
    from chiralfair.certification.key_space import INSIDE, OUTSIDE

    model, data = toy_case(kind="coupled+constraints")  # a constraint over a non-protected column
    domain, rows = data.domain, np.arange(60)
    lo, hi = data.X[rows].copy(), data.X[rows].copy()
    for name in ("a", "b"):
        c = domain.index(name)
        lo[:, c] = np.maximum(lo[:, c] - 2, domain.features[c].lo)
        hi[:, c] = np.minimum(hi[:, c] + 2, domain.features[c].hi)
    space = KeySpace(domain)
    key_lo, key_hi = space.keys_of(lo), space.keys_of(hi)
    member = space.membership(key_lo, key_hi)
    partly = (member != INSIDE) & (member != OUTSIDE)
    assert partly.sum() >= 5
    keys = all_keys(space)
    possible, idi = truth(model, domain, space, keys)
    people = certify_individuals(model, data, rows, boxes=(lo, hi))
    for i in range(len(rows)):
        held = inside_box(keys, key_lo[i], key_hi[i])
        expected = 3 if not (held & possible).any() else (1 if idi[held].any() else 0)
        assert people.status[i] in (expected, 3), i  # left out also when no counterpart of their own row could exist
    own = people.meta["stats"]["n_own_row_idis"]  # their own row an IDI: witnessed there, box not searched
    assert (people.status[partly] != 3).all() and people.meta["stats"]["n_enumerated_boxes"] == 60 - own
    monkeypatch.setattr(certificates, "ENUMERATE_KEYS", 0)  # the branch and bound reads no partly box: undecided
    bounded = certify_individuals(model, data, rows, boxes=(lo, hi))
    own_idi = idi[[int(np.flatnonzero((keys == k).all(axis=1))[0]) for k in space.keys_of(data.X[rows])]]
    assert own_idi.sum() == own and (bounded.status[partly & own_idi] == 1).all()
    assert (bounded.status[partly & ~own_idi] == 2).all()
    assert bounded.meta["stats"]["n_partly_inside_undecided"] == (partly & ~own_idi).sum()
    assert (bounded.status[~partly] == people.status[~partly]).all()


def test_the_undecided_are_counted_by_why():
    """A run that decides nobody says why (a fresh user saw 100.00% undecided and no reason)."""
    from chiralfair.certification.result import IndividualCertificates

    status = np.array([2, 2, 2, 2, 2, 0, 1], np.int8)
    people = IndividualCertificates(rows=np.arange(7), status=status, seconds=5.7,
                                    meta={"stats": {"stopped": "time", "n_partly_inside_undecided": 1},
                                          "n_witnesses_refuted": 1})
    assert people.undecided_text() == (
        "5 undecided: 3 not decided when the time budget (max_seconds, --max-seconds) ran out, after 5.70 s; a larger "
        "budget decides more; 1 whose box lies partly outside the domain; 1 whose IDI the model did not confirm when "
        "re-queried")
    decided = IndividualCertificates(rows=np.arange(2), status=np.array([0, 1], np.int8), seconds=0.1)
    assert decided.undecided_text() is None
