"""Per-person certificates within a neighbourhood (``similar=``) on the paper's DNN: how many decided, how fast, sound.

Run by hand:  python benchmarks/certify_people.py [--seconds 60] [--milp-people 400]

Cases (the paper's DNN of each benchmark through ``train_model``, random_state 0, on every held-out test row of the
pipeline's split; radii in the benchmark's own units, whose codes are the data):

- census sex, default coupling (relationship Husband <-> Wife): ``age`` +-2 (age bands) and ``hours_per_week`` +-4
  (hours), and a wider neighbourhood ``age`` +-5 and ``hours_per_week`` +-10;
- compas race (6 values, every pair): ``age`` +-2 (age bands) and ``priors_count`` +-1 (its bands);
- bank age (9 values, every pair): ``balance`` +-2 and ``duration`` +-4 (the benchmark's encoded units).

Per case, each in its own process (its peak memory its own, ``ru_maxrss``): ``certify_individuals(...,
similar=..., max_seconds=--seconds)``, the shares decided, certified, falsified (affected) and undecided with their
counts and 95% Clopper-Pearson intervals, wall and CPU seconds (``time.process_time`` of the certification; the
process's children, none, from ``getrusage``), peak RSS, and the load average before and after.

**Soundness, by sampling**: for 1,000 certified people drawn at random (all if fewer), every integer point of their box
when it has at most 1,000 points, else 1,000 points drawn uniformly from its integer grid; each point and every
counterpart of it (the protected attribute at each of its values, census's relationship Husband <-> Wife swapped with
sex, built here by hand) predicted through the model; a point whose counterparts that can exist do not all get one
label is a difference (0 expected). **Witnesses**: every affected person's witness pair sent to the model again here,
and checked to lie in the person's box and to differ only in the protected (and coupled) columns.

**Soundness, exactly**: a small ReLU network (2 hidden layers of 12, trained here on census's training rows, its
input standardisation folded into the first layer) is certified for ``--milp-people`` test people within ``age`` +-2
and ``hours_per_week`` +-4 with no time budget, and each person's box is decided by an exact mixed-integer program
(``scipy.optimize.milp``, HiGHS; big-M ReLU encoding, two copies of the network sharing the integer codes:
``tests/milp_oracle.py``, written independently of the bound propagation); the statuses are compared.

Every time is printed beside the load average around it (the machine is shared). Writes
``benchmarks/results/certify_people.json`` and ``certify_people.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
CASES = {
    "census-sex": ("census", "sex", {"age": 2, "hours_per_week": 4}),
    "census-sex-wide": ("census", "sex", {"age": 5, "hours_per_week": 10}),
    "compas-race": ("compas", "race", {"age": 2, "priors_count": 1}),
    "bank-age": ("bank", "age", {"balance": 2, "duration": 4}),
}
SOUND_PEOPLE = 1000
SOUND_POINTS = 1000


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def cpu_seconds() -> float:
    """CPU seconds of this process and its children (user + system)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def counterparts_by_hand(domain, Z: np.ndarray) -> np.ndarray:
    """Every value of the protected attribute applied to each row, shape (n, k, d); census sex swaps Husband/Wife.

    Written here, not taken from the domain: the recount must not share the code it checks.
    """
    (column,) = domain.protected
    feature = domain.features[column]
    values = np.arange(feature.lo, feature.hi + 1)
    out = np.repeat(Z[:, None, :], len(values), axis=1).copy()
    out[:, :, column] = values[None, :]
    if domain.coupled_columns:  # census: sex <-> relationship Husband / Wife
        rel = domain.index("relationship")
        labels = {domain.features[rel].label(c): c for c in range(domain.features[rel].lo, domain.features[rel].hi + 1)}
        sex = {domain.features[column].label(c): c for c in values}
        husband, wife = labels["Husband"], labels["Wife"]
        own_rel = Z[:, rel]
        for j, v in enumerate(values):
            changed = Z[:, column] != v
            swap = changed & np.isin(own_rel, [husband, wife])
            new = np.where(own_rel == husband, wife, husband)
            out[:, j, rel] = np.where(swap, new, own_rel)
        if set(sex) != {"Female", "Male"}:
            raise RuntimeError(f"census sex values: {sex}")
    return out


def points_in_boxes(lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Every integer point of each box with <= SOUND_POINTS points, else SOUND_POINTS uniform draws; owner of each."""
    parts, owner, exhaustive = [], [], 0
    for i in range(len(lo)):
        free = np.flatnonzero(hi[i] > lo[i])
        size = int(np.prod(hi[i, free] - lo[i, free] + 1)) if len(free) else 1
        if size <= SOUND_POINTS:
            grids = [np.arange(lo[i, c], hi[i, c] + 1) for c in free]
            combos = np.array(list(itertools.product(*grids)), dtype=np.int64).reshape(-1, len(free))
            exhaustive += 1
        else:
            combos = rng.integers(lo[i, free], hi[i, free] + 1, size=(SOUND_POINTS, len(free)))
        Z = np.repeat(lo[i][None], len(combos), axis=0)
        Z[:, free] = combos
        parts.append(Z)
        owner.append(np.full(len(Z), i))
    return np.concatenate(parts), np.concatenate(owner), exhaustive


def run_case(key: str, seconds: float) -> dict:
    from chiralfair.certification import certify_individuals
    from chiralfair.certification.neighbourhood import similar_boxes
    from chiralfair.datasets import load_dataset
    from chiralfair.models.training import train_model

    name, protected, similar = CASES[key]
    data = load_dataset(name, protected=[protected])
    trained = train_model(data, "dnn", random_state=0)
    domain, model, rows = data.domain, trained.model, np.asarray(trained.test_index)
    before, wall, cpu = load(), time.perf_counter(), cpu_seconds()
    people = certify_individuals(model, data, rows, similar=similar, max_seconds=seconds, rows_name="test split",
                                 random_state=0)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    after = load()
    summary = people.summary()
    decided = 1 - people.undecided_share
    row = {"case": key, "dataset": name, "protected": protected, "similar": similar,
           "network": getattr(trained, "network", None),
           "coupled": list(domain.describe_couplings()), "n_test_rows": len(rows), **summary,
           "decided": decided, "wall_seconds": wall, "cpu_seconds": cpu, "peak_rss_mib": peak_mib,
           "load_before": before, "load_after": after, "stats": people.meta.get("stats", {}),
           "n_queries": people.meta.get("n_queries"), "n_witnesses_refuted": people.meta.get("n_witnesses_refuted")}
    print(f"{key}: decided {decided:.2%} of {people.n_individuals:,} ({people.certified_share:.2%} certified, "
          f"{people.affected_share:.2%} affected, {people.undecided_share:.2%} undecided, {people.n_left_out} left "
          f"out) in {wall:.1f} s wall, {cpu:.1f} s CPU, peak {peak_mib:.0f} MiB, load {before[0]}-{after[0]}",
          flush=True)

    # soundness by sampling: certified people's boxes, every counterpart, through the model
    started, sample_load = time.perf_counter(), load()
    rng = np.random.default_rng(0)
    certified = np.flatnonzero(people.status == 0)
    chosen = np.sort(rng.choice(certified, size=min(SOUND_PEOPLE, len(certified)), replace=False))
    lo, hi, person = similar_boxes(data, rows[chosen], similar)
    if not (person == np.arange(len(chosen))).all():
        raise RuntimeError("one box per person expected")
    Z, owner, exhaustive = points_in_boxes(lo, hi, rng)
    C = counterparts_by_hand(domain, Z)
    n, k, d = C.shape
    possible = domain.satisfies(C.reshape(-1, d)).reshape(n, k) if domain.constraints else np.ones((n, k), bool)
    labels = np.zeros((n, k), dtype=np.int64)
    step = 200_000 // k
    for start in range(0, n, step):
        labels[start:start + step] = model.predict(C[start:start + step].reshape(-1, d)).reshape(-1, k)
    high = np.where(possible, labels, -1).max(axis=1)
    low = np.where(possible, labels, 2).min(axis=1)
    differs = (high != low) & (possible.sum(axis=1) >= 2)
    bad_people = np.unique(owner[differs])
    row["soundness_sampling"] = {
        "people": int(len(chosen)), "points": int(n), "rows_predicted": int(n * k),
        "boxes_enumerated_whole": int(exhaustive), "points_with_a_label_difference": int(differs.sum()),
        "people_with_a_label_difference": int(len(bad_people)), "seconds": time.perf_counter() - started,
        "load_before": sample_load, "load_after": load()}

    # every witness, once more through the model, inside its person's box, differing only where it may
    hit = np.flatnonzero(people.status == 1)
    W, Wc, L = people.witness[hit], people.witness_counterpart[hit], people.witness_labels[hit]
    again = model.predict(np.concatenate([W, Wc])) if len(hit) else np.zeros(0, np.int64)
    fx, fcf = again[:len(hit)], again[len(hit):]
    b_lo, b_hi, _ = similar_boxes(data, rows[hit], similar)
    moving = np.ones(d, dtype=bool)
    moving[list(domain.protected) + list(domain.coupled_columns)] = False
    inside = ((W[:, moving] >= b_lo[:, moving]) & (W[:, moving] <= b_hi[:, moving])).all(axis=1)
    only_protected = (W[:, moving] == Wc[:, moving]).all(axis=1)
    row["witnesses"] = {"affected": int(len(hit)), "re_queried": int(2 * len(hit)),
                        "labels_equal_on_re_query": int((fx == fcf).sum()),
                        "labels_differ_from_recorded": int(((fx != L[:, 0]) | (fcf != L[:, 1])).sum()),
                        "outside_the_persons_box": int((~inside).sum()),
                        "differ_beyond_protected_columns": int((~only_protected).sum())}
    print(f"  soundness: {row['soundness_sampling']['points']:,} points of {len(chosen):,} certified people "
          f"({exhaustive:,} boxes whole), {int(differs.sum())} label differences; witnesses: {len(hit):,} re-queried, "
          f"{row['witnesses']['labels_equal_on_re_query']} equal, {row['witnesses']['outside_the_persons_box']} "
          "outside their box", flush=True)
    return row


def small_network(data, train_index, seed: int = 0):
    """A 12-12 ReLU net trained on the codes, standardisation folded into its first layer (an nn.Sequential)."""
    import torch

    torch.manual_seed(seed)
    X = np.asarray(data.X[train_index], dtype=np.float64)
    y = np.asarray(data.y[train_index], dtype=np.float32)
    mean, std = X.mean(axis=0), X.std(axis=0) + 1e-9
    net = torch.nn.Sequential(torch.nn.Linear(X.shape[1], 12), torch.nn.ReLU(), torch.nn.Linear(12, 12),
                              torch.nn.ReLU(), torch.nn.Linear(12, 1), torch.nn.Sigmoid())
    xs = torch.tensor((X - mean) / std, dtype=torch.float32)
    target = torch.tensor(y)[:, None]
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    for _ in range(300):
        optimizer.zero_grad()
        torch.nn.functional.binary_cross_entropy(net(xs), target).backward()
        optimizer.step()
    with torch.no_grad():  # fold: W (x - m) / s + b = (W / s) x + (b - W m / s)
        first = net[0]
        w = first.weight.double() / torch.tensor(std)[None]
        first.bias.copy_((first.bias.double() - w @ torch.tensor(mean)).float())
        first.weight.copy_(w.float())
    return net.eval()


def run_milp(n_people: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from milp_oracle import box_has_idi

    from chiralfair.certification import KeySpace, certify_individuals, relu_network
    from chiralfair.certification.neighbourhood import similar_boxes
    from chiralfair.datasets import load_dataset
    from chiralfair.models import as_model
    from chiralfair.models.training import train_model

    similar = {"age": 2, "hours_per_week": 4}
    data = load_dataset("census", protected=["sex"])
    split = train_model(data, "dnn", random_state=0)  # the same split as the paper's DNN
    net = small_network(data, split.train_index)
    model = as_model(net)
    accuracy = float((model.predict(data.X[split.test_index]) == data.y[split.test_index]).mean())
    rng = np.random.default_rng(1)
    rows = np.sort(rng.choice(np.asarray(split.test_index), size=n_people, replace=False))
    from chiralfair.certification import certificates

    before, wall, cpu = load(), time.perf_counter(), cpu_seconds()
    people = certify_individuals(model, data, rows, similar=similar, max_seconds=None, random_state=0)
    ours = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu}
    keys_limit = certificates.ENUMERATE_KEYS
    certificates.ENUMERATE_KEYS = 0  # the same people by the branch and bound alone (bounds, then points)
    wall, cpu = time.perf_counter(), cpu_seconds()
    bounded = certify_individuals(model, data, rows, similar=similar, max_seconds=None, random_state=0)
    ours_bounded = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu}
    certificates.ENUMERATE_KEYS = keys_limit
    network, space = relu_network(model, data.domain), KeySpace(data.domain)
    lo, hi, _ = similar_boxes(data, rows, similar)
    key_lo, key_hi = space.keys_of(lo), space.keys_of(hi)
    wall, cpu = time.perf_counter(), cpu_seconds()
    exact = np.array([box_has_idi(network, space, key_lo[i], key_hi[i]) if people.status[i] != 3 else False
                      for i in range(len(rows))])
    milp = {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu}
    counted = people.status != 3
    status = people.status
    agree = counted & (((status == 0) & ~exact) | ((status == 1) & exact))
    b = bounded.status
    agree_bounded = counted & (((b == 0) & ~exact) | ((b == 1) & exact))
    row = {"network": "Linear(13,12)-ReLU-Linear(12,12)-ReLU-Linear(12,1)-Sigmoid, Adam 300 full-batch steps, "
                      "census training rows",
           "test_accuracy": accuracy, "similar": similar, "people": int(n_people),
           "left_out": int((~counted).sum()), "ours_certified": int((status == 0).sum()),
           "ours_affected": int((status == 1).sum()), "ours_undecided": int((status == 2).sum()),
           "milp_idi": int((exact & counted).sum()), "milp_fair": int((~exact & counted).sum()),
           "agree": int(agree.sum()),
           "certified_but_milp_idi": int(((status == 0) & exact).sum()),
           "affected_but_milp_fair": int(((status == 1) & ~exact).sum()),
           "undecided": int((status == 2).sum()), "ours": ours, "milp": milp,
           "branch_and_bound": {"certified": int((b == 0).sum()), "affected": int((b == 1).sum()),
                                "undecided": int((b == 2).sum()), "agree": int(agree_bounded.sum()),
                                "certified_but_milp_idi": int(((b == 0) & exact).sum()),
                                "affected_but_milp_fair": int(((b == 1) & ~exact).sum()),
                                "boxes": int(bounded.meta["stats"].get("n_boxes", 0)), **ours_bounded},
           "load_before": before, "load_after": load()}
    print(f"MILP: {row['agree']} of {int(counted.sum())} people agree ({row['certified_but_milp_idi']} certified but "
          f"an IDI, {row['affected_but_milp_fair']} affected but fair, {row['undecided']} undecided); ours "
          f"{ours['wall_seconds']:.1f} s, MILP {milp['wall_seconds']:.1f} s", flush=True)
    return row


FAIRQUANT_CASES = {"fairquant-census-sex": ("census", "sex"), "fairquant-compas-race": ("compas", "race"),
                   "fairquant-bank-age": ("bank", "age")}


def ours_on_domain(model, data, seconds: float) -> dict:
    """Our branch and bound over the whole domain, as ``certify_domain`` runs it, keeping the decided boxes.

    Integer points: keys certified / all keys (our count, and FairQuant's: ``curr_volume`` is the product of
    ``upper - lower + 1`` in its ``network_test.c``). Real-valued volume: a box the bounds certify is certified at every
    real point of ``[lo, hi]`` (the bounds are computed over the real box), so the real volume certified is the sum
    of the products of ``hi - lo`` over those boxes (a box one code wide in a column has none), over the real box of
    the domain, ``prod(upper - lower)`` over the non-protected columns.
    """
    from chiralfair.certification import BranchAndBound, KeySpace, relu_network
    from chiralfair.oracle import DiscriminationCheck

    domain = data.domain
    network, space = relu_network(model, domain), KeySpace(domain)
    lo, hi, outside = space.domain_boxes()
    before, wall, cpu = load(), time.perf_counter(), cpu_seconds()
    tally = BranchAndBound(max_seconds=seconds).run(network, space, DiscriminationCheck(model, domain), lo, hi,
                                                    keep_boxes=True)
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    keys = float(space.volume(lo, hi).sum())
    span = (space.upper - space.lower).astype(np.float64)
    wide = span > 0
    real_total = float(np.prod(span[wide]))
    real = {0: 0.0, 1: 0.0}
    for b_lo, b_hi, verdict in tally.boxes:
        side = (b_hi - b_lo).astype(np.float64)[:, wide]
        volume = np.prod(side, axis=1)
        for v in (0, 1):
            real[v] += float(volume[verdict == v].sum())
    values = [int(v[0]) for v in domain.attributes[0].values]
    return {"protected_values": values, "n_combinations": int(space.n_combinations), "keys": keys,
            "outside_keys": float(outside),
            "certified_points": float(tally.certified.sum()) / keys,
            "falsified_points": float(tally.falsified.sum()) / keys,
            "undecided_points": 1 - float(tally.certified.sum() + tally.falsified.sum()) / keys,
            "certified_real_volume": real[0] / real_total, "falsified_real_volume": real[1] / real_total,
            "n_idis": int(sum(len(x) for x in tally.idis)), "boxes": int(tally.stats["n_boxes"]),
            "stopped": tally.stats["stopped"], "wall_seconds": wall, "cpu_seconds": cpu, "load_before": before,
            "load_after": load()}


def run_fairquant(key: str, binary: Path, seconds: float) -> dict:
    """FairQuant and ours on the same exported network, both uncoupled, extremes and (ours) every value."""
    import re
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from certify import read_nnet_logit, write_nnet

    from chiralfair.certification import relu_network
    from chiralfair.datasets import load_dataset
    from chiralfair.models.training import train_model

    name, protected = FAIRQUANT_CASES[key]
    data = load_dataset(name, protected=[protected], couple=False)  # no coupling, no constraint: FairQuant knows none
    trained = train_model(data, "dnn", random_state=0)
    model, domain = trained.model, data.domain
    feature = domain.features[domain.index(protected)]
    extremes = data.with_protected([protected], values={protected: [feature.lo, feature.hi]}, couple=False)
    # the exported network, checked against the model's own logits
    network = relu_network(model, domain)
    scratch = Path(tempfile.mkdtemp(prefix="fairquant-"))
    (scratch / "res").mkdir()
    path = scratch / f"{name}-{protected}.nnet"
    write_nnet(network, domain, path)
    X = domain.sample(1000, np.random.default_rng(1))
    import torch

    with torch.inference_mode():
        own = model.estimator.logit(torch.as_tensor(X, dtype=torch.float32))[:, 0].double().numpy()
    export_diff = float(np.abs(read_nnet_logit(path, X) - own).max())
    before, wall = load(), time.perf_counter()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([str(binary), str(path), str(domain.index(protected))], cwd=scratch, capture_output=True,
                          text=True)
    wall = time.perf_counter() - wall
    after_kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = proc.stdout + proc.stderr
    found = re.search(r"([\d.]+) sec \| (\d+) solved subps \| (\d+) advs", out)
    rates = re.search(r"cer_rate: ([\d.]+)%, fal_rate: ([\d.]+)%, und_rate: ([\d.]+)%", out)
    theirs = {"values_compared": [int(feature.lo), int(feature.hi)], "wall_seconds": wall,
              "cpu_seconds": (after_kids.ru_utime + after_kids.ru_stime) - (kids.ru_utime + kids.ru_stime),
              "stopped_by": "timeout" if "timeout" in out else ("memoryout" if "memoryout" in out else
                                                                  "complete, quasi-complete or depth 20"),
              "real_volume": "not printed by FairQuant (its rates count integer points)", "returncode": proc.returncode,
              "load_before": before, "load_after": load()}
    if found and rates:
        theirs.update(seconds=float(found.group(1)), subproblems=int(found.group(2)), advs=int(found.group(3)),
                      certified_points=float(rates.group(1)) / 100, falsified_points=float(rates.group(2)) / 100,
                      undecided_points=float(rates.group(3)) / 100)
    else:
        theirs["output"] = out[-2000:]
    row = {"case": key, "dataset": name, "protected": protected, "coupled": False, "constraints": [],
           "network": getattr(trained, "network", None),
           "export_max_abs_logit_difference": export_diff, "fairquant": theirs,
           "ours_extremes": ours_on_domain(model, extremes, seconds)}
    if feature.hi - feature.lo > 1:
        row["ours_every_value"] = ours_on_domain(model, data, seconds)
    print(f"{key}: FairQuant {theirs.get('certified_points', float('nan')):.2%} certified (points) in "
          f"{wall:.1f} s; ours (extremes) {row['ours_extremes']['certified_points']:.2%} points, "
          f"{row['ours_extremes']['certified_real_volume']:.2%} real volume", flush=True)
    return row


def markdown(results: dict) -> str:
    lines = ["# Per-person certificates within a neighbourhood (`benchmarks/certify_people.py`)", "",
             f"{results['date']}, chiralfair {results['versions']['chiralfair']}, torch "
             f"{results['versions']['torch']}, "
             f"{results['cpu_count']} CPUs shared with other jobs; budget {results['seconds']:g} s per case; "
             f"networks: {results['networks']}. Command: `{results['command']}`. Every held-out test row of the "
             "pipeline's split; shares of the people counted (the left out in none) with 95% Clopper-Pearson "
             "intervals for the people the model will meet. Wall and CPU seconds are of the certification alone "
             "(loading and training excluded); peak RSS is the case's process.", "",
             "| case | neighbourhood | people | decided | certified | affected | undecided | left out | wall s | "
             "CPU s | peak MiB | load |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        iv = r["people_intervals"]
        lines.append(
            f"| {r['dataset']} {r['protected']} | {', '.join(f'{k} ±{v:g}' for k, v in r['similar'].items())} | "
            f"{r['n_individuals']:,} | {r['decided']:.2%} | {r['certified_unaffected']:.2%} "
            f"[{iv['certified_unaffected'][0]:.2%}, {iv['certified_unaffected'][1]:.2%}] | {r['affected']:.2%} "
            f"[{iv['affected'][0]:.2%}, {iv['affected'][1]:.2%}] | {r['undecided']:.2%} "
            f"({r['counts']['undecided']:,}) | "
            f"{r['n_left_out']} | {r['wall_seconds']:.1f} | {r['cpu_seconds']:.1f} | {r['peak_rss_mib']:.0f} | "
            f"{r['load_before'][0]}-{r['load_after'][0]} |")
    lines += ["", "Soundness by sampling (certified people; every counterpart of every point predicted by the model) "
              "and the witnesses (every affected person's pair re-queried):", "",
              "| case | certified people checked | points (boxes enumerated whole) | rows predicted | label "
              "differences | witnesses re-queried | equal on re-query | outside the box | differ beyond protected |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in results["cases"]:
        s, w = r["soundness_sampling"], r["witnesses"]
        lines.append(f"| {r['case']} | {s['people']:,} | {s['points']:,} ({s['boxes_enumerated_whole']:,}) | "
                     f"{s['rows_predicted']:,} | {s['points_with_a_label_difference']} | {w['affected']:,} | "
                     f"{w['labels_equal_on_re_query']} | {w['outside_the_persons_box']} | "
                     f"{w['differ_beyond_protected_columns']} |")
    m = results.get("milp")
    if m:
        lines += ["", f"Exact check (MILP, HiGHS) on a small ReLU network ({m['network']}; test accuracy "
                  f"{m['test_accuracy']:.2%}), census sex, {m['people']} test people drawn at random, "
                  f"{', '.join(f'{k} ±{v}' for k, v in m['similar'].items())}, no time budget: ours "
                  f"{m['ours_certified']} certified, {m['ours_affected']} affected, {m['ours_undecided']} undecided, "
                  f"{m['left_out']} left out; the MILP finds {m['milp_idi']} boxes holding an IDI and {m['milp_fair']} "
                  f"none. **{m['agree']} agree**; certified but an IDI by the MILP: {m['certified_but_milp_idi']}; "
                  f"affected but fair by the MILP: {m['affected_but_milp_fair']}. Ours {m['ours']['wall_seconds']:.1f} "
                  f"s wall ({m['ours']['cpu_seconds']:.1f} s CPU), the MILP {m['milp']['wall_seconds']:.1f} s wall "
                  f"({m['milp']['cpu_seconds']:.1f} s CPU); load {m['load_before'][0]}-{m['load_after'][0]}."]
        if "branch_and_bound" in m:
            bb = m["branch_and_bound"]
            lines += ["", f"Those boxes (45 keys at most) are decided key by key on the model by default; the same "
                      f"people by the branch and bound alone (bounds, splits, points; `ENUMERATE_KEYS = 0`): "
                      f"{bb['certified']} certified, {bb['affected']} affected, {bb['undecided']} undecided, "
                      f"{bb['boxes']:,} boxes bounded; **{bb['agree']} agree with the MILP**; certified but an IDI: "
                      f"{bb['certified_but_milp_idi']}; affected but fair: {bb['affected_but_milp_fair']} "
                      f"({bb['wall_seconds']:.1f} s wall, {bb['cpu_seconds']:.1f} s CPU)."]
    if results.get("fairquant"):
        lines += ["", "FairQuant (Kim, Wang, Wang, ICSE 2025; its public artifact built by "
                  "`benchmarks/fairquant/build.sh`, outside the package) and ours on the same exported network, "
                  "both uncoupled and without constraints, "
                  "the same wall-second budget each, one thread each. Shares of the domain: integer points (keys; "
                  "FairQuant counts them too) and, for ours, real-valued volume (the boxes the bounds certify, "
                  "measured as real boxes). FairQuant compares the protected attribute's extremes only; ours is run on "
                  "the extremes and on every value.", "",
                  "| case | tool, values | certified (points) | falsified (points) | undecided (points) | certified "
                  "(real volume) | wall s | CPU s | stopped | load |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in results["fairquant"]:
            t = r["fairquant"]
            if "certified_points" in t:
                lines.append(f"| {r['dataset']} {r['protected']} | FairQuant, {t['values_compared']} | "
                             f"{t['certified_points']:.2%} | {t['falsified_points']:.2%} | "
                             f"{t['undecided_points']:.2%} | "
                             f"not printed | {t['wall_seconds']:.1f} | {t['cpu_seconds']:.1f} | {t['stopped_by']} | "
                             f"{t['load_before'][0]}-{t['load_after'][0]} |")
            else:
                lines.append(f"| {r['dataset']} {r['protected']} | FairQuant | did not report (return code "
                             f"{t['returncode']}) | | | | {t['wall_seconds']:.1f} | | | |")
            for label, o in (("extremes", r["ours_extremes"]), ("every value", r.get("ours_every_value"))):
                if o is None:
                    continue
                lines.append(f"| {r['dataset']} {r['protected']} | ours, {label} ({o['n_combinations']} values) | "
                             f"{o['certified_points']:.2%} | {o['falsified_points']:.4%} | "
                             f"{o['undecided_points']:.2%} | "
                             f"{o['certified_real_volume']:.4%} | {o['wall_seconds']:.1f} | {o['cpu_seconds']:.1f} | "
                             f"{o['stopped']} | {o['load_before'][0]}-{o['load_after'][0]} |")
    for note in results.get("notes", []):
        lines += ["", note]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--milp-people", type=int, default=400)
    parser.add_argument("--fairquant", type=Path, default=None, help="FairQuant's built network_test "
                        "(benchmarks/fairquant/build.sh); compare on the same networks")
    parser.add_argument("--only", choices=["people", "fairquant"], default=None,
                        help="run only the per-person cases (and the MILP) or only the FairQuant comparison, and merge "
                             "into the results file already there")
    parser.add_argument("--case", choices=[*CASES, "milp", *FAIRQUANT_CASES], help=argparse.SUPPRESS)
    parser.add_argument("--networks", default="the paper's DNN trained through train_model (random_state 0)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.case:
        if args.case in FAIRQUANT_CASES:
            row = run_fairquant(args.case, args.fairquant, args.seconds)
        else:
            row = run_milp(args.milp_people) if args.case == "milp" else run_case(args.case, args.seconds)
        print("RESULT " + json.dumps(row, default=float))
        return
    import torch

    from chiralfair import __version__

    results = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "seconds": args.seconds,
               "command": "python benchmarks/certify_people.py " + " ".join(sys.argv[1:]),
               "networks": args.networks, "cpu_count": os.cpu_count(),
               "versions": {"chiralfair": __version__, "torch": torch.__version__,
                            "python": platform.python_version(), "numpy": np.__version__},
               "cases": [], "milp": None, "fairquant": []}
    earlier = args.out / "certify_people.json"
    if args.only and earlier.exists():  # keep the other part's figures (and their own dates and commands)
        kept = json.loads(earlier.read_text())
        for part in (("cases", "milp") if args.only == "fairquant" else ("fairquant", "fairquant_command")):
            if part in kept:
                results[part] = kept[part]
        if args.only == "fairquant":
            results.update({k: kept[k] for k in ("date", "command", "networks", "seconds") if k in kept})
    if args.only == "fairquant":
        results["fairquant_command"] = "python benchmarks/certify_people.py " + " ".join(sys.argv[1:])
        results["fairquant_date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    cases = [] if args.only == "fairquant" else [*CASES, "milp"]
    if args.fairquant is not None and args.only != "people":
        cases += list(FAIRQUANT_CASES)
        results["fairquant"] = []
    for case in cases:
        extra = ["--fairquant", str(args.fairquant)] if case in FAIRQUANT_CASES else []
        proc = subprocess.run([sys.executable, __file__, "--case", case, "--seconds", str(args.seconds),
                               "--milp-people", str(args.milp_people), *extra], capture_output=True, text=True)
        print(proc.stdout.replace("RESULT ", "").splitlines()[0] if proc.stdout else proc.stderr[-3000:], flush=True)
        if proc.returncode != 0:
            raise SystemExit(f"case {case} failed:\n{proc.stderr[-3000:]}")
        row = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
        if case == "milp":
            results["milp"] = row
        elif case in FAIRQUANT_CASES:
            results["fairquant"].append(row)
        else:
            results["cases"].append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "certify_people.json").write_text(json.dumps(results, indent=2, default=float))
    (args.out / "certify_people.md").write_text(markdown(results))
    print(markdown(results))


if __name__ == "__main__":
    main()
