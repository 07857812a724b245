"""Certification of the README's kind of model: a HistGradientBoostingClassifier inside a raw-frame pipeline.

Run by hand:  python benchmarks/certify_trees_raw.py [--seconds 60]

The raw Adult files as they come (``$CHIRALFAIR_DATA/census/raw``), the README's ``ColumnTransformer``
(``OneHotEncoder(handle_unknown="ignore", sparse_output=False)`` on the text columns, ``StandardScaler`` on the
rest) in front of ``HistGradientBoostingClassifier(random_state=0)``, fitted on ``adult.data``; the README's spec
(sex, coupled Husband <-> Wife, its bins). On the 16,281 rows of ``adult.test``:

- **own row**: each person certified on their row as given;
- **similar**: each person within ``age`` +-2 and ``hours-per-week`` +-4 in their own units (``hours-per-week`` is
  binned for the search), then every row of every person's neighbourhood (each sex, the coupled relationship
  swapped) sent through the pipeline's own ``predict``: the people whose status differs (must be 0);
- **whole domain**: ``certify_domain`` for ``--seconds``.

Wall and CPU seconds (``resource.getrusage``, children included) for each, the load around it and the peak
memory. Writes ``benchmarks/results/certify_trees_raw.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation", "relationship",
         "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country", "income"]
SIMILAR = {"age": 2, "hours-per-week": 4}


def load():
    return round(os.getloadavg()[0], 1)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its children (``resource.getrusage``)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn):
    before, wall, cpu = load(), time.perf_counter(), cpu_seconds()
    out = fn()
    return out, {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": cpu_seconds() - cpu,
                 "load": [before, load()]}


def exhaustive(pipe, test: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Each test person affected: some row of their neighbourhood gets another label at the other sex."""
    data = pd.concat([train, test])
    low = {c: data[c].min() for c in SIMILAR}
    high = {c: data[c].max() for c in SIMILAR}
    out = np.zeros(len(test), dtype=bool)
    X = test.drop(columns="income").reset_index(drop=True)
    swap = {"Husband": "Wife", "Wife": "Husband"}
    for da in range(-SIMILAR["age"], SIMILAR["age"] + 1):
        for dh in range(-SIMILAR["hours-per-week"], SIMILAR["hours-per-week"] + 1):
            z = X.copy()
            z["age"] = X["age"] + da
            z["hours-per-week"] = X["hours-per-week"] + dh
            inside = ((z["age"] >= low["age"]) & (z["age"] <= high["age"]) & (z["hours-per-week"] >= low[
                "hours-per-week"]) & (z["hours-per-week"] <= high["hours-per-week"])).to_numpy()
            other = z.copy()
            other["sex"] = np.where(z["sex"] == "Male", "Female", "Male")
            other["relationship"] = z["relationship"].map(lambda r: swap.get(r, r))
            differs = pipe.predict(z) != pipe.predict(other)
            out |= inside & differs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    from sklearn.compose import make_column_selector, make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    import chiralfair
    from chiralfair.certification import certify_domain, certify_individuals
    from chiralfair.pipeline.front import resolve_inputs

    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    raw = os.path.join(os.environ.get("CHIRALFAIR_DATA", "../shared/data"), "census", "raw")
    train = pd.read_csv(f"{raw}/adult.data", names=NAMES, skipinitialspace=True)
    test = pd.read_csv(f"{raw}/adult.test", names=NAMES, skipinitialspace=True, skiprows=1)
    test["income"] = test["income"].str.rstrip(".")
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                                                  make_column_selector(dtype_exclude="number")),
                                                 remainder=StandardScaler()),
                         HistGradientBoostingClassifier(random_state=0))
    pipe.fit(train.drop(columns="income"), train["income"])
    spec = chiralfair.DataSpec(label="income", positive_class=">50K", protected="sex",
                               couple={"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}},
                               bins={"fnlwgt": 20, "capital-gain": 10, "capital-loss": 10, "hours-per-week": 10})
    inputs = resolve_inputs(pipe, train, test=test, spec=spec)
    model, data, rows = inputs.model, inputs.dataset, inputs.test_index
    own, own_t = timed(lambda: certify_individuals(model, data, rows, rows_name="adult.test"))
    near, near_t = timed(lambda: certify_individuals(model, data, rows, rows_name="adult.test", similar=SIMILAR,
                                                     max_seconds=args.seconds))
    truth, truth_t = timed(lambda: exhaustive(pipe, test, train))
    counted = near.status != 3
    decided = counted & ((near.status == 0) | (near.status == 1))
    domain, domain_t = timed(lambda: certify_domain(model, data, rows=rows, max_seconds=args.seconds))
    result = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "uptime_start": uptime,
        "uptime_end": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
        "versions": {lib: __import__("importlib.metadata").metadata.version(lib)
                     for lib in ("chiralfair", "scikit-learn", "numpy", "pandas")},
        "read": near.meta["read"], "n_people": int(len(rows)),
        "own": {**own.summary(), **own_t},
        "similar": {**near.summary(), **near_t, "radii": SIMILAR, "decided": 1 - near.undecided_share,
                    "grid_values": near.meta["stats"].get("grid", {}).get("values"),
                    "boxes": near.meta["stats"].get("n_boxes"), "cells": near.meta["stats"].get("n_cells")},
        "exhaustive": {**truth_t, "affected": int(truth[counted].sum()), "people": int(counted.sum()),
                       "agree": int(((near.status[decided] == 1) == truth[decided]).sum()),
                       "decided": int(decided.sum())},
        "domain": {**domain_t, "certified": domain.certified_share, "falsified": domain.falsified_share,
                   "undecided": domain.undecided_share, "stopped": domain.stopped, "boxes": domain.stats["n_boxes"],
                   "log2_keys": float(np.log2(domain.domain_volume))},
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "certify_trees_raw.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    o, s, e, d = result["own"], result["similar"], result["exhaustive"], result["domain"]
    lines = ["# A tree ensemble inside a raw-frame pipeline (`benchmarks/certify_trees_raw.py`)", "",
             f"{result['date']}, {result['versions']}; `uptime` at the start: {uptime}; at the end: "
             f"{result['uptime_end']}. The README's pipeline with `HistGradientBoostingClassifier` ({result['read']}),"
             f" raw Adult, sex coupled Husband <-> Wife; the {result['n_people']:,} rows of adult.test; peak memory "
             f"{result['peak_rss_mib']:.0f} MiB.", "",
             "| question | decided | affected | wall s | CPU s | load |", "|---|---|---|---|---|---|",
             f"| own row | {1 - o['undecided']:.2%} | {o['affected']:.2%} | {o['wall_seconds']:.1f} | "
             f"{o['cpu_seconds']:.1f} | {o['load'][0]}-{o['load'][1]} |",
             f"| similar age=2, hours-per-week=4 | {s['decided']:.2%} | {s['affected']:.2%} | {s['wall_seconds']:.1f} "
             f"| {s['cpu_seconds']:.1f} | {s['load'][0]}-{s['load'][1]} |",
             f"| every neighbour through the pipeline's predict | {e['people']:,} people | {e['affected']:,} | "
             f"{e['wall_seconds']:.1f} | {e['cpu_seconds']:.1f} | {e['load'][0]}-{e['load'][1]} |",
             f"| whole domain, {args.seconds:g} s | {d['certified'] + d['falsified']:.2%} ({d['stopped']}, "
             f"{d['boxes']:,} boxes, 2^{d['log2_keys']:.1f} keys) | falsified {d['falsified']:.4%} | "
             f"{d['wall_seconds']:.1f} | {d['cpu_seconds']:.1f} | {d['load'][0]}-{d['load'][1]} |", "",
             f"Similar's statuses against every neighbour: {e['agree']:,} of the {e['decided']:,} decided people "
             f"agree. The grid's values per column: {s['grid_values']}."]
    (RESULTS / "certify_trees_raw.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
