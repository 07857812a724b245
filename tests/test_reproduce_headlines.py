"""`chiralfair reproduce`, the paper's headlines like for like: equal total queries (seed selection included), the
paper's statistic beside ours as stated tests, Table 3's three I&D figures, the axes on the command line, Ctrl-C,
the local scheduler from an unguarded script, and the two plot defects.

Every figure a test checks is recounted here from the frame it was built from (plain numpy/pandas), or read from
the model wrapper's own count where the test runs a real grid.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from realdata import real_data_home_or_skip

from chiralfair.exceptions import ConfigError, GridError
from chiralfair.experiments.cells import Cell, cell_key
from chiralfair.experiments.grid import load_grid
from chiralfair.experiments.presets import paper_numbers, preset_grid, write_reproduction
from chiralfair.experiments.presets.paper_tables import REPORTS

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
SEVEN = ["census:age", "census:race", "census:sex", "compas:age", "compas:race", "compas:sex", "bank:age"]
GENERATORS = ["aequitas", "sg", "adf", "eidig"]
ORIGINAL = {"aequitas": "random", "sg": "cluster", "adf": "cluster", "eidig": "cluster"}


def _frame(rows, generators, budgets, idis, queries=None, repeats=3, seeds=("random", "cluster", "iandd")):
    """One record per cell; ``idis(row, seeds, generator, budget, rs)``; ``queries`` gives (seed, search) queries."""
    records = []
    for row in rows:
        dataset, protected = row.split(":")
        for s in seeds:
            for generator in generators:
                for budget in budgets:
                    for rs in range(repeats):
                        n = idis(row, s, generator, budget, rs)
                        record = {"dataset": dataset, "protected": [protected], "model": "dnn", "seeds": s,
                                  "generator": generator, "max_global": budget[0], "max_local": budget[1],
                                  "random_state": rs, "n_idis": n, "n_global": n // 10, "n_local": n - n // 10,
                                  "n_queries": 1000, "initialization_rate": 0.5, "seconds_search": 0.1}
                        if len(budget) > 2:
                            seed_q, search_q = queries(row, s, generator, budget, rs)
                            record.update(max_queries=budget[2], n_seed_queries=seed_q, n_search_queries=search_q,
                                          n_total_queries=seed_q + search_q,
                                          budget_hit=float(seed_q + search_q >= budget[2] - 10),
                                          seeds_over_budget=float(seed_q == 0 and s == "iandd"))
                        records.append(record)
    return pd.DataFrame(records)


def _grid(rows, generators, budgets, repeats=3):
    axes = {"rows": list(rows), "generators": list(generators), "budgets": [list(b) for b in budgets]}
    return preset_grid("table2", repeats=repeats, overrides={"axes": axes})


# --------------------------------------------------------------------------------------------- Table 2


def test_equal_query_table_pays_for_the_selection_and_says_where_it_passed_the_budget(tmp_path):
    budgets = [(1000, 100, 50000), (1000, 100, 200000)]

    def queries(row, s, generator, budget, rs):
        if s == "iandd":  # the selection costs 120,000: over the small budget, paid from the large one
            return (0, 0) if budget[2] < 120000 else (120000, budget[2] - 120000)
        return 2000, budget[2] - 2000

    def idis(row, s, generator, budget, rs):
        if s == "iandd":
            return 0 if budget[2] < 120000 else 4000 + 10 * rs
        return {"random": 500, "cluster": 1000}[s] + rs

    rows = ["census:sex", "compas:race"]
    frame = _frame(rows, ["aequitas"], budgets, idis, queries)
    done = write_reproduction("table2", frame, tmp_path, grid=_grid(rows, ["aequitas"], budgets),
                              paper=paper_numbers("table2"))
    md = (tmp_path / "table2.md").read_text()
    assert md.index("# Equal total queries (seed selection included)") < md.index("## Verdicts")
    assert "# The paper's protocol" not in md  # no cell without a query budget
    # IDIs per 1,000 queries recounted from the frame: random at 200,000 queries, 501 IDIs (median)
    per_1000 = (1000 * frame["n_idis"] / frame["n_total_queries"])[
        (frame["seeds"] == "random") & (frame["max_queries"] == 200000) & (frame["dataset"] == "census")].median()
    assert per_1000 > 1 and f"| aequitas | census:sex | 501 [500–502]; {per_1000:,.1f}/1k; 200,000 q |" in md
    assert "0 [0–0]; –/1k; 0 q; selection over budget in 3 of 3" in md
    small = next(c for c in done.claims if c.startswith("- (max_queries 50,000) I&D seeds find more IDIs"))
    assert "0.00×" in small and "**contradicted**: the interval lies below 1" in small
    assert "its selection alone would have passed it in 6" in small
    large = next(c for c in done.claims if c.startswith("- (max_queries 200,000) I&D seeds find more IDIs"))
    ratio = frame[(frame["max_queries"] == 200000) & (frame["seeds"] == "iandd")]["n_idis"].mean() / frame[
        (frame["max_queries"] == 200000) & (frame["seeds"] == "random")]["n_idis"].mean()
    assert f": {ratio:.2f}×, 95% bootstrap interval [" in large and "**shown**: the interval lies above 1" in large
    assert "no like-for-like figure" in md  # the paper has no per-row figure for compas:race
    assert (tmp_path / "table2_equal_queries.png").read_bytes()[:4] == b"\x89PNG"
    table = pd.read_parquet(tmp_path / "table2.parquet")
    assert sorted(table["max_queries"].unique()) == [50000, 200000]


def test_the_papers_own_average_is_compared_on_its_seven_rows_and_four_generators(tmp_path):
    rng = np.random.default_rng(1)
    noise = {key: rng.integers(0, 40) for key in [(r, g, s, rs) for r in SEVEN for g in GENERATORS
                                                  for s in ("random", "cluster", "iandd") for rs in range(3)]}

    def idis(row, s, generator, budget, rs):
        return {"random": 1000, "cluster": 1500, "iandd": 2000}[s] + int(noise[(row, generator, s, rs)])

    frame = _frame(SEVEN, GENERATORS, [(100, 100)], idis)
    done = write_reproduction("table2", frame, tmp_path, grid=_grid(SEVEN, GENERATORS, [(100, 100)]),
                              paper=paper_numbers("table2"))
    md = (tmp_path / "table2.md").read_text()
    original = frame[[ORIGINAL[g] == s for g, s in zip(frame["generator"], frame["seeds"], strict=True)]]
    ours = frame[frame["seeds"] == "iandd"]["n_idis"].mean() / original["n_idis"].mean()
    assert "3,038 / 1,803 = 1.68× (its 7 rows × 4 generators)" in md
    headline = next(c for c in done.claims if "average IDIs per approach over 28 groups" in c)
    low, high = (float(x.rstrip("×")) for x in headline.split("interval [")[1].split("]")[0].split(", "))
    assert low <= round(ours, 2) <= high and f"{ours:.2f}×" in headline
    assert ("the paper's 1.68× is inside the interval" in headline) == (low <= 1.68 <= high)
    # the mean of rows beside the paper's: its own 7-row means (sg 371 -> 415), the rows are the same
    assert "| mean of rows |" in md and "371 → 415 |" in md
    assert "**holds**" not in md


def test_a_subset_names_its_rows_and_never_compares_with_the_papers_mean_over_other_rows(tmp_path):
    rows = ["census:age", "census:sex", "bank:age"]
    frame = _frame(rows, ["sg"], [(100, 100)], lambda row, s, g, b, rs: 100 * (1 + ["random", "cluster",
                                                                                      "iandd"].index(s)) + rs)
    write_reproduction("table2", frame, tmp_path, grid=_grid(rows, ["sg"], [(100, 100)]),
                       paper=paper_numbers("table2"))
    md = (tmp_path / "table2.md").read_text()
    assert "Rows (3): census:age, census:sex, bank:age." in md
    assert "371 → 415" not in md  # the paper's SG mean is over its seven rows
    assert "– (the paper's mean is over its 7 rows, not these)" in md
    assert "not in our docs for sg on these rows (census:age, census:sex, bank:age): no like-for-like figure" in md


# --------------------------------------------------------------------------------------------- Table 3


def test_table3_shows_three_iandd_figures_and_the_same_padding_rule_for_the_paper_and_the_tool(tmp_path):
    records = []
    for s in ("random", "cluster", "iandd"):
        for rs in range(3):
            record = {"dataset": "census", "protected": ["sex"], "model": "dnn", "seeds": s, "max_global": 1000,
                      "max_local": 0, "random_state": rs, "n_seeds": 1000,
                      "initialization_rate": {"random": 0.01, "cluster": 0.05, "iandd": 1.0}[s]}
            if s == "iandd":
                n_candidates, n_initial = 3159, 1386 + rs
                record.update(n_candidates=n_candidates, n_initial_idis=n_initial,
                              candidate_idi_share=n_initial / n_candidates)
            records.append(record)
    frame = pd.DataFrame(records)
    grid = preset_grid("table3", repeats=3, overrides={"axes": {"rows": ["census:sex"]}})
    write_reproduction("table3", frame, tmp_path, grid=grid, paper=paper_numbers("table3"))
    md = (tmp_path / "table3.md").read_text()
    share = frame["candidate_idi_share"].dropna()
    expected = f"{100 * share.median():.1f}% [{100 * share.quantile(0.25):.1f}%–{100 * share.quantile(0.75):.1f}%]"
    assert ("| census:sex | dnn | 1.0% [1.0%–1.0%] | 5.0% [5.0%–5.0%] | 100.0% [100.0%–100.0%] | " + expected
            + " | 1,387 [1,386–1,388] | 3,159 [3,159–3,159] | 0.7% / 4.9% / 35.5% |") in md
    assert "100% by construction" in md and "the paper's closer analogue" in md
    assert "the paper in data order, chiralfair drawn at random" in md
    table2 = (SRC / "chiralfair" / "experiments" / "presets" / "paper_tables.py").read_text()
    assert "pads 1,000 seeds with non-IDI rows" not in table2  # the padding is said one way, for both


# --------------------------------------------------------------------------------------------- grids, cells


def test_a_budget_triple_is_a_query_budget_in_the_cell_and_pairs_keep_their_keys():
    grid = load_grid({"axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["iandd"],
                               "generators": ["aequitas"], "budgets": [[10, 10], [10, 10, 500]]}})
    plain, budgeted = grid.cells()
    assert plain.max_queries is None and budgeted.max_queries == 500
    assert "max_queries" not in plain.to_dict() and budgeted.to_dict()["max_queries"] == 500
    old = Cell(**{k: v for k, v in plain.__dict__.items() if k != "max_queries"})
    assert cell_key(old) == plain.key != budgeted.key
    assert Cell.from_dict(budgeted.to_dict()) == budgeted
    with pytest.raises(GridError, match="max_queries \\(the third number\\) must be >= 1"):
        load_grid({"axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["iandd"],
                            "generators": ["aequitas"], "budgets": [[10, 10, 0]]}})
    with pytest.raises(GridError, match="applies to task = \"search\" only"):
        load_grid({"task": "seeds", "axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["iandd"],
                                             "budgets": [[10, 0, 500]]}})


def test_a_query_budget_includes_the_seed_selection_and_a_stored_selection_over_it_is_not_reused(tmp_path):
    from chiralfair.experiments.execution import run_grid
    from chiralfair.experiments.tables import grid_frame

    data_home = real_data_home_or_skip()

    def grid(budgets):
        return {"name": "q", "repeats": 1, "axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["iandd"],
                                                    "generators": ["aequitas"], "budgets": budgets}}

    def frame(budgets, out):
        run_grid(grid(budgets), out, scheduler="sync", progress=False, data_home=data_home, cache_dir=tmp_path / "c")
        return grid_frame(out).set_index("max_queries", drop=False)

    cost = frame([[10, 10]], tmp_path / "a")["n_seed_queries"].item()  # the selection's own count, no budget
    assert cost > 600
    out = frame([[10, 10], [10, 10, 500], [10, 10, int(cost) + 50], [10, 10, 10**7]], tmp_path / "b")
    over, tight, wide = out.loc[500.0], out.loc[cost + 50], out.loc[1e7]
    # the stored selection (cost > 500) is not reused: the budget stops the selection, no seed, no search
    assert over["n_seed_queries"] == 0 and over["n_idis"] == 0 and over["seeds_over_budget"] == 1
    assert over["n_total_queries"] <= 500
    # a selection that fits is the stored one (same cost), and the search gets only what is left
    assert tight["n_seed_queries"] == wide["n_seed_queries"] == cost
    assert tight["n_search_queries"] <= 50 and tight["budget_hit"] == 1
    assert tight["n_total_queries"] == tight["n_seed_queries"] + tight["n_search_queries"] <= cost + 50
    assert wide["budget_hit"] == 0 and wide["n_idis"] == out[out["max_queries"].isna()]["n_idis"].item()


# --------------------------------------------------------------------------------------------- command line


def test_the_axes_are_flags_of_reproduce():
    from chiralfair.cli.experiment import axis_overrides

    overrides = axis_overrides(rows=["census:sex", "compas:race,sex"], generators=["adf"],
                               budget=["100/100", "1000/100/200000"])
    assert overrides == {"axes": {"rows": ["census:sex", "compas:race,sex"], "generators": ["adf"],
                                  "budgets": [[100, 100], [1000, 100, 200000]]}}
    assert axis_overrides() == {}
    with pytest.raises(ConfigError, match="--budget '100x100' is not MAX_GLOBAL/MAX_LOCAL"):
        axis_overrides(budget=["100x100"])
    grid = preset_grid("table2", overrides=overrides)
    assert load_grid(grid).cells()[-1].max_queries == 200000


def _env(tmp_path):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS), os.environ.get("PYTHONPATH", "")]),
            "CHIRALFAIR_CACHE": str(tmp_path / "cache")}


def test_ctrl_c_says_what_was_kept_and_releases_the_lock(tmp_path):
    data_home = real_data_home_or_skip()
    out = tmp_path / "grid"
    command = [sys.executable, "-m", "chiralfair", "reproduce", "table2", "--rows", "german:sex", "--models", "lr",
               "--generators", "aequitas", "--seeds", "random", "--budget", "10/10", "--repeats", "400",
               "--scheduler", "sync", "--out", str(out)]
    proc = subprocess.Popen(command, env={**_env(tmp_path), "CHIRALFAIR_DATA": str(data_home)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not list(out.glob("cells/*/result.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    kept = len(list(out.glob("cells/*/result.json")))
    assert proc.returncode == 130, stderr
    assert f"interrupted: {kept} of 400 cells finished and kept in {out}" in stderr
    assert "the lock (.run.lock) is released" in stderr and "Run the same command again" in stderr
    assert not (out / ".run.lock").exists()


UNGUARDED = """from chiralfair.experiments.presets import reproduce
done = reproduce("table2", {out!r}, repeats=1, scheduler="local", workers=1, progress=False,
                 overrides={{"axes": {{"rows": ["german:sex"], "models": ["lr"], "generators": ["aequitas"]}}}})
"""


def test_the_local_scheduler_from_an_unguarded_script_is_refused_naming_the_fix(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(UNGUARDED.format(out=str(tmp_path / "grid")))
    proc = subprocess.run([sys.executable, str(script)], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1
    assert f"starts worker processes that import {script} again, and its call at line 2 is not under" in proc.stderr
    assert 'Put the call under `if __name__ == "__main__":`, or pass scheduler="sync"' in proc.stderr
    assert "Nanny" not in proc.stderr and not (tmp_path / "grid").exists()
    guarded = tmp_path / "guarded.py"
    guarded.write_text("from chiralfair.experiments.execution import check_main_guard\n\n"
                       "if __name__ == '__main__':\n    check_main_guard('local')\n    print('passed')\n"
                       "check_main_guard('sync')\n")
    proc = subprocess.run([sys.executable, str(guarded)], env=_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "passed", proc.stderr


# --------------------------------------------------------------------------------------------- plots


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_the_bar_legend_never_covers_a_bar():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rows = ["census:age", "census:sex"]
    frame = _frame(rows, ["aequitas"], [(100, 100)], lambda row, s, g, b, rs: 5000 if s == "random" else 4000)
    report = REPORTS["table2"]("table2", write_frame(frame), _grid(rows, ["aequitas"], [(100, 100)]),
                               paper_numbers("table2"))
    figure = dict(report.plots)["table2"]
    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    assert all(ax.get_legend() is None for ax in figure.axes) and len(figure.legends) == 1
    legend = figure.legends[0].get_window_extent(renderer)
    bars = [p.get_window_extent(renderer) for ax in figure.axes for p in ax.patches]
    assert bars and not any(_overlaps(legend, bar) for bar in bars)


def write_frame(frame):
    from chiralfair.experiments.presets.reproduction import _tidy

    return _tidy(frame)


def test_the_tradeoff_plots_dashed_line_is_the_guardrails_own_f1_budget():
    records = [{"dataset": "census", "protected": ["sex"], "model": "dnn", "seeds": [s], "generator": "aequitas",
                "max_global": 100, "max_local": 100, "random_state": rs, "n_idis": 500, "f1_before": 0.65,
                "f1_spread": spread, "test_idi_rate_before": 0.2, "paper_test_idi_rate_after": 0.1,
                "paper_f1_after": 0.6, "n_idis_excluded": 0, "n_test_projections_added": 0}
               for s in ("cluster", "iandd") for rs, spread in enumerate((0.020, 0.026, 0.030))]
    grid = preset_grid("table4", repeats=3, overrides={"axes": {"rows": ["census:sex"], "generators": ["aequitas"]}})
    report = REPORTS["table4"]("table4", write_frame(pd.DataFrame(records)), grid, paper_numbers("table4"))
    figure = dict(report.plots)["table4"]
    dashed = [line for ax in figure.axes for line in ax.lines if line.get_linestyle() == "--"]
    budget = max(0.01, float(np.median([r["f1_spread"] for r in records])))  # 0.026, not 0.01
    assert len(dashed) == 1 and dashed[0].get_ydata()[0] == pytest.approx(0.65 - budget)
    assert "F1 budget 0.026" in figure.axes[0].get_title()


def test_every_plot_states_rows_coupling_counting_rule_and_budgets(tmp_path):
    rows = ["census:sex"]
    frame = _frame(rows, ["aequitas"], [(100, 100)], lambda row, s, g, b, rs: 10)
    done = write_reproduction("table2", frame, tmp_path, grid=_grid(rows, ["aequitas"], [(100, 100)]),
                              paper=paper_numbers("table2"))
    assert [p.name for p in done.files if p.suffix == ".png"] == ["table2.png"]
    report = REPORTS["table2"]("table2", write_frame(frame), _grid(rows, ["aequitas"], [(100, 100)]),
                               paper_numbers("table2"))
    from chiralfair.experiments.presets.reproduction import _stamp

    figure = report.plots[0][1]
    _stamp(figure, _grid(rows, ["aequitas"], [(100, 100)]))
    title = " ".join(figure.get_suptitle().split())
    for words in ("Rows (1): census:sex.", "coupling off in census:sex", "Counting rule: ours",
                  "Budgets (max_global/max_local[, query budget]): 100/100."):
        assert words in title
    assert json.dumps(title)  # plain text
