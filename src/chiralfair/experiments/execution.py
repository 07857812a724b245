"""Running a grid's missing cells, in this process or on Dask, and telling which cells are done.

:func:`run_grid` runs only the cells without a ``result.json`` (and, with ``retry_failed``, those with an
``error.json``), each in one thread: a grid killed at any moment and started again loses no finished cell and
runs none twice. Schedulers:

- ``"sync"``: one cell after the other in this process (for debugging).
- ``"local"``: a ``dask.distributed.LocalCluster`` of ``workers`` processes (default: the CPU count), one
  thread each.
- an address such as ``"tcp://host:8786"``: an existing Dask cluster whose workers have chiralfair and the data
  (``data_home``) and share the grid's output folder and the model cache (``cache_dir``).

The figures do not depend on the scheduler: every cell is seeded by its own random states, runs on one thread,
and reads shared models and seed selections that were written once, under file locks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exceptions import RunFolderError
from ..storage import atomic_write_text
from .cells import ERROR_NAME, Cell, cell_damage, cell_folder, cell_state, fail_cell, read_json
from .grid import Grid, load_grid

logger = logging.getLogger(__name__)

GRID_NAME = "grid.toml"
RUN_LOCK_NAME = ".run.lock"
SCHEDULERS = ("local", "sync")
# Seconds to reach a scheduler given by address: Dask retries a refused connection until its timeout (30 s by
# default), which looks like a hang to someone who mistyped the address.
CONNECT_TIMEOUT = 10.0


class GridInterrupted(KeyboardInterrupt):
    """The runner was stopped after ``stop_after`` finished cells (as by Ctrl-C); run the grid again to resume."""


@dataclass(frozen=True)
class GridStatus:
    """Which cells of a grid folder are done, failed or missing.

    Attributes
    ----------
    out : pathlib.Path
    grid : Grid
    done, failed, missing : tuple of str
        Cell keys, in the grid's cell order.
    errors : dict of str to str
        Failed cell key -> ``"ErrorType: first line of the message"``.
    cells : dict of str to Cell
        Every cell by key.
    damaged : dict of str to str
        Missing cells whose ``result.json`` or ``error.json`` is damaged (empty, cut short, not JSON): key ->
        why (``"result.json is empty"``). They run again like the other missing cells.
    """

    out: Path
    grid: Grid
    done: tuple[str, ...]
    failed: tuple[str, ...]
    missing: tuple[str, ...]
    errors: dict[str, str]
    cells: dict[str, Cell]
    damaged: dict[str, str] = field(default_factory=dict)

    @property
    def n_cells(self) -> int:
        """Number of cells of the grid."""
        return len(self.cells)


@dataclass(frozen=True)
class GridRun:
    """What one call of :func:`run_grid` did.

    Attributes
    ----------
    status : GridStatus
        The folder's state afterwards.
    ran : tuple of str
        Keys of the cells this call ran (done or failed), in the order they finished.
    failed : tuple of str
        Those of them that failed.
    seconds : float
        Wall time of the call.
    dashboard : str or None
        The Dask dashboard address, when there was one.
    """

    status: GridStatus
    ran: tuple[str, ...]
    failed: tuple[str, ...]
    seconds: float
    dashboard: str | None = None


def run_grid(grid, out: str | os.PathLike, *, scheduler: str = "local", workers: int | None = None,
             progress: bool = True, stop_after: int | None = None, retry_failed: bool = False,
             data_home: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None,
             log_level: int | None = None) -> GridRun:
    """Run the missing cells of a grid into ``out``.

    Parameters
    ----------
    grid : Grid, mapping, str or path-like
        A grid, or what :func:`~.grid.load_grid` reads.
    out : str or path-like
        Output folder: ``grid.toml`` (the normalised grid), ``cells/<key>/``, ``shared/seeds/``. A folder holding
        another grid, or other files, is refused.
    scheduler : str
        ``"local"``, ``"sync"`` or the address of a Dask scheduler (``"tcp://host:8786"``).
    workers : int, optional
        Worker processes of ``"local"`` (default: the CPU count).
    progress : bool
        Show one progress bar over the cells (with an ETA) on standard error, and the Dask dashboard address.
    stop_after : int, optional
        Stop (raise :class:`GridInterrupted`) once this many cells have finished in this call, e.g. to test
        resuming.
    retry_failed : bool
        Also run the cells that failed before (their ``error.json`` is replaced).
    data_home, cache_dir : str or path-like, optional
        Raw data and model cache folders for every cell (default: ``$CHIRALFAIR_DATA``, ``$CHIRALFAIR_CACHE``).

    log_level : int, optional
        Level of the ``chiralfair`` logger inside every cell, in worker processes too (e.g. ``logging.ERROR``
        so that one warning per cell does not bury the progress bar); None leaves it as it is.

    Returns
    -------
    GridRun

    Raises
    ------
    GridError
        For an invalid grid, including parameters that the generators or seed strategies refuse.
    RunFolderError
        If ``out`` holds another grid or is not a grid folder, or another run is using it.
    ConfigError
        For an unknown scheduler, a scheduler address with an unknown scheme or unreachable within
        :data:`CONNECT_TIMEOUT` seconds, ``workers`` / ``stop_after`` below 1, or ``scheduler="local"`` called from
        a script's top level without ``if __name__ == "__main__":`` (:func:`check_main_guard`).
    GridInterrupted
        After ``stop_after`` cells; cells still running are abandoned and stay missing.

    Examples
    --------
    >>> from chiralfair.experiments import grid_table, load_grid, run_grid
    >>> grid = load_grid({"name": "tiny", "task": "search", "repeats": 2,
    ...                   "axes": {"rows": ["census:sex"], "models": ["lr"], "seeds": ["cluster", "iandd"],
    ...                            "generators": ["aequitas"], "budgets": [[20, 10]]}})
    >>> run = run_grid(grid, "grids/tiny", scheduler="sync", progress=False)
    >>> len(run.ran), len(run.status.done)
    (4, 4)
    >>> len(run_grid(grid, "grids/tiny", scheduler="sync", progress=False).ran)   # resumes: nothing left
    0
    >>> table = grid_table("grids/tiny")
    >>> sorted(table[table["figure"] == "n_idis"]["seeds"])
    ['cluster', 'iandd']
    """
    from .._validation import check_int
    from ..exceptions import ConfigError
    from .grid import check_implementations

    start = time.perf_counter()
    grid = load_grid(grid)
    if workers is not None:
        check_int(workers, "workers", minimum=1)
    if stop_after is not None:
        check_int(stop_after, "stop_after", minimum=1)
    if scheduler not in SCHEDULERS and "://" not in scheduler:
        raise ConfigError(f"unknown scheduler {scheduler!r}; valid: local, sync, or a Dask scheduler address such "
                          "as tcp://host:8786")
    check_main_guard(scheduler)
    check_implementations(grid)
    out = prepare_grid_folder(grid, out)
    with _sole_runner(out):
        before = grid_status(out, grid)
        todo = [before.cells[k] for k in before.cells
                if k in before.missing or (retry_failed and k in before.failed)]
        options = {"limit": grid.time_limit, "data_home": _text(data_home), "cache_dir": _text(cache_dir),
                   "log_level": log_level}
        logger.info("grid %r in %s: %d cells, %d done, %d failed, %d to run", grid.name, out, before.n_cells,
                    len(before.done), len(before.failed), len(todo))
        ran: list[str] = []
        failed: list[str] = []
        dashboard = None
        if todo:
            with _progress_bar(len(todo), grid.name, progress) as bar:
                def finished(record: dict[str, Any]) -> None:
                    ran.append(record["key"])
                    if record["state"] == "failed":
                        failed.append(record["key"])
                        bar.set_postfix_str(f"{len(failed)} failed")
                    bar.update(1)
                    if stop_after is not None and len(ran) >= stop_after:
                        raise GridInterrupted(f"stopped after {len(ran)} cells (stop_after={stop_after}); run the grid "
                                              "again to resume")

                if scheduler == "sync":
                    for cell in todo:
                        finished(_run(cell, out, options))
                else:
                    dashboard = _run_on_dask(todo, out, options, scheduler, workers, finished,
                                             bar if progress else None)
        return GridRun(status=grid_status(out, grid), ran=tuple(ran), failed=tuple(failed),
                       seconds=time.perf_counter() - start, dashboard=dashboard)


@contextlib.contextmanager
def _sole_runner(out: Path) -> Iterator[None]:
    """Hold ``<out>/.run.lock`` while the grid runs, or refuse the folder if another run holds it.

    A second runner on the same folder would run every missing cell again, and remove the other's half-written
    files as leftovers. The lock goes with the process, even one killed with SIGKILL; a run that ends, fails or is
    interrupted (Ctrl-C) removes the file while it still holds the lock, then releases it, so no ``.run.lock`` is
    left behind.
    """
    from filelock import FileLock, Timeout

    lock = FileLock(out / RUN_LOCK_NAME, timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise RunFolderError(f"another run is using the grid folder {str(out)!r} (it holds {RUN_LOCK_NAME}); wait "
                             "for it to finish, or watch it with chiralfair experiment status") from None
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            (out / RUN_LOCK_NAME).unlink()
        lock.release()


def check_main_guard(scheduler: str) -> None:
    """Refuse ``scheduler="local"`` from a script whose call is not under ``if __name__ == "__main__":``.

    The local cluster's worker processes are started by spawning, which imports the main script again: a call of
    :func:`run_grid` (or ``reproduce``) at the script's top level would run again in every worker, which would then
    find the grid folder in use and fail to start ("Nanny failed to start"). The call's line is read from the
    stack and the script's syntax tree; where it cannot be read (an interactive session, ``python -c``, a package's
    ``__main__``, which spawning does not import again) nothing is refused.

    Parameters
    ----------
    scheduler : str
        The scheduler asked for; only ``"local"`` starts worker processes here.

    Raises
    ------
    ConfigError
        Naming the script, the line, the guard to add, and ``scheduler="sync"`` as the other fix.
    """
    from ..exceptions import ConfigError

    if scheduler != "local":
        return
    main = sys.modules.get("__main__")
    spec_name = getattr(getattr(main, "__spec__", None), "name", None)
    if spec_name is not None and (spec_name == "__main__" or spec_name.endswith(".__main__")):
        return
    if spec_name is None and Path(str(getattr(main, "__file__", None) or "ipython")).stem in ("ipython", "__main__"):
        return
    frame: types.FrameType | None = sys._getframe()
    found = None
    while frame is not None:  # the outermost top-level frame of the main script
        if frame.f_code.co_name == "<module>" and frame.f_globals.get("__name__") in ("__main__", "__mp_main__"):
            found = (frame.f_code.co_filename, frame.f_lineno, frame.f_globals["__name__"])
        frame = frame.f_back
    if found is None:
        return
    path, line, name = found
    if name == "__main__" and _guarded(path, line) is not False:
        return
    raise ConfigError(
        f"scheduler='local' starts worker processes that import {path} again, and its call at line {line} is not "
        "under `if __name__ == \"__main__\":`, so every worker would run the grid again (and find the grid folder in "
        "use). Put the call under `if __name__ == \"__main__\":`, or pass scheduler=\"sync\" (one process)")


def _guarded(path: str, line: int) -> bool | None:
    """Whether ``line`` of the script ``path`` lies under ``if __name__ == "__main__":`` (None: unreadable)."""
    import ast
    import tokenize

    try:
        with tokenize.open(path) as f:
            tree = ast.parse(f.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_main_test(node.test) and node.body:
            if node.body[0].lineno <= line <= (node.body[-1].end_lineno or node.body[-1].lineno):
                return True
    return False


def _is_main_test(test) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    import ast

    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def _run(cell: Cell, out: Path, options: dict[str, Any]) -> dict[str, Any]:
    from .tasks import run_cell

    return run_cell(cell, out, **options)


def _run_on_dask(todo: list[Cell], out: Path, options, scheduler: str, workers, finished, bar) -> str | None:
    from dask.distributed import as_completed

    from .tasks import run_cell

    with _dask_client(scheduler, workers) as client:
        dashboard = _dashboard(client)
        if dashboard:
            logger.info("Dask dashboard: %s", dashboard)
            if bar is not None:
                bar.write(f"Dask dashboard: {dashboard}", file=sys.stderr)
        # Submitted in grid order: Dask runs earlier submissions first, so the cells that train a shared model
        # start early and the others wait on its lock as little as possible.
        futures = {client.submit(run_cell, cell, str(out), key=f"cell-{cell.key}", pure=False, **options): cell
                   for cell in todo}
        try:
            for future in as_completed(futures):
                finished(_outcome(future, futures[future], out))
        finally:
            client.cancel(list(futures))
    return dashboard


def _outcome(future, cell: Cell, out: Path) -> dict[str, Any]:
    """The record of a finished future; a worker that died (e.g. out of memory) is recorded as the cell's error."""
    try:
        return future.result()
    except Exception as err:
        folder = cell_folder(out, cell.key)
        folder.mkdir(parents=True, exist_ok=True)
        record = fail_cell(folder, err, float("nan"))
        first = (record["message"].splitlines() or [""])[0]
        return {"key": cell.key, "state": "failed", "seconds": float("nan"), "error": f"{record['type']}: {first}"}


@contextlib.contextmanager
def _dask_client(scheduler: str, workers: int | None) -> Iterator[Any]:
    from dask.distributed import Client, LocalCluster

    from ..pipeline.stream import quiet_distributed_logs

    if scheduler != "local":
        with _connected(scheduler) as client:
            yield client
        return
    n_workers = workers or os.cpu_count() or 1
    # A free port: two grids on one machine must not fight over Dask's default 8787. Errors only from Dask's loggers
    # while the cluster lives: its INFO records would reach the command line's handlers and bury the bar.
    with quiet_distributed_logs(logging.ERROR), LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                                             dashboard_address=":0",
                                                             silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _connected(address: str) -> Iterator[Any]:
    """A client of the Dask scheduler at ``address``; a bad or unreachable address is a ConfigError."""
    from dask.distributed import Client
    from distributed.comm import parse_address
    from distributed.comm.addressing import parse_host_port
    from distributed.comm.registry import backends, get_backend

    from ..exceptions import ConfigError

    scheme, location = parse_address(address)
    try:
        get_backend(scheme)
        if scheme in ("tcp", "tls", "ws", "wss"):
            # Checked before Client(): a client that fails on a bad address leaves its event-loop thread behind.
            parse_host_port(location)
    except ValueError as err:
        if scheme not in backends:
            raise ConfigError(f"scheduler address {address!r} has the unknown scheme {scheme!r}; valid schemes: "
                              f"{', '.join(sorted(backends))} (e.g. tcp://host:8786)") from None
        raise ConfigError(f"scheduler address {address!r} is not valid: {err} (e.g. tcp://host:8786)") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except ValueError as err:  # e.g. "tcp://" without host and port
        raise ConfigError(f"scheduler address {address!r} is not valid: {err} (e.g. tcp://host:8786)") from None
    except OSError as err:
        raise ConfigError(f"cannot reach the Dask scheduler at {address!r} within {CONNECT_TIMEOUT:g} s ({err}); "
                          "start it (dask scheduler) or give --scheduler local") from None
    with client:
        yield client


def _has_bokeh() -> bool:
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _dashboard(client) -> str | None:
    """The dashboard's address; None without bokeh, whose absence leaves only a page asking to install it."""
    if not _has_bokeh():
        return None
    try:
        if "dashboard" not in client.scheduler_info().get("services", {}):
            return None
        return client.dashboard_link or None
    except Exception:  # a dashboard is a convenience: never fail a grid over it
        return None


# Where there is no terminal, a line on the cells done at most this often (seconds), and after the last one.
PROGRESS_SECONDS = 10.0


@contextlib.contextmanager
def _progress_bar(total: int, name: str, enabled: bool):
    """A tqdm bar over the cells on a terminal; elsewhere (a CI log, a pipe) :class:`_LoggedCells` lines."""
    if enabled and not sys.stderr.isatty():
        yield _LoggedCells(total, name)
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=name, unit="cell", disable=not enabled, file=sys.stderr, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


class _LoggedCells:
    """What the grid runner asks of a bar, as INFO lines of ``chiralfair.progress`` at most every PROGRESS_SECONDS."""

    def __init__(self, total: int, name: str):
        self.total, self.name, self.n, self.postfix = total, name, 0, ""
        self.logger = logging.getLogger("chiralfair.progress")
        self.started = self.said = time.perf_counter()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self.said >= PROGRESS_SECONDS or self.n == self.total:
            self.said = now
            left = (now - self.started) / self.n * (self.total - self.n)
            self.logger.info("grid %r: %d of %d cells run%s, %.0f s, about %.0f s left", self.name, self.n,
                             self.total, f" ({self.postfix})" if self.postfix else "", now - self.started, left)

    def set_postfix_str(self, text: str) -> None:
        self.postfix = text

    def write(self, text: str, file=None) -> None:
        self.logger.info("%s", text)


def _text(path) -> str | None:
    return None if path is None else str(Path(path).resolve())


def prepare_grid_folder(grid: Grid, out: str | os.PathLike) -> Path:
    """Create ``out`` for ``grid`` (writing ``grid.toml``), or check that it holds the same grid.

    Parameters
    ----------
    grid : Grid
    out : str or path-like
        The grid folder.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    RunFolderError
        If ``out`` is a file, holds another grid (its name and the first differing key are given), or is a
        non-empty folder without ``grid.toml``.
    """
    out = Path(out)
    check_grid_folder(grid, out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / GRID_NAME, grid.to_toml())
    return out


def check_grid_folder(grid: Grid, out: str | os.PathLike) -> None:
    """Refuse an output folder that cannot receive ``grid`` (see :func:`prepare_grid_folder`); writes nothing.

    Parameters
    ----------
    grid : Grid
    out : str or path-like
        The grid folder.

    Raises
    ------
    RunFolderError
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"output folder {str(out)!r} is a file")
    grid_file = out / GRID_NAME
    if grid_file.is_file():
        held = load_held_grid(grid_file)
        if held.identity() != grid.identity():
            raise RunFolderError(
                f"output folder {str(out)!r} holds another grid ({held.name!r}; {_first_difference(held, grid)}); "
                "give another --out, or the same grid file to resume it")
    elif out.is_dir() and any(out.iterdir()):
        raise RunFolderError(f"output folder {str(out)!r} is not empty and holds no {GRID_NAME}: it is not an "
                             "experiment grid folder; give a new or empty folder")


def load_held_grid(path: Path) -> Grid:
    """The grid of a grid folder's ``grid.toml``, as it was run.

    A ``grid.toml`` written before couplings existed (no ``couple`` key) ran uncoupled, so it reads as
    ``couple = false`` (architecture: counterparts that could exist), not as the default of a new grid file.

    Parameters
    ----------
    path : pathlib.Path
        A grid folder's ``grid.toml``.

    Returns
    -------
    Grid
    """
    import tomllib
    from dataclasses import replace

    grid = load_grid(path)
    if "couple" not in tomllib.loads(Path(path).read_text(encoding="utf-8")):
        grid = replace(grid, couple=False)
    return grid


def _first_difference(held: Grid, new: Grid) -> str:
    a, b = held.identity(), new.identity()
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"{key} differs: {a.get(key)!r} there, {b.get(key)!r} here"
    return "they differ"


def grid_status(out: str | os.PathLike, grid: Grid | None = None) -> GridStatus:
    """Done, failed and missing cells of a grid folder.

    Parameters
    ----------
    out : str or path-like
        A folder written by :func:`run_grid`.
    grid : Grid, optional
        Default: the folder's ``grid.toml``.

    Returns
    -------
    GridStatus

    Raises
    ------
    RunFolderError
        If ``out`` holds no ``grid.toml``.
    """
    out = Path(out)
    if grid is None:
        if not (out / GRID_NAME).is_file():
            raise RunFolderError(f"{str(out)!r} is not an experiment grid folder: it has no {GRID_NAME}")
        grid = load_held_grid(out / GRID_NAME)
    cells = {cell.key: cell for cell in grid.cells()}
    states: dict[str, list[str]] = {"done": [], "failed": [], "missing": []}
    errors, damaged = {}, {}
    for key in cells:
        folder = cell_folder(out, key)
        state = cell_state(folder)
        states[state].append(key)
        if state == "failed":
            record = read_json(folder / ERROR_NAME)
            errors[key] = f"{record.get('type', 'Error')}: {(str(record.get('message', '')).splitlines() or [''])[0]}"
        elif state == "missing" and (damage := cell_damage(folder)) is not None:
            damaged[key] = damage
    if damaged:
        logger.warning("%d cell(s) of %s are damaged and count as missing (first: %s: %s)", len(damaged), out,
                       *next(iter(damaged.items())))
    return GridStatus(out=out, grid=grid, done=tuple(states["done"]), failed=tuple(states["failed"]),
                      missing=tuple(states["missing"]), errors=errors, cells=cells, damaged=damaged)
