"""``chiralfair estimate``: the share of individuals a model discriminates, whom it harms and how badly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from .console import ESTIMATE_FLAGS, FLAGS, fail, hand_over, only_with_data, parse_bins, refusals, setup_logging
from .options import (
    BinsOpt,
    CacheOpt,
    ChecksumOpt,
    ConstraintOpt,
    CoupleOpt,
    DataHomeOpt,
    DataOpt,
    LabelOpt,
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
    TestOpt,
    TestSizeOpt,
    TrustOpt,
    VerboseOpt,
)


def estimate(
    dataset: RunDatasetOpt = None,
    protected: ProtectedOpt = None,
    model: RunModelOpt = None,
    population: Annotated[str, typer.Option(
        help="Individuals: test (the held-out rows), rows (every row of the data) or domain (uniform draws).")
    ] = "test",
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    margin: Annotated[float, typer.Option(help="Stop when the interval lies within this of the estimate.")] = 0.005,
    max_queries: Annotated[int | None, typer.Option(help="Query budget (default: none but the margin).")] = None,
    method: Annotated[str, typer.Option(help="Interval: wilson or clopper-pearson.")] = "wilson",
    gamma: Annotated[float | None, typer.Option(
        help="Count a pair only if its probability gap is at least this (KOSEI's gamma).")] = None,
    favourable: Annotated[str | None, typer.Option(
        help="The favourable outcome: with --data a label value (default: the positive class); on a benchmark the "
             "label 0 or 1 (default: the dataset's; compas: 0).")] = None,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    verbose: VerboseOpt = False,
    data: DataOpt = None,
    label: LabelOpt = None,
    positive_class: PositiveOpt = None,
    bins: BinsOpt = None,
    schema: SchemaOpt = None,
    test: TestOpt = None,
    test_size: TestSizeOpt = None,
    trust_model_file: TrustOpt = False,
    model_output: ModelOutputOpt = None,
    couple: CoupleOpt = None,
    constraint: ConstraintOpt = None,
    plausible_only: PlausibleOpt = False,
    model_card: ModelCardOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Estimate the share of individuals a model discriminates, whom it harms and how badly."""
    from ..pipeline.checks import check_protected_given, counterpart_options
    from ..pipeline.exports import check_model_card_path

    params: dict[str, Any] = {"confidence": confidence, "margin": margin, "max_queries": max_queries, "method": method,
              "gamma": gamma, "plausible_only": plausible_only}
    with refusals(FLAGS + ESTIMATE_FLAGS):
        check_protected_given(protected, name="--protected")
        check_model_card_path(model_card, model_file=model if data is not None else None)
        counterparts = counterpart_options(couple, constraint)
        if data is None:
            only_with_data(label=label, positive_class=positive_class, bins=bins, schema=schema, test=test,
                           model_output=model_output, trust_model_file=trust_model_file)
            from ..pipeline import RunConfig, estimate_benchmark, protected_list

            config = RunConfig(dataset=dataset or "census", protected=protected_list(protected), model=model or "dnn",
                               random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                               allow_checksum_mismatch=allow_checksum_mismatch, **counterparts)
            setup_logging(verbose)
            verdict = estimate_benchmark(config, population=population, favourable=_label(favourable), **params)
        else:
            _own_data_only(dataset, model, data)
            from ..pipeline import estimate as estimate_objects

            setup_logging(verbose)
            verdict = estimate_objects(model, data, label=label, positive_class=positive_class,
                                       favourable=favourable, protected=protected,
                                       bins=parse_bins(bins) if bins else None, schema=schema, test=test,
                                       test_size=test_size, population=population, random_state=random_state,
                                       trust_model_file=trust_model_file, model_output=model_output,
                                       couple=counterparts["couple"],
                                       constraints=list(counterparts["constraints"]) or None, **params)
        hand_over(verdict, model_card=model_card, mlflow=mlflow, model=model if data is not None else None,
                  trust_model_file=trust_model_file)
    if json_out:
        typer.echo(verdict.to_json())
        return
    typer.echo(verdict.summary())
    m = verdict.meta
    typer.echo(f"model: {m['dataset']} / {m['model']} (F1 {m['model_f1']:.3f}, accuracy {m['model_accuracy']:.3f} on "
               f"{m['model_evaluated_on']}), random_state {random_state}")


def _label(text: str | None):
    """A benchmark's favourable label, 0 or 1, as given on the command line."""
    if text is None:
        return None
    from ..exceptions import ConfigError

    if text.strip() not in ("0", "1"):
        raise ConfigError(f"--favourable on a benchmark is the label 0 or 1, got {text!r}")
    return int(text)


def _own_data_only(dataset, model, data: Path) -> None:
    if dataset is not None:
        fail(ValueError("--data and --dataset are two forms of the command: your data file with your model file "
                        "(--data FILE --model FILE), or a benchmark with a zoo model, not both"))
