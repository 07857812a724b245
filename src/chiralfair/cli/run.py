"""``chiralfair run``: find IDIs of a model on a benchmark (or of your model file on your data), with the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .console import fail, hand_over, only_with_data, parse_bins, progress, refusals, setup_logging
from .options import (
    BinsOpt,
    CacheOpt,
    ChecksumOpt,
    ConstraintOpt,
    CoupleOpt,
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
    PlausibleOpt,
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

STEPS = ["data", "model", "seeds", "search", "verdict"]


def run(
    dataset: RunDatasetOpt = None,
    protected: ProtectedOpt = None,
    model: RunModelOpt = None,
    seeds: SeedsOpt = "iandd",
    generator: GeneratorOpt = "aequitas",
    max_global: MaxGlobalOpt = 100,
    max_local: MaxLocalOpt = 100,
    random_state: RandomOpt = 0,
    out: Annotated[Path | None, typer.Option(help="Run folder for result.json, idis.parquet, report.md.")] = None,
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
    diversity: Annotated[bool, typer.Option(
        help="Also measure the diversity of the IDIs found: SHAP clusters, pairwise distance, decision "
             "paths.")] = False,
    couple: CoupleOpt = None,
    constraint: ConstraintOpt = None,
    plausible_only: PlausibleOpt = False,
    model_card: ModelCardOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Find IDIs of a model on a benchmark dataset (or on your --data with your --model file); write the run folder."""
    from ..pipeline.checks import check_protected_given, counterpart_options
    from ..pipeline.exports import check_model_card_path

    with refusals():
        check_protected_given(protected, name="--protected")
        check_model_card_path(model_card, model_file=model if data is not None else None)
        counterparts = counterpart_options(couple, constraint)
        if data is None:
            only_with_data(label=label, positive_class=positive_class, favourable=favourable, bins=bins,
                           schema=schema, test=test, model_output=model_output, trust_model_file=trust_model_file)
            outcome = _run_benchmark(dataset or "census", protected, model or "dnn", seeds, generator, max_global,
                                     max_local, random_state, out, data_home, cache_dir, allow_checksum_mismatch,
                                     diversity, json_out, verbose, plausible_only=plausible_only, **counterparts)
            summary = outcome.summary()
            done = outcome
        else:
            if dataset is not None:
                fail(ValueError("--data and --dataset are two forms of run: give your own data file with a model "
                                "file (--data FILE --model FILE), or a benchmark with a zoo model (--dataset NAME "
                                "--model NAME), not both"))
            from ..pipeline import audit

            setup_logging(verbose)
            with progress(STEPS, enabled=not json_out) as on_step:
                result = audit(model, data, label=label, positive_class=positive_class, favourable=favourable,
                               protected=protected, bins=parse_bins(bins) if bins else None, schema=schema,
                               test=test, test_size=test_size, generator=generator, seeds=seeds,
                               max_global=max_global, max_local=max_local, random_state=random_state, out=out,
                               trust_model_file=trust_model_file, model_output=model_output, diversity=diversity,
                               on_step=on_step, couple=counterparts["couple"],
                               constraints=list(counterparts["constraints"]) or None,
                               verdict_params={"plausible_only": True} if plausible_only else None)
            summary = result.to_dict()
            done = result
        hand_over(done, model_card=model_card, mlflow=mlflow, folder=out, model=model if data is not None else None,
                  trust_model_file=trust_model_file)
    _print(summary, json_out, out)


def _run_benchmark(dataset, protected, model, seeds, generator, max_global, max_local, random_state, out, data_home,
                   cache_dir, allow_checksum_mismatch, diversity, json_out, verbose, *, couple=None, constraints=(),
                   plausible_only=False):
    from ..pipeline import RunConfig, protected_list, run_experiment
    from ..reporting.report import write_run

    config = RunConfig(dataset=dataset, protected=protected_list(protected), model=model, seeds=seeds,
                       generator=generator, max_global=max_global, max_local=max_local, random_state=random_state,
                       data_home=data_home, cache_dir=cache_dir, allow_checksum_mismatch=allow_checksum_mismatch,
                       diversity=diversity, couple=couple, constraints=constraints, plausible_only=plausible_only)
    setup_logging(verbose)

    with progress(STEPS, enabled=not json_out) as on_step:
        outcome = run_experiment(config, on_step=on_step, out=out)
    if out is not None:
        write_run(outcome, out)
    return outcome


def _print(summary: dict, json_out: bool, out: Path | None) -> None:
    if json_out:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    from ..reporting.report import outcome_lines

    for line in outcome_lines(summary):
        typer.echo(line)
    if out is not None:
        typer.echo(f"run folder: {out}")
