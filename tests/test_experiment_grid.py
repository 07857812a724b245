"""Experiment grids: grid files, resuming, schedulers, failures, shared models and seeds, tables, CLI.

Grids here are tiny (LR on german, budgets of 10) so that the default suite stays fast; every run has its own
model cache folder (``tmp_path``), so that a test never depends on what another one trained.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from realdata import real_data_home_or_skip
from typer.testing import CliRunner

from chiralfair._deadline import check_deadline, time_limit
from chiralfair.cli import app
from chiralfair.exceptions import GridError, RunFolderError, TimeLimitError
from chiralfair.experiments import tasks
from chiralfair.experiments.cells import cell_folder, cell_key, read_json
from chiralfair.experiments.execution import GridInterrupted, grid_status, run_grid
from chiralfair.experiments.grid import load_grid
from chiralfair.experiments.tables import grid_frame, grid_table, seed_ratios, without_timings, write_tables

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def small_grid(**changes):
    grid = {"name": "small", "repeats": 2,
            "axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["random", "iandd"],
                     "generators": ["aequitas", "adf"], "budgets": [[10, 10]]}}
    axes = changes.pop("axes", {})
    merged = {**grid["axes"], **axes}
    return {**grid, **changes, "axes": {k: v for k, v in merged.items() if v is not None}}  # None: no such axis


@pytest.fixture
def data_home():
    return real_data_home_or_skip()


def run(grid, out, cache, data_home, **kw):
    kw.setdefault("scheduler", "sync")
    kw.setdefault("progress", False)
    return run_grid(grid, out, data_home=data_home, cache_dir=cache, **kw)


@pytest.fixture
def attempts(monkeypatch):
    """Count the task runs per cell key (sync scheduler: in this process)."""
    counts = {}
    for name, task in list(tasks.TASKS.items()):
        def counted(cell, *args, _task=task):
            counts[cell.key] = counts.get(cell.key, 0) + 1
            return _task(cell, *args)
        monkeypatch.setitem(tasks.TASKS, name, counted)
    return counts


# ------------------------------------------------------------------------------------------------ grid files
@pytest.mark.parametrize("change, words", [
    ({"axes": {"sizes": [1]}}, ["unknown axis 'sizes'", "valid: rows, models, seeds, generators, budgets"]),
    ({"axes": {"generators": ["fairx"]}}, ["'fairx'", "axes.generators", "aequitas", "eidig"]),
    ({"axes": {"seeds": ["best"]}}, ["'best'", "axes.seeds", "iandd", "random"]),
    ({"axes": {"models": ["xgb"]}}, ["'xgb'", "axes.models", "dnn", "lr"]),
    ({"axes": {"rows": ["adult:sex"]}}, ["unknown dataset 'adult'", "census, compas, bank, german"]),
    ({"axes": {"rows": ["german:gender"]}}, ["'gender'", "german", "sex, age"]),
    ({"axes": {"rows": ["german"]}}, ["axes.rows", "dataset:protected"]),
    ({"axes": {"seeds": []}}, ["axes.seeds", "empty list"]),
    ({"axes": {"budgets": [[10]]}}, ["axes.budgets", "[max_global, max_local]"]),
    ({"axes": {"budgets": [10, 10]}}, ["axes.budgets item 10", "[max_global, max_local]", "[[100, 100]]"]),
    ({"axes": {"budgets": [[0, 10]]}}, ["axes.budgets", "max_global must be >= 1"]),
    ({"axes": {"budgets": [[10**6, 10**3]]}}, ["axes.budgets", "exceeds"]),
    ({"axes": {"models": ["dtc"]}}, ["'adf'", "'dtc'", "input gradient", "dnn, lr and mlp"]),
    ({"repeats": 0}, ["repeats = 0", ">= 1"]),
    ({"random_states": [1]}, ["repeats", "random_states", "not both"]),
    ({"colour": "red"}, ["unknown top-level key 'colour'", "valid: name, task, repeats"]),
    ({"task": "plot"}, ["task = 'plot'", "search, seeds, retrain"]),
    ({"time_limit": 0}, ["time_limit", "> 0"]),
    ({"generator_params": {"sg": {}}}, ["[generator_params.sg]", "not in axes.generators", "aequitas, adf"]),
    ({"retrain": {"protocol": "paper"}}, ["[retrain]", "task = \"retrain\" only"]),
    ({"model_params": {"dnn": {}}}, ["[model_params.dnn]", "not in axes.models", "lr"]),
    ({"diversity": "yes"}, ["diversity", "true or false"]),
    ({"axes": {"rows": ["german:sex,sex"]}}, ["'german:sex,sex'", "protected attribute twice"]),
    ({"axes": {"rows": ["compas:race,sex", "compas:sex,race"]}}, ["axes.rows lists a row twice", "any order"]),
    ({"task": "retrain", "diversity": True}, ["diversity = true", "does not apply to task = 'retrain'"]),
    ({"task": "seeds", "verdict": True, "axes": {"generators": None, "budgets": [[10, 0]]}},
     ["verdict = true", "does not apply to task = 'seeds'"]),
    ({"task": "seeds", "axes": {"generators": None}}, ["axes.budgets [[10, 10]]", "max_local 0"]),
])
def test_grid_errors_name_the_key_and_the_valid_values(change, words):
    with pytest.raises(GridError) as err:
        load_grid(small_grid(**change))
    for word in words:
        assert word in str(err.value)


@pytest.mark.parametrize("change, words", [
    ({"seed_params": {"random": {"n_clusters": 4}}}, ["[seed_params.random]", "unknown parameter 'n_clusters'",
                                                      "valid: none"]),
    ({"axes": {"seeds": ["i"]}, "seed_params": {"i": {"eps": 0.2}}},
     ["[seed_params.i]", "unknown parameter 'eps'", "valid: split_random_state"]),
    ({"seed_params": {"iandd": {"epsilon": 0.2}}}, ["[seed_params.iandd]", "'epsilon'", "eps, min_samples"]),
    ({"seed_params": {"iandd": {"chiral_random_state": 3}}}, ["[seed_params.iandd]", "chiral_random_state",
                                                              "set by the grid", "model_random_state"]),
    ({"generator_params": {"adf": {"stepsize": 1}}}, ["[generator_params.adf]", "'stepsize'",
                                                      "valid: max_iter, step_global", "axes.budgets"]),
])
def test_parameters_the_strategies_and_generators_would_not_use_are_refused(change, words):
    from chiralfair.experiments.grid import check_implementations

    with pytest.raises(GridError) as err:
        check_implementations(load_grid(small_grid(**change)))
    for word in words:
        assert word in str(err.value)


def test_a_gradient_generator_on_a_model_without_gradient_is_refused_by_name():
    with pytest.raises(GridError, match="'adf' needs the model's input gradient.*'svc'"):
        load_grid(small_grid(axes={"models": ["lr", "svc"]}))


def test_a_probability_generator_on_a_labels_only_model_is_refused_by_name():
    labels_only = {"svc": {"probability": False}}
    with pytest.raises(GridError, match="'maft' needs the model's predict_proba.*'svc'.*labels only"):
        load_grid(small_grid(axes={"models": ["svc"], "generators": ["aequitas", "maft"]}, model_params=labels_only))
    assert load_grid(small_grid(axes={"models": ["svc"], "generators": ["maft"]})).generators == ("maft",)
    assert load_grid(small_grid(axes={"models": ["svc"], "generators": ["aequitas"]},
                                model_params=labels_only)).models == ("svc",)


def test_a_probability_generator_on_a_labels_only_run_is_refused_before_training():
    from chiralfair.exceptions import ModelCapabilityError
    from chiralfair.pipeline.config import RunConfig, validate_config

    config = RunConfig(dataset="german", protected=("sex",), model="svc", seeds="random", generator="maft",
                       max_global=10, max_local=10, model_params={"probability": False})
    with pytest.raises(ModelCapabilityError, match="'maft' needs predict_proba.*'svc' answers labels only"):
        validate_config(config)
    validate_config(RunConfig(dataset="german", protected=("sex",), model="svc", seeds="random", generator="maft",
                              max_global=10, max_local=10))


def test_grid_file_errors_name_the_file_line_and_column(tmp_path):
    with pytest.raises(GridError, match="does not exist"):
        load_grid(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[axes]\nrows = = ["german:sex"]\n')
    with pytest.raises(GridError, match=r"bad\.toml.*not valid TOML.*line 3") as err:
        load_grid(bad)
    assert "column" in str(err.value)
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('name = "x"\n[axes]\nrow = ["german:sex"]\n')
    with pytest.raises(GridError, match=r"unknown\.toml.*unknown axis 'row'"):
        load_grid(unknown)


def test_cells_come_in_a_fixed_order_with_distinct_keys():
    grid = load_grid(small_grid(model_random_state=7))
    cells = grid.cells()
    assert len(cells) == 1 * 1 * 2 * 2 * 1 * 2
    assert [(c.seeds, c.generator, c.random_state) for c in cells[:3]] == [
        (("random",), "aequitas", 0), (("random",), "aequitas", 1), (("random",), "adf", 0)]
    assert {c.model_random_state for c in cells} == {7}
    assert len({c.key for c in cells}) == len(cells)
    assert [c.key for c in load_grid(small_grid(model_random_state=7)).cells()] == [c.key for c in cells]
    # the time limit is how a cell is run, not what it computes: it changes no key
    assert [c.key for c in load_grid(small_grid(model_random_state=7, time_limit=5)).cells()] == [
        c.key for c in cells]
    assert cells[0].key != load_grid(small_grid()).cells()[0].key  # model_random_state is in the key


def test_couplings_enter_the_key_only_of_the_cells_they_change(tmp_path):
    # The default couples census relationship to sex (architecture: counterparts that could exist): census:sex cells
    # change, the others keep the keys they had before couplings existed; couple = false gives every cell its old key.
    rows = {"axes": {"rows": ["census:sex", "census:age", "german:sex"]}}
    default, off = load_grid(small_grid(**rows)), load_grid(small_grid(couple=False, **rows))
    assert default.couple and not off.couple
    coupled = {c.key for c in default.cells() if c.couple}
    assert coupled and all(c.row == "census:sex" for c in default.cells() if c.couple)
    assert {c.key for c in default.cells()} - coupled == {c.key for c in off.cells() if c.row != "census:sex"}
    assert not any(c.couple for c in off.cells())
    old = dict(default.cells()[0].to_dict())
    old.pop("couple")  # a cell written before couplings existed
    assert cell_key(type(default.cells()[0]).from_dict(old)) == [c for c in off.cells()][0].key
    # a grid folder whose grid.toml predates couplings ran uncoupled, and resumes as couple = false
    from chiralfair.experiments.execution import check_grid_folder
    folder = tmp_path / "old"
    folder.mkdir()
    text = off.to_toml().replace("couple = false\n", "")
    assert "couple" not in text
    (folder / "grid.toml").write_text(text)
    check_grid_folder(off, folder)
    with pytest.raises(RunFolderError, match="couple differs"):
        check_grid_folder(default, folder)


def test_the_presets_reproduce_the_papers_uncoupled_setting():
    from chiralfair.experiments.presets import preset_grid, preset_names

    for name in preset_names():
        assert load_grid(preset_grid(name)).couple is False, name


def test_a_normalised_grid_reads_back_equal():
    grid = load_grid(small_grid(generator_params={"adf": {"step_size": 2.0}}, time_limit=30, verdict=True))
    import tomllib
    assert load_grid(tomllib.loads(grid.to_toml())) == grid


def test_retrain_and_seeds_grids_group_their_seed_strategies():
    retrain = load_grid(small_grid(task="retrain", axes={"seeds": ["cluster", "iandd"]}))
    assert {c.seeds for c in retrain.cells()} == {("cluster", "iandd")} and len(retrain.cells()) == 4
    assert retrain.cells()[0].retrain == {"protocol": "both", "search": False}
    seeds = load_grid({"task": "seeds", "axes": {"rows": ["german:sex"], "models": ["lr"],
                                                 "seeds": ["random", "iandd"], "budgets": [[50, 0]]}})
    assert [c.generator for c in seeds.cells()] == [None, None]
    with pytest.raises(GridError, match="must be absent"):
        load_grid({"task": "seeds", "axes": {**small_grid()["axes"]}})


# ---------------------------------------------------------------------------------------- running and resuming
def test_interrupted_grid_resumes_running_each_cell_once_with_equal_tables(tmp_path, data_home, attempts):
    grid = small_grid(repeats=3, axes={"seeds": ["random", "rows"], "generators": ["aequitas"]})
    out = tmp_path / "out"
    with pytest.raises(GridInterrupted):
        run(grid, out, tmp_path / "cache", data_home, stop_after=2)
    status = grid_status(out)
    assert (len(status.done), len(status.failed), len(status.missing)) == (2, 0, 4)
    resumed = run(grid, out, tmp_path / "cache", data_home)
    assert len(resumed.ran) == 4 and not set(resumed.ran) & set(status.done)
    assert sorted(attempts.values()) == [1] * 6 and len(attempts) == 6
    again = run(grid, out, tmp_path / "cache", data_home)
    assert again.ran == () and sorted(attempts.values()) == [1] * 6

    whole = run(grid, tmp_path / "whole", tmp_path / "cache", data_home)
    assert len(whole.ran) == 6
    pd.testing.assert_frame_equal(without_timings(grid_table(out)), without_timings(grid_table(tmp_path / "whole")))
    frame = without_timings(grid_frame(out))
    assert len(frame) == 6 and {"n_idis", "n_global", "n_local", "initialization_rate", "f1"} <= set(frame)
    assert frame["n_idis"].gt(0).any()


def test_a_cell_killed_mid_way_is_missing_and_runs_again(tmp_path, data_home):
    grid = small_grid(repeats=1, axes={"seeds": ["random"], "generators": ["aequitas"]})
    out = tmp_path / "out"
    first = run(grid, out, tmp_path / "cache", data_home)
    folder = cell_folder(out, first.ran[0])
    (folder / "result.json").unlink()  # as if killed after cell.json, before result.json
    (folder / ".result.json.abc.tmp").write_text("{")
    assert grid_status(out).missing == first.ran
    second = run(grid, out, tmp_path / "cache", data_home)
    assert second.ran == first.ran and grid_status(out).done == first.ran
    assert not list(folder.glob(".*.tmp"))


DAMAGES = {"empty": b"", "cut in half": None, "not JSON": b"\x00\x01 garbage", "a list": b"[1, 2]"}


# One damage by default; the others with -m slow (each reruns a small grid, about 3 s).
@pytest.mark.parametrize("damage", [d if d == "cut in half" else pytest.param(d, marks=pytest.mark.slow)
                                    for d in DAMAGES])
def test_a_damaged_result_or_error_file_is_a_missing_cell_named_in_status_and_run_again(tmp_path, data_home, damage):
    # Fixed: an empty or half-written result.json counted as done; a re-run ran 0 cells and the table
    # failed with a raw JSONDecodeError naming no file.
    grid = small_grid(repeats=1, axes={"seeds": ["random", "rows"], "generators": ["aequitas"]})
    out = tmp_path / "out"
    first = run(grid, out, tmp_path / "cache", data_home)
    damaged_key, failed_key = first.ran[0], first.ran[1]
    result = cell_folder(out, damaged_key) / "result.json"
    whole = result.read_bytes()
    result.write_bytes(DAMAGES[damage] if DAMAGES[damage] is not None else whole[:len(whole) // 2])
    other = cell_folder(out, failed_key)
    (other / "result.json").unlink()
    (other / "error.json").write_bytes(b'{"type": "Value')  # a failure record cut short
    status = grid_status(out)
    assert status.done == () and set(status.missing) == {damaged_key, failed_key} and status.failed == ()
    assert status.damaged[damaged_key].startswith("result.json ") and status.damaged[failed_key].startswith(
        "error.json is not valid JSON")
    cli = CliRunner().invoke(app, ["experiment", "status", str(out)])
    assert cli.exit_code == 0 and "0 done, 0 failed, 2 missing" in cli.output
    assert f"damaged {damaged_key}" in cli.output and "counted as missing" in cli.output
    with pytest.raises(RunFolderError, match=r"result\.json' (is empty|is not valid JSON|holds a list)"):
        read_json(result)
    table = CliRunner().invoke(app, ["experiment", "table", str(out)])
    assert "JSONDecodeError" not in table.output
    again = run(grid, out, tmp_path / "cache", data_home)
    assert set(again.ran) == {damaged_key, failed_key} and set(again.status.done) == set(first.ran)
    assert again.status.damaged == {} and json.loads(result.read_text())["figures"]


def test_a_damaged_shared_seed_selection_is_selected_again(tmp_path, data_home, caplog):
    grid = small_grid(repeats=1, axes={"seeds": ["random"], "generators": ["aequitas", "sg"]})
    out = tmp_path / "out"
    first = run(grid, out, tmp_path / "cache", data_home)
    (stored,) = (out / "shared" / "seeds").glob("*.json")
    text = stored.read_text()
    stored.write_text(text[:len(text) // 3])
    (cell_folder(out, first.ran[1]) / "result.json").unlink()
    with caplog.at_level("WARNING", logger="chiralfair.experiments.tasks"):
        again = run(grid, out, tmp_path / "cache", data_home)
    assert again.failed == () and again.ran == (first.ran[1],)
    assert any("is damaged" in r.getMessage() and str(stored) in r.getMessage() for r in caplog.records)
    assert json.loads(stored.read_text())["seeds"] == json.loads(text)["seeds"]  # the same selection, whole


@pytest.mark.slow
def test_a_failing_cell_is_recorded_and_the_grid_goes_on(tmp_path, data_home, monkeypatch):
    search = tasks.TASKS["search"]

    def fails_on_adf(cell, *args):
        if cell.generator == "adf" and cell.random_state == 1:
            raise RuntimeError("boom in the search\nsecond line")
        return search(cell, *args)

    monkeypatch.setitem(tasks.TASKS, "search", fails_on_adf)
    out = tmp_path / "out"
    result = run(small_grid(axes={"seeds": ["random"]}), out, tmp_path / "cache", data_home)
    assert len(result.ran) == 4 and len(result.failed) == 1
    status = grid_status(out)
    assert (len(status.done), len(status.failed), len(status.missing)) == (3, 1, 0)
    key = status.failed[0]
    assert status.cells[key].generator == "adf" and status.errors[key] == "RuntimeError: boom in the search"
    error = json.loads((cell_folder(out, key) / "error.json").read_text())
    assert error["type"] == "RuntimeError" and "Traceback" in error["traceback"]

    shown = CliRunner().invoke(app, ["experiment", "status", str(out)])
    assert shown.exit_code == 0
    assert "4 cells, 3 done, 1 failed, 0 missing" in shown.output
    assert f"failed {key}" in shown.output and "RuntimeError: boom in the search" in shown.output

    monkeypatch.setitem(tasks.TASKS, "search", search)
    assert run(small_grid(axes={"seeds": ["random"]}), out, tmp_path / "cache", data_home).ran == ()  # not retried
    retried = run(small_grid(axes={"seeds": ["random"]}), out, tmp_path / "cache", data_home, retry_failed=True)
    assert retried.ran == (key,) and retried.failed == ()
    assert len(grid_status(out).done) == 4 and not (cell_folder(out, key) / "error.json").exists()


def test_a_cell_over_its_time_limit_is_recorded_failed(tmp_path, data_home):
    out = tmp_path / "out"
    grid = small_grid(repeats=1, time_limit=1e-9, axes={"seeds": ["random"], "generators": ["aequitas"]})
    result = run(grid, out, tmp_path / "cache", data_home)
    assert len(result.failed) == 1
    assert grid_status(out).errors[result.failed[0]].startswith("TimeLimitError: time limit of 1e-09 s passed")


def test_the_deadline_is_checked_only_inside_its_block():
    check_deadline("nothing")  # no limit: no error
    with time_limit(None):
        check_deadline("nothing")
    with time_limit(1e-9), pytest.raises(TimeLimitError, match="during the search"):
        check_deadline("the search")
    check_deadline("after")


def test_a_search_checks_the_time_limit_at_each_batch(biased_model, dataset):
    from chiralfair.generators import make_generator
    from chiralfair.seeds import make_seed_strategy

    seeds = make_seed_strategy("random").select(biased_model, dataset, 5, random_state=0)
    generator = make_generator("aequitas", max_global=5, max_local=5)
    with time_limit(1e-9), pytest.raises(TimeLimitError, match="global phase of the search"):
        generator.run(biased_model, dataset.domain, seeds, random_state=0)
    assert generator.run(biased_model, dataset.domain, seeds, random_state=0).n_tested > 0


def test_the_cells_log_at_the_level_the_caller_asks(tmp_path, data_home, caplog):
    import logging

    grid = small_grid(repeats=1, axes={"seeds": ["iandd"], "generators": ["aequitas"]})
    with caplog.at_level(logging.INFO, logger="chiralfair"):
        run(grid, tmp_path / "loud", tmp_path / "cache", data_home)
    assert any(r.levelno == logging.INFO and r.name.startswith("chiralfair.seeds") for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="chiralfair"):
        run(grid, tmp_path / "quiet", tmp_path / "cache", data_home, log_level=logging.ERROR)
        assert logging.getLogger("chiralfair").level == logging.INFO  # restored after the cell
    assert not [r for r in caplog.records if r.levelno < logging.ERROR and r.name.startswith("chiralfair.seeds")]


@pytest.mark.slow
def test_generators_share_one_seed_selection(tmp_path, data_home):
    out = tmp_path / "out"
    run(small_grid(), out, tmp_path / "cache", data_home)
    assert len(list((out / "shared" / "seeds").glob("*.json"))) == 2 * 2  # strategies x repeats
    reused = {}
    for key, cell in grid_status(out).cells.items():
        result = json.loads((cell_folder(out, key) / "result.json").read_text())
        reused.setdefault((cell.seeds, cell.random_state), []).append(result["seeds_reused"])
        assert result["meta"]["versions"]["scikit-learn"] and result["meta"]["random_states"]["random_state"] == (
            cell.random_state)
        assert list(result["meta"]["data"]) == ["german/raw/german.data"]
        assert len(result["meta"]["data"]["german/raw/german.data"]["sha256"]) == 64
    assert all(sorted(v) == [False, True] for v in reused.values())


def test_an_output_folder_holding_another_grid_is_refused(tmp_path, data_home):
    out = tmp_path / "out"
    grid = small_grid(repeats=1, axes={"seeds": ["random"], "generators": ["aequitas"]})
    run(grid, out, tmp_path / "cache", data_home)
    with pytest.raises(RunFolderError, match="holds another grid.*axes"):
        run({**grid, "axes": {**grid["axes"], "generators": ["adf"]}}, out, tmp_path / "cache", data_home)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(RunFolderError, match="not an experiment grid folder"):
        run(grid, other, tmp_path / "cache", data_home)


@pytest.mark.slow
def test_more_repeats_into_the_same_folder_run_only_the_new_random_states(tmp_path, data_home, attempts):
    grid = small_grid(repeats=1, axes={"seeds": ["random", "iandd"], "generators": ["aequitas"]})
    out = tmp_path / "out"
    run(grid, out, tmp_path / "cache", data_home)
    first = dict(attempts)
    more = run({**grid, "repeats": 3}, out, tmp_path / "cache", data_home)
    assert len(more.ran) == 4 and all(attempts[k] == 1 for k in first)  # 2 strategies x 2 new states, none again
    assert sorted(grid_frame(out)["random_state"].unique()) == [0, 1, 2]
    fewer = run({**grid, "repeats": 2}, out, tmp_path / "cache", data_home)
    assert fewer.ran == () and sorted(grid_frame(out)["random_state"].unique()) == [0, 1]


@pytest.mark.slow
def test_sync_and_local_cluster_give_identical_tables(tmp_path, data_home):
    grid = small_grid(axes={"seeds": ["iandd"], "generators": ["aequitas"]})
    run(grid, tmp_path / "sync", tmp_path / "cache-sync", data_home)
    local = run(grid, tmp_path / "local", tmp_path / "cache-local", data_home, scheduler="local", workers=2)
    assert len(local.ran) == 2 and local.failed == ()
    pd.testing.assert_frame_equal(without_timings(grid_table(tmp_path / "sync")),
                                  without_timings(grid_table(tmp_path / "local")))


@pytest.mark.slow
def test_a_dask_cluster_at_an_address_gives_the_tables_of_sync(tmp_path, data_home):
    """The cheap version of the previous test: two worker threads of an in-process cluster, one model cache."""
    from dask.distributed import LocalCluster

    grid = small_grid(axes={"seeds": ["iandd"]})
    run(grid, tmp_path / "sync", tmp_path / "cache-sync", data_home)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        dask = run(grid, tmp_path / "dask", tmp_path / "cache-dask", data_home, scheduler=cluster.scheduler_address)
    assert len(dask.ran) == 4 and dask.failed == ()
    pd.testing.assert_frame_equal(without_timings(grid_table(tmp_path / "sync")),
                                  without_timings(grid_table(tmp_path / "dask")))


# ------------------------------------------------------------------------------------------------------ tables
@pytest.mark.slow
def test_tables_and_ratios(tmp_path, data_home):
    out = tmp_path / "out"
    run(small_grid(repeats=3, axes={"seeds": ["random", "iandd"]}), out, tmp_path / "cache", data_home)
    frame = grid_frame(out)
    table = grid_table(frame)
    row = table[(table["seeds"] == "iandd") & (table["generator"] == "adf") & (table["figure"] == "n_idis")]
    values = frame[(frame["seeds"] == "iandd") & (frame["generator"] == "adf")]["n_idis"]
    assert row["median"].item() == values.median() and row["n"].item() == 3
    assert row["min"].item() == values.min() and row["max"].item() == values.max()
    assert row["q25"].item() == values.quantile(0.25) and row["q75"].item() == values.quantile(0.75)
    ratios = seed_ratios(table, "n_idis", baseline="random")
    medians = table[table["figure"] == "n_idis"].set_index(["generator", "seeds"])["median"]
    for generator in ("aequitas", "adf"):
        got = ratios.loc[ratios["generator"] == generator, "iandd/random"].item()
        expected = medians[(generator, "iandd")] / medians[(generator, "random")]
        assert got == pytest.approx(expected)
    assert ratios.iloc[-1]["row"] == "geometric mean"
    paths = write_tables(out)
    assert {p.name for p in paths} == {"cells.parquet", "summary.parquet", "summary.md", "medians.md", "ratios.md"}
    pd.testing.assert_frame_equal(pd.read_parquet(out / "tables" / "summary.parquet"), table)
    assert "iandd/random" in (out / "tables" / "ratios.md").read_text()
    assert "seconds_search" in set(table["figure"]) and "seconds_search" not in set(without_timings(table)["figure"])


def budget_pairs_frame():
    """A grid_frame of budgets [[10, 10], [20, 0]] (two pairs, not their cross product), 2 strategies x 2 repeats."""
    from chiralfair.experiments.tables import AXIS_COLUMNS

    rows = []
    for (max_global, max_local), strategy, state in [(b, s, r) for b in ((10, 10), (20, 0))
                                                     for s in ("random", "iandd") for r in (0, 1)]:
        values = dict(zip(AXIS_COLUMNS, ("search", "german:sex", "german", "sex", "lr", strategy, "aequitas",
                                         max_global, max_local, float("nan")), strict=True))
        rows.append({"key": f"{max_global}-{strategy}-{state}", **values, "random_state": state,
                     "model_random_state": state,
                     "n_idis": float(max_global + max_local + (5 if strategy == "iandd" else 0) + state)})
    return pd.DataFrame(rows)


def test_median_and_ratio_tables_hold_only_the_grid_budget_pairs():
    from chiralfair.experiments.tables import median_table

    table = grid_table(budget_pairs_frame())
    medians = median_table(table, "n_idis")
    assert list(zip(medians["max_global"], medians["max_local"], strict=True)) == [(10, 10), (20, 0)]
    assert list(medians.columns[-2:]) == ["random", "iandd"]
    assert medians["iandd"].tolist() == [25.5, 25.5] and medians["random"].tolist() == [20.5, 20.5]
    ratios = seed_ratios(table, "n_idis")
    assert len(ratios) == 3 and ratios["n_groups"].iloc[-1] == 2
    assert ratios["iandd/random"].iloc[:2].tolist() == pytest.approx([25.5 / 20.5] * 2)


def test_auto_cells_show_their_pick_and_stay_grouped_by_auto():
    """Repeats of auto that picked differently are one group of auto, showing both picks, in every table."""
    from chiralfair.experiments.tables import median_table

    frame = budget_pairs_frame()
    picks = {("random", 0): "aequitas", ("random", 1): "eidig", ("iandd", 0): "eidig", ("iandd", 1): "eidig"}
    frame["generator"] = [f"auto ({picks[s, r]})" for s, r in zip(frame["seeds"], frame["random_state"], strict=True)]
    table = grid_table(frame)
    n_idis = table[table["figure"] == "n_idis"]
    assert len(n_idis) == 4 and (n_idis["n"] == 2).all()  # 2 budgets x 2 strategies, each over both repeats
    assert n_idis["generator"].tolist() == ["auto (aequitas, eidig)", "auto (eidig)"] * 2
    for strategy, values in frame.groupby("seeds"):  # the statistics are over both repeats, whatever they picked
        got = n_idis[n_idis["seeds"] == strategy]["median"].tolist()
        assert got == values.groupby("max_global", sort=False)["n_idis"].median().tolist()
    medians = median_table(table, "n_idis")  # one row per budget: auto, not one per pick
    assert len(medians) == 2 and medians["generator"].tolist() == ["auto (aequitas, eidig)"] * 2
    assert medians["iandd"].tolist() == [25.5, 25.5] and medians["random"].tolist() == [20.5, 20.5]
    ratios = seed_ratios(table, "n_idis")
    assert len(ratios) == 3 and ratios["iandd/random"].iloc[:2].tolist() == pytest.approx([25.5 / 20.5] * 2)


@pytest.mark.slow
def test_tables_of_a_grid_whose_baseline_strategy_has_no_finished_cell_yet(tmp_path, data_home):
    out = tmp_path / "out"
    grid = small_grid(repeats=1, axes={"seeds": ["iandd", "random"], "generators": ["aequitas"]})
    run(grid, out, tmp_path / "cache", data_home)
    for key, cell in grid_status(out).cells.items():
        if cell.seeds == ("iandd",):  # as if the grid were still running
            (cell_folder(out, key) / "result.json").unlink()
    write_tables(out)
    ratios = (out / "tables" / "ratios.md").read_text()
    assert "No ratio yet" in ratios and "iandd" in ratios and "finished so far: random" in ratios
    assert "| random |" in (out / "tables" / "medians.md").read_text()


@pytest.mark.slow
def test_model_params_reach_the_model_and_a_bad_one_is_named(tmp_path, data_home):
    from chiralfair.experiments.grid import check_implementations

    with pytest.raises(GridError, match=r"\[model_params.lr\].*'colour'"):
        check_implementations(load_grid(small_grid(model_params={"lr": {"colour": 1}})))
    out = tmp_path / "c"
    grid = small_grid(repeats=1, model_params={"lr": {"C": 0.001}}, axes={"seeds": ["random"], "generators": ["adf"]})
    run(grid, out, tmp_path / "cache", data_home)
    strong = tmp_path / "strong"
    run(small_grid(repeats=1, axes={"seeds": ["random"], "generators": ["adf"]}), strong, tmp_path / "cache",
        data_home)
    weak, default = grid_frame(out).iloc[0], grid_frame(strong).iloc[0]
    assert weak["f1"] != default["f1"]  # C = 0.001 is a different model from the default C = 1
    assert json.loads(next((out / "cells").glob("*/result.json")).read_text())["config"]["model_params"] == {"C": 0.001}


@pytest.mark.slow
def test_a_diversity_grid_measures_seeds_and_idis(tmp_path, data_home):
    out = tmp_path / "d"
    run(small_grid(repeats=1, diversity=True, axes={"generators": ["aequitas"]}), out, tmp_path / "cache", data_home)
    frame = grid_frame(out).set_index("seeds")
    assert (frame["seed_clusters_covered"] >= 1).all() and (frame["seed_leaves_covered"] >= 1).all()
    assert frame["seed_mean_pairwise_distance"].between(0, 1).all()
    found = frame["n_idis"] > 0
    assert found["iandd"]
    assert (frame.loc[found, "idi_clusters_covered"] >= 1).all() and (frame.loc[found, "idi_leaves_covered"] >= 1).all()
    assert (frame.loc[~found, "idi_leaves_covered"] == 0).all()
    seeds_out = tmp_path / "s"
    run({"task": "seeds", "diversity": True, "axes": {"rows": ["german:sex"], "models": ["lr"],
                                                      "seeds": ["random", "iandd"], "budgets": [[30, 0]]}},
        seeds_out, tmp_path / "cache", data_home)
    seeds = grid_frame(seeds_out).set_index("seeds")
    assert (seeds["seed_leaves_covered"] >= 1).all() and seeds.loc["iandd", "candidate_idi_share"] > 0


def test_seeds_and_retrain_tasks(tmp_path, data_home):
    out = tmp_path / "seeds"
    run({"task": "seeds", "axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["random", "iandd"],
                                   "budgets": [[30, 0]]}}, out, tmp_path / "cache", data_home)
    frame = grid_frame(out).set_index("seeds")
    assert frame.loc["random", "n_seeds"] == 30 and 0 <= frame.loc["random", "initialization_rate"] <= 1
    assert frame.loc["iandd", "n_initial_idis"] > 0 and pd.isna(frame.loc["random", "n_initial_idis"])


@pytest.mark.slow
def test_retrain_task_gives_remaining_idis_and_f1_per_strategy(tmp_path, data_home):
    out = tmp_path / "retrain"
    run({"task": "retrain", "axes": {"rows": ["german:sex"], "models": ["lr"], "seeds": ["i", "iandd"],
                                     "generators": ["adf"], "budgets": [[10, 10]]}}, out, tmp_path / "cache",
        data_home)
    frame = grid_frame(out).set_index("seeds")
    assert list(frame.index) == ["i", "iandd"]
    assert (frame["n_idis"] > 0).all() and (frame["remaining_idis"] >= 0).all()
    assert (frame["n_rechecked"] >= frame["n_idis"]).all()
    assert ((frame["f1_before"] > 0) & (frame["f1_after"] > 0)).all()


# ------------------------------------------------------------------------------------------------- model lock
TRAIN_TWICE = """
import sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from toys import toy_dataset
from chiralfair.models.zoo import ModelSpec
from chiralfair.models.training import train_model

original = ModelSpec.fit
def slow_fit(self, *args, **kwargs):
    with open({marker!r}, "a") as f:
        f.write("trained\\n")
    time.sleep(1.0)  # long enough for the other process to reach the cache entry meanwhile
    return original(self, *args, **kwargs)
ModelSpec.fit = slow_fit

ready = Path({folder!r})
(ready / f"ready-{{sys.argv[1]}}").touch()
while len(list(ready.glob("ready-*"))) < 2:
    time.sleep(0.01)
print(train_model(toy_dataset(n=300, seed=1), "lr", random_state=0, cache_dir={cache!r}).from_cache)
"""


def test_two_threads_wanting_one_model_train_it_once(tmp_path, monkeypatch):
    """The cheap version of the next test: file locks exclude each other across threads too."""
    import threading
    import time

    from toys import toy_dataset

    from chiralfair.models.training import train_model
    from chiralfair.models.zoo import ModelSpec

    trainings, original = [], ModelSpec.fit

    def slow_fit(self, *args, **kwargs):
        trainings.append(threading.get_ident())
        time.sleep(0.5)  # the other thread reaches the cache entry meanwhile
        return original(self, *args, **kwargs)

    monkeypatch.setattr(ModelSpec, "fit", slow_fit)
    data, barrier, results = toy_dataset(n=300, seed=1), threading.Barrier(2), []

    def train():
        barrier.wait()
        results.append(train_model(data, "lr", random_state=0, cache_dir=tmp_path).from_cache)

    threads = [threading.Thread(target=train) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(trainings) == 1 and sorted(results) == [False, True]


@pytest.mark.slow
def test_two_processes_wanting_one_model_train_it_once(tmp_path):
    marker = tmp_path / "trainings.txt"
    script = TRAIN_TWICE.format(tests=str(TESTS), marker=str(marker), folder=str(tmp_path),
                                cache=str(tmp_path / "cache"))
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for i in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    assert marker.read_text().splitlines() == ["trained"]
    assert sorted(out.strip() for out, _ in outputs) == ["False", "True"]


# ------------------------------------------------------------------------------------------------------- CLI
# Runs each command line of argv[1] (a JSON list) in one interpreter; heavy modules stay loaded once imported, so
# none of the commands imported them if none is loaded at the end.
PROBE = """
import contextlib, io, json, sys
from chiralfair.cli import app
out = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            app(args)
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
    out.append({"code": code, "stderr": err.getvalue()})
heavy = sorted(m for m in ("torch", "shap", "sklearn", "z3", "scipy", "pandas", "dask") if m in sys.modules)
print(json.dumps({"results": out, "heavy": heavy}))
"""


def test_cli_refuses_bad_grid_files_and_folders_before_heavy_imports(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[axes]\nrows = ["german:sex"]\nmodels = ["lr"]\nseeds = ["random"]\n'
                   'generators = ["fairx"]\nbudgets = [[10, 10]]\n')
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("name = \n")
    good = tmp_path / "good.toml"
    good.write_text(bad.read_text().replace("fairx", "aequitas"))
    no_repeats = tmp_path / "no_repeats.toml"
    no_repeats.write_text("repeats = 0\n" + good.read_text())
    flat = tmp_path / "flat.toml"
    flat.write_text(good.read_text().replace("[[10, 10]]", "[[10]]"))
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x.txt").write_text("x")
    new = str(tmp_path / "new")
    cases = [([str(bad), "--out", new], "unknown value 'fairx' in axes.generators; valid: auto, adf, aequitas"),
             ([str(tmp_path / "none.toml"), "--out", new], "does not exist"),
             ([str(syntax), "--out", new], "line 1, column"),
             ([str(good), "--out", new, "--workers", "0"], "--workers must be >= 1"),
             ([str(good), "--out", new, "--scheduler", "fast"], "unknown --scheduler 'fast'"),
             ([str(good), "--out", str(taken)], "not an experiment grid folder"),
             # grid-file keys are not rewritten as command-line flags (--repeats, --max-global)
             ([str(no_repeats), "--out", new], "': repeats = 0: must be an integer >= 1 (the random states 0 .. "
                                               "repeats-1)"),
             ([str(flat), "--out", new], "is not a [max_global, max_local] pair")]
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps([["experiment", "run", *a] for a, _ in cases])],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=120)
    got = json.loads(done.stdout)
    for (args, message), result in zip(cases, got["results"], strict=True):
        assert result["code"] == 2 and message in result["stderr"], (args, result)
    assert got["heavy"] == []
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_cli_runs_a_grid_and_writes_its_tables(tmp_path, data_home):
    grid = tmp_path / "grid.toml"
    grid.write_text('name = "cli"\nrepeats = 1\n[axes]\nrows = ["german:sex"]\nmodels = ["lr"]\n'
                    'seeds = ["random", "iandd"]\ngenerators = ["aequitas"]\nbudgets = [[10, 10]]\n')
    out = tmp_path / "out"
    runner = CliRunner()
    ran = runner.invoke(app, ["experiment", "run", str(grid), "--out", str(out), "--scheduler", "sync",
                              "--data-home", str(data_home), "--cache-dir", str(tmp_path / "cache")])
    assert ran.exit_code == 0, ran.output
    assert "2 cells, 2 done, 0 failed, 0 missing" in ran.output
    assert load_grid(out / "grid.toml") == load_grid(grid)
    table = runner.invoke(app, ["experiment", "table", str(out)])
    assert table.exit_code == 0 and "iandd/random" in table.output
    assert (out / "tables" / "summary.parquet").is_file()
    missing = runner.invoke(app, ["experiment", "status", str(tmp_path / "cache")])
    assert missing.exit_code == 2 and "not an experiment grid folder" in missing.output


def test_cell_keys_do_not_depend_on_folders(tmp_path):
    cell = load_grid(small_grid()).cells()[0]
    assert cell_key(cell) == cell.key and len(cell.key) == 16
    assert "data_home" not in cell.to_dict() and "cache_dir" not in cell.to_dict()


@pytest.mark.parametrize("address, words", [
    ("http://host:8786", ["'http://host:8786'", "unknown scheme 'http'", "tcp"]),
    ("tcp://", ["'tcp://'", "not valid", "port"]),
    ("tcp://127.0.0.1:1", ["cannot reach the Dask scheduler at 'tcp://127.0.0.1:1'", "within 1 s"]),
])
def test_a_bad_or_unreachable_scheduler_address_is_a_clear_error(tmp_path, monkeypatch, address, words):
    from chiralfair.exceptions import ConfigError
    from chiralfair.experiments import execution

    monkeypatch.setattr(execution, "CONNECT_TIMEOUT", 1.0)
    with pytest.raises(ConfigError) as caught:
        run_grid(small_grid(), tmp_path / "out", scheduler=address, progress=False)
    for word in words:
        assert word in str(caught.value)


def test_a_local_cluster_logs_no_dask_info_and_its_cells_log_at_the_level_asked(caplog):
    import logging

    from chiralfair.experiments import execution, tasks

    caplog.set_level(logging.INFO)
    with execution._dask_client("local", 1) as client:
        def level_inside_a_cell():
            with tasks._library_log_level(logging.ERROR):
                return logging.getLogger("chiralfair").level
        assert client.submit(level_inside_a_cell, pure=False).result() == logging.ERROR
    chatter = [r.getMessage() for r in caplog.records if r.name.startswith("distributed") and r.levelno < logging.ERROR]
    assert chatter == []


def test_a_second_runner_on_a_busy_grid_folder_is_refused(tmp_path):
    from filelock import FileLock

    from chiralfair.experiments import execution

    out = execution.prepare_grid_folder(load_grid(small_grid()), tmp_path / "out")
    with FileLock(out / execution.RUN_LOCK_NAME):  # another run holds the folder
        with pytest.raises(RunFolderError, match="another run is using the grid folder"):
            run_grid(small_grid(), out, scheduler="sync", progress=False)
        assert not (out / "cells").exists()


def test_cli_says_that_earlier_failures_are_kept_and_how_to_retry_them(tmp_path, data_home):
    grid = tmp_path / "grid.toml"
    grid.write_text('time_limit = 1e-9\n[axes]\nrows = ["german:sex"]\nmodels = ["lr"]\nseeds = ["random"]\n'
                    'generators = ["aequitas"]\nbudgets = [[10, 10]]\n')
    args = ["experiment", "run", str(grid), "--out", str(tmp_path / "out"), "--scheduler", "sync",
            "--data-home", str(data_home), "--cache-dir", str(tmp_path / "cache")]
    first, again = CliRunner().invoke(app, args), CliRunner().invoke(app, args)
    assert first.exit_code == again.exit_code == 1
    assert "--retry-failed" not in first.output
    assert "1 cell(s) had failed before and were not run again; add --retry-failed" in again.output
