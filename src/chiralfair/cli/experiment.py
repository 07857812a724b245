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
    rows: Annotated[list[str] | None, typer.Option(
        "--rows", help="Only these rows (dataset:protected), repeatable: --rows census:sex --rows compas:race.")
    ] = None,
    models: Annotated[list[str] | None, typer.Option("--models", help="Only these models, repeatable.")] = None,
    seeds: Annotated[list[str] | None, typer.Option("--seeds", help="Only these seed strategies, repeatable.")] = None,
    generators: Annotated[list[str] | None, typer.Option(
        "--generators", help="Only these generators, repeatable (search and retrain presets).")] = None,
    budget: Annotated[list[str] | None, typer.Option(
        "--budget", help="Budgets instead of the preset's, repeatable: MAX_GLOBAL/MAX_LOCAL (100/100) or "
                         "MAX_GLOBAL/MAX_LOCAL/MAX_QUERIES (1000/100/200000: seed selection and search together).")
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Run a shipped grid of the I&D paper and write its table beside the paper's numbers, and its plots.

    Ctrl-C stops it: the finished cells are kept (said, with how many), the grid folder's lock is released, and the
    same command runs only the missing cells.
    """
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
        overrides = axis_overrides(rows=rows, models=models, seeds=seeds, generators=generators, budget=budget)
    except ChiralfairError as err:
        _fail(err)
    from ..experiments.presets import reproduce as run_preset

    folder = out if out is not None else Path("reproduce") / (f"{name}-quick" if quick else name)
    try:
        _progress_logger()
        with _grid_logging(verbose) as cell_level:
            done = run_preset(name, folder, repeats=repeats, quick=quick, scheduler=scheduler, workers=workers,
                             progress=True, log_level=cell_level, overrides=overrides or None)
    except ChiralfairError as err:
        _fail(err)
    except KeyboardInterrupt:
        typer.secho(_interrupted(folder), err=True, fg=typer.colors.YELLOW)
        raise typer.Exit(code=130) from None
    typer.echo((folder / f"{name}.md").read_text())
    typer.echo("\n".join(["wrote:", *(f"  {path}" for path in done.files)]))
    if done.n_failed:
        typer.secho(f"{done.n_failed} cell(s) failed: chiralfair experiment status {folder}", err=True,
                    fg=typer.colors.YELLOW)



def axis_overrides(*, rows=None, models=None, seeds=None, generators=None, budget=None) -> dict:
    """The ``overrides`` of :func:`chiralfair.experiments.presets.reproduce` from the command line's axis flags.

    Parameters
    ----------
    rows, models, seeds, generators : list of str, optional
        The values of ``--rows``, ``--models``, ``--seeds``, ``--generators`` (None or empty: the preset's).
    budget : list of str, optional
        ``--budget`` values, ``MAX_GLOBAL/MAX_LOCAL`` or ``MAX_GLOBAL/MAX_LOCAL/MAX_QUERIES``.

    Returns
    -------
    dict
        ``{"axes": {...}}`` with the axes given, or ``{}``.

    Raises
    ------
    ConfigError
        For a ``--budget`` that is not two or three whole numbers separated by ``/``.
    """
    axes: dict[str, list] = {}
    for key, values in (("rows", rows), ("models", models), ("seeds", seeds), ("generators", generators)):
        if values:
            axes[key] = list(values)
    if budget:
        pairs = []
        for text in budget:
            parts = text.split("/")
            if len(parts) not in (2, 3) or not all(p.strip().isdigit() for p in parts):
                raise ConfigError(f"--budget {text!r} is not MAX_GLOBAL/MAX_LOCAL (e.g. 100/100) nor "
                                  "MAX_GLOBAL/MAX_LOCAL/MAX_QUERIES (e.g. 1000/100/200000)")
            pairs.append([int(p) for p in parts])
        axes["budgets"] = pairs
    return {"axes": axes} if axes else {}


def _interrupted(folder: Path) -> str:
    """What Ctrl-C kept: the finished cells of the grid folder, and how to resume."""
    from ..experiments.execution import RUN_LOCK_NAME, grid_status

    try:
        status = grid_status(folder)
        counts = (f"{len(status.done)} of {status.n_cells} cells finished and kept in {folder} "
                  f"({len(status.failed)} failed, {len(status.missing)} missing)")
    except ChiralfairError:
        counts = f"no finished cell kept in {folder}"
    lock = "left behind (remove it: no run holds it)" if (folder / RUN_LOCK_NAME).exists() else "released"
    return (f"interrupted: {counts}; the lock ({RUN_LOCK_NAME}) is {lock}; no table was written. Run the same "
            "command again to run only the missing cells and write the table.")


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
