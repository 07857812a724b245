"""``chiralfair check``: the fairness gate for a CI pipeline, with exit codes a script can branch on.

Exit codes: 0 pass (the interval's upper bound is at most --max-share and every protected group was tested), 1 fail
(its lower bound is above it), 2 undecided (the interval straddles it, or a group could not be tested), 3 a refusal
or a usage error (a bad flag, file or value; a misspelt option; a model card, BOM or MLflow run that could not be
written after the decision was printed), 4 an unexpected error. So a typo never reads as "undecided", and a crash
never as "unfair".
"""

from __future__ import annotations

import contextlib
import json
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from ..exceptions import ConfigError
from .console import ESTIMATE_FLAGS, FLAGS, hand_over, refusals, setup_logging
from .estimate import _label, refuse_streaming_on_a_benchmark, streamed
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

# Mirrors chiralfair.verdict.gate (not imported here: the command must refuse a bad flag before pandas loads).
REFUSED = 3
CRASHED = 4
READINGS = ("superpopulation", "rows")
if TYPE_CHECKING:  # the classes themselves, for type checkers (typer's vendored click is private)
    from typer._click import Context as ClickContext
    from typer._click.exceptions import ClickException as CLICK_EXCEPTION
    from typer._click.exceptions import UsageError as USAGE_ERROR
else:
    # The usage-error classes of the click typer runs on (its own vendored copy in recent typer, click itself before).
    USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


@contextlib.contextmanager
def usage_errors_refused():
    """Give a click usage error (a misspelt option or command, a bad value) the exit code of a refusal, 3.

    The gate's exit code 2 means "undecided", which click uses for usage errors; a typo must not read as it.

    Yields
    ------
    None
        Click's parsing runs inside.
    """
    try:
        yield
    except USAGE_ERROR as err:
        err.exit_code = REFUSED
        raise


class GateCommand(TyperCommand):
    """A command whose usage errors exit 3, since its exit code 2 means "undecided"."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        """Parse as click does; a usage error exits 3.

        Parameters
        ----------
        ctx : click.Context
        args : list of str
            The command line's remaining words.

        Returns
        -------
        list of str
        """
        with usage_errors_refused():
            return super().parse_args(ctx, args)


@with_option_groups
def check(
    *,
    max_share: Annotated[float, typer.Option(
        "--max-share", help="Largest acceptable share of individuals affected, in [0, 1], e.g. 0.02.")],
    inputs: Inputs,
    confidence: Annotated[float, typer.Option(help="Confidence level of the decision.")] = 0.95,
    population: PopulationOpt = "test",
    margin: Annotated[float, typer.Option(
        help="Stop (undecided) once the interval lies within this of the estimate.")] = 0.005,
    max_queries: MaxQueriesOpt = None,
    method: Annotated[str, typer.Option(
        help="Interval: clopper-pearson (keeps the confidence over the looks) or wilson.")] = "clopper-pearson",
    reading: Annotated[str, typer.Option(
        help="superpopulation: decide for the people the model will meet, the held-out rows read as a sample of "
             "them (a binomial interval on their count, even when every row is checked); rows: for the rows "
             "checked alone.")] = "superpopulation",
    gamma: GammaOpt = None,
    favourable: OutcomeOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the decision and the verdict as JSON.")] = False,
    verbose: VerboseOpt = False,
    counterparts: Counterparts,
    streaming: Streaming,
    model_card: ModelCardOpt = None,
    bom: BomOpt = None,
    mlflow: MlflowOpt = False,
) -> None:
    """Fairness gate: exit 0 if the share affected is at most --max-share, 1 if above, 2 if undecided, 3 if refused.

    Prints one line: PASS, FAIL or UNDECIDED, the share affected with its interval, the threshold, the population
    the decision speaks for (by default the people the model will meet, with "exact for these N rows" beside it),
    the worst group (the largest share harmed) and every group not tested. Sampling stops as soon as the interval
    lies on one side of --max-share, with the confidence spent over the looks so that the repeated looks keep it.
    Exit 3: a refusal or usage error; 4: an unexpected error (its traceback on standard error).
    """
    params: dict[str, Any] = {"confidence": confidence, "margin": margin, "max_queries": max_queries, "method": method,
              "gamma": gamma, "plausible_only": counterparts.plausible_only, "reading": reading}
    try:
        decision = _decide(max_share, inputs, counterparts, population, favourable, params, verbose, model_card,
                           bom, mlflow, streaming)
    except (typer.Exit, typer.Abort, CLICK_EXCEPTION, KeyboardInterrupt):
        raise
    except Exception as err:  # a bug must not read as a decision (1 would say "unfair")
        traceback.print_exc(file=sys.stderr)
        typer.secho(f"error: unexpected {type(err).__name__}: {err} (exit {CRASHED}; please report it)", err=True,
                    fg=typer.colors.RED)
        raise typer.Exit(code=CRASHED) from None
    if json_out:
        typer.echo(json.dumps(decision.to_dict(), indent=2, default=str))
    else:
        typer.echo(decision.line())
    with refusals(code=REFUSED):
        hand_over(decision, model_card=model_card, bom=bom, mlflow=mlflow,
                  model=inputs.model_file or (inputs.model or "dnn"), trust_model_file=inputs.trust_model_file,
                  data_files=inputs.data_files(), code=REFUSED)
    raise typer.Exit(code=decision.exit_code)


def _decide(max_share, inputs: Inputs, counterparts: Counterparts, population, favourable, params, verbose,
            model_card: Path | None, bom: Path | None, mlflow: bool, streaming: Streaming):
    with refusals(FLAGS + ESTIMATE_FLAGS + ("max_share", "threshold", "reading"), code=REFUSED):
        inputs.check(model_card, bom=bom, mlflow=mlflow)
        if params["reading"] not in READINGS:
            raise ConfigError(f"unknown --reading {params['reading']!r}; valid: {', '.join(READINGS)}")
        couplings = counterparts.options()
        if not 0 <= max_share <= 1:
            raise ConfigError(f"--max-share must lie in [0, 1], got {max_share}")
        if inputs.data is None:
            inputs.refuse_own_data_flags()
            refuse_streaming_on_a_benchmark(streaming)
            from ..pipeline import check_fairness_benchmark

            config = inputs.benchmark_config(**couplings)
            setup_logging(verbose)
            decision = check_fairness_benchmark(config, max_share=max_share, population=population,
                                                favourable=_label(favourable), **params)
        else:
            inputs.refuse_both_forms("the command")
            from ..pipeline import check_fairness

            setup_logging(verbose)
            own, params = streamed(inputs, streaming, params)
            decision = check_fairness(inputs.model, stream_path(inputs.data), max_share=max_share,
                                      favourable=favourable, population=population, **own,
                                      **own_data_counterparts(couplings), **params)
    return decision


__all__ = ["GateCommand", "check"]
