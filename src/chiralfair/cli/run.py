"""``chiralfair run``: find IDIs of a model on a benchmark (or of your model file on your data), with the verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from .console import fail, hand_over, progress, refusals, setup_logging
from .options import (
    BomOpt,
    Counterparts,
    FavourableOpt,
    Inputs,
    JsonOpt,
    MlflowOpt,
    ModelCardOpt,
    Search,
    SearchQueriesOpt,
    VerboseOpt,
    own_data_counterparts,
    with_option_groups,
)

STEPS = ["data", "model", "seeds", "search", "verdict"]


@with_option_groups
def run(
    *,
    inputs: Inputs,
    search: Search,
    max_queries: SearchQueriesOpt = None,
    out: Annotated[Path | None, typer.Option(help="Run folder for result.json, idis.parquet, report.md.")] = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
    favourable: FavourableOpt = None,
    diversity: Annotated[bool, typer.Option(
        help="Also measure the diversity of the IDIs found: SHAP clusters, pairwise distance, decision "
             "paths.")] = False,
    counterparts: Counterparts,
    model_card: ModelCardOpt = None,
    bom: BomOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Find IDIs of a model on a benchmark dataset (or on your --data with your --model file); write the run folder.

    The result is printed first; then the model card, the BOM and the MLflow run are written (a failure there is
    one error line and exit 2, the run folder kept).
    """
    with refusals():
        inputs.check(model_card, bom=bom, mlflow=mlflow)
        couplings = counterparts.options()
        if inputs.data is None:
            inputs.refuse_own_data_flags(favourable)
            config = inputs.benchmark_config(**search.params(), max_queries=max_queries, diversity=diversity,
                                             plausible_only=counterparts.plausible_only, **couplings)
            done = _run_benchmark(config, out, json_out, verbose)
            summary = done.summary()
        else:
            if inputs.dataset is not None:
                fail(ValueError("--data and --dataset are two forms of run: give your own data file with a model "
                                "file (--data FILE --model FILE), or a benchmark with a zoo model (--dataset NAME "
                                "--model NAME), not both"))
            from ..pipeline import audit

            setup_logging(verbose)
            with progress(STEPS, enabled=not json_out) as on_step:
                done = audit(inputs.model, inputs.data, favourable=favourable, **inputs.own_data(),
                             **search.params(own_model=True), max_queries=max_queries, out=out, diversity=diversity,
                             on_step=on_step,
                             **own_data_counterparts(couplings),
                             verdict_params={"plausible_only": True} if counterparts.plausible_only else None)
            summary = done.to_dict()
    _print(summary, json_out, out)
    with refusals():
        hand_over(done, model_card=model_card, bom=bom, mlflow=mlflow, folder=out,
                  model=inputs.model_file or (inputs.model or "dnn"), trust_model_file=inputs.trust_model_file,
                  data_files=inputs.data_files())


def _run_benchmark(config, out, json_out, verbose):
    from dataclasses import replace

    from ..pipeline import run_experiment
    from ..pipeline.config import validate_config
    from ..reporting.report import write_run
    from ..results.run_folder import StagedFolder

    validate_config(config)  # a refused flag before the folder is looked at, as run_experiment checks them
    setup_logging(verbose)
    # the search and the report written beside an earlier run in out, which they replace only once whole
    with StagedFolder(out) as folder:
        with progress(STEPS, enabled=not json_out) as on_step:
            outcome = run_experiment(config, on_step=on_step, out=folder.path)
        if folder.path is not None:
            write_run(outcome, folder.path)
    return replace(outcome, result=folder.moved(outcome.result))


def _print(summary: dict, json_out: bool, out: Path | None) -> None:
    if json_out:
        typer.echo(json.dumps(summary, indent=2, default=str))
        return
    from ..reporting.report import outcome_lines

    for line in outcome_lines(summary):
        typer.echo(line)
    if out is not None:
        typer.echo(f"run folder: {out}")
