"""AEQUITAS with random seeds (its original strategy) on census for sex, race and age at 100/100.

Run by hand:  python benchmarks/aequitas_random.py [--rows census:sex ...] [--repeats 3] [--budget 100]
              [--name aequitas_random] [--scheduler local|sync|ADDRESS] [--workers N] [--quick] [--grid-out DIR]

A thin call of ``chiralfair reproduce table2`` (:func:`chiralfair.experiments.presets.reproduce`) narrowed to its
aequitas / random cells on the three census rows: the paper's DNN trained once with random_state 0, 100 uniform
seeds from the domain, max_global = max_local = ``--budget``, random states 0 .. ``--repeats`` - 1 for the seeds
and the search. The grid folder (default ``reproduce/<name>``) keeps one folder per cell, so a stopped run
resumes where it stopped.

Reports the median n_idis, n_queries and search seconds beside the I&D paper's Table 2 figures for AEQUITAS with
its original seeds, as the preset's paper file holds them (``presets/paper/table2.toml``). Counting: I&D's rule is
counterpart vector plus vote label; ours counts unique non-protected projections, so the two are not directly
comparable.

Writes ``benchmarks/results/<name>.json`` (parameters, every cell's figures, wall time, load average) and
``<name>.md``.
"""

from __future__ import annotations

import argparse

from reproduce_preset import add_common_arguments, run_preset

from chiralfair.experiments.presets import paper_numbers

ROWS = ("census:sex", "census:race", "census:age")
GENERATOR = "aequitas"


def markdown(frame, record: dict) -> str:
    """The table of medians per row, each run's IDIs, and the paper's number for AEQUITAS's original seeds."""
    paper = paper_numbers("table2")
    original = paper["original_seeds"][GENERATOR]
    budgets = ", ".join(f"{g:.0f} / {loc:.0f}" for g, loc in dict.fromkeys(zip(frame["max_global"],
                                                                               frame["max_local"], strict=True)))
    lines = [f"# AEQUITAS with {original} seeds on census, max_global / max_local = {budgets} "
             f"(DNN, median of {frame['random_state'].nunique()} random states)", "",
             f"{record['date']}, chiralfair {record['chiralfair']}, {record['cpu_count']} CPUs, load average at "
             f"start {record['loadavg_start'][0]:.2f}, at end {record['loadavg_end'][0]:.2f}; "
             f"{record['n_failed']} cell(s) failed. Grid folder `{record['grid_folder']}`.", "",
             "| PA | n_idis (global / local) | n_queries | seconds | seed initialization rate | per run n_idis "
             "| paper (I&D counting) |", "|---|---|---|---|---|---|---|"]
    for row in record["overrides"]["axes"]["rows"]:
        runs = frame[frame["row"] == row].sort_values("random_state")
        figure = paper.get("rows", {}).get(GENERATOR, {}).get(row, {}).get("original")
        paper_text = "" if figure is None else f"{figure:,}"
        if runs.empty:
            lines.append(f"| {row} | no finished cell | | | | | {paper_text} |")
            continue
        m = runs.median(numeric_only=True)
        each = ", ".join(f"{n:.0f}" for n in runs["n_idis"])
        lines.append(f"| {row.partition(':')[2]} | {m['n_idis']:,.0f} ({m['n_global']:.0f} / {m['n_local']:,.0f}) "
                     f"| {m['n_queries']:,.0f} | {m['seconds_search']:.2f} | {100 * m['initialization_rate']:.1f}% "
                     f"| {each} | {paper_text} |")
    lines += ["", f"Paper: {paper['source']}.", "",
              f"Counting: ours = unique non-protected projections, global ∪ local; the paper's = "
              f"{paper['counting_rule'].partition(';')[0].removeprefix('I&D: ')} (algorithms.md §8), so not "
              "directly comparable.", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=list(ROWS), help="dataset:protected_attribute")
    parser.add_argument("--budget", type=int, default=100, help="max_global = max_local = number of seeds")
    add_common_arguments(parser, name="aequitas_random", repeats=3)
    args = parser.parse_args(argv)
    overrides = {"axes": {"rows": args.rows, "generators": [GENERATOR], "seeds": ["random"],
                          "budgets": [[args.budget, args.budget]]}}
    return run_preset("table2", args, overrides, markdown=markdown)


if __name__ == "__main__":
    main()
