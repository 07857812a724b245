"""The ``chiralfair`` command line: one module per command, each only parsing flags and calling the pipeline.

Commands: ``run``, ``estimate``, ``retrain`` (benchmarks and your own data and model), ``seeds``, ``datasets``,
``schema infer``, ``experiment run|status|table`` and ``reproduce``. A refused flag answers before torch,
scikit-learn, shap or z3 are imported: the checks of :mod:`chiralfair.pipeline.checks` read name tables only.
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import datasets, estimate, experiment, retrain, run, seeds

app = typer.Typer(add_completion=False, no_args_is_help=True,
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
app.command("retrain")(retrain.retrain)
app.command("seeds")(seeds.seeds)
app.command("datasets")(datasets.datasets)
app.add_typer(datasets.schema_app, name="schema")
app.add_typer(experiment.experiment_app, name="experiment")
app.command("reproduce")(experiment.reproduce)


def main() -> None:  # pragma: no cover - console entry point
    """Console entry point."""
    app()


__all__ = ["app", "main"]
