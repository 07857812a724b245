"""Why a fully grown forest's whole domain is not decided in a minute: how many regions its leaves cut the keys into.

Run by hand:  python benchmarks/certify_trees_regions.py [--samples 4000]

A tree ensemble is constant, at every protected combination, on each **region**: the keys that reach the same leaf of
every tree at every combination. The region of a key ``x`` is a product set (per key column, the codes every one of
its leaves holds; for a coupled column, the roles whose code at each combination every leaf of that combination
holds), so its size ``V(x)`` is computed exactly from the leaves. A key's discrimination status is the same on its
whole region, so regions are the finest pieces an exact answer needs, and a method that decides one region at a time
needs as many steps as there are regions.

Estimator (stated so that a reader can check it): keys ``x_1..x_N`` drawn uniformly from the key grid ``G`` (every
key column uniform between its bounds, ``random_state`` 0); each region ``R`` is hit with probability ``|R| / |G|``,
so ``|G| * mean(1[x_i in the domain] / V(x_i))`` is an unbiased estimate of the number of regions meeting the domain,
each weighted by the share of it inside the domain (a lower estimate of their number); with ``1[x_i is an IDI]``
also, of the regions holding IDIs. The 95% interval is the normal one of the mean (the terms are heavy-tailed: the
bootstrap percentile interval, 2,000 resamples, is given beside it). Each sampled key is checked on the model itself
(the discrimination check at one of its inputs); the regions are checked by moving 500 of the keys on each column to
a code their region holds (the same leaves must be reached at every combination) and to one it does not (some
leaf must change).

Beside it: the boxes the engine bounds per CPU second on the same model (``certify_domain``, ``--seconds``), and the
decided share at the end. Writes ``benchmarks/results/certify_trees_regions.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

RESULTS = Path(__file__).resolve().parent / "results"
CASES = [("census", "sex", "rf10"), ("compas", "race", "rf10"), ("census", "sex", "rf10d8"),
         ("compas", "race", "rf10d8")]


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load() -> float:
    return round(os.getloadavg()[0], 1)


def leaves_of(ensemble, space, keys: np.ndarray) -> np.ndarray:
    """The leaf of each tree each key reaches at each combination, shape (n, n_combinations, n_trees)."""
    n, k = len(keys), space.n_combinations
    X = np.stack([space.points(keys, np.full(n, c)) for c in range(k)], axis=1).reshape(n * k, -1)
    reach = ensemble.reached(X, X)
    if (reach.sum(axis=1) != ensemble.n_trees).any():
        raise RuntimeError("a point reaches other than one leaf per tree")
    return np.nonzero(reach)[1].reshape(n, k, ensemble.n_trees)


def region_sizes(ensemble, space, keys: np.ndarray) -> tuple[np.ndarray, list]:
    """``log2 V(x)``: the size of each key's region (keys reaching the same leaves at every combination); and, per
    key column, which of its codes (roles, for a coupled column) each key's region holds, shape (n, size)."""
    n, k = len(keys), space.n_combinations
    leaves = leaves_of(ensemble, space, keys)
    log_volume = np.zeros(n)
    allowed = []
    coupled = set(space.coupled)
    for i, f in enumerate(space.columns):
        block = ensemble.reach[:, ensemble.offset[f]:ensemble.offset[f + 1]]  # (n_leaves, codes of f)
        held = np.ones((n, k, block.shape[1]), dtype=bool)
        for t in range(ensemble.n_trees):
            held &= block[leaves[:, :, t]]
        if i not in coupled:
            ok = held.all(axis=1)
        else:  # a role is in the region when its code at every combination is held there
            roles = np.arange(space.lower[i], space.upper[i] + 1)
            probe = np.repeat(keys[:1], len(roles), axis=0)
            probe[:, i] = roles
            codes = np.stack([space.points(probe, np.full(len(roles), c))[:, f] for c in range(k)])  # (k, roles)
            lower = ensemble.lower[f]
            ok = np.ones((n, len(roles)), dtype=bool)
            for c in range(k):
                ok &= held[:, c, codes[c] - lower]
        count = ok.sum(axis=1)
        allowed.append(ok)
        if (count < 1).any():
            raise RuntimeError(f"a key is outside its own region on column {f}: the reading is inconsistent")
        log_volume += np.log2(count)
    return log_volume, allowed


def check_regions(ensemble, space, keys: np.ndarray, allowed: list, rng) -> int:
    """Each key moved on one column to a code its region holds reaches the same leaves; to one it does not, other
    leaves somewhere (the regions' sizes are right). Returns the number of moves checked; raises on a wrong one."""
    base = leaves_of(ensemble, space, keys)
    checked = 0
    for i, ok in enumerate(allowed):
        for inside in (True, False):
            pool = ok if inside else ~ok
            has = pool.any(axis=1)
            if not has.any():
                continue
            pick = np.array([rng.choice(np.flatnonzero(p)) for p in pool[has]])
            moved = keys[has].copy()
            moved[:, i] = space.lower[i] + pick
            same = (leaves_of(ensemble, space, moved) == base[has]).all(axis=(1, 2))
            if (same != inside).any():
                raise RuntimeError(f"column {i}: a region's size is wrong")
            checked += int(has.sum())
    return checked


def one(dataset: str, protected: str, name: str, samples: int, seconds: float) -> dict:
    from certify_trees import model_for

    from chiralfair.certification import KeySpace, certify_domain
    from chiralfair.certification.key_space import IMPOSSIBLE
    from chiralfair.certification.tree_reading import read_tree_ensemble
    from chiralfair.datasets import load_dataset
    from chiralfair.oracle import DiscriminationCheck

    data = load_dataset(dataset, protected=[protected])
    model, _ = model_for(name, data)
    domain = data.domain
    ensemble = read_tree_ensemble(model, domain)
    space = KeySpace(domain)
    rng = np.random.default_rng(0)
    before, cpu, wall = load(), cpu_seconds(), time.perf_counter()
    keys = rng.integers(space.lower, space.upper + 1, size=(samples, space.n_columns))
    possibility = space.possibility(keys, keys)
    inside = np.ones(samples, bool) if possibility is None else (possibility != IMPOSSIBLE).any(axis=1)
    combination = np.zeros(samples, np.int64) if possibility is None else (possibility != IMPOSSIBLE).argmax(axis=1)
    idi = np.zeros(samples, bool)
    idi[inside] = DiscriminationCheck(model, domain).check(space.points(keys[inside], combination[inside])).is_idi
    log_v, allowed = region_sizes(ensemble, space, keys)
    checked = check_regions(ensemble, space, keys[:500], [a[:500] for a in allowed], rng)
    grid = float(np.log2(space.volume(space.lower[None], space.upper[None])[0]))
    estimate = {}
    for what, mask in (("regions", inside), ("idi_regions", inside & idi)):
        terms = np.where(mask, np.exp2(grid - log_v), 0.0)  # |G| / V(x): the estimator's terms
        mean, se = terms.mean(), terms.std(ddof=1) / np.sqrt(samples)
        boot = np.array([rng.choice(terms, samples).mean() for _ in range(2000)])
        estimate[what] = {"estimate": float(mean),
                          "normal_95": [float(max(mean - 1.96 * se, 0)), float(mean + 1.96 * se)],
                          "bootstrap_95": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))],
                          "log2": float(np.log2(mean)) if mean > 0 else None}
    sampling = {"seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu, "load": [before, load()]}
    before, cpu = load(), cpu_seconds()
    result = certify_domain(model, data, max_seconds=seconds)
    engine = {"seconds": result.seconds, "cpu_seconds": cpu_seconds() - cpu, "load": [before, load()],
              "boxes": result.stats["n_boxes"], "cells": result.stats["n_cells"],
              "decided": result.certified_share + result.falsified_share, "stopped": result.stopped}
    engine["boxes_per_cpu_second"] = engine["boxes"] / max(engine["cpu_seconds"], 1e-9)
    return {"dataset": dataset, "protected": protected, "model": name, "read": ensemble.kind, "samples": samples,
            "log2_grid": grid, "inside": int(inside.sum()), "idi": int((inside & idi).sum()),
            "median_log2_region": float(np.median(log_v[inside])), "moves_checked": checked, **estimate,
            "sampling": sampling, "engine": engine}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--one", nargs=3)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.samples, args.seconds)))
        return
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    rows = []
    for case in CASES:
        out = subprocess.run([sys.executable, __file__, "--one", *case, "--samples", str(args.samples),
                              "--seconds", str(args.seconds)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    end = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    record = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "uptime_start": uptime, "uptime_end": end,
              "samples": args.samples, "seconds": args.seconds, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees_regions.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = ["# How many regions a forest's leaves cut the keys into (`benchmarks/certify_trees_regions.py`)", "",
             f"{record['date']}; `uptime` at the start: {uptime}; at the end: {end}. {args.samples:,} keys drawn "
             "uniformly from the key grid per model (random_state 0); estimator and intervals in the script's "
             "docstring. Engine: `certify_domain` for "
             f"{args.seconds:g} wall s; CPU seconds by `resource.getrusage` (process and children).", "",
             "| case | model | log2 keys (grid) | regions meeting the domain, estimate [95% normal; bootstrap] | "
             "regions holding IDIs | median log2 region size | engine: boxes, CPU s, boxes per CPU s, decided | "
             "load |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        reg, idi, e = r["regions"], r["idi_regions"], r["engine"]
        lines.append(
            f"| {r['dataset']} {r['protected']} | {r['model']} ({r['read']}) | {r['log2_grid']:.1f} | "
            f"{reg['estimate']:.3g} (2^{reg['log2']:.1f}) [{reg['normal_95'][0]:.3g}, {reg['normal_95'][1]:.3g}; "
            f"{reg['bootstrap_95'][0]:.3g}, {reg['bootstrap_95'][1]:.3g}] | {idi['estimate']:.3g} "
            f"[{idi['normal_95'][0]:.3g}, {idi['normal_95'][1]:.3g}] ({r['idi']} of {r['inside']} sampled keys "
            f"IDIs) | {r['median_log2_region']:.1f} | {e['boxes']:,}, {e['cpu_seconds']:.1f}, "
            f"{e['boxes_per_cpu_second']:.0f}, {e['decided']:.2%} ({e['stopped']}) | {e['load'][0]}-{e['load'][1]} |")
    (RESULTS / "certify_trees_regions.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
