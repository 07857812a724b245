"""``chiralfair check``: the fairness gate for a CI pipeline, with exit codes a script can branch on.

Exit codes: 0 pass (the interval's upper bound is at most --max-share), 1 fail (its lower bound is above it),
2 undecided (the interval straddles it), 3 a refusal or a usage error (a bad flag, file or value; a misspelt
option), 4 an unexpected error. So a typo never reads as "undecided", and a crash never as "unfair".
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperCommand

from ..exceptions import ConfigError
from .console import ESTIMATE_FLAGS, FLAGS, only_with_data, parse_bins, refusals, setup_logging
from .estimate import _label
from .options import (
    BinsOpt,
    CacheOpt,
    ChecksumOpt,
    ConstraintOpt,
    CoupleOpt,
    DataHomeOpt,
    DataOpt,
    LabelOpt,
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

# Mirrors chiralfair.verdict.gate (not imported here: the command must refuse a bad flag before pandas loads).
REFUSED = 3
CRASHED = 4
if TYPE_CHECKING:  # the classes themselves, for type checkers (typer's vendored click is private)
    from typer._click import Context as ClickContext
    from typer._click.exceptions import ClickException as CLICK_EXCEPTION
    from typer._click.exceptions import UsageError as USAGE_ERROR
else:
    # The usage-error classes of the click typer runs on (its own vendored copy in recent typer, click itself before).
    USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")
    CLICK_EXCEPTION = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


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
        try:
            return super().parse_args(ctx, args)
        except USAGE_ERROR as err:
            err.exit_code = REFUSED
            raise


def check(
    max_share: Annotated[float, typer.Option(
        "--max-share", help="Largest acceptable share of individuals affected, in [0, 1], e.g. 0.02.")],
    dataset: RunDatasetOpt = None,
    protected: ProtectedOpt = None,
    model: RunModelOpt = None,
    confidence: Annotated[float, typer.Option(help="Confidence level of the decision.")] = 0.95,
    population: Annotated[str, typer.Option(
        help="Individuals: test (the held-out rows), rows (every row of the data) or domain (uniform draws).")
    ] = "test",
    margin: Annotated[float, typer.Option(
        help="Stop (undecided) once the interval lies within this of the estimate.")] = 0.005,
    max_queries: Annotated[int | None, typer.Option(help="Query budget (default: none but the margin).")] = None,
    method: Annotated[str, typer.Option(
        help="Interval: clopper-pearson (keeps the confidence over the looks) or wilson.")] = "clopper-pearson",
    gamma: Annotated[float | None, typer.Option(
        help="Count a pair only if its probability gap is at least this (KOSEI's gamma).")] = None,
    favourable: Annotated[str | None, typer.Option(
        help="The favourable outcome: with --data a label value (default: the positive class); on a benchmark the "
             "label 0 or 1 (default: the dataset's; compas: 0).")] = None,
    random_state: RandomOpt = 0,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    allow_checksum_mismatch: ChecksumOpt = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the decision and the verdict as JSON.")] = False,
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
) -> None:
    """Fairness gate: exit 0 if the share affected is at most --max-share, 1 if above, 2 if undecided, 3 if refused.

    Prints one line: PASS, FAIL or UNDECIDED, the share affected with its interval, the threshold and the worst
    group (the largest share harmed). Sampling stops as soon as the interval lies on one side of --max-share, with
    the confidence spent over the looks so that the repeated looks keep it. Exit 3: a refusal or usage error; 4: an
    unexpected error (its traceback on standard error).
    """
    try:
        decision = _decide(max_share, dataset, protected, model, confidence, population, margin, max_queries, method,
                           gamma, favourable, random_state, data_home, cache_dir, allow_checksum_mismatch, verbose,
                           data, label, positive_class, bins, schema, test, test_size, trust_model_file,
                           model_output, model_card, couple, constraint, plausible_only)
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
    raise typer.Exit(code=decision.exit_code)


def _decide(max_share, dataset, protected, model, confidence, population, margin, max_queries, method, gamma,
            favourable, random_state, data_home, cache_dir, allow_checksum_mismatch, verbose, data, label,
            positive_class, bins, schema, test, test_size, trust_model_file, model_output, model_card: Path | None,
            couple, constraint, plausible_only):
    from ..pipeline.checks import check_protected_given, counterpart_options
    from ..pipeline.exports import check_model_card_path

    params = {"confidence": confidence, "margin": margin, "max_queries": max_queries, "method": method,
              "gamma": gamma, "plausible_only": plausible_only}
    with refusals(FLAGS + ESTIMATE_FLAGS + ("max_share", "threshold"), code=REFUSED):
        check_protected_given(protected, name="--protected")
        check_model_card_path(model_card, model_file=model if data is not None else None)
        counterparts = counterpart_options(couple, constraint)
        if not 0 <= max_share <= 1:
            raise ConfigError(f"--max-share must lie in [0, 1], got {max_share}")
        if data is None:
            only_with_data(label=label, positive_class=positive_class, bins=bins, schema=schema, test=test,
                           model_output=model_output, trust_model_file=trust_model_file)
            from ..pipeline import RunConfig, check_fairness_benchmark, protected_list

            config = RunConfig(dataset=dataset or "census", protected=protected_list(protected), model=model or "dnn",
                               random_state=random_state, data_home=data_home, cache_dir=cache_dir,
                               allow_checksum_mismatch=allow_checksum_mismatch, **counterparts)
            setup_logging(verbose)
            decision = check_fairness_benchmark(config, max_share=max_share, population=population,
                                                favourable=_label(favourable), **params)
        else:
            if dataset is not None:
                raise ConfigError("--data and --dataset are two forms of the command: your data file with your model "
                                  "file (--data FILE --model FILE), or a benchmark with a zoo model, not both")
            from ..pipeline import check_fairness

            setup_logging(verbose)
            decision = check_fairness(model, data, max_share=max_share, label=label, positive_class=positive_class,
                                      favourable=favourable, protected=protected,
                                      bins=parse_bins(bins) if bins else None, schema=schema, test=test,
                                      test_size=test_size, population=population, random_state=random_state,
                                      trust_model_file=trust_model_file, model_output=model_output,
                                      couple=counterparts["couple"],
                                      constraints=list(counterparts["constraints"]) or None, **params)
        if model_card is not None:
            from ..pipeline import write_model_card

            write_model_card(decision, model_card, model=model if data is not None else None,
                             trust_model_file=trust_model_file)
    return decision


__all__ = ["GateCommand", "check"]
