"""How often the gate's sequential decision is wrong, with and without spending the confidence over the looks.

Run by hand from the repository root:

    python benchmarks/sequential_gate.py [--repeats 400]

The biased toy model of tests/toys.py discriminates exactly 28% of its input domain. With the threshold at that
true share, every stop "because the interval lies on one side of the threshold" is a wrong decision, so the share
of repeats that stop that way is the error rate the 95% confidence must bound by 5%. Four settings, each over the
same random states: the interval method (Wilson, Clopper-Pearson) x the level at each look (spent over the looks,
as ``chiralfair check`` does, or one fixed 95% at every look: the naive rule).

Writes benchmarks/results/sequential_gate.json and sequential_gate.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

TRUE_SHARE = 0.28
MARGIN = 0.03


def run(method: str, spent: bool, repeats: int) -> dict:
    from toys import biased_module, toy_dataset

    import chiralfair.verdict.estimation as estimation
    from chiralfair.models import as_model

    model, data = as_model(biased_module()), toy_dataset(50)
    spend = estimation.look_confidence
    if not spent:
        estimation.look_confidence = lambda confidence, look: confidence
    try:
        wrong, looks, queries = 0, [], []
        t = time.perf_counter()
        for seed in range(repeats):
            v = estimation.estimate(model, data, population="domain", exact=False, margin=MARGIN, favourable=1,
                                    random_state=seed, threshold=TRUE_SHARE, method=method)
            wrong += v.stopped_by == "threshold"
            looks.append(v.meta["sequential"]["looks"])
            queries.append(v.n_queries)
        seconds = time.perf_counter() - t
    finally:
        estimation.look_confidence = spend
    return {"method": method, "confidence_spent_over_looks": spent, "wrong": wrong, "repeats": repeats,
            "error_rate": wrong / repeats, "mean_looks": sum(looks) / repeats,
            "mean_queries": sum(queries) / repeats, "seconds": seconds}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=400)
    args = p.parse_args(argv)
    load = [os.getloadavg()[0]]
    rows = [run(method, spent, args.repeats) for method in ("clopper-pearson", "wilson") for spent in (True, False)]
    load.append(os.getloadavg()[0])
    record = {"script": "benchmarks/sequential_gate.py", "date": dt.datetime.now().isoformat(timespec="seconds"),
              "true_share": TRUE_SHARE, "threshold": TRUE_SHARE, "margin": MARGIN, "confidence": 0.95,
              "load_average": {"min": min(load), "max": max(load)}, "cpu_count": os.cpu_count(), "results": rows}
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "sequential_gate.json").write_text(json.dumps(record, indent=2))
    lines = [f"# The gate's sequential decision: wrong decisions at the true share ({record['date']})", "",
             f"`python benchmarks/sequential_gate.py --repeats {args.repeats}`; biased toy model, true share "
             f"{TRUE_SHARE}, threshold {TRUE_SHARE}, margin {MARGIN}, 95% confidence (at most 5% wrong allowed); "
             f"load average {record['load_average']['min']:.1f}-{record['load_average']['max']:.1f}.", "",
             "| interval | level at each look | wrong decisions | error rate | mean looks | mean queries |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        level = "spent over the looks (chiralfair check)" if r["confidence_spent_over_looks"] else "fixed 95%"
        lines.append(f"| {r['method']} | {level} | {r['wrong']} of {r['repeats']} | {r['error_rate']:.2%} | "
                     f"{r['mean_looks']:.2f} | {r['mean_queries']:,.0f} |")
    (HERE / "results" / "sequential_gate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
