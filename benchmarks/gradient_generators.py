"""Throughput of the gradient generators (ADF, EIDIG-5, EIDIG-INF) on the paper's census DNN.

Run by hand: ``python benchmarks/gradient_generators.py [--quick]``. Writes
``benchmarks/results/gradient_generators.json`` and ``.md``.

For every seed strategy (``cluster``, and ``iandd`` when registered), budget (max_global / max_local =
100/100, 400/400, 1000/1000) and generator it reports the median over ``--repeats`` timed runs of: seconds,
unique IDIs per second, IDIs per 1,000 model queries, model queries per second and that rate as a fraction of
the model's raw batched forward throughput (the ceiling for any generator that sends rows to this model), plus
the peak traced memory of one extra untimed run (tracemalloc: numpy and Python allocations, not torch's).
The reference implementations reach 5-20 IDIs/s (EIDIG's logs: EIDIG-INF on census sex 10.5 IDIs/s, counting
full vectors, on their hardware; algorithms.md §10), so that figure is quoted beside ours only as an order of
magnitude.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from chiralfair.generators import make_generator
from chiralfair.models import as_model

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
GENERATORS = ("adf", "eidig-5", "eidig-inf")
BUDGETS = ((100, 100), (400, 400), (1000, 1000))
REFERENCE_IDIS_PER_SECOND = {"eidig-inf": 10.5, "eidig-5": 9.5, "adf": 4.8}  # EIDIG logs, census sex (C-g)
CENSUS_NAMES = ["age", "workclass", "fnlwgt", "education", "marital_status", "occupation", "relationship",
                "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country"]


def load_census(protected: str):
    """Census through the project's loader; before it is merged, the ADF integer file (missing code 100 -> max+1)."""
    try:
        from chiralfair.datasets import load_dataset
    except ImportError:
        load_dataset = None
    if load_dataset is not None:
        return load_dataset("census", protected=protected), "chiralfair.datasets.load_dataset('census')"
    import pandas as pd

    from chiralfair.datasets.base import Dataset
    from chiralfair.domain import Domain

    path = Path(os.environ.get("CHIRALFAIR_DATA", HERE.parent.parent / "shared" / "data"))
    df = pd.read_csv(path / "census" / "preprocessed_adf" / "census.csv")
    X = df.iloc[:, :-1].to_numpy(np.int64)
    y = df.iloc[:, -1].to_numpy(np.int64)
    for j in range(X.shape[1]):
        missing = X[:, j] == 100
        if missing.any():
            X[missing, j] = X[~missing, j].max() + 1
    domain = Domain.from_data(X, CENSUS_NAMES, protected=[protected])
    return Dataset("census", X, y, domain, label="income", positive_class=">50K"), f"ADF integer file {path}"


def train_dnn(dataset, random_state: int):
    """The paper's DNN (30-20-15-10-5-1, Nadam lr 0.01, 30 epochs, batch 128) on the 60% split."""
    try:
        from chiralfair.models.training import train_model
    except ImportError:
        train_model = None
    if train_model is not None:
        trained = train_model(dataset, "dnn", random_state=random_state)
        return getattr(trained, "model", trained), "chiralfair.models.training.train_model(dataset, 'dnn')"
    import torch

    torch.manual_seed(random_state)
    train, _ = dataset.split(random_state)
    sizes = [dataset.X.shape[1], 30, 20, 15, 10, 5]
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(5, 1), torch.nn.Sigmoid())
    opt = torch.optim.NAdam(net.parameters(), lr=0.01)
    X = torch.tensor(dataset.X[train], dtype=torch.float32)
    y = torch.tensor(dataset.y[train], dtype=torch.float32)
    for _ in range(30):
        order = torch.randperm(len(X))
        for i in range(0, len(X), 128):
            b = order[i:i + 128]
            opt.zero_grad()
            torch.nn.functional.binary_cross_entropy(net(X[b])[:, 0], y[b]).backward()
            opt.step()
    return as_model(net, name="census-dnn"), "torch DNN trained in this script (train_model not available)"


def forward_throughput(model, X, repeats: int) -> dict:
    """Rows per second of the model's batched predict, predict_with_proba and input_gradient (median)."""
    rows = np.resize(X, (200_000, X.shape[1]))
    out = {}
    for name, fn in (("predict", model.predict), ("predict_with_proba", model.predict_with_proba),
                     ("input_gradient", model.input_gradient)):
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            fn(rows)
            times.append(time.perf_counter() - t)
        out[name] = len(rows) / statistics.median(times)
    model.reset_queries()
    return out


def select_seeds(strategy: str, model, dataset, n: int, random_state: int):
    from chiralfair.seeds import make_seed_strategy

    t = time.perf_counter()
    report = make_seed_strategy(strategy).select(model, dataset, n, random_state=random_state)
    return report, time.perf_counter() - t


def available_strategies(wanted):
    from chiralfair.exceptions import ConfigError
    from chiralfair.seeds import make_seed_strategy

    out = []
    for s in wanted:
        try:
            make_seed_strategy(s)
        except ConfigError:
            print(f"seed strategy {s!r} is not registered; skipped", file=sys.stderr)
            continue
        out.append(s)
    return out


def measure(name, budget, model, dataset, seeds, repeats: int, random_state: int, forward_rows_per_s: float):
    g, l_ = budget
    runs = []
    for _ in range(repeats):
        model.reset_queries()
        gen = make_generator(name, max_global=g, max_local=l_)
        res = gen.run(model, dataset.domain, seeds, random_state=random_state)
        runs.append((res, model.n_gradient_queries))
    first = runs[0][0]
    if any(r.n_idis != first.n_idis or r.n_queries != first.n_queries for r, _ in runs):
        raise RuntimeError(f"{name}: repeated runs with one random_state differ")
    seconds = statistics.median(r.seconds for r, _ in runs)
    model.reset_queries()
    tracemalloc.start()
    make_generator(name, max_global=g, max_local=l_).run(model, dataset.domain, seeds, random_state=random_state)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    queries_per_s = first.n_queries / seconds
    return {
        "generator": name, "max_global": g, "max_local": l_, "n_seeds": first.n_seeds,
        "n_seed_idis": first.n_seed_idis, "n_idis": first.n_idis, "n_global": first.n_global,
        "n_local": first.n_local, "n_tested": first.n_tested, "n_queries": first.n_queries,
        "n_gradient_queries": runs[0][1], "success_rate": first.n_idis / max(first.n_tested, 1),
        "seconds_median": seconds, "seconds_all": [r.seconds for r, _ in runs],
        "idis_per_second": first.n_idis / seconds, "idis_per_1000_queries": 1000 * first.n_idis / first.n_queries,
        "queries_per_second": queries_per_s, "fraction_of_forward_limit": queries_per_s / forward_rows_per_s,
        "peak_traced_mb": peak / 2**20,
        "speedup_vs_reference": (first.n_idis / seconds) / REFERENCE_IDIS_PER_SECOND[name],
    }


def one_chain_at_a_time(name, budget, model, dataset, seeds, random_state: int) -> dict:
    """The same generator run seed by seed (one chain per run), like the reference code's per-input loops.

    Measured in the same process as the batched runs, so the ratio of the two is the gain from batching
    chains, free of machine and model differences. Unique IDIs are counted over the union of the runs.
    """
    g, l_ = budget
    keys = set()
    queries = 0
    t = time.perf_counter()
    for i in range(len(seeds)):
        model.reset_queries()
        res = make_generator(name, max_global=1, max_local=l_).run(model, dataset.domain, seeds[i:i + 1],
                                                                   random_state=random_state + i)
        keys.update(dataset.domain.keys(res.idis).tolist())
        queries += res.n_queries
    seconds = time.perf_counter() - t
    return {"n_idis": len(keys), "n_queries": queries, "seconds": seconds, "idis_per_second": len(keys) / seconds}


def versions() -> dict:
    import torch

    import chiralfair

    return {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__,
            "chiralfair": chiralfair.__version__}


def write_markdown(doc: dict, path: Path) -> None:
    lines = [f"# Gradient generators on {doc['dataset']} ({', '.join(doc['protected'])})", "",
             f"{doc['date']}, {doc['cpu_count']} CPUs, torch threads {doc['torch_threads']}. "
             f"Median of {doc['repeats']} runs. Model: {doc['model_source']}; test accuracy "
             f"{doc['test_accuracy']:.4f}.", "",
             "Forward-throughput limit (rows/s, batched): " + ", ".join(
                 f"{k} {v:,.0f}" for k, v in doc["forward_rows_per_second"].items()), "",
             "| seeds | generator | budget | IDIs | global | local | queries | s | IDIs/s | IDIs/1000 q | "
             "q/s | of limit | peak MB | × ref |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in doc["rows"]:
        lines.append(
            f"| {r['seed_strategy']} | {r['generator']} | {r['max_global']}/{r['max_local']} | {r['n_idis']:,} | "
            f"{r['n_global']:,} | {r['n_local']:,} | {r['n_queries']:,} | {r['seconds_median']:.2f} | "
            f"{r['idis_per_second']:,.0f} | {r['idis_per_1000_queries']:.1f} | {r['queries_per_second']:,.0f} | "
            f"{r['fraction_of_forward_limit']:.0%} | {r['peak_traced_mb']:.1f} | "
            f"{r['speedup_vs_reference']:,.0f} |")
    base_rows = [r for r in doc["rows"] if "one_chain_at_a_time" in r]
    if base_rows:
        lines += ["", "Batched chains against the same generator run one seed at a time (same process, same model):",
                  "", "| seeds | generator | budget | one at a time: s | IDIs/s | batched: s | IDIs/s | speed-up |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in base_rows:
            b = r["one_chain_at_a_time"]
            lines.append(f"| {r['seed_strategy']} | {r['generator']} | {r['max_global']}/{r['max_local']} | "
                         f"{b['seconds']:.2f} | {b['idis_per_second']:,.0f} | {b['batched_seconds']:.2f} | "
                         f"{b['batched_idis_per_second']:,.0f} | ×{b['speedup']:.0f} |")
    lines += ["", "Growth from 100/100 (time ratio / peak-memory ratio):", ""]
    for key, g in doc["growth"].items():
        lines.append(f"- {key}: " + ", ".join(f"{b}: ×{t:.1f} time, ×{m:.1f} memory" for b, (t, m) in g.items()))
    lines += ["", "× ref = our IDIs/s over the EIDIG repository's logged IDIs/s on census sex (ADF 4.8, EIDIG-5 "
              "9.5, EIDIG-INF 10.5; full-vector counting, other hardware, other model): an order of magnitude only.",
              "of limit = model queries per second / batched predict_with_proba rows per second.", ""]
    path.write_text("\n".join(lines))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protected", default="sex")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--seed-strategies", default="cluster,iandd")
    ap.add_argument("--quick", action="store_true", help="only the 100/100 budget, 1 repeat")
    ap.add_argument("--baseline-seeds", type=int, default=100,
                    help="seeds for the one-chain-at-a-time comparison at the smallest budget (0: skip)")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="intra-op threads; 1 by default: a step's batches hold a few thousand rows, too few to "
                         "share, and extra threads spin on a loaded machine")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.torch_threads)

    budgets = BUDGETS[:1] if args.quick else BUDGETS
    repeats = 1 if args.quick else args.repeats
    dataset, data_source = load_census(args.protected)
    model, model_source = train_dnn(dataset, args.random_state)
    model = as_model(model)
    _, test = dataset.split(args.random_state)
    accuracy = float((model.predict(dataset.X[test]) == dataset.y[test]).mean())
    forward = forward_throughput(model, dataset.X, max(repeats, 3))
    limit = forward["predict_with_proba"]
    rows = []
    for strategy in available_strategies(args.seed_strategies.split(",")):
        for budget in budgets:
            report, seed_seconds = select_seeds(strategy, model, dataset, budget[0], args.random_state)
            for name in GENERATORS:
                r = measure(name, budget, model, dataset, report, repeats, args.random_state, limit)
                r.update(seed_strategy=strategy, seed_seconds=seed_seconds)
                if args.baseline_seeds and budget == budgets[0]:
                    n_base = min(args.baseline_seeds, budget[0])
                    seeds = report.seeds[:n_base]
                    base = one_chain_at_a_time(name, budget, model, dataset, seeds, args.random_state)
                    batched = measure(name, (n_base, budget[1]), model, dataset, seeds, repeats,
                                      args.random_state, limit)
                    base["batched_seconds"] = batched["seconds_median"]
                    base["batched_idis_per_second"] = batched["idis_per_second"]
                    base["speedup"] = base["seconds"] / batched["seconds_median"]
                    r["one_chain_at_a_time"] = base
                rows.append(r)
                print(f"{strategy:8s} {name:9s} {budget[0]}/{budget[1]}: {r['n_idis']:,} IDIs in "
                      f"{r['seconds_median']:.2f} s = {r['idis_per_second']:,.0f} IDIs/s, "
                      f"{r['idis_per_1000_queries']:.1f} per 1000 q, {r['fraction_of_forward_limit']:.0%} of limit",
                      flush=True)
    growth = {}
    for r in rows:
        base = next(b for b in rows if b["seed_strategy"] == r["seed_strategy"]
                    and b["generator"] == r["generator"] and b["max_global"] == budgets[0][0])
        growth.setdefault(f"{r['seed_strategy']}/{r['generator']}", {})[f"{r['max_global']}/{r['max_local']}"] = (
            r["seconds_median"] / base["seconds_median"], r["peak_traced_mb"] / max(base["peak_traced_mb"], 1e-9))
    doc = {
        "benchmark": "gradient_generators", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "dataset": "census", "protected": [args.protected], "data_source": data_source,
        "model_source": model_source, "test_accuracy": accuracy, "random_state": args.random_state,
        "repeats": repeats, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
        "machine": platform.machine(), "versions": versions(),
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "forward_rows_per_second": forward, "reference_idis_per_second": REFERENCE_IDIS_PER_SECOND,
        "rows": rows, "growth": growth,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "gradient_generators.json").write_text(json.dumps(doc, indent=2))
    write_markdown(doc, RESULTS / "gradient_generators.md")
    print(f"wrote {RESULTS / 'gradient_generators.json'} and .md")


if __name__ == "__main__":
    main()
