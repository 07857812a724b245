"""``chiralfair retrain``: retrain a model with the IDIs found, and measure it before and after on held-out rows."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..pipeline.checks import DEFAULT_MITIGATION_METHOD, MITIGATION_METHODS
from .console import FLAGS, hand_over, parse_numbers, progress, refusals, setup_logging
from .options import (
    BomOpt,
    Counterparts,
    FavourableOpt,
    Inputs,
    JsonOpt,
    MlflowOpt,
    ModelCardOpt,
    Search,
    VerboseOpt,
    own_data_counterparts,
    with_option_groups,
)


@with_option_groups
def retrain(
    *,
    inputs: Inputs,
    search: Search,
    out: Annotated[Path, typer.Option(help="Folder for retrain.json, report.md, the plot and the model.")] = Path(
        "retrain"),
    share: Annotated[str, typer.Option(
        help="Share(s) of the IDI pairs added, in (0, 1], comma-separated for a sweep, e.g. 1.0,0.5,0.05.")] = "1.0",
    method: Annotated[str, typer.Option(
        help=f"Mitigation method(s), comma-separated: {', '.join(MITIGATION_METHODS)} (auto: the lowest IDI rate "
             "within the F1 and group bounds, chosen on validation rows over every registered method), or an "
             "installed plugin's. A method that cannot train the model's kind is skipped with a note.")
    ] = DEFAULT_MITIGATION_METHOD,
    protocol: Annotated[str, typer.Option(
        help="holdout (fresh search, IDI rates with 95% intervals), paper (adds remaining IDIs; leaks) or both.")
    ] = "holdout",
    pairs: Annotated[str, typer.Option(help="Add both rows of each IDI pair, or the IDI only: both, idi.")] = "both",
    mode: Annotated[str, typer.Option(
        help="paper on the DNN: auto (fine-tune 10 epochs), fine-tune, or retrain (from scratch).")] = "auto",
    max_f1_loss: Annotated[float, typer.Option(
        help="F1 a method may cost on the test rows and still improve (raised to the model's own F1 spread over "
             "training seeds when that is larger).")] = 0.01,
    max_group_increase: Annotated[float, typer.Option(
        help="How much a method may raise the demographic-parity or equalized-odds difference and still "
             "improve.")] = 0.02,
    spread_seeds: Annotated[int, typer.Option(
        help="Training seeds over which the model's F1 spread is measured on validation rows (0: not measured).")
    ] = 3,
    require_improvement: Annotated[bool, typer.Option(
        "--require-improvement", help="Exit with code 1 when a method does not improve (the guardrail).")] = False,
    from_run: Annotated[Path | None, typer.Option(
        help="Reuse the IDIs of an earlier 'chiralfair run --out' folder (benchmark or your own data) instead of "
             "searching.")] = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    favourable: FavourableOpt = None,
    counterparts: Counterparts,
    model_card: ModelCardOpt = None,
    bom: BomOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Mitigate a model (retrain with IDIs, counterfactual augmentation, unawareness, consistency), leak-free.

    The table is printed first; then the model card, the BOM (of the retrained model) and the MLflow run are
    written (a failure there is one error line and exit 2, the retrain folder kept).
    """
    from ..pipeline.checks import check_card_of_retrained, check_retrain_options

    with refusals(FLAGS + ("protocol", "pairs", "mode", "share", "max_group_increase", "spread_seeds")):
        inputs.check(model_card, card_of_retrained=True, bom=bom, mlflow=mlflow)
        shares = parse_numbers(share, "--share", "1.0,0.5,0.05")
        zoo_model = (inputs.model or "dnn") if inputs.data is None and from_run is None else None
        methods = check_retrain_options(method=[m.strip() for m in method.split(",") if m.strip()], share=shares,
                                        protocol=protocol, pairs=pairs, mode=mode, max_f1_loss=max_f1_loss,
                                        model=zoo_model, max_group_increase=max_group_increase,
                                        spread_seeds=spread_seeds)
        check_card_of_retrained(model_card, model_file=inputs.model_file, zoo_model=zoo_model)
        couplings = counterparts.options()
        params = {"share": shares, "protocol": protocol, "pairs": pairs, "mode": mode, "method": list(methods),
                  "max_f1_loss": max_f1_loss, "max_group_increase": max_group_increase,
                  "spread_seeds": spread_seeds, "plausible_only": counterparts.plausible_only}
        setup_logging(verbose)
        with progress(["data", "model", "seeds", "search", "retrain"], enabled=not json_out) as on_step:
            result = _retrain(inputs, search, favourable, out, from_run, on_step, params, couplings)
        retrained = _retrained_model(result, model_card)
    if json_out:
        typer.echo(result.to_json())
    else:
        typer.echo(result.to_markdown().split("\n\nRates are")[0])
        for row in result.after:
            if row.get("choice"):  # what a method chose on validation rows and why; auto's candidates: report.md
                typer.echo(f"  {row['method']}: {row['choice'].split('. Bounds on')[0]}")
        for note in result.notes:
            typer.echo(f"  note: {note}")
        typer.echo(f"retrain folder: {out}")
    with refusals():
        hand_over(result, model_card=model_card, bom=bom, mlflow=mlflow, folder=out, model=retrained,
                  bom_model=_retrained_file(result, out), data_files=inputs.data_files())
    if require_improvement and not result.improved:
        typer.secho("--require-improvement: " + " ".join(result.verdict_lines()), err=True, fg=typer.colors.RED)
        raise typer.Exit(code=1)


def _retrained_model(result, model_card):
    """The retrained sklearn model a skops card (``--model-card FILE.md``) describes, when there is one."""
    if model_card is None or Path(model_card).suffix.lower() != ".md" or not result.models:
        return None
    from ..exceptions import ModelCapabilityError

    try:
        return result.model  # the model kept: the user's kind of model
    except ModelCapabilityError:  # fitted on the codes of a model that speaks another language: none to describe
        return None


def _retrained_file(result, out: Path) -> Path | str:
    """The file of the retrained model (its first method's) that a BOM names, else the method's name."""
    method = result.methods[0] if result.methods else "retrained"
    saved = sorted(Path(out).glob(f"model-{method}.*"))
    return saved[0] if saved else f"model-{method}"


def _retrain(inputs: Inputs, search: Search, favourable, out, from_run, on_step, params, couplings):
    if from_run is not None:
        from ..pipeline import protected_list, retrain_from_run

        _refuse_flags_a_run_fixes(from_run, label=inputs.label, positive_class=inputs.positive_class,
                                  favourable=favourable, bins=inputs.bins, schema=inputs.schema)
        _refuse_couplings_with_a_run(couplings)
        is_file = inputs.model is not None and Path(inputs.model).suffix != ""
        expect = {"dataset": inputs.dataset, "protected": protected_list(inputs.protected) or None,
                  "model": None if is_file else inputs.model}
        return retrain_from_run(from_run, data=inputs.data, model=inputs.model if is_file else None, test=inputs.test,
                                trust_model_file=inputs.trust_model_file, expect=expect, out=out,
                                random_state=inputs.random_state, data_home=inputs.data_home,
                                cache_dir=inputs.cache_dir, allow_checksum_mismatch=inputs.allow_checksum_mismatch,
                                on_step=on_step, **params)
    if inputs.data is None:
        from ..pipeline import retrain_benchmark

        inputs.refuse_own_data_flags(favourable)
        return retrain_benchmark(inputs.benchmark_config(**search.params(), **couplings), out=out, on_step=on_step,
                                 **params)
    inputs.refuse_both_forms("retrain")
    from ..pipeline import retrain as retrain_objects

    return retrain_objects(inputs.model, inputs.data, favourable=favourable, **inputs.own_data(),
                           **search.params(own_model=True), out=out, on_step=on_step,
                           **own_data_counterparts(couplings), **params)


def _refuse_flags_a_run_fixes(from_run, **given) -> None:
    """--from-run reads the label, its positive class, the favourable outcome, bins and schema from the run folder."""
    from ..exceptions import ConfigError

    flags = [f"--{name.replace('_', '-')}" for name, value in given.items() if value not in (None, False)]
    if flags:
        raise ConfigError(f"{', '.join(flags)} {'is' if len(flags) == 1 else 'are'} not used with --from-run: the run "
                          f"folder {str(from_run)!r} already fixes the data's label, positive class, favourable "
                          "outcome, bins and schema, as the run read them (--data, --model and --test only say "
                          f"where its files are now, checked against it); leave {', '.join(flags)} out")


def _refuse_couplings_with_a_run(couplings) -> None:
    """--from-run retrains with the run's own counterparts (its IDIs were found with them)."""
    if couplings["couple"] is not None or couplings["constraints"]:
        from ..exceptions import ConfigError

        raise ConfigError("--couple and --constraint do not apply with --from-run: the run's IDIs were found with "
                          "its own couplings and constraints, which retraining keeps (run again with the flags)")
