"""Initialization rate of the seed strategies (I&D paper, Table 3) and the time of I&D seed selection.

Run by hand:  python benchmarks/seeds.py [census:age census:race census:sex] [--repeats 10] [--n-seeds 1000]
              [--model dnn[,lr,...]] [--strategies random cluster iandd] [--timing-repeats 5]
              [--scheduler local|sync|ADDRESS] [--workers N] [--quick] [--name seeds]

Table 3 is a thin call of ``chiralfair reproduce table3`` (:func:`chiralfair.experiments.presets.reproduce`): for every
dataset:protected-attribute target and model, the model under test is trained once (``random_state=0``, cached);
each seed strategy selects ``--n-seeds`` seeds with random states 0 .. ``--repeats`` - 1; I and I&D use one chiral
model per model under test (cached). The initialization rate (share of seeds that are IDIs) is reported as
median [q25–q75] over the repeats, beside the paper's.

Timing (not part of the preset, kept here): I&D selection with an already trained chiral model
(``chiral_model=``), median of ``--timing-repeats`` runs, split by phase; the chiral training is timed
separately. The paper reports 2.692 s for I&D.

Writes ``benchmarks/results/<name>.md`` (the Table 3 table and the timing table),
``<name>.png`` and ``<name>.json`` (parameters, timing figures, versions, CPU count, date, load average).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime

import numpy as np
from reproduce_preset import add_common_arguments, run_preset

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.chiral import train_chiral_model

PAPER_IANDD_SECONDS = 2.692
MODEL_RANDOM_STATE = 0


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


def timing_markdown(timing: dict, timing_repeats: int) -> str:
    lines = [f"# I&D selection time (chiral training excluded; median of {timing_repeats})", "",
             "| target | selection s | prediction+check s | SHAP s | clustering s | explainer "
             "| chiral training s | vs paper 2.692 s |", "|---|---|---|---|---|---|---|---|"]
    for target, t in timing.items():
        p = t["phase_seconds_median"]
        lines.append(f"| {target} | {t['selection_seconds_median']:.3f} | {p['prediction_and_check']:.3f} | "
                     f"{p['shap']:.3f} | {p['clustering']:.3f} | {t['explainer']} | "
                     f"{t['chiral_training_seconds']:.1f} | {t['ratio_to_paper']:.2f}x |")
    lines += ["", "Chiral training time may be a cache load when that model was trained before."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["census:age", "census:race", "census:sex"],
                        help="dataset:protected_attribute (several PAs joined by ',', e.g. census:race,sex)")
    parser.add_argument("--n-seeds", type=int, default=1000)
    parser.add_argument("--timing-repeats", type=int, default=5, help="0: no timing")
    parser.add_argument("--model", default="dnn",
                        help="zoo model name (dnn, lr, svc, dtc, mlp, ...), or several joined by ','")
    parser.add_argument("--strategies", nargs="+", default=["random", "cluster", "iandd"],
                        help="seed strategies (also: rows, i)")
    add_common_arguments(parser, name="seeds")
    args = parser.parse_args(argv)
    models = args.model.split(",")
    overrides = {"axes": {"rows": [t.replace("+", ",") for t in args.targets], "models": models,
                          "seeds": args.strategies, "budgets": [[args.n_seeds, 0]]}}
    run_preset("table3", args, overrides)
    if args.timing_repeats < 1:
        return {}
    load_start = list(os.getloadavg())
    timing = {}
    for target, model_name in ((t, m) for t in args.targets for m in models):
        name, _, pas = target.partition(":")
        dataset = load_dataset(name, protected=pas.replace("+", ",").split(",") if pas else None)
        trained = train_model(dataset, model_name, random_state=MODEL_RANDOM_STATE)
        key = target if len(models) == 1 else f"{target} {model_name}"
        timing[key] = iandd_timing(trained.model, dataset, args.n_seeds, args.timing_repeats)
    import sklearn
    import torch
    record = json.loads((args.results / f"{args.name}.json").read_text())
    record["timing"] = {"timing_repeats": args.timing_repeats, "n_seeds": args.n_seeds, "targets": timing,
                        "versions": {"chiralfair": __version__, "numpy": np.__version__, "torch": torch.__version__,
                                     "sklearn": sklearn.__version__, "python": platform.python_version()},
                        "date": datetime.now(UTC).isoformat(timespec="seconds"), "loadavg_start": load_start,
                        "loadavg_end": list(os.getloadavg())}
    (args.results / f"{args.name}.json").write_text(json.dumps(record, indent=2, default=str))
    text = timing_markdown(timing, args.timing_repeats)
    with (args.results / f"{args.name}.md").open("a") as fh:
        fh.write("\n" + text)
    print(text)
    return record


if __name__ == "__main__":
    main()
