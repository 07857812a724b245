"""Mitigation on the seven rows, DNN, 100/100, leak-free: the I&D paper's Table 4/5 and three methods beside it.

Run by hand from the repository root (data and model cache from CHIRALFAIR_DATA / CHIRALFAIR_CACHE):

    python benchmarks/retrain.py --targets census:sex                    # all four generators
    python benchmarks/retrain.py --targets census:sex compas:race --generators aequitas adf --repeats 3
    python benchmarks/retrain.py --models lr hgb --targets census:sex compas:race --name retrain-sklearn
    python benchmarks/retrain.py --methods counterfactual consistency --fine-tune-epochs 10 --name retrain-finetune
    python benchmarks/retrain.py --couple none --name retrain-uncoupled     # the paper's setting (no coupling)

A thin call of ``chiralfair reproduce table4`` (:func:`chiralfair.experiments.presets.reproduce`), leak-free.
Each cell (target, generator, random_state) searches the zoo model (``random_state=0``, cached) at max_global =
max_local = ``--budget`` with cluster seeds (the paper's "original" seeds) and with I&D seeds, both drawn from the
model's training rows only; each approach's IDIs (both rows of each pair, labelled by the vote; pairs with a test
row's projection excluded) are added to the training split and the model is trained again (method ``paper``: the
DNN fine-tuned 10 epochs with ``--mode auto``, sklearn models refitted). ``counterfactual``, ``unaware``,
``consistency`` (DNN only) and ``auto`` run beside it on the same held-out rows, once per target and repeat.

Counterparts: the datasets' default couplings (census: relationship Husband <-> Wife with sex), as every front door
uses them; ``--couple none`` turns them off (the paper's setting, which the preset itself keeps). The tables say
which.

- held-out (the headline): the IDI rate over the test rows (95% Clopper-Pearson, the verdict's interval), F1, the
  guardrail.
- paper protocol: the union of both approaches' IDIs re-checked against each retrained model ("remaining
  IDIs", Table 4). It leaks.

The fresh search of the holdout protocol is skipped (``search = false``) to save CPU. The grid folder keeps one
folder per cell, so a stopped run resumes without redoing finished cells. Copies ``<name>.md`` and
``<name>.json`` to ``benchmarks/results/`` (the Parquet table stays in the grid folder).
"""

from __future__ import annotations

import argparse

from reproduce_preset import add_common_arguments, run_preset

from chiralfair.experiments.presets import preset_grid


def main(argv=None):
    axes = preset_grid("table4")["axes"]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--targets", nargs="+", default=axes["rows"], help="dataset:protected-attribute")
    p.add_argument("--generators", nargs="+", default=axes["generators"])
    p.add_argument("--budget", type=int, default=100, help="max_global = max_local")
    p.add_argument("--mode", default="auto", choices=["auto", "retrain", "fine-tune"],
                   help="how paper trains the DNN again (auto: fine-tune 10 epochs)")
    p.add_argument("--models", nargs="+", default=axes["models"], help="zoo models")
    p.add_argument("--methods", nargs="+", default=None, help="mitigation methods (default: the preset's; "
                   "consistency is left out for sklearn models)")
    p.add_argument("--couple", choices=["default", "none"], default="default",
                   help="the datasets' default couplings (census: relationship with sex), or none (the paper's)")
    p.add_argument("--fine-tune-epochs", type=int, default=None,
                   help="counterfactual and consistency fine-tune the DNN under test this many epochs instead of "
                        "training from scratch")
    add_common_arguments(p, name="retrain")
    args = p.parse_args(argv)
    methods = args.methods or [m for m in [*preset_grid("table4")["retrain"]["methods"], "auto"]
                               if m != "consistency" or args.models == ["dnn"]]
    overrides = {"axes": {"rows": args.targets, "generators": args.generators, "models": args.models,
                          "budgets": [[args.budget, args.budget]]},
                 "retrain": {"mode": args.mode, "methods": methods}, "couple": args.couple == "default"}
    if args.fine_tune_epochs is not None:
        overrides["retrain"]["method_params"] = {m: {"fine_tune_epochs": args.fine_tune_epochs}
                                                 for m in methods if m in ("counterfactual", "consistency")}
    return run_preset("table4", args, overrides)


if __name__ == "__main__":
    main()
