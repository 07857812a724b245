"""What every command shares on the terminal: one-line errors that name flags, logging, progress, tables."""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from pathlib import Path
from typing import NoReturn

import typer

from ..exceptions import ChiralfairError, ConfigError, Refusals

# Python parameter names that a command-line user knows as flags.
FLAGS = ("max_global", "max_local", "random_state", "n_seeds", "repeats", "data_home", "cache_dir",
         "allow_checksum_mismatch", "workers", "positive_class", "test_size", "max_queries", "batch_size",
         "model_output", "max_f1_loss")
ESTIMATE_FLAGS = ("population", "confidence", "margin", "method", "gamma", "favourable", "batch_rows",
                  "domain_sample", "workers", "scheduler")


def fail(err: Exception, flags: tuple[str, ...] = FLAGS, *, code: int = 2) -> NoReturn:
    """Print a one-line error that names command-line flags (``--max-global``) rather than Python names; exit ``code``.

    ``flags=()`` keeps the message as it is: the errors of a grid file name its keys (``repeats``,
    ``[max_global, max_local]``), which are not flags. ``chiralfair check`` exits 3, since its 2 means undecided.

    Parameters
    ----------
    err : Exception
        The error to show; its text is printed after ``error:``, and its notes (``add_note``) after it.
    flags : tuple of str, default=FLAGS
        Python parameter names to show as ``--flag-names`` (``max_global`` -> ``--max-global``); ``()`` keeps the
        text as it is.
    code : int, default=2
        The exit code.
    """
    _end_progress_bars()
    errors = err.errors if isinstance(err, Refusals) else [err]
    lines = [command_line_syntax(str(e), flags) for e in errors]
    if len(lines) == 1:
        typer.secho(f"error: {lines[0]}", err=True, fg=typer.colors.RED)
    else:
        typer.secho(f"error: {len(lines)} problems, to fix together:", err=True, fg=typer.colors.RED)
        for i, line in enumerate(lines, 1):
            typer.secho(f"  ({i}) {line}", err=True, fg=typer.colors.RED)
    for note in getattr(err, "__notes__", ()):  # what became of the run folder (an earlier run untouched, ...)
        typer.secho(f"  note: {note}", err=True, fg=typer.colors.RED)
    raise typer.Exit(code=code)


def _end_progress_bars() -> None:
    """Close the tqdm bars still open, so that ``error:`` starts a line of its own.

    Off a terminal (a pipe, a CI log, a file) a bar left open ends without a newline, and cleared (``leave=False``)
    it ends with a carriage return: the next text written would be glued to it. Each bar that has drawn is kept and
    ended with a newline there; on a terminal it is closed as it asked (cleared or kept). Nothing is imported when no
    bar was ever made.
    """
    tqdm_module = sys.modules.get("tqdm.std")
    if tqdm_module is None:
        return
    for bar in list(getattr(tqdm_module.tqdm, "_instances", ())):
        if getattr(bar, "disable", True):
            continue
        if not (getattr(bar.fp, "isatty", None) and bar.fp.isatty()):
            bar.leave = True
        bar.close()


# A fix written in Python's syntax, `bins={'fare': 10}` or `bins={'age': [0, 30, 60]}`, and its flag form.
_PYTHON_MAPPING = re.compile(r"\bbins=\{'([^']+)': (\[[^\]]*\]|[^}]+)\}")
_IN_PYTHON = re.compile(r" \((?:in Python|Python): [^()]*\)")


def command_line_syntax(text: str, flags: tuple[str, ...] = FLAGS) -> str:
    """A message's fixes in the command line's syntax: ``--bins fare=10``, ``--trust-model-file``, ``--max-global``.

    Parameters
    ----------
    text : str
        The message as the Python API writes it.
    flags : tuple of str
        Python parameter names to show as ``--flag-names``.

    Returns
    -------
    str
    """
    def bins_flag(match: re.Match) -> str:
        spec = match.group(2).strip()
        if spec.startswith("["):
            spec = ":".join(part.strip() for part in spec.strip("[]").split(","))
        return f"--bins {match.group(1)}={spec}"

    text = _IN_PYTHON.sub("", text)
    text = _PYTHON_MAPPING.sub(bins_flag, text)
    text = re.sub(r"\btrust_model_file=True\b", "--trust-model-file", text)
    # a quoted name is a key as written in a file (a schema's 'positive_class'), never a flag; a name after a
    # hyphen is already a flag (``--similar``) or part of a word
    for name in flags:
        text = re.sub(rf"(?<![-'\w]){name}\b(?![.'])", "--" + name.replace("_", "-"), text)
    return text


@contextlib.contextmanager
def refusals(flags: tuple[str, ...] = FLAGS, *, code: int = 2):
    """Turn chiralfair's errors (bad input) into :func:`fail` (exit ``code``); anything else is a bug: propagates.

    Parameters
    ----------
    flags : tuple of str, default=FLAGS
        As :func:`fail`.
    code : int, default=2
        The exit code of a refusal (``chiralfair check`` uses 3: its 2 means undecided).

    Yields
    ------
    None
        The body runs inside; a :class:`~chiralfair.exceptions.ChiralfairError` it raises exits with ``code``.
    """
    try:
        yield
    except ChiralfairError as err:
        fail(err, flags, code=code)


def setup_logging(verbose: bool) -> None:
    """Log to standard error: each step with ``--verbose``, warnings otherwise.

    Python warnings (a column that looks like an identifier, a rule the data breaks) are printed as one line each
    on standard error, rather than with the source line that raised them.

    Parameters
    ----------
    verbose : bool
        Log every step at INFO (``--verbose``); otherwise warnings and errors only.
    """
    import warnings

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    warnings.showwarning = _one_line_warning


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {category.__name__}: {message}", file=file or sys.stderr)


@contextlib.contextmanager
def grid_logging(verbose: bool):
    """Logging for a grid run; yields the level of the ``chiralfair`` logger inside the cells.

    Without ``--verbose`` the cells' own warnings (one per cell, in every worker process) would bury the progress
    bar: the cells log errors only (failures are listed at the end anyway).

    Parameters
    ----------
    verbose : bool
        As :func:`setup_logging`.

    Yields
    ------
    int
        The level for the ``chiralfair`` logger inside the cells: INFO with ``verbose``, else ERROR.
    """
    setup_logging(verbose)
    if verbose:
        yield None
        return
    library = logging.getLogger("chiralfair")
    level = library.level
    library.setLevel(logging.ERROR)
    try:
        yield logging.ERROR
    finally:
        library.setLevel(level)


STEP_LABELS = {"data": "loading data", "model": "training or loading the model", "seeds": "selecting seeds",
               "search": "searching for IDIs", "verdict": "estimating the share affected", "retrain": "retraining"}


# A long step says it is still running at most this often, in seconds, where there is no progress bar.
HEARTBEAT_SECONDS = 10.0


class _StandardError(logging.StreamHandler):
    """A handler writing to the standard error of the moment (a test runner swaps ``sys.stderr``)."""

    @property
    def stream(self):  # looked up at each record, never stored
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def progress_logger() -> logging.Logger:
    """The ``chiralfair.progress`` logger: INFO records on standard error, whatever ``--verbose`` says.

    Returns
    -------
    logging.Logger
    """
    logger = logging.getLogger("chiralfair.progress")
    if not any(isinstance(h, _StandardError) for h in logger.handlers):
        handler = _StandardError()
        handler.setFormatter(logging.Formatter("chiralfair: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


@contextlib.contextmanager
def progress(steps: list[str], enabled: bool):
    """Yield an ``on_step(name)`` callback showing the steps of a run on standard error.

    On a terminal, a tqdm bar (log records are routed through tqdm so they do not break its line). Elsewhere (a CI
    log, a pipe, a file) one line per step through :func:`progress_logger` when the step ends, with its elapsed
    time, and, while a step runs longer, a line every :data:`HEARTBEAT_SECONDS` saying it still runs.

    Parameters
    ----------
    steps : list of str
        The step names the run will announce, in order (the bar's length).
    enabled : bool
        Show the bar on a terminal (off with ``--json``); the lines elsewhere go to standard error either way.

    Yields
    ------
    callable
        ``on_step(name)``: the run has reached step ``name``.
    """
    if not sys.stderr.isatty():
        with _logged_steps(steps) as log_step:
            yield log_step
        return
    from tqdm import tqdm
    from tqdm.contrib.logging import logging_redirect_tqdm

    bar = tqdm(total=len(steps), disable=not enabled, file=sys.stderr, leave=False,
               bar_format="{desc:<32} {bar:20} {n_fmt}/{total_fmt} [{elapsed}]")
    seen: list[str] = []

    def on_step(name: str) -> None:
        if seen:
            bar.update(1)
        seen.append(name)
        bar.set_description_str(STEP_LABELS.get(name, name))

    try:
        with logging_redirect_tqdm():
            yield on_step
        bar.update(bar.total - bar.n)
    finally:
        bar.close()


@contextlib.contextmanager
def _logged_steps(steps: list[str]):
    """One line per finished step with its seconds, and a line every HEARTBEAT_SECONDS while a step runs."""
    import threading
    import time

    logger = progress_logger()
    state: dict = {"name": None, "number": 0, "started": 0.0}
    lock = threading.Lock()
    stop = threading.Event()
    t_all = time.perf_counter()

    def finish() -> None:
        if state["name"] is not None:
            logger.info("%s (step %d of %d) done in %.1f s", _label(state["name"]), state["number"], len(steps),
                        time.perf_counter() - state["started"])

    def on_step(name: str) -> None:
        with lock:
            finish()
            state.update(name=name, number=state["number"] + 1, started=time.perf_counter())

    def heartbeat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            with lock:
                if state["name"] is not None:
                    logger.info("%s (step %d of %d): still running, %.0f s so far", _label(state["name"]),
                                state["number"], len(steps), time.perf_counter() - state["started"])

    beating = threading.Thread(target=heartbeat, name="chiralfair-progress", daemon=True)
    beating.start()
    try:
        yield on_step
        with lock:
            finish()
            state["name"] = None
        logger.info("done in %.1f s", time.perf_counter() - t_all)
    finally:
        stop.set()
        beating.join()


def _label(name: str) -> str:
    return STEP_LABELS.get(name, name)


def print_table(rows: list[tuple[str, str]], title: str) -> None:
    """A title, then one indented ``name  value`` line per row.

    Parameters
    ----------
    rows : list of (str, str)
        Name and value of each line.
    title : str
        The first line.
    """
    width = max(len(k) for k, _ in rows)
    typer.echo(title)
    for k, v in rows:
        typer.echo(f"  {k:<{width}}  {v}")


def parse_bins(text: str | None) -> dict[str, int | list[float]]:
    """Parse ``"age=0:25:45:65:120,hours=10"`` into ``{"age": [0, 25, 45, 65, 120], "hours": 10}``.

    Parameters
    ----------
    text : str or None
        The ``--bins`` value: comma-separated ``column=N`` (N equal-width bins) or ``column=e0:e1:...`` (edges).

    Returns
    -------
    dict of str to int or list of float
        Column -> bin count or edges; empty for None.

    Raises
    ------
    ConfigError
        Naming the item that is not ``column=N`` or ``column=e0:e1:...``.
    """
    out: dict[str, int | list[float]] = {}
    for item in filter(None, (t.strip() for t in (text or "").split(","))):
        column, sep, spec = item.partition("=")
        try:
            if not sep or not column.strip():
                raise ValueError
            parts = spec.split(":")
            out[column.strip()] = int(parts[0]) if len(parts) == 1 else [float(p) for p in parts]
        except ValueError:
            raise ConfigError(f"--bins item {item!r} is not column=N (N equal-width bins) or column=e0:e1:... "
                              "(edges), e.g. --bins age=0:25:45:65:120,hours=10") from None
    return out


def parse_numbers(text: str, flag: str, example: str) -> list[float]:
    """Parse a comma-separated list of numbers given to ``flag``.

    Parameters
    ----------
    text : str
        Comma-separated numbers, e.g. ``"1.0,0.5,0.05"``.
    flag : str
        The flag they were given to, for the message.
    example : str
        A valid value, for the message.

    Returns
    -------
    list of float

    Raises
    ------
    ConfigError
        Naming the flag and an example.
    """
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ConfigError(f"{flag} {text!r} is not a comma-separated list of numbers, e.g. {example}") from None


def hand_over(subject, *, model_card=None, bom=None, mlflow: bool = False, folder=None, model=None,
              trust_model_file: bool = False, data_files=None, bom_model=None, code: int = 2) -> None:
    """After the result is printed: write the model card and BOM, log into MLflow, saying where on standard error.

    Called once the verdict (or the gate's line, the retraining's table) is on standard output, so that a card that
    cannot be written or an MLflow store that fails never hides it; each failure is one ``error:`` line naming
    what was not handed over (the run folder stays written), then the command exits ``code``.

    ``model`` is the --model FILE of your own data (a skops card describes it, a BOM hashes it), or a zoo model's
    name on a benchmark.

    Parameters
    ----------
    subject : AuditResult, RunOutcome, Verdict, GateDecision or RetrainResult
        What the command computed.
    model_card : str or path-like, optional
        ``--model-card``: a ``.json`` file gets a CycloneDX model card, a ``.md`` one a skops card (or its section).
    bom : str or path-like, optional
        ``--bom``: a complete CycloneDX BOM.
    mlflow : bool, default=False
        ``--mlflow``: log into the active MLflow run, or a new one.
    folder : str or path-like, optional
        The run or retrain folder, logged as artifacts.
    model : str or path-like, optional
        As described above.
    trust_model_file : bool, default=False
        Load the model file with untrusted types (for its skops card).
    data_files : mapping of str to path, optional
        The data files for the BOM (``--data``, ``--test``).
    bom_model : str or path-like, optional
        The model the BOM names when ``model`` is not a file or name (a retrained model object): its file.
    code : int, default=2
        Exit code when something could not be handed over (``chiralfair check``: 3, never a decision's code).
    """
    from ..pipeline import exports

    failed = False
    card_model = None if isinstance(model, str) and not Path(model).suffix else model  # a zoo name describes nothing
    bom_model = model if isinstance(model, str | Path) else bom_model
    if model_card is not None:
        try:
            path = exports.write_model_card(subject, model_card, model=card_model, trust_model_file=trust_model_file)
            typer.echo(f"model card: {path}", err=True)
        except (ChiralfairError, OSError) as err:
            failed = _not_handed_over(f"the model card {model_card}", err, folder)
    if bom is not None:
        try:
            path = exports.write_bom(subject, bom, model=bom_model, data_files=data_files)
            typer.echo(f"BOM: {path}", err=True)
        except (ChiralfairError, OSError) as err:
            failed = _not_handed_over(f"the BOM {bom}", err, folder)
    if mlflow:
        try:
            run_id = exports.track(subject, folder=folder,
                                   files=[f for f in (model_card, bom) if f is not None and Path(f).is_file()])
            typer.echo(f"MLflow run: {run_id}", err=True)
        except Exception as err:  # MLflow's own errors (a store, a server): the figures printed above still stand
            failed = _not_handed_over("the MLflow run", err, folder)
    if failed:
        raise typer.Exit(code=code)


def _not_handed_over(what: str, err: BaseException, folder) -> bool:
    first = (str(err).strip().splitlines() or [""])[0]
    kept = f"; the run folder {folder} is written" if folder is not None and Path(folder).is_dir() else ""
    typer.secho(f"error: {what} was not written: {type(err).__name__}: {first} (the figures above stand{kept})",
                err=True, fg=typer.colors.RED)
    return True


def only_with_data(**given) -> None:
    """Refuse own-data flags (``label=...``) on a benchmark run: they would be ignored.

    Parameters
    ----------
    **given
        Own-data flags by Python name and their values; a value that is not None is refused.

    Raises
    ------
    ConfigError
    """
    flags = [f"--{name.replace('_', '-')}" for name, value in given.items() if value not in (None, False)]
    if flags:
        raise ConfigError(f"{', '.join(flags)} apply to your own data: use them with --data FILE --model FILE")
