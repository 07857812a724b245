"""Initialization rate of the seed strategies (I&D paper, Table 3) and the time of I&D seed selection.

Run by hand:  python benchmarks/seeds.py [census:age census:race census:sex] [--repeats 10] [--n-seeds 1000]

For every dataset:protected-attribute target, the model under test (default: the paper's DNN) is trained once
(``random_state=0``, cached by ``train_model``). Each seed strategy then selects ``--n-seeds`` seeds
``--repeats`` times with ``random_state`` 0, 1, ...; I and I&D train a new chiral model in every repeat (also
cached), on the same 60% split as the model under test and with another training seed. The initialization
rate (share of seeds that are IDIs) is reported as mean and std over the repeats.

Timing: I&D selection with an already trained chiral model (``chiral_model=``), median of ``--timing-repeats``
runs, split by phase; the chiral training is timed separately. The paper reports 2.692 s for I&D.

Writes ``benchmarks/results/<name>.json`` (figures, parameters, versions, CPU count, date, load average) and
``<name>.md``; ``--name`` defaults to ``seeds``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import train_chiral_model

STRATEGIES = ("random", "rows", "cluster", "i", "iandd")
PAPER_IANDD_SECONDS = 2.692
PAPER_TABLE3 = "Random 4.1%, Clustering 11.2%, I&D 41.5% (averages over all benchmarks)"
# The paper's Table 3 per row, in percent: random / clustering / I&D.
PAPER_TABLE3_ROWS = {"census:age": (3.4, 17.1, 78.0), "census:race": (2.1, 7.4, 40.3),
                     "census:sex": (0.7, 4.9, 35.5)}
RESULTS = Path(__file__).parent / "results"
MODEL_RANDOM_STATE = 0


def _params(name: str) -> dict:
    # The chiral model is trained on the model under test's 60% split (train_model's split(0)), as in
    # the paper.
    return {"split_random_state": MODEL_RANDOM_STATE} if name in ("i", "iandd") else {}


def initialization_rates(model, dataset, n_seeds: int, repeats: int) -> dict:
    """Mean/std initialization rate of every strategy over ``repeats`` random states."""
    out = {}
    for name in STRATEGIES:
        rates, initial, candidates, methods = [], [], [], []
        for r in range(repeats):
            report = make_seed_strategy(name, **_params(name)).select(model, dataset, n_seeds, random_state=r)
            rates.append(report.initialization_rate)
            if report.n_initial_idis is not None:
                initial.append(report.n_initial_idis)
                candidates.append(report.n_candidates)
            if name == "iandd":
                methods.append(report.clustering["method"])
            print(f"  {name:8s} repeat {r}: {report.initialization_rate:.3f}", flush=True)
        entry = {"mean": float(np.mean(rates)), "std": float(np.std(rates)), "rates": rates}
        if initial:
            entry.update(n_initial_idis_mean=float(np.mean(initial)),
                         n_candidates_mean=float(np.mean(candidates)))
        if methods:
            entry["clustering_methods"] = {m: methods.count(m) for m in sorted(set(methods))}
        out[name] = entry
    return out


def iandd_timing(model, dataset, n_seeds: int, repeats: int) -> dict:
    """Chiral training once, then the median of ``repeats`` I&D selections with that chiral model."""
    t = time.perf_counter()
    chiral, info = train_chiral_model(model, dataset, np.random.default_rng(12345),
                                      split_random_state=MODEL_RANDOM_STATE)
    chiral_seconds = time.perf_counter() - t
    totals, phases = [], []
    for r in range(repeats):
        t = time.perf_counter()
        strategy = make_seed_strategy("iandd", chiral_model=chiral)
        report = strategy.select(model, dataset, n_seeds, random_state=r)
        totals.append(time.perf_counter() - t)
        phases.append(report.seconds)
    keys = ("prediction_and_check", "shap", "clustering")
    return {"chiral_training_seconds": chiral_seconds, "chiral_model": info,
            "selection_seconds_median": statistics.median(totals), "selection_seconds": totals,
            "phase_seconds_median": {k: statistics.median(p.get(k, 0.0) for p in phases) for k in keys},
            "paper_seconds": PAPER_IANDD_SECONDS,
            "ratio_to_paper": statistics.median(totals) / PAPER_IANDD_SECONDS,
            "explainer": report.clustering["explainer"]}


def markdown(results: dict) -> str:
    lines = [f"# Seed strategies: initialization rate ({results['parameters']['n_seeds']} seeds, "
             f"{results['parameters']['repeats']} repeats, model {results['parameters']['model']})", "",
             "| target | " + " | ".join(STRATEGIES) + " | initial IDIs (mean) | paper random / cluster / I&D |",
             "|---|" + "---|" * (len(STRATEGIES) + 2)]
    for target, r in results["targets"].items():
        rates = r["initialization_rate"]
        cells = [f"{100 * rates[s]['mean']:.1f}% ± {100 * rates[s]['std']:.1f}" for s in STRATEGIES]
        n_initial = rates["iandd"].get("n_initial_idis_mean", 0)
        paper = PAPER_TABLE3_ROWS.get(target.split(" ")[0])
        paper_s = " / ".join(f"{v:.1f}%" for v in paper) if paper else ""
        lines.append(f"| {target} | " + " | ".join(cells) + f" | {n_initial:.0f} | {paper_s} |")
    lines += ["", f"Paper (Table 3): {PAPER_TABLE3}.", "",
              "# I&D selection time (chiral training excluded; median of "
              f"{results['parameters']['timing_repeats']})", "",
              "| target | selection s | prediction+check s | SHAP s | clustering s | explainer "
              "| chiral training s | vs paper 2.692 s |", "|---|---|---|---|---|---|---|---|"]
    for target, r in results["targets"].items():
        t = r["timing"]
        p = t["phase_seconds_median"]
        lines.append(f"| {target} | {t['selection_seconds_median']:.3f} | {p['prediction_and_check']:.3f} | "
                     f"{p['shap']:.3f} | {p['clustering']:.3f} | {t['explainer']} | "
                     f"{t['chiral_training_seconds']:.1f} | {t['ratio_to_paper']:.2f}x |")
    lines += ["", f"chiralfair {results['versions']['chiralfair']}, {results['cpu_count']} CPUs, "
              f"{results['date']}, load average at start {results['loadavg_start'][0]:.2f}, at end "
              f"{results['loadavg_end'][0]:.2f}. Chiral training time may be a cache load when that model "
              "was trained before."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["census:age", "census:race", "census:sex"],
                        help="dataset:protected_attribute (several PAs joined by '+', e.g. census:race+sex)")
    parser.add_argument("--n-seeds", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--timing-repeats", type=int, default=5)
    parser.add_argument("--model", default="dnn",
                        help="zoo model name (dnn, lr, svc, dtc, mlp, ...), or several joined by ','")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--name", default="seeds", help="results file stem (<name>.json, <name>.md)")
    args = parser.parse_args(argv)

    import sklearn
    import torch
    results = {"parameters": {"n_seeds": args.n_seeds, "repeats": args.repeats,
                              "timing_repeats": args.timing_repeats, "model": args.model,
                              "model_random_state": MODEL_RANDOM_STATE, "strategies": list(STRATEGIES)},
               "versions": {"chiralfair": __version__, "numpy": np.__version__, "torch": torch.__version__,
                            "sklearn": sklearn.__version__, "python": platform.python_version()},
               "cpu_count": os.cpu_count(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
               "loadavg_start": list(os.getloadavg()), "targets": {}}
    models = args.model.split(",")
    for target, model_name in ((t, m) for t in args.targets for m in models):
        name, _, pas = target.partition(":")
        dataset = load_dataset(name, protected=pas.split("+") if pas else None)
        trained = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE)
        key = target if len(models) == 1 else f"{target} {model_name}"
        print(f"{key}: model F1 {trained.f1:.3f}, accuracy {trained.accuracy:.3f}", flush=True)
        results["targets"][key] = {
            "model": {"name": model_name, "f1": trained.f1, "accuracy": trained.accuracy},
            "initialization_rate": initialization_rates(trained.model, dataset, args.n_seeds, args.repeats),
            "timing": iandd_timing(trained.model, dataset, args.n_seeds, args.timing_repeats)}
    results["loadavg_end"] = list(os.getloadavg())
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=2, default=str))
    (args.out / f"{args.name}.md").write_text(markdown(results))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
