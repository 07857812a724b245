"""Reproduce the I&D paper's results: shipped experiment grids, tables beside the paper's numbers, and plots.

Each preset is a grid file in ``chiralfair/experiments/presets/<name>.toml`` (the schema of
:func:`chiralfair.experiments.grid.load_grid`), with the paper's published numbers, as far as our docs hold them,
in ``presets/paper/<name>.toml``. :func:`reproduce` runs the grid with
:func:`~chiralfair.experiments.execution.run_grid` (only missing cells run, so an interrupted reproduction
resumes), then writes into the same folder:

- ``<name>.md``: the rows, coupling, counting rule and budgets it ran with; our medians over the repeats with their
  interquartile range, beside the paper's numbers, the ratios between I&D and the other seed strategies, and a
  verdict on each of the paper's claims (Table 2: a test with a bootstrap interval over the repeats, the paper's
  statistic beside ours; the others: whether the direction of the medians holds, said so);
- ``<name>.parquet``: the same table, one row per group of axes (median, q25, q75 per figure, ``n`` repeats, and
  the paper's number where there is one);
- plots (PNG): table2 and ablation a bar chart of IDIs, fig6 bar plots of global and local IDIs per sklearn
  model, fig7 the IDIs against the limit (number of seeds), one curve per seed strategy with its IQR band.

Counting rule: ours counts unique non-protected projections (architecture: the counting rule), I&D counts
(counterpart vector, vote label) tuples (the counting rule's explanation page), so the paper's numbers are not
directly comparable with ours. Table 2's verdicts are tests of ratios with a bootstrap interval over the repeats
(the paper's statistic beside ours); the other presets' claims compare directions of medians, said so.

References
----------
.. [1] Ma, M. et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances", arXiv:2209.08321.
"""

from __future__ import annotations

import copy
import io
import logging
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._validation import check_int
from ...exceptions import ConfigError
from ...storage import atomic_write_bytes

logger = logging.getLogger(__name__)

PRESET_DIR = Path(__file__).parent
PAPER_DIR = PRESET_DIR / "paper"
QUICK_REPEATS = 3
# --quick divides every budget by this (rounding up, at least one global step), e.g. 100/100 -> 10/10.
QUICK_BUDGET_DIVISOR = 10

@dataclass(frozen=True)
class Reproduction:
    """What :func:`reproduce` wrote.

    Attributes
    ----------
    name : str
        The preset.
    out : Path
        The grid folder, which also holds the table and the plots.
    table : pandas.DataFrame
        The aggregated table written to ``<name>.parquet``: one row per group of axes (without
        ``random_state``), ``<figure>_median``, ``<figure>_q25``, ``<figure>_q75``, ``n`` (repeats found) and
        ``paper_<figure>`` where the paper gives a number.
    files : tuple of Path
        ``<name>.md``, ``<name>.parquet`` and the plots.
    claims : tuple of str
        One line per claim of the paper: its text and whether it holds in our numbers.
    n_failed : int
        Cells of the grid that failed (recorded in their cell folders; see ``chiralfair experiment status``).
    """

    name: str
    out: Path
    table: Any
    files: tuple[Path, ...]
    claims: tuple[str, ...]
    n_failed: int = 0


def preset_names() -> tuple[str, ...]:
    """Names of the shipped presets (the grid files in ``experiments/presets``), sorted.

    Returns
    -------
    tuple of str
    """
    return tuple(sorted(p.stem for p in PRESET_DIR.glob("*.toml")))


def check_preset_name(name: str) -> str:
    """Return ``name`` if it is a shipped preset.

    Parameters
    ----------
    name : str

    Returns
    -------
    str

    Raises
    ------
    ConfigError
        Naming the preset and the valid names.
    """
    names = preset_names()
    if name not in names:
        raise ConfigError(f"unknown preset {name!r}; valid: {', '.join(names)}")
    return name


def preset_grid(name: str, *, repeats: int = 10, quick: bool = False,
                overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The grid of a preset as a mapping for :func:`~chiralfair.experiments.grid.load_grid`.

    Parameters
    ----------
    name : str
        A name of :func:`preset_names`.
    repeats : int
        Random states 0 .. repeats - 1 (the model stays fixed: ``model_random_state`` of the preset).
    quick : bool
        The smoke-test variant (:func:`quick_grid`): 3 repeats and budgets divided by 10.
    overrides : mapping, optional
        Keys replacing the preset's (tables such as ``axes`` are merged key by key), e.g.
        ``{"axes": {"rows": ["census:sex"]}}``; applied before ``quick``. ``random_states`` replaces ``repeats``.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        For an unknown preset or ``repeats`` < 1.
    """
    check_preset_name(name)
    grid = tomllib.loads((PRESET_DIR / f"{name}.toml").read_text())
    grid["repeats"] = check_int(repeats, "repeats", minimum=1)
    if overrides:
        if "random_states" in overrides:
            grid.pop("repeats")
        grid = _merged(grid, overrides)
    return quick_grid(grid) if quick else grid


def quick_grid(grid: Mapping[str, Any]) -> dict[str, Any]:
    """The smoke-test variant of a grid: 3 repeats, every budget divided by 10 (rounded up), duplicates dropped.

    ``max_global`` stays at least 1; ``max_local`` 0 stays 0; a query budget (a budget's third number) is divided
    too. E.g. 100/100 -> 10/10, 1000/100/200000 -> 100/10/20000, limits 10..400 -> 1..40.

    Parameters
    ----------
    grid : Mapping
        A grid mapping (:func:`preset_grid`).

    Returns
    -------
    dict
    """
    out = copy.deepcopy(dict(grid))
    out.pop("random_states", None)
    out["repeats"] = QUICK_REPEATS
    budgets = []
    for budget in out["axes"]["budgets"]:
        small = [max(1, math.ceil(budget[0] / QUICK_BUDGET_DIVISOR)), math.ceil(budget[1] / QUICK_BUDGET_DIVISOR),
                 *(max(1, math.ceil(q / QUICK_BUDGET_DIVISOR)) for q in budget[2:])]
        if small not in budgets:
            budgets.append(small)
    out["axes"]["budgets"] = budgets
    return out


def paper_numbers(name: str) -> dict[str, Any]:
    """The paper's published numbers for a preset (``presets/paper/<name>.toml``); empty when our docs hold none.

    Parameters
    ----------
    name : str
        A preset name.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        For an unknown preset.
    """
    check_preset_name(name)
    path = PAPER_DIR / f"{name}.toml"
    return tomllib.loads(path.read_text()) if path.exists() else {}


def reproduce(name: str, out: str | os.PathLike, *, repeats: int = 10, quick: bool = False, scheduler: str = "local",
              workers: int | None = None, progress: bool = True,
              overrides: Mapping[str, Any] | None = None, log_level: int | None = None) -> Reproduction:
    """Run a preset's grid and write its table beside the paper's numbers, and its plots, into ``out``.

    Parameters
    ----------
    name : str
        A preset: ``table2``, ``table3``, ``table4``, ``fig6``, ``fig7`` or ``ablation`` (:func:`preset_names`).
    out : str or path-like
        Grid folder (``cells/``, ``grid.toml``, ``tables/``) that also receives ``<name>.md``, ``<name>.parquet``
        and the plots. A second call with the same arguments runs only the missing cells.
    repeats : int
        Random states 0 .. repeats - 1 for the seed selection and the search; the model is trained once.
    quick : bool
        3 repeats and budgets divided by 10: a smoke test, not a reproduction.
    scheduler : str
        ``"local"`` (a Dask LocalCluster), ``"sync"`` (in this process) or a Dask scheduler address. ``"local"``
        starts worker processes that import the calling script again: call from under
        ``if __name__ == "__main__":`` (a call without it is refused, naming that fix).
    workers : int, optional
        Worker processes of the local cluster.
    progress : bool
        Show the progress bar over cells.
    overrides : mapping, optional
        Changes to the preset's grid (see :func:`preset_grid`), e.g. fewer rows; the command line's ``--rows``,
        ``--models``, ``--seeds``, ``--generators`` and ``--budget`` give them. A budget may be a triple
        ``[max_global, max_local, max_queries]``: the seed selection and the search share ``max_queries``.
    log_level : int, optional
        Level of the ``chiralfair`` logger inside the cells (:func:`~chiralfair.experiments.execution.run_grid`).

    Returns
    -------
    Reproduction

    Raises
    ------
    ConfigError
        For an unknown preset, ``repeats`` < 1, a grid the overrides make invalid (``GridError``), or
        ``scheduler="local"`` called from a script's top level without ``if __name__ == "__main__":``.
    KeyboardInterrupt
        On Ctrl-C: the finished cells stay in ``out`` and the folder's lock is released; call again to resume.
    RunFolderError
        If ``out`` holds a grid with another configuration.

    Examples
    --------
    >>> from chiralfair.experiments.presets import reproduce
    >>> done = reproduce("table3", "reproduce/table3-quick", quick=True, scheduler="sync", progress=False,
    ...                  overrides={"axes": {"rows": ["census:sex"]}})   # the paper's DNN; 9 cells
    >>> sorted(p.name for p in done.files if p.suffix == ".md")
    ['table3.md']

    References
    ----------
    .. [1] Ma et al. arXiv:2209.08321, Tables 2-4, Figures 6-7.
    """
    grid_mapping = preset_grid(name, repeats=repeats, quick=quick, overrides=overrides)
    from ..execution import grid_status, run_grid
    from ..grid import load_grid
    from ..tables import generators_by_asked, grid_frame

    out = Path(out)
    run_grid(load_grid(grid_mapping), out, scheduler=scheduler, workers=workers, progress=progress,
             log_level=log_level)
    failed = list(grid_status(out).failed)
    frame = generators_by_asked(grid_frame(out), ["generator"])  # the paper's tables compare what was asked
    if grid_mapping.get("task") == "retrain":
        frame = with_retrain_details(frame, out)
    return write_reproduction(name, frame, out, grid=grid_mapping, paper=paper_numbers(name),
                              n_failed=len(failed), quick=quick)


def with_retrain_details(frame, out: str | os.PathLike):
    """Add the retraining figures a retrain cell keeps only in its summary: intervals, domain rate, group metrics.

    Reads ``<out>/cells/*/result.json`` (``summary[strategy]["rows"]``,
    :class:`~chiralfair.mitigation.retraining.RetrainResult`
    rows: first before, last after) and adds ``<field>_before`` / ``<field>_after`` columns that ``frame`` lacks,
    matched on the cell's config and the seed strategy.

    Parameters
    ----------
    frame : pandas.DataFrame
        The grid's frame (:func:`~chiralfair.experiments.tables.grid_frame`).
    out : str or path-like
        The grid folder.

    Returns
    -------
    pandas.DataFrame
    """
    import json

    import pandas as pd

    fields = ("test_idi_lower", "test_idi_upper", "domain_idi_rate", "domain_idi_lower", "domain_idi_upper",
              "demographic_parity_difference", "equalized_odds_difference")
    records = []
    from ..cells import json_damage

    for path in sorted(Path(out).glob("cells/*/result.json")):
        if json_damage(path) is not None:  # a damaged cell counts as missing (experiment status names it)
            continue
        result = json.loads(path.read_text())
        if result.get("task") != "retrain":
            continue
        config = result["config"]
        for strategy, summary in (result.get("summary") or {}).items():
            if strategy not in config["seeds"] or not summary or not summary.get("rows"):
                continue
            before, after = summary["rows"][0], summary["rows"][-1]
            record = {"dataset": config["dataset"], "protected": ",".join(config["protected"]),
                      "model": config["model"], "generator": config["generator"],
                      "max_global": config["max_global"], "max_local": config["max_local"],
                      "random_state": config["random_state"], "seeds": strategy}
            for f in fields:
                record[f"{f}_before"], record[f"{f}_after"] = before.get(f), after.get(f)
            records.append(record)
    keys = ["dataset", "protected", "model", "generator", "max_global", "max_local", "random_state", "seeds"]
    if not records or not set(keys) <= set(frame.columns):
        return frame
    details = pd.DataFrame(records)
    details = details[keys + [c for c in details.columns if c not in keys and c not in frame.columns]]
    left = frame.assign(seeds=[s[0] if isinstance(s, list | tuple) and len(s) == 1 else s for s in frame["seeds"]],
                        protected=[_protected_text(p) for p in frame["protected"]])
    return left.merge(details, on=keys, how="left")


def write_reproduction(name: str, frame, out: str | os.PathLike, *, grid: Mapping[str, Any],
                       paper: Mapping[str, Any], n_failed: int = 0, quick: bool = False) -> Reproduction:
    """Write the table, its Parquet file and the plots of a preset from the tidy frame of its cells.

    Parameters
    ----------
    name : str
        The preset; it decides the table's layout and the plots.
    frame : pandas.DataFrame
        One row per finished cell (:func:`~chiralfair.experiments.tables.grid_frame`): the axis values
        (``dataset`` and ``protected``, or ``row``; ``model``, ``seeds``, ``generator``, ``max_global``,
        ``max_local``, ``random_state``) and the figures.
    out : str or path-like
        Folder receiving the files.
    grid : mapping
        The grid that was run (its axes give the order of rows and seed strategies).
    paper : mapping
        The paper's numbers (:func:`paper_numbers`).
    n_failed : int
        Cells that failed, said in the table.
    quick : bool
        Whether the grid is the smoke-test variant, said in the table.

    Returns
    -------
    Reproduction

    Raises
    ------
    ConfigError
        If ``frame`` has no finished cell or lacks a column the preset's table needs.
    """
    check_preset_name(name)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tidy = _tidy(frame)
    from .paper_tables import REPORTS  # matplotlib and scipy, only when a table is written

    report = REPORTS[name](name, tidy, grid, paper)
    header = _header(name, grid, paper, n_failed, quick)
    files = [out / f"{name}.md", out / f"{name}.parquet"]
    atomic_write_bytes(files[0], (header + report.markdown).encode())
    buffer = io.BytesIO()
    report.table.to_parquet(buffer, index=False)
    atomic_write_bytes(files[1], buffer.getvalue())
    for stem, figure in report.plots:
        files.append(out / f"{stem}.png")
        _stamp(figure, grid)
        _save_figure(figure, files[-1])
    logger.info("wrote %s", ", ".join(str(f) for f in files))
    return Reproduction(name, out, report.table, tuple(files), tuple(report.claims), n_failed)


def budget_text(budget) -> str:
    """A grid budget as the tables name it: ``100/100`` or ``1000/100, max_queries 200,000 (seeds + search)``.

    Parameters
    ----------
    budget : sequence of int
        ``[max_global, max_local]`` or ``[max_global, max_local, max_queries]``.

    Returns
    -------
    str
    """
    text = f"{budget[0]}/{budget[1]}"
    return text + (f", max_queries {budget[2]:,} (seeds + search)" if len(budget) > 2 else "")


def run_conditions(grid: Mapping[str, Any]) -> str:
    """What every table and plot of a reproduction states: rows, coupling, counting rule and budgets.

    Parameters
    ----------
    grid : mapping
        The grid that was run (:func:`preset_grid`).

    Returns
    -------
    str
        One paragraph.
    """
    axes = grid["axes"]
    rows = list(axes["rows"])
    coupled = grid.get("couple", True)
    census_sex = [r for r in rows if r.split(":")[0] == "census" and "sex" in r.split(":")[1].split(",")]
    if not census_sex:
        coupling = "no row has a coupling (each counterpart changes the protected attribute only)"
    elif coupled:
        coupling = (f"coupling **on** in {', '.join(census_sex)} (relationship Husband <-> Wife changes with sex); "
                    "the paper's tools have none")
    else:
        coupling = (f"coupling **off** in {', '.join(census_sex)} (relationship stays when sex changes, as in the "
                    "paper's tools; chiralfair's default couples it)")
    return (f"Rows ({len(rows)}): {', '.join(rows)}. Counterparts: {coupling}. Counting rule: ours, unique "
            "non-protected projections (an IDI and its counterpart count once). Budgets (max_global/max_local"
            f"[, query budget]): {'; '.join(budget_text(b) for b in axes['budgets'])}.")


def _header(name: str, grid: Mapping[str, Any], paper: Mapping[str, Any], n_failed: int, quick: bool) -> str:
    from ... import __version__

    axes = grid["axes"]
    states = grid.get("random_states", f"0..{grid.get('repeats', 1) - 1}")
    lines = [f"# chiralfair reproduce {name}{' --quick (smoke test, not a reproduction)' if quick else ''}", "",
             f"Grid `{grid.get('name', name)}`, task `{grid.get('task', 'search')}`: "
             f"models {', '.join(axes['models'])}; random states {states} (seed selection and search), model trained "
             f"once with random_state {grid.get('model_random_state', 'of each cell')}; chiralfair {__version__}. "
             "Cells: median [q25–q75] over the repeats.", "", run_conditions(grid), ""]
    if n_failed:
        lines += [f"**{n_failed} cell(s) failed** and are left out; `chiralfair experiment status` lists them with "
                  "their errors.", ""]
    if paper:
        lines += [f"Paper: {paper.get('source', 'not stated')}."]
        if paper.get("missing"):
            lines += [f"Left out: {paper['missing']}."]
        lines += [""]
    return "\n".join(lines) + "\n"


def _tidy(frame):
    """The cells' frame with a ``row`` column (``dataset:protected``); refuses an empty frame."""
    if frame is None or len(frame) == 0:
        raise ConfigError("no finished cell to tabulate: every cell of the grid failed or none ran "
                          "(see `chiralfair experiment status`)")
    tidy = frame.copy()
    if "seeds" in tidy.columns:  # a cell's config lists its seed strategies; a search or seeds cell has one
        tidy["seeds"] = [s[0] if isinstance(s, list | tuple) and len(s) == 1 else s for s in tidy["seeds"]]
    if "row" not in tidy.columns:
        missing = [c for c in ("dataset", "protected") if c not in tidy.columns]
        if missing:
            raise ConfigError(f"the cells' frame lacks column(s) {', '.join(missing)} (needed for the rows)")
        tidy["row"] = [f"{d}:{_protected_text(p)}" for d, p in zip(tidy["dataset"], tidy["protected"], strict=True)]
    return tidy


def _protected_text(protected) -> str:
    if isinstance(protected, str):
        return protected
    return ",".join(str(p) for p in protected)


def _merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(base))
    for key, value in changes.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out




def _stamp(figure, grid: Mapping[str, Any]) -> None:
    """Put the run's conditions (rows, coupling, counting rule, budgets) under the plot's title, wrapped."""
    import textwrap

    title = figure.get_suptitle()
    width = max(40, int(figure.get_figwidth() * 15))
    conditions = textwrap.fill(run_conditions(grid).replace("**", ""), width=width)
    figure.suptitle(f"{title}\n{conditions}" if title else conditions, fontsize=8)


def _save_figure(figure, path: Path) -> None:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    atomic_write_bytes(path, buffer.getvalue())
