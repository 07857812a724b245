"""`chiralfair reproduce`: shipped presets, their --quick variants, paper numbers, tables, claims and plots."""

import math

import pandas as pd
import pytest

from chiralfair.exceptions import ConfigError
from chiralfair.experiments.presets import (
    PRESET_DIR,
    paper_numbers,
    preset_grid,
    preset_names,
    quick_grid,
    reproduce,
    write_reproduction,
)

PRESETS = ("ablation", "fig6", "fig7", "table2", "table3", "table4")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_shipped_presets_are_the_six_of_the_issue():
    assert preset_names() == PRESETS
    assert sorted(p.stem for p in (PRESET_DIR / "paper").glob("*.toml")) == list(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_validates(name):
    grid_module = pytest.importorskip("chiralfair.experiments.grid")
    grid = grid_module.load_grid(preset_grid(name))
    assert len(grid.cells()) == _n_cells(preset_grid(name), repeats=10)


@pytest.mark.parametrize("name", PRESETS)
def test_quick_variant_has_three_repeats_and_budgets_divided_by_ten(name):
    full, quick = preset_grid(name), preset_grid(name, quick=True)
    assert full["repeats"] == 10 and quick["repeats"] == 3
    assert quick["axes"]["budgets"] == [[max(1, math.ceil(b[0] / 10)), math.ceil(b[1] / 10),
                                         *(math.ceil(q / 10) for q in b[2:])] for b in full["axes"]["budgets"]]
    for key in ("rows", "models", "seeds"):
        assert quick["axes"][key] == full["axes"][key]


@pytest.mark.parametrize("name", PRESETS)
def test_quick_variant_expands_to_three_repeats_of_every_small_cell(name):
    grid_module = pytest.importorskip("chiralfair.experiments.grid")
    cells = grid_module.load_grid(preset_grid(name, quick=True)).cells()
    assert len(cells) == _n_cells(preset_grid(name), repeats=3)
    assert {c.random_state for c in cells} == {0, 1, 2} and {c.model_random_state for c in cells} == {0}
    assert {(c.max_global, c.max_local, *(() if c.max_queries is None else (c.max_queries,))) for c in cells} == {
        tuple(b) for b in preset_grid(name, quick=True)["axes"]["budgets"]}


def _n_cells(grid, repeats):
    """rows x models x seed strategies x generators x budgets x repeats; a retrain cell compares all its seeds."""
    axes = grid["axes"]
    n_seeds = 1 if grid["task"] == "retrain" else len(axes["seeds"])
    return (len(axes["rows"]) * len(axes["models"]) * n_seeds * len(axes.get("generators", [None]))
            * len(axes["budgets"]) * repeats)


def test_quick_budgets_of_the_limit_curve_and_the_seed_table():
    assert preset_grid("fig7", quick=True)["axes"]["budgets"] == [[1, 10], [3, 10], [5, 10], [10, 10], [20, 10],
                                                                  [40, 10]]
    assert preset_grid("table3", quick=True)["axes"]["budgets"] == [[100, 0]]
    assert preset_grid("table2", quick=True)["axes"]["budgets"] == [[10, 10], [100, 10, 5000], [100, 10, 20000],
                                                                    [100, 10, 50000]]
    assert quick_grid({"repeats": 10, "axes": {"budgets": [[1, 0], [2, 0], [100, 5]]}})["axes"]["budgets"] == [
        [1, 0], [10, 1]]


def test_presets_follow_the_paper_setup():
    table2 = preset_grid("table2")
    assert table2["model_random_state"] == 0
    assert table2["axes"]["rows"] == ["census:age", "census:race", "census:sex", "compas:age", "compas:race",
                                      "compas:sex", "bank:age"]
    # the paper's protocol, then equal total query budgets (seed selection included) with 1,000 seeds
    assert table2["axes"]["budgets"] == [[100, 100], [1000, 100, 50000], [1000, 100, 200000], [1000, 100, 500000]]
    assert preset_grid("table3")["task"] == "seeds" and "generators" not in preset_grid("table3")["axes"]
    assert preset_grid("table4")["task"] == "retrain"
    assert preset_grid("fig6")["axes"]["models"] == ["lr", "svc", "dtc", "mlp"]
    limits = [g for g, _ in preset_grid("fig7")["axes"]["budgets"]]
    assert limits[0] == 10 and limits[-1] == 400 and limits == sorted(limits)
    assert preset_grid("ablation")["axes"]["seeds"] == ["random", "cluster", "data_rows", "i", "iandd"]


def test_repeats_and_overrides():
    grid = preset_grid("table2", repeats=4, overrides={"axes": {"rows": ["census:sex"]}, "time_limit": 60})
    assert grid["repeats"] == 4 and grid["time_limit"] == 60
    assert grid["axes"]["rows"] == ["census:sex"] and grid["axes"]["generators"] == ["aequitas", "sg", "adf", "eidig"]
    grid = preset_grid("table2", overrides={"random_states": [3, 7]})
    assert "repeats" not in grid and grid["random_states"] == [3, 7]
    with pytest.raises(ConfigError, match="repeats must be >= 1"):
        preset_grid("table2", repeats=0)


def test_paper_numbers_are_those_our_docs_cite():
    table2 = paper_numbers("table2")
    assert table2["rows"]["aequitas"]["census:age"] == {"original": 87, "iandd": 4324}
    assert table2["mean_of_rows"]["adf"] == {"original": 3621, "iandd": 4228}
    assert table2["headline_ratio"] == 1.68
    assert table2["original_seeds"] == {"aequitas": "random", "sg": "cluster", "adf": "cluster", "eidig": "cluster"}
    table3 = paper_numbers("table3")
    assert table3["rows"]["census:sex"] == {"random": 0.7, "cluster": 4.9, "iandd": 35.5}
    assert table3["mean"] == {"random": 4.1, "cluster": 11.2, "iandd": 41.5}
    assert paper_numbers("table4")["mean_change_remaining"] == -0.29
    for name in PRESETS:  # every preset says where its numbers come from and what our docs do not hold
        assert paper_numbers(name)["source"] and paper_numbers(name)["missing"]
    for name in ("fig6", "fig7", "ablation"):  # no figure of these is in our docs: only claims, no numbers
        assert not [v for v in paper_numbers(name).values() if isinstance(v, int | float | dict)]


def test_command_line_refuses_an_unknown_preset_and_bad_numbers_before_heavy_imports(tmp_path):
    from test_light_cli import HEAVY, run_commands

    results = run_commands([["reproduce", "table9"], ["reproduce", "table2", "--repeats", "0"],
                            ["reproduce", "fig7", "--quick", "--repeats", "5"],
                            ["reproduce", "fig7", "--quick", "--workers", "0"]], tmp_path)
    messages = ["unknown preset 'table9'; valid: ablation, fig6, fig7, table2, table3, table4",
                "--repeats must be >= 1", "--quick and --repeats cannot be combined", "--workers must be >= 1"]
    for r, message in zip(results, messages, strict=True):
        assert r["code"] == 2 and message in r["stderr"] and "Traceback" not in r["stderr"], r
    assert not set(results[-1]["heavy"]) & set(HEAVY)
    assert not (tmp_path / "reproduce").exists()


def test_unknown_preset_is_refused_with_the_valid_names(tmp_path):
    for call in (lambda: reproduce("table9", tmp_path), lambda: preset_grid("table9"),
                 lambda: paper_numbers("table9")):
        with pytest.raises(ConfigError, match="unknown preset 'table9'; valid: ablation, fig6, fig7, table2, "
                                              "table3, table4"):
            call()
    assert list(tmp_path.iterdir()) == []


# --- tables from a hand-made tidy frame (one row per cell, as grid_frame gives) -----------------------------


def _cells(rows, seeds, generators, budgets, idis, models=("dnn",), repeats=3):
    """One record per cell; ``idis(row, model, seeds, generator, max_global, random_state)`` -> (global, local)."""
    records = []
    for row in rows:
        dataset, protected = row.split(":")
        for model in models:
            for s in seeds:
                for generator in generators:
                    for max_global, max_local in budgets:
                        for rs in range(repeats):
                            n_global, n_local = idis(row, model, s, generator, max_global, rs)
                            records.append({"dataset": dataset, "protected": [protected], "model": model, "seeds": s,
                                            "generator": generator, "max_global": max_global,
                                            "max_local": max_local, "random_state": rs,
                                            "n_idis": n_global + n_local, "n_global": n_global, "n_local": n_local,
                                            "n_queries": 1000 + rs, "initialization_rate": 0.5,
                                            "seconds_search": 0.1})
    return pd.DataFrame(records)


def _grid(name, rows, seeds, generators, budgets, models=("dnn",)):
    return preset_grid(name, repeats=3, overrides={"axes": {"rows": list(rows), "seeds": list(seeds),
                                                            "generators": list(generators),
                                                            "budgets": [list(b) for b in budgets],
                                                            "models": list(models)}})


def test_table2_from_a_tidy_frame_writes_medians_paper_columns_claims_and_plot(tmp_path):
    rank = {"random": 1, "cluster": 2, "iandd": 3}

    def idis(row, model, s, generator, max_global, rs):
        if row == "census:sex" and s == "iandd":  # I&D below cluster on this row only
            return 1, 10 + rs
        return 10 * rank[s], 100 * rank[s] + rs  # medians 110 / 221 / 331

    rows, seeds, gens = ["census:age", "census:sex"], ["random", "cluster", "iandd"], ["aequitas"]
    frame = _cells(rows, seeds, gens, [(100, 100)], idis)
    done = write_reproduction("table2", frame, tmp_path, grid=_grid("table2", rows, seeds, gens, [(100, 100)]),
                              paper=paper_numbers("table2"))
    md = (tmp_path / "table2.md").read_text()
    assert "| census:age | 111 [110–112] | 221 [220–222] | 331 [330–332] | 2.98× | 1.50× | 87 → 4,324 |" in md
    assert "| census:sex | 111 [110–112] | 221 [220–222] | 12 [11.5–12.5] | 0.11× | 0.05× | 57 → 840 |" in md
    assert "Counting rule" in md and "Rows (2): census:age, census:sex." in md
    assert "coupling **off** in census:sex" in md
    # the paper's statistic over these two rows only: its per-row figures (87, 57 -> 4,324, 840), never its 7-row mean
    assert "| mean of rows | 111 | 221 | 172 | geomean 0.57× | geomean 0.29× | 72 → 2,582 (these 2 rows) |" in md
    means = frame.groupby([frame["dataset"] + ":" + frame["protected"].str[0], "seeds"])["n_idis"].mean()
    ours = (means[:, "iandd"].mean()) / (means[:, "random"].mean())  # (331 + 12) / 2 over (111 + 111) / 2
    paper = ((4324 + 840) / 2) / ((87 + 57) / 2)
    verdict = next(c for c in done.claims if c.startswith("- (the paper's protocol) I&D seeds find more IDIs than "
                                                          "the original seeds, average IDIs per approach over 2"))
    assert f"{ours:.2f}×, 95% bootstrap interval [" in verdict and "over 3 repeats" in verdict
    assert f"the paper's {paper:.2f}× is outside the interval (ours is lower)" in verdict
    assert "**holds**" not in md
    table = pd.read_parquet(tmp_path / "table2.parquet")
    paper = table.set_index(["row", "seeds"])["paper_n_idis"]
    assert paper[("census:age", "random")] == 87 and paper[("census:age", "iandd")] == 4324
    assert math.isnan(paper[("census:age", "cluster")])
    assert table.set_index(["row", "seeds"]).loc[("census:age", "iandd"), "n_idis_median"] == 331
    assert (table["n"] == 3).all()
    assert (tmp_path / "table2.png").read_bytes()[:8] == PNG_MAGIC
    assert [p.name for p in done.files] == ["table2.md", "table2.parquet", "table2.png"]


def test_ablation_shows_the_diversity_of_seeds_and_idis_and_states_whether_d_spreads_them(tmp_path):
    rank = {"random": 1, "cluster": 2, "i": 3, "iandd": 3}
    rows, seeds, gens = ["census:age", "census:sex"], ["random", "cluster", "i", "iandd"], ["aequitas"]
    frame = _cells(rows, seeds, gens, [(100, 100)], lambda row, m, s, g, mg, rs: (10 * rank[s], 100 * rank[s]))
    # iandd's seeds cover more leaves than i's on census:age only; the IDIs' leaves are equal everywhere.
    frame["seed_leaves_covered"] = [40 + rs if (s == "iandd" and row == "census:age") else 30 + rs
                                    for row, s, rs in zip(frame["dataset"] + ":" + frame["protected"].str[0],
                                                          frame["seeds"], frame["random_state"], strict=True)]
    frame["idi_leaves_covered"] = 50
    done = write_reproduction("ablation", frame, tmp_path, grid=_grid("ablation", rows, seeds, gens, [(100, 100)]),
                              paper=paper_numbers("ablation"))
    md = (tmp_path / "ablation.md").read_text()
    assert "Surrogate-tree leaves covered by the seeds (`seed_leaves_covered`)" in md
    assert "| census:age | 31 [30.5–31.5] | 31 [30.5–31.5] | 31 [30.5–31.5] | 41 [40.5–41.5] |" in md
    seed_claim = next(c for c in done.claims if "seeds cover more surrogate-tree leaves" in c)
    idi_claim = next(c for c in done.claims if "IDIs found" in c)
    assert "does not hold" in seed_claim and "census:sex" in seed_claim and "census:age" not in seed_claim
    assert "does not hold" in idi_claim


def test_fig6_states_global_and_local_claims_per_model_and_draws_both_bar_plots(tmp_path):
    def idis(row, model, s, generator, max_global, rs):
        n_global = 50 if s == "iandd" else 10
        n_local = 5 if (s == "iandd" and model == "dtc") else (500 if s == "iandd" else 100)
        return n_global, n_local + rs

    rows, seeds, models = ["census:sex"], ["random", "cluster", "iandd"], ["lr", "dtc"]
    frame = _cells(rows, seeds, ["aequitas"], [(100, 100)], idis, models=models)
    grid = _grid("fig6", rows, seeds, ["aequitas"], [(100, 100)], models=models)
    done = write_reproduction("fig6", frame, tmp_path, grid=grid, paper=paper_numbers("fig6"))
    claims = "\n".join(done.claims)
    for model, phase in (("lr", "global"), ("dtc", "global"), ("lr", "local")):
        assert (f"- {model}, {phase} phase: I&D seeds give more IDIs than random and cluster on every row: "
                "**direction holds**") in claims
    assert ("- dtc, local phase: I&D seeds give more IDIs than random and cluster on every row: **direction does not "
            "hold**" in claims)
    assert done.claims[-1] == ("- Global and local gains on all 2 sklearn models: **direction does not hold** "
                              "(medians, no interval)")
    for phase in ("global", "local"):
        assert (tmp_path / f"fig6_{phase}.png").read_bytes()[:8] == PNG_MAGIC
    assert "bar heights are not in our docs" in (tmp_path / "fig6.md").read_text()


def test_fig7_names_the_limits_where_iandd_is_not_above(tmp_path):
    def idis(row, model, s, generator, max_global, rs):
        if s == "iandd":
            return (5, 0) if max_global == 25 else (max_global, 10 * max_global)
        return max_global // 2, 5 * max_global

    budgets, seeds = [(10, 100), (25, 100), (50, 100)], ["random", "cluster", "iandd"]
    frame = _cells(["census:race"], seeds, ["aequitas"], budgets, idis)
    done = write_reproduction("fig7", frame, tmp_path, grid=_grid("fig7", ["census:race"], seeds, ["aequitas"],
                                                                  budgets),
                              paper=paper_numbers("fig7"))
    assert list(done.claims) == [
        "- census:race, aequitas: I&D above random and cluster at every limit: **direction does not hold** in 2 of 6 "
        "comparisons: limit 25 (I&D 5 vs random 137); limit 25 (I&D 5 vs cluster 137)"]
    assert (tmp_path / "fig7.png").read_bytes()[:8] == PNG_MAGIC
    assert "| 10 | 55 [55–55] | 55 [55–55] | 110 [110–110] | 2.00× | 2.00× |" in (tmp_path / "fig7.md").read_text()


def test_table3_compares_initialization_rates_with_the_paper_in_percent(tmp_path):
    rates = {"random": 0.02, "cluster": 0.1, "iandd": 0.6}
    frame = pd.DataFrame([{"dataset": "census", "protected": ["sex"], "model": "dnn", "seeds": s,
                           "max_global": 1000, "max_local": 0, "random_state": rs,
                           "initialization_rate": rates[s] + 0.01 * rs, "n_initial_idis": 700 + rs, "n_seeds": 1000}
                          for s in rates for rs in range(3)])
    grid = preset_grid("table3", repeats=3, overrides={"axes": {"rows": ["census:sex"]}})
    done = write_reproduction("table3", frame, tmp_path, grid=grid, paper=paper_numbers("table3"))
    md = (tmp_path / "table3.md").read_text()
    assert ("| census:sex | dnn | 3.0% [2.5%–3.5%] | 11.0% [10.5%–11.5%] | 61.0% [60.5%–61.5%] | – | "
            "701 [700–702] | – | 0.7% / 4.9% / 35.5% |") in md
    assert all("**direction holds**" in c for c in done.claims)
    table = pd.read_parquet(tmp_path / "table3.parquet").set_index("seeds")
    assert table.loc["iandd", "paper_initialization_rate"] == pytest.approx(0.355)


def test_an_empty_frame_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no finished cell"):
        write_reproduction("table2", pd.DataFrame(), tmp_path, grid=preset_grid("table2"), paper={})


def test_table4_puts_the_held_out_methods_first_and_the_leaking_protocol_after(tmp_path):
    records = []
    for rs in range(3):
        for s, remaining, rate in (("cluster", 100, 0.10), ("iandd", 60 + rs, 0.12)):
            records.append({"dataset": "census", "protected": ["sex"], "model": "dnn", "seeds": [s],
                            "generator": "aequitas", "max_global": 100, "max_local": 100, "random_state": rs,
                            "n_idis": 500, "remaining_idis": remaining, "f1_before": 0.65, "f1_after": 0.60,
                            "test_idi_rate_before": 0.2, "test_idi_rate_after": rate,
                            "test_idi_lower_after": rate - 0.005, "test_idi_upper_after": rate + 0.005,
                            "paper_test_idi_rate_after": rate, "paper_f1_after": 0.60, "paper_improved_after": 0.0,
                            "counterfactual_test_idi_rate_after": 0.01, "counterfactual_f1_after": 0.645,
                            "counterfactual_improved_after": 1.0, "n_idis_excluded": 2,
                            "n_test_projections_added": 0})
    grid = preset_grid("table4", repeats=3, overrides={"axes": {"rows": ["census:sex"], "generators": ["aequitas"]}})
    done = write_reproduction("table4", pd.DataFrame(records), tmp_path, grid=grid, paper=paper_numbers("table4"))
    assert "held-out IDI rate than with cluster-seeded ones: **direction does not hold** in 1 of 1" in done.claims[0]
    assert done.claims[1].startswith("- (paper protocol, leaks)")
    assert done.claims[1].endswith("(1 of 1 comparisons of medians)")
    assert "mean relative change -39.0% over 1 rows × generators, paper -29%): **direction holds**" in done.claims[2]
    md = (tmp_path / "table4.md").read_text()
    assert md.index("## Held-out IDI rate, F1 and group metrics") < md.index(
        "## The paper's protocol (leaks; not the headline)")
    # No spread and no group metrics in these records: "–" for loss / spread, "undefined" for DPD and EOD.
    assert ("| census:sex | counterfactual | 20.0% | 1.0% [1.0%–1.0%] | -95% | 0.650 | 0.645 | -0.005 | – | undefined "
            "| undefined | 3 of 3 |") in md
    assert ("| census:sex | paper (I&D seeds) | 20.0% | 12.0% [12.0%–12.0%] | -40% | 0.650 | 0.600 | -0.050 | – "
            "| undefined | undefined | 0 of 3 |") in md
    assert "**Met on every row by: counterfactual.**" in md
    assert "(12 in all cells; test projections added to training: 0" in md
    assert "mean relative change +20.0% (95% bootstrap interval over cells [+20.0%, +20.0%], 3 cells" in md
    assert "the paper protocol favours I&D in 3 of 3 cells, the holdout protocol in 0; they disagree in 3" in md
    assert (tmp_path / "table4.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.slow
def test_a_tiny_reproduction_end_to_end_writes_table_paper_columns_and_plot(tmp_path):
    pytest.importorskip("chiralfair.experiments.tables")
    pytest.importorskip("chiralfair.experiments.execution")
    from realdata import find_real_data_home

    if find_real_data_home() is None:
        pytest.skip("needs the benchmark data (CHIRALFAIR_DATA)")
    overrides = {"axes": {"rows": ["german:sex"], "models": ["lr"], "generators": ["aequitas"],
                          "budgets": [[4, 3]]}}
    done = reproduce("table2", tmp_path / "grid", repeats=2, scheduler="sync", progress=False, overrides=overrides)
    assert done.n_failed == 0
    assert [p.name for p in done.files] == ["table2.md", "table2.parquet", "table2.png"]
    md = (tmp_path / "grid" / "table2.md").read_text()
    assert "| german:sex |" in md and "paper original → I&D" in md and "paper 1.68×" in md
    table = pd.read_parquet(tmp_path / "grid" / "table2.parquet")
    assert sorted(table["seeds"]) == ["cluster", "iandd", "random"] and (table["n"] == 2).all()
    assert "paper_n_idis" in table.columns
    assert (tmp_path / "grid" / "table2.png").read_bytes()[:8] == PNG_MAGIC
    again = reproduce("table2", tmp_path / "grid", repeats=2, scheduler="sync", progress=False, overrides=overrides)
    pd.testing.assert_frame_equal(again.table.drop(columns=[c for c in again.table if "seconds" in c]),
                                  table.drop(columns=[c for c in table if "seconds" in c]))
