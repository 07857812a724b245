"""``chiralfair estimate``: the share of individuals a model discriminates, whom it harms and how badly."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from .console import ESTIMATE_FLAGS, FLAGS, hand_over, refusals, setup_logging
from .options import (
    BomOpt,
    Counterparts,
    GammaOpt,
    Inputs,
    MaxQueriesOpt,
    MlflowOpt,
    ModelCardOpt,
    OutcomeOpt,
    PopulationOpt,
    Streaming,
    VerboseOpt,
    own_data_counterparts,
    stream_path,
    with_option_groups,
)


@with_option_groups
def estimate(
    *,
    inputs: Inputs,
    population: PopulationOpt = "test",
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
    margin: Annotated[float, typer.Option(help="Stop when the interval lies within this of the estimate.")] = 0.005,
    max_queries: MaxQueriesOpt = None,
    method: Annotated[str, typer.Option(help="Interval: clopper-pearson (the gate's) or wilson.")] = "clopper-pearson",
    gamma: GammaOpt = None,
    favourable: OutcomeOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    verbose: VerboseOpt = False,
    counterparts: Counterparts,
    streaming: Streaming,
    model_card: ModelCardOpt = None,
    bom: BomOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Estimate the share of individuals a model discriminates, whom it harms and how badly.

    With --batch-rows, or a Parquet folder or URL as --data or --test, every row is read in batches and checked
    (memory bounded by the batch), on this process or on a Dask cluster (--workers, --scheduler).

    The verdict is printed first; then the model card, the BOM and the MLflow run are written (a failure there is
    one error line and exit 2).
    """
    params: dict[str, Any] = {"confidence": confidence, "margin": margin, "max_queries": max_queries, "method": method,
              "gamma": gamma, "plausible_only": counterparts.plausible_only}
    with refusals(FLAGS + ESTIMATE_FLAGS):
        inputs.check(model_card, bom=bom, mlflow=mlflow)
        couplings = counterparts.options()
        if inputs.data is None:
            inputs.refuse_own_data_flags()
            refuse_streaming_on_a_benchmark(streaming)
            from ..pipeline import estimate_benchmark

            config = inputs.benchmark_config(**couplings)
            setup_logging(verbose)
            verdict = estimate_benchmark(config, population=population, favourable=_label(favourable), **params)
        else:
            inputs.refuse_both_forms("the command")
            from ..pipeline import estimate as estimate_objects

            setup_logging(verbose)
            own, params = streamed(inputs, streaming, params)
            verdict = estimate_objects(inputs.model, stream_path(inputs.data), favourable=favourable,
                                       population=population, **own, **own_data_counterparts(couplings), **params)
    if json_out:
        typer.echo(verdict.to_json())
    else:
        typer.echo(verdict.summary())
        m = verdict.meta
        f1 = (f"{m['model_f1']:.3f}" if m.get("model_one_class") is None else
              f"undefined: the held-out rows hold one class, label {m['model_one_class']}")
        typer.echo(f"model: {m['dataset']} / {m['model']} (F1 {f1}, accuracy {m['model_accuracy']:.3f} "
                   f"on {m['model_evaluated_on']}), random_state {inputs.random_state}")
    with refusals():
        hand_over(verdict, model_card=model_card, bom=bom, mlflow=mlflow,
                  model=inputs.model_file or (inputs.model or "dnn"), trust_model_file=inputs.trust_model_file,
                  data_files=inputs.data_files())


def refuse_streaming_on_a_benchmark(streaming: Streaming) -> None:
    """Refuse the streaming flags on a benchmark by name (its rows are in memory).

    Parameters
    ----------
    streaming : Streaming

    Raises
    ------
    ConfigError
        When a streaming flag is given.
    """
    if streaming.given():
        from ..exceptions import ConfigError

        raise ConfigError("--batch-rows, --domain-sample, --workers and --scheduler stream your own --data or --test; "
                          "a benchmark by name is read in memory")


def streamed(inputs, streaming: Streaming, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The own-data keyword arguments (a URL as --test kept as text) and the estimate's, streaming ones added.

    A streamed verdict checks every row, so the sampling flags at their defaults (--margin) are dropped; one given
    another value is passed on, and refused there.

    Parameters
    ----------
    inputs : Inputs
    streaming : Streaming
    params : dict
        The estimate's keyword arguments from the flags.

    Returns
    -------
    own : dict
        :meth:`Inputs.own_data`, ``test`` an fsspec URL kept as text.
    params : dict
        With the streaming keyword arguments when the rows are streamed.
    """
    from ..datasets.stream import is_stream

    own = inputs.own_data()
    own["test"] = stream_path(own["test"])
    data = stream_path(inputs.data)
    # as the door decides (pipeline.stream.wants_stream): a stream as --data streams the verdict, whatever --test is
    if not (streaming.given() or is_stream(data) or (own["test"] is not None and is_stream(own["test"]))):
        return own, params
    params = dict(params)
    if params.get("margin") == 0.005:
        params.pop("margin")
    return own, {**params, **streaming.params()}


def _label(text: str | None):
    """A benchmark's favourable label, 0 or 1, as given on the command line."""
    if text is None:
        return None
    from ..exceptions import ConfigError

    if text.strip() not in ("0", "1"):
        raise ConfigError(f"--favourable on a benchmark is the label 0 or 1, got {text!r}")
    return int(text)

