"""Every registered mitigation method and ``auto`` on the rows given, over N random states: medians and spread.

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/retrain_family.py --targets census:sex census:race compas:race --models lr hgb --states 3
    python benchmarks/retrain_family.py --targets census:sex --models dnn --states 1 --model-states 0 1 \
        --name retrain_family_dnn

Each (target, model, random state, model random state) cell loads the zoo model trained on its split (the model
cache), searches its IDIs leak-free (seeds from the training rows only, aequitas 100/100 with cluster seeds) for
the methods that add IDIs, and runs :func:`chiralfair.mitigation.retrain` with every registered method (those that
cannot train the model's kind are skipped with a note) on the same held-out test rows. The goal of a row: the
held-out IDI rate at least 90% lower, the F1 loss within the model's own training-seed spread (at least 0.01), DPD
and EOD at most 0.02 above before. For ``auto`` the table also says whether it found a candidate within every bound
on its validation rows, or which bound no candidate met and by how much.

Writes ``benchmarks/results/<name>.json`` (every cell's rows, auto's pick and candidates, wall and CPU seconds, the
load average) and ``<name>.md`` (medians and min-max over the cells of each row and method).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from provenance import commit

RESULTS = Path(__file__).parent / "results"
GOAL_REDUCTION, GOAL_F1, GOAL_GROUP = 0.9, 0.01, 0.02


def cpu_seconds() -> float:
    """CPU seconds of this process and its children (user + system)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def cell(target: str, model: str, state: int, model_state: int, methods, budget: int) -> dict:
    from chiralfair.mitigation import retrain
    from chiralfair.mitigation.base import method_class
    from chiralfair.pipeline import SearchPlan, search_training_rows
    from chiralfair.pipeline.config import RunConfig
    from chiralfair.pipeline.inputs import inputs_from_names

    dataset, protected = target.split(":")
    config = RunConfig(dataset=dataset, protected=(protected,), model=model, random_state=state,
                       model_random_state=model_state, seeds="cluster", generator="aequitas",
                       max_global=budget, max_local=budget)
    t0, c0, load0 = time.perf_counter(), cpu_seconds(), os.getloadavg()[0]
    inputs = inputs_from_names(config)
    idis = None
    if any(method_class(m).needs_idis({}) for m in methods):
        plan = SearchPlan(seeds="cluster", generator="aequitas", max_global=budget, max_local=budget,
                          random_state=state)
        idis, _ = search_training_rows(inputs, plan)
    result = retrain(inputs.trained, inputs.dataset, idis, method=list(methods), random_state=state)
    return {"target": target, "model": model, "random_state": state, "model_random_state": model_state,
            "commit": commit("benchmarks/retrain_family.py"), "wall_seconds": time.perf_counter() - t0,
            "cpu_seconds": cpu_seconds() - c0,
            "load_start": load0, "load_end": os.getloadavg()[0], "rows": list(result.rows),
            "methods": list(result.methods), "skipped": result.skipped, "spread": result.spread,
            "auto_pick": result.meta.get("auto_pick"), "auto_candidates": result.meta.get("auto_candidates"),
            "seconds": result.seconds, "headline": result.verdict_lines()}


def meets_goal(before: dict, after: dict, spread: float) -> list[str]:
    """The parts of the goal a row misses, in words (empty: met)."""
    missed = []
    b, a = before["test_idi_rate"], after["test_idi_rate"]
    if not (b > 0 and a <= (1 - GOAL_REDUCTION) * b):
        missed.append(f"IDI rate {b:.4f} -> {a:.4f} ({(a - b) / b if b else float('nan'):+.1%})")
    budget = max(GOAL_F1, spread)
    if before["f1"] - after["f1"] > budget:
        missed.append(f"F1 loss {before['f1'] - after['f1']:.4g} > {budget:.4g}")
    for key, short in (("demographic_parity_difference", "DPD"), ("equalized_odds_difference", "EOD")):
        if after[key] is not None and before[key] is not None and after[key] - before[key] > GOAL_GROUP:
            missed.append(f"{short} {before[key]:.3f} -> {after[key]:.3f}")
    return missed


def markdown(cells: list[dict], record: dict) -> str:
    lines = [f"# Mitigation family: every method and auto, {record['command']}", "",
             f"{record['date']}; chiralfair {record['chiralfair']}; {len(cells)} cells; wall "
             f"{record['wall_seconds']:.0f} s, CPU {record['cpu_seconds']:.0f} s (children included); load average "
             f"(1 min) {record['load_start']:.2f} at the start, {record['load_end']:.2f} at the end, on "
             f"{os.cpu_count()} cores.",
             "", "Goal of a row: held-out IDI rate at least 90% lower, F1 loss within the model's own "
             "training-seed spread (at least 0.01), DPD and EOD at most 0.02 above before. Medians over the cells, "
             "[min, max].", ""] + ([record["note"], ""] if record.get("note") else [])
    keys = sorted({(c["target"], c["model"]) for c in cells})
    for target, model in keys:
        part = [c for c in cells if c["target"] == target and c["model"] == model]
        lines += [f"## {target} / {model} ({len(part)} cells: random states "
                  f"{sorted({c['random_state'] for c in part})}, model random states "
                  f"{sorted({c['model_random_state'] for c in part})})", ""]
        unmet = [c for c in part if c["auto_pick"] and not c["auto_pick"].get("within_bounds")]
        lines += [f"**auto, state {c['random_state']}/{c['model_random_state']}: no candidate met every bound on its "
                  f"validation rows**: {'; '.join(c['auto_pick'].get('unmet') or ())}." for c in unmet]
        lines += ([""] if unmet else []) + [
                  "| method | IDI rate before | after | F1 before | after | DPD before → after | EOD before → after "
                  "| goal met (cells) | missed (first cell that missed) |", "|---|---|---|---|---|---|---|---|---|"]
        methods = list(dict.fromkeys(m for c in part for m in c["methods"]))
        for m in methods:
            fig = {k: [] for k in ("b", "a", "fb", "fa", "db", "da", "eb", "ea")}
            met, missed_first = 0, None
            for c in part:
                before = c["rows"][0]
                after = [r for r in c["rows"][1:] if r["method"] == m][-1]
                for k, (row, key) in {"b": (before, "test_idi_rate"), "a": (after, "test_idi_rate"),
                                      "fb": (before, "f1"), "fa": (after, "f1"),
                                      "db": (before, "demographic_parity_difference"),
                                      "da": (after, "demographic_parity_difference"),
                                      "eb": (before, "equalized_odds_difference"),
                                      "ea": (after, "equalized_odds_difference")}.items():
                    fig[k].append(np.nan if row[key] is None else row[key])
                missed = meets_goal(before, after, (c["spread"] or {}).get("spread", 0.0))
                met += not missed
                if missed and missed_first is None:
                    missed_first = f"state {c['random_state']}/{c['model_random_state']}: " + "; ".join(missed)
            lines.append(f"| {m} | {_med(fig['b'])} | {_med(fig['a'])} | {_med(fig['fb'])} | {_med(fig['fa'])} | "
                         f"{_med(fig['db'])} → {_med(fig['da'])} | {_med(fig['eb'])} → {_med(fig['ea'])} | "
                         f"{met} of {len(part)} | {missed_first or '–'} |")
        skipped = {k: v for c in part for k, v in c["skipped"].items()}
        for name, why in skipped.items():
            lines.append(f"\nSkipped {name}: {why}")
        lines += ["", "auto, per cell (on its validation rows, never the test rows):", ""]
        for c in part:
            pick = c["auto_pick"] or {}
            if not pick:
                continue
            words = ("a candidate within every bound" if pick.get("within_bounds") else
                     "no candidate within every bound: " + "; ".join(pick.get("unmet") or ()))
            label = next((t["label"] for i, t in enumerate(c["auto_candidates"]["tried"])
                          if i == c["auto_candidates"]["picked"]), pick.get("method"))
            lines.append(f"- state {c['random_state']}, model state {c['model_random_state']}: picked {label}; "
                         f"{words} (commit {c.get('commit', 'not recorded')}; {c['wall_seconds']:.0f} s wall, "
                         f"{c['cpu_seconds']:.0f} s CPU; load {c['load_start']:.1f} -> {c['load_end']:.1f})"
                         + said_first(c))
        lines.append("")
    return "\n".join(lines) + "\n"


def said_first(c: dict) -> str:
    """Whether the output's first lines tell a reader what auto missed on the test rows, recounted from the rows."""
    headline, how = c.get("headline"), ""
    if headline is None:
        headline = reconstructed_headline(c)
        how = " (the headline rebuilt by this code from the cell's recorded figures)"
    before = c["rows"][0]
    after = [r for r in c["rows"][1:] if r["method"] == "auto"][-1]
    missed = meets_goal(before, after, (c["spread"] or {}).get("spread", 0.0))
    auto_lines = [line for line in headline if line.startswith("**auto")]
    first = headline[: len(auto_lines)] == auto_lines  # auto's lines open the output
    test_line = next((line for line in auto_lines if "held-out test rows" in line), "")
    agrees = ("goal missed" in test_line) == bool(missed)
    return (f"; on the test rows {'missed: ' + '; '.join(missed) if missed else 'goal met'}; the output's first "
            f"lines{how} {'say so' if first and agrees else 'DO NOT say so'}: " + " / ".join(auto_lines))


def reconstructed_headline(c: dict) -> list[str]:
    """The output's first lines for a cell run before they were recorded, rebuilt from its figures by this code.

    The pick, the validation figures and the test rows are the cell's own; what an older commit did not record
    (whether the pick falls short of the IDI goal) is computed from its validation figures.
    """
    from chiralfair.mitigation.auto import idi_goal_unmet
    from chiralfair.mitigation.retraining import RetrainResult

    table, pick = c["auto_candidates"] or {}, dict(c["auto_pick"] or {})
    if table and "idi_goal_short" not in pick:
        pick["idi_goal_short"] = idi_goal_unmet(table["tried"][table["picked"]], table["reference"],
                                                within=pick.get("within_bounds", True))
    rows = tuple(c["rows"])
    result = RetrainResult(protocol="holdout", pairs="both", mode="auto", how={}, n_idis=0, rows=rows, ensemble=None,
                           meta={"auto_pick": pick, "auto_candidates": table}, methods=tuple(c["methods"]),
                           improved=all(r["improved"] for r in rows[1:]), skipped=c["skipped"], spread=c["spread"])
    return result.verdict_lines()


def _med(values) -> str:
    v = np.asarray(values, dtype=float)
    if np.isnan(v).all():
        return "–"
    return f"{np.nanmedian(v):.4f} [{np.nanmin(v):.4f}, {np.nanmax(v):.4f}]"


def rewrite(name: str, results: Path = RESULTS) -> None:
    """Write ``<name>.md`` again from ``<name>.json`` (e.g. after the table's layout changed)."""
    record = json.loads((results / f"{name}.json").read_text())
    (results / f"{name}.md").write_text(markdown(record["cells"], record))


def merge(name: str, others, results: Path = RESULTS) -> dict:
    """Add the cells of the result files ``others`` (runs made in parallel) to ``name``; their seconds add up.

    Parameters
    ----------
    name : str
    others : sequence of str
    results : Path

    Returns
    -------
    dict
        The merged record, written to ``<name>.json`` and ``<name>.md``.
    """
    record = json.loads((results / f"{name}.json").read_text())
    commands = [record["command"]]
    for other in others:
        more = json.loads((results / f"{other}.json").read_text())
        commands.append(more["command"])
        for key in ("wall_seconds", "cpu_seconds"):
            record[key] += more[key]
        record["load_end"] = max(record["load_end"], more["load_end"])
        record["cells"] += [c for c in more["cells"] if not any(
            (c["target"], c["model"], c["random_state"], c["model_random_state"])
            == (d["target"], d["model"], d["random_state"], d["model_random_state"]) for d in record["cells"])]
    record["command"] = "; ".join(commands) + " (run in parallel, merged with --merge; seconds summed)"
    (results / f"{name}.json").write_text(json.dumps(record, indent=1, default=str))
    (results / f"{name}.md").write_text(markdown(record["cells"], record))
    return record


def main(argv=None):
    import sys

    from chiralfair import __version__
    from chiralfair.mitigation.base import method_names

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=["census:sex"], help="dataset:protected-attribute")
    p.add_argument("--models", nargs="+", default=["lr"], help="zoo models")
    p.add_argument("--states", type=int, default=3, help="random states 0..N-1 (split, search, retrain)")
    p.add_argument("--only-states", type=int, nargs="+", default=None,
                   help="run these random states, in this order, instead of 0..N-1")
    p.add_argument("--model-states", type=int, nargs="+", default=None,
                   help="model random states (retrain's model seed); default: the random state")
    p.add_argument("--methods", nargs="+", default=None, help="default: every registered method")
    p.add_argument("--budget", type=int, default=100, help="max_global = max_local of the search for paper")
    p.add_argument("--name", default="retrain_family")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--merge", nargs="+", default=(),
                   help="add the cells of these result names (runs made in parallel) to --name and rewrite it")
    args = p.parse_args(argv)
    methods = args.methods or method_names()
    out = args.results / f"{args.name}.json"
    done = json.loads(out.read_text())["cells"] if out.exists() else []
    if args.merge:
        return merge(args.name, args.merge, args.results)
    record = {"command": "python benchmarks/retrain_family.py " + " ".join(sys.argv[1:] if argv is None else argv),
              "chiralfair": __version__, "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "load_start": os.getloadavg()[0]}
    t0, c0 = time.perf_counter(), cpu_seconds()
    cells = list(done)
    for target in args.targets:
        for model in args.models:
            for state in (args.only_states if args.only_states is not None else range(args.states)):
                for model_state in (args.model_states or [state]):
                    if any(c["target"] == target and c["model"] == model and c["random_state"] == state
                           and c["model_random_state"] == model_state for c in cells):
                        continue
                    cells.append(cell(target, model, state, model_state, methods, args.budget))
                    print(f"{target} {model} state {state} model state {model_state}: "
                          f"{cells[-1]['wall_seconds']:.0f} s", flush=True)
                    record.update(cells=cells, wall_seconds=time.perf_counter() - t0,
                                  cpu_seconds=cpu_seconds() - c0, load_end=os.getloadavg()[0])
                    args.results.mkdir(parents=True, exist_ok=True)
                    out.write_text(json.dumps(record, indent=1, default=str))
                    (args.results / f"{args.name}.md").write_text(markdown(cells, record))
    return record


if __name__ == "__main__":
    main()
