"""Cost of the diversity report, and one comparison of seed strategies by IDIs per query and diversity.

Run by hand:  python benchmarks/diversity.py [--dataset census] [--protected sex] [--model dnn] [--n-seeds 100]
              [--random-state 0] [--timing-repeats 3] [--cache-dir DIR]

1. Cost: the reference (:func:`~chiralfair.seeds.diversity_report.diversity_reference`) once, then
   :func:`~chiralfair.seeds.diversity_report.seed_diversity` on 100 and 1,000 data rows, median of
   ``--timing-repeats`` runs, in seconds.
2. Comparison at ``--n-seeds`` seeds, one ``random_state``: random, cluster, i, iandd, data_rows (its default
   budget) and data_rows with the budget ``i`` spent (``n_initial_queries + chiral_training_rows``): initial IDIs
   per 1,000 queries (for random/cluster: seed IDIs per 1,000 seed-check queries), the candidates' IDI share,
   and the seeds' diversity against one reference. The chiral model belongs to the model under test
   (``chiral_random_state`` = the model's random_state), as in ``chiralfair run``.

Writes ``benchmarks/results/diversity.json`` and ``.md`` (with the load average).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

from chiralfair import __version__
from chiralfair.datasets import load_dataset
from chiralfair.models.training import train_model
from chiralfair.seeds import make_seed_strategy
from chiralfair.seeds.diversity_report import diversity_reference, seed_diversity
from chiralfair.seeds.names import chiral_params

RESULTS = Path(__file__).parent / "results"
STRATEGIES = ("random", "cluster", "i", "iandd", "data_rows")


def timing(model, data, repeats: int, random_state: int) -> dict:
    t = time.perf_counter()
    reference = diversity_reference(model, data, random_state=random_state)
    out = {"reference_seconds": time.perf_counter() - t, "reference": reference.info}
    for n in (100, 1000):
        rows = data.X[:n]
        times = []
        for r in range(repeats):
            t = time.perf_counter()
            seed_diversity(rows, reference, random_state=r)
            times.append(time.perf_counter() - t)
        out[f"report_seconds_{n}"] = statistics.median(times)
    return out, reference


def compare(model, data, reference, n_seeds: int, random_state: int, cache_dir) -> list[dict]:
    rows = []
    spent_by_i = None
    for name in (*STRATEGIES, "data_rows@i"):
        params = chiral_params(name, random_state, cache_dir)
        if name == "data_rows@i":
            params = {"max_queries": spent_by_i}
        report = make_seed_strategy(name.split("@")[0], **params).select(model, data, n_seeds,
                                                                           random_state=random_state)
        if name == "i":
            spent_by_i = report.n_initial_queries + report.chiral_training_rows
        per_1000 = report.initial_idis_per_1000_queries
        if per_1000 is None:  # random / cluster: the IDIs among the seeds per 1,000 queries of their check
            per_1000 = 1000.0 * int(report.is_idi.sum()) / report.n_queries
        d = seed_diversity(report.seeds, reference, random_state=random_state)
        rows.append({"strategy": name, "initialization_rate": report.initialization_rate,
                     "n_initial_idis": report.n_initial_idis, "n_candidates": report.n_candidates,
                     "candidate_idi_share": report.candidate_idi_share,
                     "n_initial_queries": report.n_initial_queries,
                     "chiral_training_rows": report.chiral_training_rows,
                     "idis_per_1000_queries": per_1000, "seconds": report.seconds.get("total"),
                     "diversity": d.to_dict()})
    return rows


def markdown(out: dict) -> str:
    t = out["timing"]
    lines = [f"# Diversity report: cost and one comparison ({out['target']}, {out['n_seeds']} seeds, random_state "
             f"{out['random_state']})", "",
             f"chiralfair {out['version']}, {out['date']}, {os.cpu_count()} CPUs, load average at start "
             f"{out['load_start']}, at end {out['load_end']}.", "",
             "## Cost (seconds)", "",
             f"- reference (1,000 data rows explained and clustered, surrogate tree): {t['reference_seconds']:.2f}",
             f"- report on 100 seeds: {t['report_seconds_100']:.3f}; on 1,000 seeds: {t['report_seconds_1000']:.3f}"
             " (median of repeats)",
             f"- reference: {t['reference']['explainer']}, clustering {t['reference']['clustering']['method']} with "
             f"{t['reference']['clustering']['n_clusters']} clusters, surrogate {t['reference']['surrogate_leaves']}"
             f" leaves, fidelity {t['reference']['surrogate_fidelity']:.3f}", "",
             "## Strategies", "",
             "| strategy | init. rate | initial IDIs | candidates | IDI share of candidates | queries (+ chiral rows) "
             "| IDIs / 1,000 queries | clusters (entropy) | Gower distance | leaves |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in out["comparison"]:
        d = r["diversity"]
        share = "-" if r["candidate_idi_share"] is None else f"{r['candidate_idi_share']:.1%}"
        queries = "-" if r["n_initial_queries"] is None else (
            f"{r['n_initial_queries']:,}" + (f" + {r['chiral_training_rows']:,}" if r["chiral_training_rows"] else ""))
        lines.append(f"| {r['strategy']} | {r['initialization_rate']:.0%} | {r['n_initial_idis'] or '-'} | "
                     f"{r['n_candidates'] or '-'} | {share} | {queries} | {r['idis_per_1000_queries']:.1f} | "
                     f"{d['clusters_covered']} of {d['n_reference_clusters']} ({d['cluster_entropy']:.2f}) | "
                     f"{d['mean_pairwise_distance']:.3f} | {d['leaves_covered']} of {d['n_leaves']} |")
    lines += ["", "random / cluster: IDIs among the seeds per 1,000 queries of their check. data_rows@i: data_rows "
              "with the queries i spent (its n_initial_queries + chiral_training_rows) as max_queries."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="census")
    ap.add_argument("--protected", default="sex")
    ap.add_argument("--model", default="dnn")
    ap.add_argument("--n-seeds", type=int, default=100)
    ap.add_argument("--random-state", type=int, default=0)
    ap.add_argument("--timing-repeats", type=int, default=3)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--name", default="diversity")
    a = ap.parse_args()
    load_start = os.getloadavg()
    data = load_dataset(a.dataset, protected=[a.protected])
    model = train_model(data, a.model, random_state=a.random_state, cache_dir=a.cache_dir).model
    t, reference = timing(model, data, a.timing_repeats, a.random_state)
    comparison = compare(model, data, reference, a.n_seeds, a.random_state, a.cache_dir)
    out = {"target": f"{a.dataset}:{a.protected}:{a.model}", "n_seeds": a.n_seeds, "random_state": a.random_state,
           "version": __version__, "date": datetime.now(UTC).isoformat(timespec="seconds"),
           "load_start": [round(x, 2) for x in load_start], "load_end": [round(x, 2) for x in os.getloadavg()],
           "timing": t, "comparison": comparison}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{a.name}.json").write_text(json.dumps(out, indent=2, default=str))
    (RESULTS / f"{a.name}.md").write_text(markdown(out))
    print(markdown(out))


if __name__ == "__main__":
    main()
