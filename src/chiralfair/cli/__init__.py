"""The ``chiralfair`` command line: one module per command, each only parsing flags and calling the pipeline.

Commands: ``run``, ``estimate``, ``check`` (the fairness gate), ``retrain`` (benchmarks and your own data and
model), ``certify`` (ReLU networks), ``seeds``, ``datasets``, ``schema infer``, ``experiment run|status|table`` and
``reproduce``. A refused flag
answers before torch, scikit-learn, shap or z3 are imported: the checks of :mod:`chiralfair.pipeline.checks` read
name tables only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from . import certify, check, datasets, estimate, experiment, retrain, run, seeds

if TYPE_CHECKING:
    from typer._click import Context as ClickContext


class ChiralfairGroup(TyperGroup):
    """The command group, whose own usage errors exit 3 (a misspelt command, an unknown option before it).

    So ``chiralfair chek ...`` in a CI script never reads as the gate's 2 (undecided).
    """

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
            The words left for the command.
        """
        with check.usage_errors_refused():
            return super().parse_args(ctx, args)

    def resolve_command(self, ctx: ClickContext, args: list[str]):
        """Find the command as click does; an unknown one exits 3.

        Parameters
        ----------
        ctx : click.Context
        args : list of str
            The command line's remaining words.

        Returns
        -------
        tuple
            ``(name, command, args)``, as click returns it.
        """
        with check.usage_errors_refused():
            return super().resolve_command(ctx, args)


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=ChiralfairGroup,
                  help="Individual fairness testing of tabular classifiers: find IDIs with I&D seeds.")


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"chiralfair {__version__}")
        raise typer.Exit()


@app.callback()
def _main(version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print the version and exit.")] = False) -> None:
    """Individual fairness testing of tabular classifiers: find IDIs with I&D seeds."""


app.command("run")(run.run)
app.command("estimate")(estimate.estimate)
app.command("check", cls=check.GateCommand)(check.check)
app.command("retrain")(retrain.retrain)
app.command("certify")(certify.certify)
app.command("seeds")(seeds.seeds)
app.command("datasets")(datasets.datasets)
app.add_typer(datasets.schema_app, name="schema")
app.add_typer(experiment.experiment_app, name="experiment")
app.command("reproduce")(experiment.reproduce)


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point."""
    app()


__all__ = ["app", "main"]
