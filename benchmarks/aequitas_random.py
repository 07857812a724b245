"""AEQUITAS with random seeds (its original strategy) on census for sex, race and age at 100/100.

Run by hand:  python benchmarks/aequitas_random.py [--repeats 3]

A thin view on ``benchmarks/table2.py``: the same runs as its aequitas / random cells for the three census rows
(the paper's DNN, 100 uniform seeds from the domain, max_global = max_local = 100, random_state 0, 1, 2 for
seeds and search), reporting median n_idis, n_queries and seconds beside the I&D paper's Table 2 figures for
AEQUITAS with its original seeds (87 / 23 / 57 for age / race / sex, counted by I&D's rule: counterpart vector
plus vote label; ours counts unique non-protected projections, so the two are not directly comparable).

Writes ``benchmarks/results/aequitas_random.json`` (every run, medians, parameters, versions, load average)
and ``aequitas_random.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from table2 import PAPER_AEQUITAS, RESULTS, run_table  # noqa: E402

ROWS = ("census:sex", "census:race", "census:age")


def markdown(results: dict) -> str:
    p = results["parameters"]
    lines = [f"# AEQUITAS with random seeds on census, max_global = max_local = {p['budget']} "
             f"(DNN, median of {p['repeats']} random states)", "",
             f"{results['date']}, chiralfair {results['versions']['chiralfair']}, {results['cpu_count']} CPUs, "
             f"load average at start {results['loadavg_start'][0]:.2f}.", "",
             "| PA | n_idis (global / local) | n_queries | seconds | seed initialization rate | per run n_idis "
             "| paper (I&D counting) |", "|---|---|---|---|---|---|---|"]
    for row, cells in results["rows"].items():
        c = cells["aequitas"]["random"]
        if "error" in c:
            lines.append(f"| {row} | error: {c['error']} | | | | | |")
            continue
        m = c["median"]
        runs = ", ".join(str(r["n_idis"]) for r in c["runs"])
        lines.append(f"| {row.partition(':')[2]} | {m['n_idis']:,.0f} ({m['n_global']:.0f} / {m['n_local']:,.0f}) | "
                     f"{m['n_queries']:,.0f} | {m['seconds']:.2f} | {100 * m['initialization_rate']:.1f}% | {runs} | "
                     f"{PAPER_AEQUITAS[row][0]} |")
    lines += ["", "Counting: ours = unique non-protected projections, global ∪ local; the paper's = counterpart "
              "vector + vote label (algorithms.md §8), so not directly comparable.", ""]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    results = run_table(ROWS, ["aequitas"], ["random"], args.budget, args.repeats)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "aequitas_random.json").write_text(json.dumps(results, indent=2, default=str))
    (args.out / "aequitas_random.md").write_text(markdown(results))
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
