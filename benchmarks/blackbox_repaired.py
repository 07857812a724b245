"""Generators on retrained (fairer) models at an equal query budget: GRFT against EIDIG and ADF, and the black boxes.

Run by hand:  python benchmarks/blackbox_repaired.py [--case census:sex] [--repeats 1] [--budget 20000]
              [--seeds cluster] [--methods counterfactual consistency] [--lam 1.0] [--name blackbox_repaired]

The goal on repaired models: on models retrained by counterfactual augmentation or the consistency penalty,
GRFT finds >= 5x EIDIG's and ADF's IDIs at the same budget (DNN) and more than every other black-box generator
(HGB). The models, all trained with random state 0 on the case's 60% training split (the zoo's split):

- ``dnn``: the zoo DNN (the paper's architecture and recipe, :class:`~chiralfair.mitigation.dnn.PaperDNNClassifier`)
  as trained, then retrained from scratch with counterfactual augmentation (every training row in every protected
  value, :class:`~chiralfair.mitigation.counterfactual.CounterfactualAugmentation`) and with the consistency penalty
  (counterfactual logit pairing, :class:`~chiralfair.mitigation.consistency.CounterfactualLogitPairing`, λ =
  ``--lam``: a given λ, not chosen on a validation split, to keep the run short). Generators ``--dnn-generators``
  (grft, eidig, adf).
- ``hgb``: sklearn's HistGradientBoostingClassifier as trained, then retrained with counterfactual augmentation
  (the consistency penalty trains a network only). Generators ``--hgb-generators`` (the black-box ones).

For each model and random state the seeds (``--seeds``, ``--max-global`` of them) are selected once and shared by
every generator; each generator runs (:meth:`Generator.run`) with ``max_queries = --budget``, which counts the
seeds' check and every later model row (the seed strategy's own selection is not counted: cluster seeds query
nothing). ``max_local`` is the budget itself (unless ``--max-local`` is given) so that the budget, not the
local phase, ends the searches; a search may still end first (no global IDI to walk from). Test F1 and the share
of test rows that are IDIs (every protected combination tried) name the held-out 40%.

Writes ``benchmarks/results/<name>.json`` (every run, versions, load) and ``<name>.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
DNN_GENERATORS = ("grft", "eidig", "adf")
HGB_GENERATORS = ("grft", "maft", "aft", "aequitas", "expga", "kosei")


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def trained_models(case: str, methods: list[str], lam: float):
    """The case's dataset, training and test rows, and the models under test: (kind, method) -> CountingModel."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from chiralfair.mitigation.consistency import CounterfactualLogitPairing
    from chiralfair.mitigation.counterfactual import CounterfactualAugmentation, deployable_estimator
    from chiralfair.mitigation.dnn import PaperDNNClassifier
    from chiralfair.models import as_model
    from chiralfair.models.torch_adapter import torch_model
    from chiralfair.pipeline import RunConfig
    from chiralfair.pipeline.inputs import inputs_from_names

    dataset_name, protected = case.split(":")
    inputs = inputs_from_names(RunConfig(dataset=dataset_name, protected=(protected,), model="dnn",
                                         model_random_state=0))
    dataset, train, test = inputs.dataset, inputs.train_index, inputs.test_index
    X, y, domain = dataset.X[train], dataset.y[train], dataset.domain

    def network(method) -> object:
        return torch_model(deployable_estimator(method), name="dnn", batch_size=4096)

    models, seconds = {("dnn", "none"): inputs.model}, {}
    for method in methods:
        t = time.perf_counter()
        if method == "counterfactual":
            fitted = CounterfactualAugmentation(PaperDNNClassifier(random_state=0), domain).fit(X, y)
        else:
            fitted = CounterfactualLogitPairing(PaperDNNClassifier(random_state=0), domain, lam=lam,
                                                random_state=0).fit(X, y)
        models["dnn", method] = network(fitted)
        seconds["dnn", method] = time.perf_counter() - t
    hgb = HistGradientBoostingClassifier(random_state=0)
    models["hgb", "none"] = as_model(hgb.fit(X, y), name="hgb")
    if "counterfactual" in methods:
        t = time.perf_counter()
        fitted = CounterfactualAugmentation(HistGradientBoostingClassifier(random_state=0), domain).fit(X, y)
        models["hgb", "counterfactual"] = as_model(fitted.estimator_, name="hgb")
        seconds["hgb", "counterfactual"] = time.perf_counter() - t
    return dataset, train, test, models, seconds


def held_out_figures(model, dataset, test) -> dict:
    """Test F1 and the share of test rows that are IDIs (held-out 40%)."""
    from sklearn.metrics import f1_score

    from chiralfair.oracle import DiscriminationCheck

    model.reset_queries()
    X = dataset.X[test]
    f1 = float(f1_score(dataset.y[test], model.predict(X)))
    share = float(DiscriminationCheck(model, dataset.domain).check(X).is_idi.mean())
    model.reset_queries()
    return {"f1": round(f1, 4), "test_idi_share": round(share, 5)}


def one_model(kind: str, method: str, model, dataset, generators, args) -> list[dict]:
    from chiralfair.generators import make_generator
    from chiralfair.models.threads import single_native_thread
    from chiralfair.seeds import make_seed_strategy

    out = []
    for state in range(args.repeats):
        model.reset_queries()
        seeds = make_seed_strategy(args.seeds).select(model, dataset, args.max_global, random_state=state).seeds
        for name in generators:
            max_local = args.budget if args.max_local is None else args.max_local
            gen = make_generator(name, max_global=args.max_global, max_local=max_local, max_queries=args.budget)
            model.reset_queries()
            t = time.perf_counter()
            with single_native_thread():
                res = gen.run(model, dataset.domain, seeds, random_state=state)
            out.append({"model": kind, "method": method, "generator": name, "random_state": state,
                        "n_idis": res.n_idis, "n_global": res.n_global, "n_local": res.n_local,
                        "n_queries": res.n_queries, "seconds": round(time.perf_counter() - t, 2)})
            print(out[-1], file=sys.stderr, flush=True)
    return out


def versions() -> dict[str, str]:
    import sklearn
    import torch

    import chiralfair

    return {"python": platform.python_version(), "numpy": np.__version__, "scikit-learn": sklearn.__version__,
            "torch": torch.__version__, "chiralfair": chiralfair.__version__}


def write_markdown(doc: dict, path: Path) -> None:
    p, v, runs = doc["parameters"], doc["versions"], doc["runs"]
    lines = [f"# Generators on retrained models, {p['case']}, {p['budget']:,} queries", "",
             f"Written by `benchmarks/blackbox_repaired.py` on {doc['date']}. Seeds: {p['seeds']} "
             f"({p['max_global']}), max_local = {p['max_local'] or p['budget']:,}, random states "
             f"{p['random_states']} (median). "
             f"Consistency penalty λ = {p['lam']} (given). Libraries of the models under test: torch {v['torch']}, "
             f"scikit-learn {v['scikit-learn']}, numpy {v['numpy']}, python {v['python']}; chiralfair "
             f"{v['chiralfair']}. {doc['cpu_count']} CPUs. Load: before `{doc['uptime_before']}`; after "
             f"`{doc['uptime_after']}`. Wall time {doc['seconds']:.0f} s.", ""]
    for kind in ("dnn", "hgb"):
        gens = [g for g in (DNN_GENERATORS if kind == "dnn" else HGB_GENERATORS)
                if any(r["model"] == kind and r["generator"] == g for r in runs)]
        methods = [m for m in ("none", *p["methods"]) if f"{kind} {m}" in doc["models"]]
        lines += [f"## {kind}", "", "| retrained by | test F1 | test IDI share | " + " | ".join(gens)
                  + " | GRFT / best other |", "|---|---:|---:|" + "---:|" * (len(gens) + 1)]
        for method in methods:
            fig = doc["models"][f"{kind} {method}"]
            medians = {}
            for g in gens:
                rs = [r["n_idis"] for r in runs if (r["model"], r["method"], r["generator"]) == (kind, method, g)]
                if rs:
                    medians[g] = statistics.median(rs)
            others = {g: m for g, m in medians.items() if g != "grft"}
            best = max(others, key=others.get) if others else None
            ratio = (f"{medians['grft'] / others[best]:.2f}x ({best})" if best and others[best] else
                     ("inf" if best and medians.get("grft") else "-"))
            lines.append(f"| {method} | {fig['f1']:.3f} | {fig['test_idi_share']:.2%} | "
                         + " | ".join(f"{medians[g]:,.0f}" if g in medians else "-" for g in gens) + f" | {ratio} |")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="census:sex", help="dataset:protected")
    ap.add_argument("--methods", nargs="+", default=["counterfactual", "consistency"],
                    choices=["counterfactual", "consistency"])
    ap.add_argument("--lam", type=float, default=1.0)
    ap.add_argument("--seeds", default="cluster")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--budget", type=int, default=20_000)
    ap.add_argument("--max-global", type=int, default=1000)
    ap.add_argument("--max-local", type=int, default=None, help="default: the budget")
    ap.add_argument("--dnn-generators", nargs="+", default=list(DNN_GENERATORS))
    ap.add_argument("--hgb-generators", nargs="+", default=list(HGB_GENERATORS))
    ap.add_argument("--name", default="blackbox_repaired")
    args = ap.parse_args(argv)
    uptime_before, t0 = _uptime(), time.perf_counter()
    dataset, _, test, models, train_seconds = trained_models(args.case, args.methods, args.lam)
    runs, figures = [], {}
    for (kind, method), model in models.items():
        figures[f"{kind} {method}"] = {**held_out_figures(model, dataset, test),
                                       "train_seconds": round(train_seconds.get((kind, method), 0.0), 1)}
        gens = args.dnn_generators if kind == "dnn" else args.hgb_generators
        runs += one_model(kind, method, model, dataset, gens, args)
    doc = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "versions": versions(),
           "cpu_count": os.cpu_count(), "uptime_before": uptime_before, "uptime_after": _uptime(),
           "seconds": time.perf_counter() - t0,
           "parameters": {"case": args.case, "methods": args.methods, "lam": args.lam, "seeds": args.seeds,
                          "random_states": list(range(args.repeats)), "budget": args.budget,
                          "max_global": args.max_global, "max_local": args.max_local,
                          "test_rows": f"the held-out 40% of {args.case.split(':')[0]} ({len(test)} rows)"},
           "models": figures, "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    write_markdown(doc, RESULTS / f"{args.name}.md")
    print(f"wrote {RESULTS / args.name}.json and .md in {doc['seconds']:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
