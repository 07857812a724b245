"""Experiment grids over your own data and model files ([datasets], [model_files]), resumable like the benchmarks'."""

import json

import numpy as np
import pandas as pd
import pytest
from plugin_dist import GENERATOR, SEEDS, install, uninstall

from chiralfair.exceptions import ConfigError, GridError
from chiralfair.experiments import grid_table, load_grid, run_grid
from chiralfair.experiments.cells import cell_folder
from chiralfair.experiments.tables import grid_frame, write_tables


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    folder = tmp_path_factory.mktemp("own-grid")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.integers(0, 2, 300), "a": rng.integers(0, 10, 300), "b": rng.integers(0, 5, 300)})
    df["y"] = ((df["a"] + df["b"] + 3 * df["sex"]) > 8).astype(int)
    df.iloc[:200].to_csv(folder / "loans.csv", index=False)
    df.iloc[200:].to_csv(folder / "loans-test.csv", index=False)
    (folder / "loans.toml").write_text('label = "y"\npositive_class = 1\nprotected = ["sex"]\n')
    sio.dump(LogisticRegression().fit(df[["sex", "a", "b"]].iloc[:200], df["y"].iloc[:200]), folder / "lr.skops")
    return folder


def grid_file(folder, **more):
    text = """
name = "ours"
repeats = 2
verdict = true

[datasets.loans]
data = "loans.csv"
schema = "loans.toml"
test = "loans-test.csv"

[model_files.mine]
file = "lr.skops"

[axes]
rows = ["loans:sex"]
models = ["mine"]
seeds = ["random"]
generators = ["aequitas"]
budgets = [[10, 2]]
"""
    for old, new in more.items():
        text = text.replace(old, new)
    path = folder / "grid.toml"
    path.write_text(text)
    return path


def test_a_grid_over_your_data_and_model_file_runs_resumes_and_tabulates(files, tmp_path):
    grid = load_grid(grid_file(files, **{"repeats = 2": "repeats = 1"}))
    cells = grid.cells()
    assert len(cells) == 1 and cells[0].own["model_sha256"] and cells[0].paths["model"] == str(files / "lr.skops")
    assert "path" not in json.dumps(cells[0].to_dict()) and str(files) not in json.dumps(cells[0].to_dict())
    out = tmp_path / "out"
    done = run_grid(grid, out, scheduler="sync", progress=False)
    assert len(done.ran) == 1 and not done.failed, done.status.errors
    result = json.loads((cell_folder(out, cells[0].key) / "result.json").read_text())
    assert result["figures"]["share_affected"] is not None and "loans.csv" in json.dumps(result["meta"]["data"])
    assert len(run_grid(load_grid(out / "grid.toml"), out, scheduler="sync", progress=False).ran) == 0  # resumes
    table = grid_table(out)
    assert set(table["dataset"]) == {"loans"} and set(table["model"]) == {"mine"}


def test_a_changed_file_is_another_grid_and_a_cell_whose_file_changed_fails_saying_so(files, tmp_path):
    from chiralfair.experiments.execution import prepare_grid_folder

    out = tmp_path / "out"
    grid = load_grid(grid_file(files, **{"repeats = 2": "repeats = 1"}))
    prepare_grid_folder(grid, out)
    schema = files / "loans.toml"
    before = schema.read_text()
    try:
        schema.write_text(before + "# edited\n")
        with pytest.raises(Exception, match="holds another grid"):
            run_grid(load_grid(grid_file(files, **{"repeats = 2": "repeats = 1"})), out, scheduler="sync",
                     progress=False)
        from chiralfair.experiments.tasks import _own_inputs

        with pytest.raises(ConfigError, match="the schema file .* changed since the grid started"):
            _own_inputs(grid.cells()[0])
    finally:
        schema.write_text(before)


def test_an_installed_generator_and_seed_strategy_run_in_a_grid(files, tmp_path, monkeypatch):
    (tmp_path / "plugin").mkdir()
    monkeypatch.syspath_prepend(str(install(tmp_path / "plugin")))
    try:
        grid = load_grid(grid_file(files, **{'seeds = ["random"]': f'seeds = ["{SEEDS}"]',
                                             'generators = ["aequitas"]': f'generators = ["{GENERATOR}"]',
                                             "repeats = 2": "repeats = 1", "verdict = true": "verdict = false"}))
        done = run_grid(grid, tmp_path / "out", scheduler="sync", progress=False)
        assert len(done.ran) == 1 and not done.failed, done.status.errors
    finally:
        uninstall()


@pytest.mark.parametrize("change, message", [
    ({'rows = ["loans:sex"]': 'rows = ["titanic:gender"]'}, r"unknown dataset 'titanic' in axes.rows; valid: .*loans"),
    ({'models = ["mine"]': 'models = ["lr"]'}, "axes.rows loans:sex has no model in axes.models to run on"),
    ({'models = ["mine"]': 'models = ["mine", "lr"]'}, "axes.models 'lr' runs on benchmark rows, and axes.rows has"),
    ({'file = "lr.skops"': 'file = "gone.skops"'}, "model_files.mine.file: file .*gone.skops' does not exist"),
    ({'schema = "loans.toml"\n': ""}, r"\[datasets.loans\] lacks schema"),
    ({'test = "loans-test.csv"': 'test = "loans-test.csv"\ntest_size = 0.3'}, "not both"),
    ({"[datasets.loans]": "[datasets.census]", "loans:sex": "census:sex"}, "is a benchmark's name"),
    ({"[model_files.mine]": "[model_files.lr]", '"mine"': '"lr"'}, "is a zoo model's name"),
    ({'name = "ours"': 'name = "ours"\ntask = "retrain"', 'seeds = ["random"]': 'seeds = ["random", "cluster"]',
      'generators = ["aequitas"]': 'generators = ["aequitas"]', "verdict = true": ""},
     "runs on benchmark rows"),
])
def test_a_bad_own_grid_is_refused_naming_the_key(files, change, message):
    with pytest.raises(GridError, match=message):
        load_grid(grid_file(files, **change))


def test_generator_auto_in_a_grid_is_picked_per_cell_by_what_its_model_offers(files, tmp_path):
    """An LR file offers probabilities but no gradient to a model file: auto is AEQUITAS, as a run picks it."""
    import skops.io as sio

    from chiralfair.generators.names import auto_generator

    grid = load_grid(grid_file(files, **{"repeats = 2": "repeats = 1", '["aequitas"]': '["auto"]'}))
    assert [c.generator for c in grid.cells()] == ["auto"]
    out = tmp_path / "out"
    done = run_grid(grid, out, scheduler="sync", progress=False)
    assert len(done.ran) == 1 and not done.failed, done.status.errors
    result = json.loads((cell_folder(out, grid.cells()[0].key) / "result.json").read_text())
    model = sio.load(files / "lr.skops", trusted=sio.get_untrusted_types(file=files / "lr.skops"))
    expected, _ = auto_generator(has_gradient=False, has_proba=hasattr(model, "predict_proba"))
    assert result["meta"]["generator_choice"]["generator"] == expected
    # the tables show the pick beside the axis value, read from the cell's result.json
    shown = f"auto ({result['meta']['generator_choice']['generator']})"
    assert grid_frame(out)["generator"].tolist() == [shown]
    table = grid_table(out)
    assert set(table["generator"]) == {shown} and (table["n"] <= 1).all()
    write_tables(out)
    assert f"| {shown} |" in (out / "tables" / "summary.md").read_text()
    assert set(pd.read_parquet(out / "tables" / "cells.parquet")["generator"]) == {shown}


def test_generator_parameters_for_auto_in_a_grid_are_refused_naming_what_to_do(files, tmp_path):
    path = grid_file(files, **{'["aequitas"]': '["auto"]'})
    path.write_text(path.read_text() + '\n[generator_params.auto]\nsigma = 2\n')
    with pytest.raises(GridError, match=r"\[generator_params.auto\]: 'sigma': auto picks the generator per cell"):
        run_grid(load_grid(path), tmp_path / "out", scheduler="sync", progress=False)
