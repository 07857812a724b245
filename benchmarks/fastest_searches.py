"""MAFT and Aft against the field: IDIs, IDIs per 1,000 queries, seconds and IDIs/s on four kinds of model.

Run by hand:  python benchmarks/fastest_searches.py [--models dnn lr hgb lgbm] [--rows census:sex ...]
              [--generators maft aft eidig adf expga kosei aequitas sg] [--repeats 3] [--budget 100]
              [--sg-repeats 1] [--processes 2] [--name fastest_searches]

For each model and row (the paper's DNN ``dnn``, ``lr`` and ``hgb`` from the zoo, and ``lgbm``: an sklearn Pipeline
whose ColumnTransformer one-hot encodes the categorical codes and passes the ordinal ones to a LightGBM classifier,
fitted on the same 60% split as the zoo models), and each random state 0 .. ``--repeats`` - 1: I&D seeds (100,
the chiral model seeded by the model's random state 0) selected once and shared by every generator, then each
generator at ``max_global = max_local = --budget`` from those seeds with that random state. The gradient
generators (eidig, adf) run only where the model has ``input_gradient`` (dnn, lr). SG takes 100 times longer than
the others (about 100 s per run from I&D seeds on a loaded machine), so it runs for the first ``--sg-repeats``
random states only (default 1: its cells are then one run, not a median). Each (model, row) is one job;
``--processes`` jobs run at once, so seconds are measured beside one other job (and whatever else loads the
machine: the 1-minute load average before each job is in the JSON).

Reported per cell: median over the repeats of n_idis, 1,000 n_idis / n_queries, search seconds and n_idis /
seconds. The goals are evaluated at the end of the Markdown: MAFT finds >= 0.8x EIDIG's IDIs on every DNN and LR
row, and MAFT and AFT find more IDIs per 1,000 queries than AEQUITAS, ExpGA and KOSEI on 4 of 5 HGB and LightGBM
rows.

Writes ``benchmarks/results/<name>.json`` (every run, versions, load) and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = ("census:sex", "census:race", "census:age", "compas:race", "bank:age")
MODELS = ("dnn", "lr", "hgb", "lgbm")
GENERATORS = ("maft", "aft", "eidig", "adf", "expga", "kosei", "aequitas", "sg")
GRADIENT = ("eidig", "adf")
BLACK_BOX_BASELINES = ("aequitas", "expga", "kosei")
MODEL_RANDOM_STATE = 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def lgbm_pipeline(dataset, train_index):
    """The LightGBM pipeline on the 60% split: one-hot categorical codes, ordinal codes as they are."""
    from lightgbm import LGBMClassifier
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    features = dataset.domain.features
    categorical = [i for i, f in enumerate(features) if f.kind == "categorical"]
    ordinal = [i for i, f in enumerate(features) if f.kind != "categorical"]
    categories = [list(range(features[i].lo, features[i].hi + 1)) for i in categorical]
    pre = ColumnTransformer([("cat", OneHotEncoder(categories=categories, handle_unknown="ignore"), categorical),
                             ("ord", "passthrough", ordinal)])
    lgbm = LGBMClassifier(n_estimators=200, learning_rate=0.05, num_leaves=31, random_state=MODEL_RANDOM_STATE,
                          n_jobs=1, verbose=-1)
    return Pipeline([("pre", pre), ("lgbm", lgbm)]).fit(dataset.X[train_index], dataset.y[train_index])


def load(model_name: str, row: str):
    """(dataset, wrapped model, test F1) for ``model_name`` on ``row``."""
    from sklearn.metrics import f1_score

    from chiralfair.datasets import load_dataset
    from chiralfair.models import as_model
    from chiralfair.models.training import train_model

    dataset_name, _, protected = row.partition(":")
    dataset = load_dataset(dataset_name, protected=protected.split(","))
    if model_name != "lgbm":
        trained = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE)
        return dataset, trained.model, trained.f1
    train, test = dataset.split(MODEL_RANDOM_STATE)
    pipe = lgbm_pipeline(dataset, train)
    model = as_model(pipe, name="lgbm")
    return dataset, model, float(f1_score(dataset.y[test], model.predict(dataset.X[test])))


def job(model_name: str, row: str, generators: list[str], repeats: int, budget: int, sg_repeats: int) -> dict:
    """Every repeat and generator of one (model, row); returns its runs."""
    from chiralfair.generators import make_generator
    from chiralfair.seeds import make_seed_strategy
    from chiralfair.seeds.names import chiral_params

    load_before = os.getloadavg()[0]
    dataset, model, f1 = load(model_name, row)
    runs = []
    for rs in range(repeats):
        t = time.perf_counter()
        seeds = make_seed_strategy("iandd", **chiral_params("iandd", MODEL_RANDOM_STATE)).select(
            model, dataset, budget, random_state=rs)
        seed_seconds = time.perf_counter() - t
        for name in generators:
            if (name in GRADIENT and not model.has_gradient) or (name == "sg" and rs >= sg_repeats):
                continue
            res = make_generator(name, max_global=budget, max_local=budget).run(model, dataset.domain, seeds,
                                                                               random_state=rs)
            runs.append({"generator": name, "random_state": rs, "n_idis": res.n_idis, "n_global": res.n_global,
                         "n_local": res.n_local, "n_tested": res.n_tested, "n_queries": res.n_queries,
                         "seconds": res.seconds, "seed_seconds": seed_seconds, "n_seed_idis": res.n_seed_idis,
                         "notes": list(res.notes)})
            print(f"  {model_name} {row} rs={rs} {name}: {res.n_idis} IDIs, {res.n_queries} queries, "
                  f"{res.seconds:.2f} s", flush=True)
    return {"model": model_name, "row": row, "f1": f1, "runs": runs, "loadavg_1min_before": load_before,
            "loadavg_1min_after": os.getloadavg()[0]}


def medians(runs: list[dict]) -> dict:
    def med(f):
        return statistics.median(f(r) for r in runs)
    return {"n_idis": med(lambda r: r["n_idis"]),
            "per_kq": med(lambda r: 1000 * r["n_idis"] / r["n_queries"] if r["n_queries"] else 0.0),
            "seconds": med(lambda r: r["seconds"]),
            "per_second": med(lambda r: r["n_idis"] / r["seconds"] if r["seconds"] else 0.0),
            "n_queries": med(lambda r: r["n_queries"]), "repeats": len(runs)}


def summarise(results: dict) -> dict:
    """Medians per (model, row, generator)."""
    out: dict = {}
    for j in results["jobs"]:
        by_gen: dict = {}
        for r in j["runs"]:
            by_gen.setdefault(r["generator"], []).append(r)
        out.setdefault(j["model"], {})[j["row"]] = {"f1": j["f1"], **{g: medians(rs) for g, rs in by_gen.items()}}
    return out


def goals(summary: dict) -> list[str]:
    lines = []
    for model in ("dnn", "lr"):
        if model not in summary:
            continue
        cells = []
        for row, c in summary[model].items():
            if "maft" in c and "eidig" in c:
                ratio = c["maft"]["n_idis"] / c["eidig"]["n_idis"] if c["eidig"]["n_idis"] else float("nan")
                cells.append((row, ratio))
        met = sum(r >= 0.8 for _, r in cells)
        detail = ", ".join(f"{row} {r:.2f}" for row, r in cells)
        lines.append(f"- {model}: MAFT / EIDIG IDIs >= 0.80 on {met} of {len(cells)} rows ({detail}): "
                     f"**{'met' if met == len(cells) else 'not met'}**")
    for model in ("hgb", "lgbm"):
        if model not in summary:
            continue
        for g in ("maft", "aft"):
            wins, detail = 0, []
            for row, c in summary[model].items():
                if g not in c:
                    continue
                best = max((b for b in BLACK_BOX_BASELINES if b in c), key=lambda b: c[b]["per_kq"])
                win = c[g]["per_kq"] > c[best]["per_kq"]
                wins += win
                detail.append(f"{row} {c[g]['per_kq']:.0f} vs {best} {c[best]['per_kq']:.0f}")
            lines.append(f"- {model}: {g} more IDIs per 1,000 queries than AEQUITAS, ExpGA and KOSEI on {wins} of "
                         f"{len(detail)} rows (goal: 4 of 5; {'; '.join(detail)}): "
                         f"**{'met' if wins >= 4 else 'not met'}**")
    return lines


def markdown(results: dict) -> str:
    summary = summarise(results)
    p = results["parameters"]
    lines = [f"# MAFT and Aft against the field ({p['budget']} I&D seeds x {p['budget']} local, median of "
             f"{p['repeats']} random states; SG: {p.get('sg_repeats', p['repeats'])})", "",
             f"`python benchmarks/fastest_searches.py {' '.join(results['argv'])}`; started {results['date']}, "
             f"{results['wall_seconds']:.0f} s wall, {p['processes']} jobs at once on {results['cpu_count']} CPUs "
             f"shared with other engineers: load average {results['loadavg_start'][0]:.1f} at the start, "
             f"{results['loadavg_end'][0]:.1f} at the end (each job's is in the JSON). Seconds are search seconds "
             "(seed selection excluded, shared by the generators); compare them as ratios within a table.", "",
             "Counting rule: unique non-protected projections, global ∪ local; queries = rows sent "
             "to the model by any method (checks, gradients, finite-difference probes, Aft's training labels). "
             "Each cell: IDIs / IDIs per 1,000 queries / seconds / IDIs per second.", ""]
    for model, rows in summary.items():
        f1s = ", ".join(f"{row} {c['f1']:.3f}" for row, c in rows.items())
        gens = [g for g in p["generators"] if any(g in c for c in rows.values())]
        lines += [f"## {model} (test F1: {f1s})", "", "| row | " + " | ".join(gens) + " |",
                  "|---|" + "---|" * len(gens)]
        for row, c in rows.items():
            cells = []
            for g in gens:
                if g not in c:
                    cells.append("–")
                    continue
                m = c[g]
                cells.append(f"{m['n_idis']:,.0f} / {m['per_kq']:.0f} / {m['seconds']:.2f} s / "
                             f"{m['per_second']:,.0f}")
            lines.append(f"| {row} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## Goals", "", *goals(summary), ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--rows", nargs="+", default=list(ROWS))
    parser.add_argument("--generators", nargs="+", default=list(GENERATORS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--sg-repeats", type=int, default=1, help="random states SG runs for (the first N)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--name", default="fastest_searches")
    parser.add_argument("--markdown-only", action="store_true", help="Re-render <name>.md from <name>.json.")
    args = parser.parse_args(argv)
    path = RESULTS / f"{args.name}.json"
    if args.markdown_only:
        results = json.loads(path.read_text())
        (RESULTS / f"{args.name}.md").write_text(markdown(results))
        return results
    import lightgbm
    import numpy
    import sklearn
    import torch

    from chiralfair import __version__

    results = {"parameters": {"models": args.models, "rows": args.rows, "generators": args.generators,
                              "repeats": args.repeats, "sg_repeats": args.sg_repeats, "budget": args.budget,
                              "processes": args.processes,
                              "model_random_state": MODEL_RANDOM_STATE, "seeds": "iandd"},
               "argv": sys.argv[1:], "date": _now(), "cpu_count": os.cpu_count(),
               "versions": {"chiralfair": __version__, "numpy": numpy.__version__, "sklearn": sklearn.__version__,
                            "torch": torch.__version__, "lightgbm": lightgbm.__version__,
                            "python": platform.python_version()},
               "loadavg_start": list(os.getloadavg()), "jobs": []}
    t0 = time.perf_counter()
    todo = [(m, r) for m in args.models for r in args.rows]
    with ProcessPoolExecutor(max_workers=args.processes) as pool:
        futures = {pool.submit(job, m, r, args.generators, args.repeats, args.budget, args.sg_repeats): (m, r)
                   for m, r in todo}
        for future in as_completed(futures):
            results["jobs"].append(future.result())
            results["wall_seconds"] = time.perf_counter() - t0
            results["loadavg_end"] = list(os.getloadavg())
            results["jobs"].sort(key=lambda j: (args.models.index(j["model"]), args.rows.index(j["row"])))
            RESULTS.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(results, indent=1))
            (RESULTS / f"{args.name}.md").write_text(markdown(results))
    return results


if __name__ == "__main__":
    main()
