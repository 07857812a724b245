"""``chiralfair retrain``: retrain a model with the IDIs found, and measure it before and after on held-out rows."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .console import (
    FLAGS,
    fail,
    hand_over,
    only_with_data,
    parse_bins,
    parse_numbers,
    progress,
    refusals,
    setup_logging,
)
from .options import (
    BinsOpt,
    CacheOpt,
    ChecksumOpt,
    DataHomeOpt,
    DataOpt,
    FavourableOpt,
    GeneratorOpt,
    JsonOpt,
    LabelOpt,
    MaxGlobalOpt,
    MaxLocalOpt,
    MlflowOpt,
    ModelCardOpt,
    ModelOutputOpt,
    PositiveOpt,
    ProtectedOpt,
    RandomOpt,
    RunDatasetOpt,
    RunModelOpt,
    SchemaOpt,
    SeedsOpt,
    TestOpt,
    TestSizeOpt,
    TrustOpt,
    VerboseOpt,
)


def retrain(
    dataset: RunDatasetOpt = None,
    protected: ProtectedOpt = None,
    model: RunModelOpt = None,
    seeds: SeedsOpt = "iandd",
    generator: GeneratorOpt = "aequitas",
    max_global: MaxGlobalOpt = 100,
    max_local: MaxLocalOpt = 100,
    out: Annotated[Path, typer.Option(help="Folder for retrain.json, report.md, the plot and the model.")] = Path(
        "retrain"),
    share: Annotated[str, typer.Option(
        help="Share(s) of the IDI pairs added, in (0, 1], comma-separated for a sweep, e.g. 1.0,0.5,0.05.")] = "1.0",
    method: Annotated[str, typer.Option(
        help="Mitigation method(s), comma-separated: paper, counterfactual, unaware, consistency.")] = "paper",
    protocol: Annotated[str, typer.Option(
        help="holdout (fresh search, IDI rates with 95% intervals), paper (adds remaining IDIs; leaks) or both.")
    ] = "holdout",
    pairs: Annotated[str, typer.Option(help="Add both rows of each IDI pair, or the IDI only: both, idi.")] = "both",
    mode: Annotated[str, typer.Option(
        help="paper on the DNN: auto (fine-tune 10 epochs), fine-tune, or retrain (from scratch).")] = "auto",
    max_f1_loss: Annotated[float, typer.Option(help="F1 a method may cost on the test rows and still improve.")
    ] = 0.01,
    require_improvement: Annotated[bool, typer.Option(
        "--require-improvement", help="Exit with code 1 when a method does not improve (the guardrail).")] = False,
    from_run: Annotated[Path | None, typer.Option(
        help="Reuse the IDIs of an earlier 'chiralfair run --out' folder (benchmark or your own data) instead of "
             "searching.")] = None,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    data: DataOpt = None,
    label: LabelOpt = None,
    positive_class: PositiveOpt = None,
    favourable: FavourableOpt = None,
    bins: BinsOpt = None,
    schema: SchemaOpt = None,
    test: TestOpt = None,
    test_size: TestSizeOpt = None,
    trust_model_file: TrustOpt = False,
    model_output: ModelOutputOpt = None,
    model_card: ModelCardOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Mitigate a model (retrain with IDIs, counterfactual augmentation, unawareness, consistency), leak-free."""
    from ..pipeline.checks import check_protected_given, check_retrain_options
    from ..pipeline.exports import check_model_card_path

    with refusals(FLAGS + ("protocol", "pairs", "mode", "share")):
        check_protected_given(protected, name="--protected")
        check_model_card_path(model_card)
        shares = parse_numbers(share, "--share", "1.0,0.5,0.05")
        methods = check_retrain_options(method=[m.strip() for m in method.split(",") if m.strip()], share=shares,
                                        protocol=protocol, pairs=pairs, mode=mode, max_f1_loss=max_f1_loss,
                                        model=(model or "dnn") if data is None and from_run is None else None)
        params = {"share": shares, "protocol": protocol, "pairs": pairs, "mode": mode, "method": list(methods),
                  "max_f1_loss": max_f1_loss}
        setup_logging(verbose)
        with progress(["data", "model", "seeds", "search", "retrain"], enabled=not json_out) as on_step:
            result = _retrain(dataset, protected, model, seeds, generator, max_global, max_local, out, from_run,
                              random_state, data_home, cache_dir, allow_checksum_mismatch, data, label,
                              positive_class, favourable, bins, schema, test, test_size, trust_model_file,
                              model_output, on_step, params)
        retrained = _retrained_model(result, model_card)
        hand_over(result, model_card=model_card, mlflow=mlflow, folder=out, model=retrained)
    if json_out:
        typer.echo(result.to_json())
    else:
        typer.echo(result.to_markdown().split("\n\nRates are")[0])
        for note in result.notes:
            typer.echo(f"  note: {note}")
        typer.echo(f"retrain folder: {out}")
    if require_improvement and not result.improved:
        typer.secho("--require-improvement: " + " ".join(result.verdict_lines()), err=True, fg=typer.colors.RED)
        raise typer.Exit(code=1)


def _retrained_model(result, model_card):
    """The retrained sklearn model a skops card (``--model-card FILE.md``) describes, when there is one."""
    if model_card is None or Path(model_card).suffix.lower() != ".md" or not result.models:
        return None
    return getattr(result.model, "estimator", None)


def _retrain(dataset, protected, model, seeds, generator, max_global, max_local, out, from_run, random_state,
             data_home, cache_dir, allow_checksum_mismatch, data, label, positive_class, favourable, bins, schema,
             test, test_size, trust_model_file, model_output, on_step, params):
    from ..pipeline import RunConfig, protected_list

    if from_run is not None:
        from ..pipeline import retrain_from_run

        only_with_data(label=label, positive_class=positive_class, favourable=favourable, bins=bins, schema=schema)
        is_file = model is not None and Path(model).suffix != ""
        expect = {"dataset": dataset, "protected": protected_list(protected) or None,
                  "model": None if is_file else model}
        return retrain_from_run(from_run, data=data, model=model if is_file else None, test=test,
                                trust_model_file=trust_model_file, expect=expect, out=out, random_state=random_state,
                                data_home=data_home, cache_dir=cache_dir,
                                allow_checksum_mismatch=allow_checksum_mismatch, on_step=on_step, **params)
    if data is None:
        from ..pipeline import retrain_benchmark

        only_with_data(label=label, positive_class=positive_class, favourable=favourable, bins=bins, schema=schema,
                       test=test, model_output=model_output, trust_model_file=trust_model_file)
        config = RunConfig(dataset=dataset or "census", protected=protected_list(protected), model=model or "dnn",
                           seeds=seeds, generator=generator, max_global=max_global, max_local=max_local,
                           random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                           allow_checksum_mismatch=allow_checksum_mismatch)
        return retrain_benchmark(config, out=out, on_step=on_step, **params)
    if dataset is not None:
        fail(ValueError("--data and --dataset are two forms of retrain: your data file with your model file (--data "
                        "FILE --model FILE), or a benchmark with a zoo model, not both"))
    from ..pipeline import retrain as retrain_objects

    return retrain_objects(model, data, label=label, positive_class=positive_class, favourable=favourable,
                           protected=protected, bins=parse_bins(bins) if bins else None, schema=schema, test=test,
                           test_size=test_size, generator=generator, seeds=seeds, max_global=max_global,
                           max_local=max_local, random_state=random_state, trust_model_file=trust_model_file,
                           model_output=model_output, out=out, on_step=on_step, **params)
