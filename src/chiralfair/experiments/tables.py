"""Tables of a grid folder: one tidy row per finished cell, statistics over repeats, ratios of seed strategies.

- :func:`grid_frame`: one row per finished cell (a retrain cell: one per seed strategy), every axis value as a
  column, then the figures.
- :func:`grid_table`: per group of axis values (all but the random states) and figure: median, q25, q75 (the
  interquartile range), min, max and n (finished repeats).
- :func:`seed_ratios`: per group, the ratio of each seed strategy's median to the baseline's, and their
  geometric mean over the groups.
- :func:`write_tables`: ``<out>/tables/`` with ``cells.parquet``, ``summary.parquet``, ``summary.md``,
  ``medians.md`` (the compared figure, one column per seed strategy) and ``ratios.md``.

A cell of ``generators = ["auto"]`` shows the generator auto picked for it beside the axis value, ``auto (eidig)``
(its ``result.json``'s ``meta.generator_choice``); cells are still grouped by the generator asked for, ``auto``, and
a group whose repeats picked differently shows every pick, ``auto (aequitas, eidig)``.

Figures named ``seconds*`` are measured times: they are kept, and left out when two tables are compared
(:func:`without_timings`), since they are the only figures that differ between runs with the same random states.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..storage import atomic_path, atomic_write_text
from .cells import RESULT_NAME, cell_folder, read_json
from .execution import grid_status

AXIS_COLUMNS = ("task", "row", "dataset", "protected", "model", "seeds", "generator", "max_global", "max_local",
                "max_queries")
STATE_COLUMNS = ("random_state", "model_random_state")
STATISTICS = ("median", "q25", "q75", "min", "max", "n")
# The figure each task's seed strategies are compared by.
RATIO_FIGURE = {"search": "n_idis", "seeds": "initialization_rate", "retrain": "remaining_idis"}
TABLES = "tables"


def grid_frame(out: str | os.PathLike) -> pd.DataFrame:
    """One tidy row per finished cell of a grid folder, in the grid's cell order.

    Parameters
    ----------
    out : str or path-like
        A folder written by :func:`~.execution.run_grid`.

    Returns
    -------
    pandas.DataFrame, shape (n_rows, n_columns)
        ``key``, the axis columns (:data:`AXIS_COLUMNS`; ``generator`` is ``""`` for seed-selection cells, and
        ``"auto (<pick>)"`` for a cell of ``auto`` whose result records the generator it picked),
        ``random_state``, ``model_random_state``, then one float column per figure (NaN where a cell has none,
        e.g. ``n_initial_idis`` for random seeds). A retrain cell gives one row per seed strategy.
    """
    status = grid_status(out)
    rows = []
    for key in status.done:
        cell = status.cells[key]
        result = read_json(cell_folder(status.out, key) / RESULT_NAME)
        base = {"key": key, "task": cell.task, "row": cell.row, "dataset": cell.dataset,
                "protected": ",".join(cell.protected), "model": cell.model, "seeds": cell.seeds[0],
                "generator": shown_generator(cell.generator, result), "max_global": cell.max_global,
                "max_local": cell.max_local,
                "max_queries": math.nan if cell.max_queries is None else cell.max_queries,
                "random_state": cell.random_state, "model_random_state": cell.model_random_state}
        if cell.task == "retrain":
            for strategy in cell.seeds:
                rows.append({**base, "seeds": strategy, **result["figures"][strategy],
                             "seconds_cell": result["seconds_cell"]})
        else:
            rows.append({**base, **result["figures"], "seconds_cell": result["seconds_cell"]})
    columns = ["key", *AXIS_COLUMNS, *STATE_COLUMNS]
    frame = pd.DataFrame(rows, columns=list(dict.fromkeys([*columns, *(k for r in rows for k in r)])))
    for name in figure_columns(frame):
        frame[name] = pd.to_numeric(frame[name].astype(object).where(frame[name].notna(), np.nan)).astype(float)
    return frame


def shown_generator(asked: str | None, result: dict) -> str:
    """A cell's generator as the tables show it: the axis value, with ``auto``'s pick beside it (``auto (eidig)``).

    Parameters
    ----------
    asked : str or None
        The cell's generator axis value (None for a seed-selection cell).
    result : dict
        The cell's ``result.json``; its ``meta.generator_choice.generator`` is the generator ``auto`` picked.

    Returns
    -------
    str
    """
    pick = ((result.get("meta") or {}).get("generator_choice") or {}).get("generator")
    return f"{asked} ({pick})" if asked and pick and pick != asked else asked or ""


def asked_generator(shown: str) -> str:
    """The generator a grid's axis asked for, of a generator column's value: ``"auto (eidig)"`` gives ``"auto"``.

    Parameters
    ----------
    shown : str

    Returns
    -------
    str
    """
    return str(shown).split(" (", 1)[0]


def _merged_picks(shown: pd.Series) -> str:
    """The generator of cells grouped together: the asked name with every pick of theirs, in order of appearance."""
    values = [str(v) for v in shown]
    picks = dict.fromkeys(pick for v in values if v != asked_generator(v)
                          for pick in v[len(asked_generator(v)) + 2:-1].split(", "))  # "auto (a, b)": a, b
    asked = asked_generator(values[0]) if values else ""
    return f"{asked} ({', '.join(picks)})" if picks else asked


def generators_by_asked(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``frame`` with one generator value per group of ``keys`` taken by the generator asked (its picks merged).

    Grouping by the result is then grouping by what the grid asked for: cells of ``auto`` that picked differently
    stay one group.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`grid_frame` or :func:`grid_table`.
    keys : list of str
        The columns the caller groups by (``generator`` among them; else ``frame`` is returned as it is).

    Returns
    -------
    pandas.DataFrame
        ``frame`` with its ``generator`` column replaced: ``auto (aequitas, eidig)`` in every row of a group whose
        cells picked those two.
    """
    if "generator" not in keys or frame.empty:
        return frame
    shown = frame["generator"].astype(str)
    asked = frame.assign(generator=shown.map(asked_generator), _shown=shown)
    merged = asked.groupby(keys, sort=False, dropna=False)["_shown"].transform(_merged_picks)
    return frame.assign(generator=merged.to_numpy())


def figure_columns(frame: pd.DataFrame) -> list[str]:
    """The figure columns of a :func:`grid_frame` (all but the key, the axes and the random states).

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per cell (:func:`grid_frame`).

    Returns
    -------
    list of str
    """
    skip = {"key", *AXIS_COLUMNS, *STATE_COLUMNS}
    return [c for c in frame.columns if c not in skip]


def grid_table(out_or_frame: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """Statistics over repeats, one row per group of axis values and figure.

    Parameters
    ----------
    out_or_frame : str, path-like or pandas.DataFrame
        A grid folder, or its :func:`grid_frame`.

    Returns
    -------
    pandas.DataFrame, shape (n_groups * n_figures, len(AXIS_COLUMNS) + 7)
        The axis columns, ``figure``, and :data:`STATISTICS`: ``median``, ``q25`` and ``q75`` (linear
        interpolation), ``min``, ``max`` over the finished repeats, ``n`` their number (NaN figures not
        counted). Groups keep the grid's order, figures their order in the cells; a group of ``auto`` cells is one
        group whatever they picked, its generator showing the picks (``auto (eidig)``).
    """
    frame = out_or_frame if isinstance(out_or_frame, pd.DataFrame) else grid_frame(out_or_frame)
    figures = figure_columns(frame)
    frame = generators_by_asked(frame, list(AXIS_COLUMNS))
    groups = frame.groupby(list(AXIS_COLUMNS), sort=False, dropna=False)[figures]
    stats = {"median": groups.median(), "q25": groups.quantile(0.25), "q75": groups.quantile(0.75),
             "min": groups.min(), "max": groups.max(), "n": groups.count().astype(np.int64)}
    long = pd.concat({name: s.stack(dropna=False) if _old_stack() else s.stack() for name, s in stats.items()},
                     axis=1)
    long.index = long.index.set_names([*AXIS_COLUMNS, "figure"])
    return long.reset_index()


def _old_stack() -> bool:
    return int(pd.__version__.split(".")[0]) < 3


def seed_ratios(table: pd.DataFrame, figure: str = "n_idis", baseline: str | None = None) -> pd.DataFrame:
    """Ratio of each seed strategy's median to the baseline strategy's, per group, and their geometric mean.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`grid_table`.
    figure : str
        The figure compared (e.g. ``"n_idis"``, ``"initialization_rate"``, ``"remaining_idis"``).
    baseline : str, optional
        The seed strategy divided by (default: the table's first).

    Returns
    -------
    pandas.DataFrame
        One row per group of the other axes (``row``, ``model``, ``generator``, budget) with a column
        ``"<strategy>/<baseline>"`` per other strategy, then a last row whose ``row`` is ``"geometric mean"``
        over the groups where both medians are positive (the number of those groups in ``n_groups``).

    Raises
    ------
    ConfigError
        If the figure or the baseline is not in the table.
    """
    from ..exceptions import ConfigError

    part = table[table["figure"] == figure]
    if part.empty:
        raise ConfigError(f"figure {figure!r} is not in the table; valid: {', '.join(table['figure'].unique())}")
    strategies = list(dict.fromkeys(part["seeds"]))
    baseline = strategies[0] if baseline is None else baseline
    if baseline not in strategies:
        raise ConfigError(f"baseline seed strategy {baseline!r} is not in the table; valid: {', '.join(strategies)}")
    keys = [c for c in AXIS_COLUMNS if c not in ("seeds", "dataset", "protected")]
    wide = _by_strategy(part, keys)
    out = wide.index.to_frame(index=False)
    means = {}
    for strategy in strategies:
        if strategy == baseline:
            continue
        name = f"{strategy}/{baseline}"
        top, bottom = wide[strategy].to_numpy(), wide[baseline].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            out[name] = top / bottom
        usable = (top > 0) & (bottom > 0)
        means[name] = (math.exp(np.mean(np.log(top[usable] / bottom[usable]))) if usable.any() else np.nan,
                       int(usable.sum()))
    last = {c: "" for c in keys} | {"row": "geometric mean"} | {name: m for name, (m, _) in means.items()}
    out["n_groups"] = np.nan
    last["n_groups"] = min((n for _, n in means.values()), default=0)
    return pd.concat([out, pd.DataFrame([last])], ignore_index=True)


def median_table(table: pd.DataFrame, figure: str) -> pd.DataFrame:
    """Medians of one figure: one row per group of the other axes, one column per seed strategy.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`grid_table`.
    figure : str

    Returns
    -------
    pandas.DataFrame
    """
    keys = [c for c in AXIS_COLUMNS if c not in ("seeds", "dataset", "protected")]
    part = table[table["figure"] == figure]
    wide = _by_strategy(part, keys)
    wide.columns.name = None
    return wide.reset_index()


def _by_strategy(part: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Medians with one row per group of ``keys`` that the table holds, one column per seed strategy, in order.

    Not ``pivot_table(dropna=False)``: it crosses the values of every key, inventing groups the grid does not
    have (budgets [[10, 10], [20, 0]] gave rows 10/0 and 20/10).
    """
    part = generators_by_asked(part, keys)  # one row per generator asked for, whatever auto picked per strategy
    wide = part.set_index([*keys, "seeds"])["median"].unstack("seeds")
    groups = pd.MultiIndex.from_frame(part[keys].drop_duplicates())
    return wide.reindex(index=groups, columns=list(dict.fromkeys(part["seeds"])))


def without_timings(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame or table without its measured times: columns and ``figure`` rows named ``seconds*`` dropped.

    For comparing two runs of a grid, whose other figures are identical for the same random states.

    Parameters
    ----------
    frame : pandas.DataFrame
        A :func:`grid_frame` or :func:`grid_table`.

    Returns
    -------
    pandas.DataFrame
    """
    kept = frame[[c for c in frame.columns if not str(c).startswith("seconds")]]
    if "figure" in kept.columns:
        kept = kept[~kept["figure"].astype(str).str.startswith("seconds")].reset_index(drop=True)
    return kept


def write_tables(out: str | os.PathLike) -> list[Path]:
    """Write ``<out>/tables/``: ``cells.parquet``, ``summary.parquet``, ``summary.md``, ``medians.md``, ``ratios.md``.

    Parameters
    ----------
    out : str or path-like
        The grid folder.

    Returns
    -------
    list of pathlib.Path
        The files written (each atomically).
    """
    out = Path(out)
    folder = out / TABLES
    folder.mkdir(exist_ok=True)
    frame = grid_frame(out)
    table = grid_table(frame)
    status = grid_status(out)
    written = [_parquet(frame, folder / "cells.parquet"), _parquet(table, folder / "summary.parquet")]
    title = (f"# Grid {status.grid.name!r}: {len(status.done)} of {status.n_cells} cells done, "
             f"{len(status.failed)} failed, {len(status.missing)} missing")
    summary = [title, "", "Statistics over the repeats (random states) of each group of axis values.", "",
               markdown_table(table.drop(columns=["dataset", "protected"]))]
    written.append(_text(folder / "summary.md", "\n".join(summary)))
    ratios = [title, ""]
    figure = RATIO_FIGURE[status.grid.task]
    if not table.empty and figure in set(table["figure"]):
        medians = [title, "", f"Median of {figure} over the repeats, per seed strategy.", "",
                   markdown_table(median_table(table, figure))]
        written.append(_text(folder / "medians.md", "\n".join(medians)))
    baseline = status.grid.seeds[0]
    finished = set(table.loc[table["figure"] == figure, "seeds"]) if not table.empty else set()
    if baseline in finished and len(finished) > 1:
        ratios += [f"Ratio of medians of {figure}, each seed strategy against {baseline}; last row: "
                   "geometric mean over the groups where both are positive.", "",
                   markdown_table(seed_ratios(table, figure, baseline=baseline))]
    elif len(status.grid.seeds) > 1:  # a grid still running: the baseline or every other strategy has no cell yet
        ratios.append(f"No ratio yet: the ratios divide by the first seed strategy, {baseline}, and need a finished "
                      f"cell of it and of another strategy; finished so far: {', '.join(sorted(finished)) or 'none'}.")
    else:
        ratios.append("One seed strategy: no ratio to compute.")
    written.append(_text(folder / "ratios.md", "\n".join(ratios)))
    return written


def markdown_table(frame: pd.DataFrame) -> str:
    """A frame as a Markdown table; numbers with 6 significant digits, NaN as an empty cell.

    Parameters
    ----------
    frame : pandas.DataFrame

    Returns
    -------
    str
    """
    head = "| " + " | ".join(map(str, frame.columns)) + " |"
    lines = [head, "|" + "---|" * len(frame.columns)]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(_format(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def _format(value) -> str:
    if isinstance(value, float | np.floating):
        return "" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def _parquet(frame: pd.DataFrame, path: Path) -> Path:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)
    return path


def _text(path: Path, text: str) -> Path:
    atomic_write_text(path, text)
    return path
