"""Retraining with IDIs on the seven rows, DNN, 100/100: the I&D paper's Table 4/5 and a leak-free check (issue 12).

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/retrain.py --targets census:sex                    # all four generators
    python benchmarks/retrain.py --targets census:sex compas:race --generators aequitas adf --repeats 1

A thin call of ``chiralfair reproduce table4`` (:func:`chiralfair.reproduce.reproduce`). Each cell (target,
generator, random_state) searches the zoo DNN (``random_state=0``, cached) at max_global = max_local = ``--budget``
with cluster seeds (the paper's "original" seeds) and with I&D seeds; each approach's IDIs (all of them, both rows
of each pair, labelled by the vote) are added to the training split and the DNN is trained again (``--mode``).

- paper protocol: the union of both approaches' IDIs is re-checked against each retrained model; "remaining
  IDIs" are those still discriminatory (Table 4), and F1 on the test split before/after (Table 5). It leaks.
- holdout protocol: the IDI rate over the test split's rows, before and after.

The fresh search of the holdout protocol is skipped (``search = false``) to save CPU. The grid folder keeps one
folder per cell, so a stopped run resumes without redoing finished cells. Copies ``<name>.md`` and
``<name>.json`` to ``benchmarks/results/`` (the Parquet table stays in the grid folder).
"""

from __future__ import annotations

import argparse

from reproduce_preset import add_common_arguments, run_preset

from chiralfair.reproduce import preset_grid


def main(argv=None):
    axes = preset_grid("table4")["axes"]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=axes["rows"], help="dataset:protected-attribute")
    p.add_argument("--generators", nargs="+", default=axes["generators"])
    p.add_argument("--budget", type=int, default=100, help="max_global = max_local")
    p.add_argument("--mode", default="retrain", choices=["retrain", "fine-tune"], help="how the DNN is trained again")
    add_common_arguments(p, name="retrain")
    args = p.parse_args(argv)
    overrides = {"axes": {"rows": args.targets, "generators": args.generators,
                          "budgets": [[args.budget, args.budget]]}, "retrain": {"mode": args.mode}}
    return run_preset("table4", args, overrides)


if __name__ == "__main__":
    main()
