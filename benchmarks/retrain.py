"""Retraining with IDIs on the seven rows, DNN, 100/100: the I&D paper's Table 4/5 and a leak-free check (issue 12).

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/retrain.py --targets census:sex                    # all four generators
    python benchmarks/retrain.py --targets census:sex compas:race --generators aequitas adf

For every dataset:protected-attribute target and generator, the zoo DNN (``random_state=0``, cached) is searched
at max_global = max_local = 100 with cluster seeds (the paper's "original" seeds) and with I&D seeds. Each
approach's IDIs (all of them, both rows of each pair, labelled by the vote) are added to the training split and
the DNN is trained again from scratch (the paper's protocol; the cache key covers the augmented rows). Then:

- paper protocol: the union of both approaches' IDIs is re-checked against each retrained model; "remaining
  IDIs" are those still discriminatory (Table 4), and F1 on the test split before/after (Table 5). It leaks.
- holdout protocol: the IDI rate over the test split's rows (Wilson 95%) and over uniform domain draws, and
  fairlearn's demographic parity / equalized odds differences on the test split, before and after.

The fresh search of the holdout protocol is skipped here (``search=False``) to save CPU on a shared machine.
Results are written after every cell to ``benchmarks/results/retrain.json`` and ``retrain.md``, so a stopped run
keeps what it finished; a rerun skips the cells already in the JSON.
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

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.generators import make_generator
from chiralfair.models.training import library_versions, train_model
from chiralfair.retraining import retrain
from chiralfair.seeds import make_seed_strategy

SEVEN_ROWS = ("census:sex", "census:age", "census:race", "compas:sex", "compas:race", "compas:age", "bank:age")
GENERATORS = ("aequitas", "sg", "adf", "eidig")
APPROACHES = ("cluster", "iandd")
RESULTS = Path(__file__).parent / "results"
PAPER_MEAN_CHANGE = -0.29


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=list(SEVEN_ROWS), help="dataset:protected-attribute")
    p.add_argument("--generators", nargs="+", default=list(GENERATORS))
    p.add_argument("--budget", type=int, default=100, help="max_global = max_local")
    p.add_argument("--random-state", type=int, default=0)
    p.add_argument("--mode", default="retrain", choices=["retrain", "fine-tune"], help="how the DNN is trained again")
    p.add_argument("--name", default="retrain")
    return p.parse_args(argv)


def run_cell(data, trained, generator_name: str, budget: int, random_state: int, mode: str) -> dict:
    """Search with both seed strategies, retrain with each, evaluate under both protocols."""
    found, seconds = {}, {}
    for approach in APPROACHES:
        t = time.perf_counter()
        seeds = make_seed_strategy(approach).select(trained.model, data, budget, random_state=random_state)
        generator = make_generator(generator_name, max_global=budget, max_local=budget)
        found[approach] = generator.run(trained.model, data.domain, seeds, random_state=random_state)
        seconds[f"search_{approach}"] = time.perf_counter() - t
    out = {"n_idis": {a: found[a].n_idis for a in APPROACHES}, "approaches": {}}
    for approach in APPROACHES:
        other = found[APPROACHES[1 - APPROACHES.index(approach)]]
        t = time.perf_counter()
        result = retrain(trained, data, found[approach], protocol="both", recheck=other, search=False,
                         mode=mode, random_state=random_state)
        seconds[f"retrain_{approach}"] = time.perf_counter() - t
        before, after = result.rows
        out["approaches"][approach] = {"before": before, "after": after, "ensemble": result.ensemble,
                                       "notes": list(result.notes), "retrain_seconds": result.seconds}
    out["seconds"] = seconds
    return out


def summarise(cells: dict) -> dict:
    """Mean relative change in remaining IDIs (I&D vs cluster seeds) and how often each protocol favours I&D."""
    changes, holdout_favours, paper_favours = [], [], []
    for cell in cells.values():
        a = cell["approaches"]
        r_cluster, r_iandd = a["cluster"]["after"]["remaining_idis"], a["iandd"]["after"]["remaining_idis"]
        if r_cluster:
            changes.append((r_iandd - r_cluster) / r_cluster)
        paper_favours.append(r_iandd < r_cluster)
        holdout_favours.append(a["iandd"]["after"]["test_idi_rate"] < a["cluster"]["after"]["test_idi_rate"])
    holdout = _holdout_summary(cells)
    return {"n_cells": len(cells), "mean_change_remaining_iandd_vs_cluster": statistics.fmean(changes)
            if changes else None, "paper_mean_change": PAPER_MEAN_CHANGE,
            "paper_protocol_favours_iandd": sum(paper_favours), "holdout_favours_iandd": sum(holdout_favours),
            **holdout}


def _holdout_summary(cells: dict) -> dict:
    """Test-row IDI rate after retraining, I&D vs cluster: mean relative change, separated intervals, F1 cost."""
    rel, iandd_below, cluster_below, helped = [], 0, 0, {a: 0 for a in APPROACHES}
    f1_change = {a: [] for a in APPROACHES}
    for cell in cells.values():
        a = cell["approaches"]
        c, i = a["cluster"]["after"], a["iandd"]["after"]
        if c["test_idi_rate"]:
            rel.append((i["test_idi_rate"] - c["test_idi_rate"]) / c["test_idi_rate"])
        iandd_below += i["test_idi_upper"] < c["test_idi_lower"]
        cluster_below += c["test_idi_upper"] < i["test_idi_lower"]
        for approach in APPROACHES:
            before, after = a[approach]["before"], a[approach]["after"]
            helped[approach] += after["test_idi_upper"] < before["test_idi_lower"]
            f1_change[approach].append(after["f1"] - before["f1"])
    return {"holdout_mean_change_test_rate_iandd_vs_cluster": statistics.fmean(rel) if rel else None,
            "holdout_iandd_interval_below_cluster": iandd_below, "holdout_cluster_interval_below_iandd": cluster_below,
            "holdout_retraining_lowered_rate_separated": helped,
            "mean_f1_change": {k: statistics.fmean(v) for k, v in f1_change.items() if v}}


def render(payload: dict) -> str:
    lines = [f"# Retraining with IDIs (DNN, {payload['params']['budget']}/{payload['params']['budget']}, "
             f"mode {payload['params']['mode']})", "",
             f"Run {payload['date']}, chiralfair {payload['chiralfair_version']}, {payload['cpu_count']} CPUs; "
             f"load average at start {payload['load_start']}, at the last cell {payload.get('load_last')}.", "",
             "## Paper protocol (Table 4/5): remaining IDIs of the union, F1 before → after (leaks)", "",
             "| row | generator | IDIs cluster / I&D | union | F1 before | F1 after cluster | F1 after I&D | "
             "remaining cluster | remaining I&D | change |", "|" + "---|" * 10]
    for key, cell in payload["cells"].items():
        target, gen = key.split("/")
        a = cell["approaches"]
        c, i = a["cluster"]["after"], a["iandd"]["after"]
        change = (i["remaining_idis"] - c["remaining_idis"]) / c["remaining_idis"] if c["remaining_idis"] else None
        lines.append(f"| {target} | {gen} | {cell['n_idis']['cluster']} / {cell['n_idis']['iandd']} | "
                     f"{c['n_rechecked']} | {a['cluster']['before']['f1']:.3f} | {c['f1']:.3f} | {i['f1']:.3f} | "
                     f"{c['remaining_idis']} | {i['remaining_idis']} | "
                     f"{'–' if change is None else f'{change:+.0%}'} |")
    s = payload["summary"]
    mean = s["mean_change_remaining_iandd_vs_cluster"]
    lines += ["", f"Mean change in remaining IDIs, I&D vs cluster seeds: "
                  f"{'–' if mean is None else f'{mean:+.1%}'} over {s['n_cells']} cells (paper: "
                  f"{PAPER_MEAN_CHANGE:+.0%}). The paper protocol favours I&D in {s['paper_protocol_favours_iandd']} "
                  f"of {s['n_cells']} cells; the holdout test-row IDI rate favours I&D in "
                  f"{s['holdout_favours_iandd']} of {s['n_cells']}.", "",
              f"Holdout, test rows after retraining: mean relative change I&D vs cluster "
              f"{s['holdout_mean_change_test_rate_iandd_vs_cluster']:+.1%}; the I&D interval lies wholly below the "
              f"cluster one in {s['holdout_iandd_interval_below_cluster']} cells, wholly above in "
              f"{s['holdout_cluster_interval_below_iandd']}. Retraining lowered the test-row rate with separated "
              f"intervals in {s['holdout_retraining_lowered_rate_separated']['cluster']} cells (cluster) and "
              f"{s['holdout_retraining_lowered_rate_separated']['iandd']} (I&D). Mean F1 change: cluster "
              f"{s['mean_f1_change']['cluster']:+.3f}, I&D {s['mean_f1_change']['iandd']:+.3f}. I&D finds more "
              "IDIs, so it also adds more rows: neither protocol compares equal numbers of added rows.", "",
              "## Holdout protocol: IDI rate over test rows (Wilson 95%), domain draws, fairlearn (test split)", "",
              "| row | generator | seeds | test IDI rate before | after | domain rate before | after | F1 after | "
              "DPD before → after | EOD before → after |", "|" + "---|" * 10]
    for key, cell in payload["cells"].items():
        target, gen = key.split("/")
        for approach, r in cell["approaches"].items():
            b, a = r["before"], r["after"]
            lines.append(
                f"| {target} | {gen} | {approach} | {_rate(b, 'test')} | {_rate(a, 'test')} | {_rate(b, 'domain')} | "
                f"{_rate(a, 'domain')} | {a['f1']:.3f} | {b['demographic_parity_difference']:.3f} → "
                f"{a['demographic_parity_difference']:.3f} | {b['equalized_odds_difference']:.3f} → "
                f"{a['equalized_odds_difference']:.3f} |")
    return "\n".join(lines) + "\n"


def _rate(row: dict, population: str) -> str:
    p = population
    return f"{row[p + '_idi_rate']:.4f} [{row[p + '_idi_lower']:.4f}, {row[p + '_idi_upper']:.4f}]"


def main(argv=None) -> None:
    args = parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{args.name}.json"
    payload = json.loads(path.read_text()) if path.exists() else {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "chiralfair_version": __version__,
        "python": platform.python_version(), "versions": library_versions(), "cpu_count": os.cpu_count(),
        "load_start": list(os.getloadavg()), "params": {"budget": args.budget, "random_state": args.random_state,
                                                        "model": "dnn", "mode": args.mode, "share": 1.0,
                                                        "pairs": "both"}, "cells": {}}
    for target in args.targets:
        dataset, protected = target.split(":")
        data = load_dataset(dataset, protected=[protected])
        trained = train_model(data, "dnn", random_state=args.random_state)
        for gen in args.generators:
            key = f"{target}/{gen}"
            if key in payload["cells"]:
                continue
            t = time.perf_counter()
            payload["cells"][key] = {**run_cell(data, trained, gen, args.budget, args.random_state, args.mode),
                                     "wall_seconds": time.perf_counter() - t, "load": list(os.getloadavg())}
            payload["load_last"] = list(os.getloadavg())
            payload["summary"] = summarise(payload["cells"])
            path.write_text(json.dumps(payload, indent=2))
            (RESULTS / f"{args.name}.md").write_text(render(payload))
            print(f"{key}: {payload['cells'][key]['wall_seconds']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
