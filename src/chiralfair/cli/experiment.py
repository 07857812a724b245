"""``chiralfair experiment run|status|table`` (grids that resume and scale out on Dask) and ``chiralfair reproduce``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..exceptions import ChiralfairError, ConfigError
from .console import fail as _fail
from .console import grid_logging as _grid_logging
from .console import progress_logger as _progress_logger
from .options import CacheOpt, DataHomeOpt, JsonOpt, VerboseOpt


def reproduce(
    name: Annotated[str, typer.Argument(help="Preset: table2, table3, table4, fig6, fig7 or ablation.")],
    repeats: Annotated[int | None, typer.Option(
        help="Random states 0..N-1 of the seed selection and search (default 10; --quick: 3).")] = None,
    quick: Annotated[bool, typer.Option(
        "--quick", help="Smoke test: 3 repeats and budgets divided by 10 (not a reproduction).")] = False,
    out: Annotated[Path | None, typer.Option(
        help="Grid folder for the cells, the table and the plots (default reproduce/NAME[-quick]); a second "
             "run into it runs only the missing cells.")] = None,
    scheduler: Annotated[str, typer.Option(
        help="local (Dask LocalCluster), sync (this process) or a Dask scheduler address tcp://host:port.")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes of the local cluster.")] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run a shipped grid of the I&D paper and write its table beside the paper's numbers, and its plots."""
    from .._validation import check_int
    from ..experiments.presets import check_preset_name

    try:
        check_preset_name(name)
        if quick and repeats is not None:
            raise ConfigError("--quick and repeats cannot be combined: --quick runs 3 random states with budgets "
                              "divided by 10")
        repeats = 10 if repeats is None else check_int(repeats, "repeats", minimum=1)
        if workers is not None:
            check_int(workers, "workers", minimum=1)
    except ChiralfairError as err:
        _fail(err)
    from ..experiments.presets import reproduce as run_preset

    folder = out if out is not None else Path("reproduce") / (f"{name}-quick" if quick else name)
    try:
        _progress_logger()
        with _grid_logging(verbose) as cell_level:
            done = run_preset(name, folder, repeats=repeats, quick=quick, scheduler=scheduler, workers=workers,
                             progress=True, log_level=cell_level)
    except ChiralfairError as err:
        _fail(err)
    typer.echo((folder / f"{name}.md").read_text())
    typer.echo("\n".join(["wrote:", *(f"  {path}" for path in done.files)]))
    if done.n_failed:
        typer.secho(f"{done.n_failed} cell(s) failed: chiralfair experiment status {folder}", err=True,
                    fg=typer.colors.YELLOW)



experiment_app = typer.Typer(no_args_is_help=True,
                             help="Experiment grids: run the missing cells (on Dask), show their status, make tables.")



@experiment_app.command("run")
def experiment_run(
    grid: Annotated[Path, typer.Argument(help="Grid file (TOML): axes, repeats, budgets, time limit.")],
    out: Annotated[Path, typer.Option(help="Output folder; running again into it resumes the grid.")],
    scheduler: Annotated[str, typer.Option(
        help="local (a Dask LocalCluster of processes), sync (this process, for debugging) or a Dask scheduler "
             "address (tcp://host:8786).")] = "local",
    workers: Annotated[int | None, typer.Option(help="Worker processes of --scheduler local (default: CPUs).")] = None,
    retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Run the failed cells again too.")] = False,
    data_home: DataHomeOpt = None,
    cache_dir: CacheOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run the cells of a grid that have no result yet; a failing cell is recorded and the grid goes on."""
    from ..experiments.execution import SCHEDULERS, check_grid_folder
    from ..experiments.grid import load_grid

    try:
        loaded = load_grid(grid)
        if workers is not None and workers < 1:
            raise ValueError(f"--workers must be >= 1, got {workers}")
        if scheduler not in SCHEDULERS and "://" not in scheduler:
            raise ValueError(f"unknown --scheduler {scheduler!r}; valid: local, sync, or a Dask scheduler address "
                             "such as tcp://host:8786")
        check_grid_folder(loaded, out)
    except (ChiralfairError, ValueError) as err:
        _fail(err, flags=())

    from tqdm.contrib.logging import logging_redirect_tqdm

    from ..experiments.execution import run_grid

    try:
        _progress_logger()
        with _grid_logging(verbose) as cell_level, logging_redirect_tqdm():
            result = run_grid(loaded, out, scheduler=scheduler, workers=workers, progress=True,
                              retry_failed=retry_failed, data_home=data_home, cache_dir=cache_dir,
                              log_level=cell_level)
    except ChiralfairError as err:
        _fail(err, flags=())
    except KeyboardInterrupt:
        typer.secho(f"interrupted: finished cells are kept in {out}; run the same command again to resume",
                    err=True, fg=typer.colors.YELLOW)
        raise typer.Exit(code=130) from None
    _print_status(result.status)
    typer.echo(f"ran {len(result.ran)} cells in {result.seconds:.1f} s")
    kept = [key for key in result.status.failed if key not in result.ran]
    if kept:  # failed in an earlier run: not run again unless asked
        typer.secho(f"{len(kept)} cell(s) had failed before and were not run again; add --retry-failed to retry them",
                    err=True, fg=typer.colors.YELLOW)
    if result.status.failed:
        raise typer.Exit(code=1)


@experiment_app.command("status")
def experiment_status(
    out: Annotated[Path, typer.Argument(help="Output folder of 'chiralfair experiment run'.")],
    json_out: JsonOpt = False,
) -> None:
    """Count the done, failed and missing cells of a grid folder; list the failed ones with their error."""
    from ..experiments.execution import grid_status

    try:
        status = grid_status(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    if json_out:
        typer.echo(json.dumps({"grid": status.grid.name, "n_cells": status.n_cells, "done": list(status.done),
                               "failed": list(status.failed), "missing": list(status.missing),
                               "errors": status.errors, "damaged": status.damaged}, indent=2))
        return
    _print_status(status)


def _print_status(status) -> None:
    from ..experiments.tasks import describe

    typer.echo(f"grid {status.grid.name!r} in {status.out}: {status.n_cells} cells, {len(status.done)} done, "
               f"{len(status.failed)} failed, {len(status.missing)} missing")
    for key in status.failed:
        typer.echo(f"  failed {key} ({describe(status.cells[key])}): {status.errors[key]}")
    for key, why in status.damaged.items():
        typer.echo(f"  damaged {key} ({describe(status.cells[key])}): {why}; counted as missing, runs again")


@experiment_app.command("table")
def experiment_table(
    out: Annotated[Path, typer.Argument(help="Output folder of 'chiralfair experiment run'.")],
) -> None:
    """Write the grid's tables (Parquet and Markdown) into OUT/tables and print the medians and the ratios."""
    from ..experiments.execution import grid_status

    try:
        grid_status(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    from ..experiments.tables import write_tables

    try:
        paths = write_tables(out)
    except ChiralfairError as err:
        _fail(err, flags=())
    for path in paths:
        if path.name in ("medians.md", "ratios.md"):
            typer.echo(path.read_text(encoding="utf-8"))
    typer.echo("written: " + ", ".join(str(p) for p in paths))
