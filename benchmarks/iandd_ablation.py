"""Where does the D of I&D matter? `i` against `iandd` (and the seed baselines), IDIs and diversity.

Run by hand:  python benchmarks/iandd_ablation.py [--parts rows raw sklearn] [--repeats 10] [--workers 2]
              [--grid-root /tmp/grids] [--name iandd_ablation]

Three experiment grids, run with the grid runner (:func:`chiralfair.experiments.execution.run_grid`; a stopped
run resumes where it stopped), AEQUITAS as the generator, the model fixed with random_state 0 and random states
0 .. repeats - 1 for the seeds and the search, diversity measured in every cell (``diversity = true``):

- ``rows``: the paper's DNN on the seven rows, seeds cluster / data_rows / i / iandd, at 100 seeds x 100 local
  steps and at 1,000 seeds x 100 (where 100 seeds are drawn from over 1,000 initial IDIs, every seed is an IDI
  whatever D does; at 1,000 seeds D chooses among fewer);
- ``raw``: the paper's raw-code DNN (``standardize = false``) on five rows, i / iandd, 100 x 100;
- ``sklearn``: LR, DTC and MLP on census sex and compas race, i / iandd, 100 x 100 (SVC is left out: its
  permutation explanations cost about 40 s per selection and 30 s per diversity reference here).

Diversity (chiralfair.seeds.diversity_report): SHAP clusters covered and the entropy over them (against one
reference clustering per model), mean Gower distance of the non-protected projections, surrogate-tree leaves
covered; of the seeds (``seed_*``) and of the IDIs found (``idi_*``). Per seed strategy: initial IDIs per 1,000
queries (the chiral model's training rows counted as queries) and the share of IDIs among the candidates.

Writes ``benchmarks/results/<name>.md`` (medians with IQR, the iandd / i ratio) and ``<name>.json`` (every
group's statistics, parameters, wall time, load average, versions, CPU count, date).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from chiralfair import __version__
from chiralfair.experiments.execution import run_grid
from chiralfair.experiments.tables import grid_table

RESULTS = Path(__file__).parent / "results"
SEVEN_ROWS = ["census:age", "census:race", "census:sex", "compas:age", "compas:race", "compas:sex", "bank:age"]
FIGURES = ("n_idis", "initialization_rate", "n_initial_idis", "candidate_idi_share", "initial_idis_per_1000_queries",
           "seed_clusters_covered", "seed_cluster_entropy", "seed_mean_pairwise_distance", "seed_leaves_covered",
           "idi_clusters_covered", "idi_cluster_entropy", "idi_mean_pairwise_distance", "idi_leaves_covered",
           "seconds_seeds")


ROW_SEEDS = ["cluster", "data_rows", "i", "iandd"]


def grids(repeats: int, row_seeds=tuple(ROW_SEEDS)) -> dict[str, dict]:
    common = {"task": "search", "repeats": repeats, "model_random_state": 0, "diversity": True}
    return {
        "rows": {**common, "name": "iandd_ablation_rows",
                 "axes": {"rows": SEVEN_ROWS, "models": ["dnn"], "seeds": list(row_seeds),
                          "generators": ["aequitas"], "budgets": [[100, 100], [1000, 100]]}},
        "raw": {**common, "name": "iandd_ablation_raw", "model_params": {"dnn": {"standardize": False}},
                "axes": {"rows": ["census:age", "census:race", "census:sex", "compas:race", "bank:age"],
                         "models": ["dnn"], "seeds": ["i", "iandd"], "generators": ["aequitas"],
                         "budgets": [[100, 100]]}},
        "sklearn": {**common, "name": "iandd_ablation_sklearn",
                    "axes": {"rows": ["census:sex", "compas:race"], "models": ["lr", "dtc", "mlp"],
                             "seeds": ["i", "iandd"], "generators": ["aequitas"], "budgets": [[100, 100]]}},
    }


def cell(stats, group, strategy, figure) -> str:
    row = stats.get((*group, strategy, figure))
    if row is None or np.isnan(row.median):
        return ""
    fmt = (lambda v: f"{v:.0%}") if figure in ("initialization_rate", "candidate_idi_share") else (
        (lambda v: f"{v:,.0f}") if figure in ("n_idis", "n_initial_idis") else (lambda v: f"{v:.3g}"))
    return f"{fmt(row.median)} [{fmt(row.q25)}–{fmt(row.q75)}]"


def markdown(part: str, table, strategies) -> list[str]:
    stats = {(r.row, r.model, r.max_global, r.seeds, r.figure): r for r in table.itertuples()}
    groups = sorted({(r.row, r.model, r.max_global) for r in table.itertuples()},
                    key=lambda g: (g[2], g[1], g[0]))
    lines = [f"## {part}", ""]
    for figure in FIGURES:
        ratio_header = " | iandd / i |" if "i" in strategies else " |"
        lines += [f"**{figure}** (median [q25–q75] over the repeats)", "",
                  "| row | model | seeds | " + " | ".join(strategies) + ratio_header,
                  "|---|---|---|" + "---|" * (len(strategies) + ("i" in strategies))]
        for group in groups:
            cells = [cell(stats, group, s, figure) for s in strategies]
            ratio = ""
            if "i" in strategies:
                a, b = stats.get((*group, "iandd", figure)), stats.get((*group, "i", figure))
                if a is not None and b is not None and b.median:
                    ratio = f"{a.median / b.median:.2f}"
            lines.append(f"| {group[0]} | {group[1]} | {group[2]} | " + " | ".join(cells)
                         + (f" | {ratio} |" if "i" in strategies else " |"))
        lines.append("")
    return lines


def networks_used(folder: Path) -> set[str]:
    """Every network a grid's cells name in their results (``reference network ...``, ``trained on this machine``)."""
    found: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and value.startswith(("reference network", "trained on this machine")):
            found.add(value)

    for path in folder.glob("cells/*/result.json"):
        walk(json.loads(path.read_text()))
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["rows", "raw", "sklearn"], choices=["rows", "raw", "sklearn"])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", default="local")
    parser.add_argument("--grid-root", type=Path, default=Path("/tmp/grids"))
    parser.add_argument("--name", default="iandd_ablation")
    parser.add_argument("--row-seeds", nargs="+", default=ROW_SEEDS, choices=ROW_SEEDS,
                        help="the seed strategies of the rows part (a subset costs less)")
    args = parser.parse_args(argv)
    import resource

    def cpu_seconds() -> float:  # user + system of this process and its children (the grid's workers)
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    record = {"parameters": vars(args) | {"grid_root": str(args.grid_root)}, "parts": {},
              "versions": {"chiralfair": __version__, "python": platform.python_version()},
              "cpu_count": os.cpu_count(), "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "loadavg_start": list(os.getloadavg())}
    lines = ["# Where the D of I&D matters: `i` vs `iandd` with diversity measures (AEQUITAS)", "",
             f"{record['date']}, chiralfair {__version__}, {os.cpu_count()} CPUs, {args.repeats} random states, "
             f"load average at start {record['loadavg_start'][0]:.2f}. Command: `python benchmarks/iandd_ablation.py "
             + " ".join(sys.argv[1:] if argv is None else argv) + "`.", ""]
    for part in args.parts:
        grid = grids(args.repeats, args.row_seeds)[part]
        t0, cpu0 = time.perf_counter(), cpu_seconds()
        run = run_grid(grid, args.grid_root / grid["name"], scheduler=args.scheduler, workers=args.workers)
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        table = grid_table(args.grid_root / grid["name"])
        table = table[table["figure"].isin(FIGURES)]
        record["parts"][part] = {"grid": grid, "wall_seconds": wall, "cpu_seconds": cpu, "n_failed": len(run.failed),
                                 "table": json.loads(table.to_json(orient="records"))}
        lines += markdown(part, table, grid["axes"]["seeds"])
        networks = sorted(networks_used(args.grid_root / grid["name"]))
        record["parts"][part]["networks"] = networks
        if networks:
            lines += [f"{part}: networks used (models under test and chiral models): " + "; ".join(networks), ""]
        lines += [f"{part}: {wall:.0f} s wall, {cpu:.0f} CPU s (user + system, with the workers; the cells run in "
                  f"this process under --scheduler sync), {len(run.failed)} failed cells.", ""]
    record["loadavg_end"] = list(os.getloadavg())
    lines.append(f"Load average at end {record['loadavg_end'][0]:.2f}.")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1, default=str))
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
