"""The I&D paper's Table 2 for chiralfair: IDIs found by each generator from random, cluster and I&D seeds.

Run by hand:  python benchmarks/table2.py [--rows census:age ...] [--generators aequitas ...]
              [--seeds random cluster iandd] [--repeats 10] [--budget 100] [--name table2]
              [--scheduler local|sync|ADDRESS] [--workers N] [--quick] [--grid-out DIR]

A thin call of ``chiralfair reproduce table2`` (:func:`chiralfair.experiments.presets.reproduce`): the preset's grid
(the seven rows, the paper's DNN trained once with random_state 0, max_global = max_local = ``--budget``,
random states 0 .. ``--repeats`` - 1 for the seeds and the search), narrowed by the flags. The grid folder
(default ``reproduce/<name>``) keeps one folder per cell, so a stopped run resumes where it stopped.

Counting rule (ours): unique non-protected projections, so an IDI and its counterpart count once; global and
local are disjoint and n_idis = n_global + n_local. I&D counts (counterpart vector, vote label) tuples
(algorithms.md §8 "I&D counting"), so the paper's numbers are not directly comparable with ours.

Copies ``<name>.md`` (medians with IQR, ratios, the paper's numbers, claims) and
``<name>.png`` to ``benchmarks/results/``, with ``<name>.json`` (parameters, wall time, load average, CPU count).
"""

from __future__ import annotations

import argparse

from reproduce_preset import add_common_arguments, run_preset

from chiralfair.experiments.presets import preset_grid


def main(argv=None):
    axes = preset_grid("table2")["axes"]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", default=axes["rows"], help="dataset:protected_attribute")
    parser.add_argument("--generators", nargs="+", default=axes["generators"])
    parser.add_argument("--seeds", nargs="+", default=axes["seeds"], help="seed strategies")
    parser.add_argument("--budget", type=int, default=None,
                        help="only the paper's protocol, max_global = max_local = BUDGET (default: the preset's "
                             "budgets, the paper's 100/100 and the equal-query budgets)")
    add_common_arguments(parser, name="table2")
    args = parser.parse_args(argv)
    budgets = axes["budgets"] if args.budget is None else [[args.budget, args.budget]]
    overrides = {"axes": {"rows": args.rows, "generators": args.generators, "seeds": args.seeds,
                          "budgets": budgets}}
    return run_preset("table2", args, overrides)


if __name__ == "__main__":
    main()
