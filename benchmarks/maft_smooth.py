"""MAFT against EIDIG on smooth models (the paper's census DNN and LR): IDIs per 1,000 model queries.

Run by hand:  python benchmarks/maft_smooth.py [--models dnn lr] [--seeds 300] [--max-local 300] [--repeats 3]

Census, protected attribute sex, cluster seeds (``--seeds`` of them, selected once per random state and shared);
no query budget. For each zoo model (trained with model random state 0 on the 60% split) and random state
0 .. ``--repeats`` - 1: ``eidig`` (the model's own gradient), ``maft`` (finite differences, one probe per feature: the
default) and ``maft`` with ``across_plateaus=True``. Where a smooth model's probabilities saturate, probes are flat
and the second MAFT row pays for probing them again. MAFT / EIDIG IDIs per query is the figure shown.

Writes ``benchmarks/results/maft_smooth.json`` (every run, versions, load) and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
VARIANTS = {"eidig": ("eidig", {}), "maft": ("maft", {}), "maft (across plateaus)": ("maft", {"across_plateaus": True})}


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def runs(model: str, state: int, n_seeds: int, max_local: int) -> list[dict]:
    from chiralfair.generators import make_generator
    from chiralfair.models.threads import single_native_thread
    from chiralfair.pipeline import RunConfig
    from chiralfair.pipeline.inputs import inputs_from_names
    from chiralfair.seeds import make_seed_strategy

    config = RunConfig(dataset="census", protected=("sex",), model=model, model_random_state=0, random_state=state)
    inputs = inputs_from_names(config)
    out = []
    with single_native_thread():
        seeds = make_seed_strategy("cluster").select(inputs.model, inputs.dataset, n_seeds, random_state=state)
        for label, (name, params) in VARIANTS.items():
            t = time.perf_counter()
            res = make_generator(name, max_global=n_seeds, max_local=max_local, **params).run(
                inputs.model, inputs.dataset.domain, seeds, random_state=state)
            out.append({"model": model, "random_state": state, "variant": label, "n_idis": res.n_idis,
                        "n_global": res.n_global, "n_queries": res.n_queries,
                        "per_1000_queries": 1000 * res.n_idis / max(res.n_queries, 1),
                        "seconds": round(time.perf_counter() - t, 2)})
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["dnn", "lr"])
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--max-local", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    import numpy
    import sklearn
    import torch

    import chiralfair

    before, t0 = _uptime(), time.perf_counter()
    rows = [r for model in args.models for state in range(args.repeats)
            for r in runs(model, state, args.seeds, args.max_local)]
    doc = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "uptime_before": before, "uptime_after": _uptime(),
           "seconds": round(time.perf_counter() - t0, 1), "cpu_count": os.cpu_count(),
           "versions": {"python": platform.python_version(), "numpy": numpy.__version__,
                        "scikit-learn": sklearn.__version__, "torch": torch.__version__,
                        "chiralfair": chiralfair.__version__},
           "parameters": vars(args), "runs": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "maft_smooth.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = ["# MAFT against EIDIG on smooth models", "",
             f"Written by `benchmarks/maft_smooth.py` on {doc['date']}. Census, sex, cluster seeds ({args.seeds}), "
             f"max_local {args.max_local}, no query budget; median over random states 0..{args.repeats - 1}. "
             f"torch {torch.__version__}, scikit-learn {sklearn.__version__}, {os.cpu_count()} CPUs. "
             f"Load: before `{before}`; after `{doc['uptime_after']}`.", "",
             "| model | variant | IDIs | queries | IDIs per 1,000 queries | / eidig |", "|---|---|---:|---:|---:|---:|"]
    for model in args.models:
        med = {}
        for label in VARIANTS:
            rs = [r for r in rows if r["model"] == model and r["variant"] == label]
            med[label] = statistics.median(r["per_1000_queries"] for r in rs)
            lines.append(f"| {model} | {label} | {statistics.median(r['n_idis'] for r in rs):,.0f} | "
                         f"{statistics.median(r['n_queries'] for r in rs):,.0f} | {med[label]:.1f} | "
                         f"{med[label] / med['eidig']:.2f}x |")
    (RESULTS / "maft_smooth.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
