"""The I&D paper's Figure 6 (AEQUITAS on LR / SVC / DTC / MLP, global and local IDIs) and Figure 7 (IDIs as the
number of seeds grows): thin calls of ``chiralfair reproduce fig6`` and ``reproduce fig7``.

Run by hand:  python benchmarks/figures.py fig6 [--rows census:sex ...] [--models lr svc dtc mlp] [--repeats 10]
              python benchmarks/figures.py fig7 [--rows census:age ...] [--repeats 10]
              [--scheduler local|sync|ADDRESS] [--workers N] [--quick] [--grid-out DIR] [--name NAME]

The preset's grid (the model trained once with random_state 0, random states 0 .. repeats - 1 for the seeds and
the search), narrowed by ``--rows`` and ``--models``. Copies ``<name>.md`` (medians with IQR, ratios, whether the
paper's claim holds at each row, model and limit) and the plots to ``benchmarks/results/`` (``<name>.parquet``
stays in the grid folder), with ``<name>.json`` (parameters, wall time, load average, CPU count).
"""

from __future__ import annotations

import argparse

from reproduce_preset import add_common_arguments, run_preset

from chiralfair.experiments.presets import preset_grid


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("figure", choices=["fig6", "fig7"])
    known, _ = parser.parse_known_args(argv)
    axes = preset_grid(known.figure)["axes"]
    parser.add_argument("--rows", nargs="+", default=axes["rows"], help="dataset:protected_attribute")
    parser.add_argument("--models", nargs="+", default=axes["models"])
    add_common_arguments(parser, name=known.figure)
    args = parser.parse_args(argv)
    return run_preset(args.figure, args, {"axes": {"rows": args.rows, "models": args.models}})


if __name__ == "__main__":
    main()
