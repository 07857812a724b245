"""``chiralfair certify``: prove how much of the input domain is fair, and which held-out people are unaffected."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from ..exceptions import ConfigError
from .console import FLAGS, refusals, setup_logging
from .options import Counterparts, Inputs, JsonOpt, VerboseOpt, own_data_counterparts, with_option_groups

CERTIFY_FLAGS = ("max_seconds", "max_depth", "max_boxes", "bound", "split", "similar", "n_jobs")


def parse_similar(values: list[str] | None) -> dict[str, object] | None:
    """``--similar age=2 --similar workclass=Private|State-gov`` as ``similar=`` takes it.

    Several features may share one flag, separated by commas as ``--bins`` takes them:
    ``--similar age=2,hours-per-week=4``. A comma splits only before ``NAME=``, so a categorical value holding a
    comma stays whole (``--similar 'marital=Married, spouse|Divorced'``).

    Parameters
    ----------
    values : list of str or None
        ``NAME=RADIUS`` (a number) or ``NAME=VALUE|VALUE...`` (values of a categorical feature), one per flag or
        several joined by commas.

    Returns
    -------
    dict or None

    Raises
    ------
    ConfigError
        For an item that is not ``NAME=VALUE``, or a name given twice.
    """
    if not values:
        return None
    out: dict[str, object] = {}
    for item in (part for given in values for part in _SIMILAR_ITEMS.split(given)):
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise ConfigError(f"--similar takes NAME=RADIUS (e.g. age=2) or NAME=VALUE|VALUE, several in one flag "
                              f"joined by commas (age=2,hours-per-week=4); got {item!r}")
        if name in out:
            raise ConfigError(f"--similar: {name!r} is given twice")
        try:
            out[name] = float(value)
        except ValueError:
            out[name] = set(value.split("|"))
    return out


# A comma that starts another NAME=... item (not one inside a categorical value).
_SIMILAR_ITEMS = re.compile(r",(?=[^,|=]+=)")


@with_option_groups
def certify(
    *,
    inputs: Inputs,
    counterparts: Counterparts,
    max_seconds: Annotated[float, typer.Option(
        help="Wall-second budget of the searches (0: no limit): the domain's branch and bound, and with --similar "
             "the people's too (half for the domain, the rest for the people; the split is stated).")] = 60.0,
    max_depth: Annotated[int | None, typer.Option(
        help="Splits after which a box is left undecided (default: down to single keys).")] = None,
    max_boxes: Annotated[int | None, typer.Option(
        help="Boxes bounded before stopping (the same result on every machine; default: no limit).")] = None,
    bound: Annotated[str, typer.Option(help="Bounds: crown (IBP, then CROWN), symbolic or ibp.")] = "crown",
    split: Annotated[str, typer.Option(help="Split column: influence (loosens the bounds most) or widest.")] = (
        "influence"),
    individuals: Annotated[bool, typer.Option(
        help="Also certify each held-out individual (certified unaffected or affected).")] = True,
    similar: Annotated[list[str] | None, typer.Option(
        help="Certify each held-out individual within a neighbourhood, radii in the data's units: "
             "--similar age=2 --similar hours_per_week=4 or --similar age=2,hours_per_week=4 (a categorical feature: "
             "NAME=VALUE|VALUE).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Run folder for result.json, idis.parquet, individuals.parquet.")] = None,
    n_jobs: Annotated[int | None, typer.Option(
        help="Processes a tree ensemble's search shares its boxes among (default: the CPUs available; 1: one); "
             "a complete run's answer is the same for every value.")] = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Prove how much of a ReLU network's or tree ensemble's domain is fair, and which held-out people are safe."""
    budget: dict[str, Any] = {"max_seconds": max_seconds or None, "max_depth": max_depth, "max_boxes": max_boxes,
                              "bound": bound, "split": split, "individuals": individuals, "out": out,
                              "n_jobs": n_jobs}
    with refusals(FLAGS + CERTIFY_FLAGS):
        budget["similar"] = parse_similar(similar)
        inputs.check(None)
        if counterparts.plausible_only:
            raise ConfigError("--plausible-only applies to the verdict; certification covers every possible "
                              "counterpart")
        couplings = counterparts.options()
        if inputs.data is None:
            inputs.refuse_own_data_flags()
            from ..pipeline import certify_benchmark

            config = inputs.benchmark_config(**couplings)
            setup_logging(verbose)
            result = certify_benchmark(config, **budget)
        else:
            inputs.refuse_both_forms("the command")
            from ..pipeline import certify as certify_objects

            setup_logging(verbose)
            result = certify_objects(inputs.model, inputs.data, **inputs.own_data(), **own_data_counterparts(couplings),
                                     **budget)
    if json_out:
        typer.echo(json.dumps(result.summary(), indent=2, default=str))
        return
    for line in result.lines():
        typer.echo(line)
    if out is not None:
        typer.echo(f"run folder: {out}")
