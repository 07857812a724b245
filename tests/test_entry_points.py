"""Generators and seed strategies an installed package adds through entry points, in Python, the CLI and grids."""

import json
import sys

import pytest
from plugin_dist import BROKEN, GENERATOR, MODULE, SEEDS, install, uninstall
from toys import biased_module, toy_dataset

import chiralfair
from chiralfair.exceptions import ConfigError
from chiralfair.generators import GENERATORS, make_generator
from chiralfair.pipeline.checks import check_search_names, installed_names
from chiralfair.seeds import SEED_STRATEGIES, make_seed_strategy


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(install(tmp_path)))
    yield tmp_path
    uninstall()


def test_installed_names_are_known_without_importing_the_package(plugin):
    generators, seeds = installed_names()
    assert GENERATOR in generators and BROKEN in generators and seeds == (SEEDS,)
    check_search_names(seeds=SEEDS, generator="aequitas", max_global=10, max_local=1)
    assert MODULE not in sys.modules
    assert GENERATOR in GENERATORS and SEEDS in SEED_STRATEGIES and MODULE not in sys.modules
    with pytest.raises(ConfigError, match=f"unknown generator 'nope'; valid: .*{GENERATOR}"):
        check_search_names(seeds="random", generator="nope", max_global=10, max_local=1)


def test_an_installed_generator_and_seed_strategy_are_built_and_run_by_name(plugin):
    assert type(make_generator(GENERATOR, max_global=5, max_local=2)).__name__ == "Nudge"
    assert type(make_seed_strategy(SEEDS)).__name__ == "SpreadRows" and MODULE in sys.modules
    result = chiralfair.audit(biased_module(), toy_dataset(200), protected="sex", favourable=1, seeds=SEEDS,
                              generator=GENERATOR, max_global=20, max_local=5, verdict=False)
    assert result.to_dict()["meta"]["config"]["generator"] == GENERATOR and result.n_idis > 0


def test_an_entry_point_that_cannot_be_imported_is_refused_naming_it_and_its_package(plugin):
    with pytest.raises(ConfigError, match=rf"generator '{BROKEN}' cannot be loaded from entry point {BROKEN} = "
                                          rf"{MODULE}_missing:Nope \(group chiralfair.generators, package "
                                          r"chiralfair-test-plugin 0.1\): ModuleNotFoundError"):
        make_generator(BROKEN, max_global=5, max_local=2)


def test_the_names_leave_with_the_package(plugin, monkeypatch):
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(plugin)])
    uninstall()
    assert GENERATOR not in GENERATORS and installed_names()[1] == ()


def test_the_command_line_runs_an_installed_generator_and_seed_strategy(plugin, tmp_path):
    import numpy as np
    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.integers(0, 2, 300), "a": rng.integers(0, 10, 300)})
    df["y"] = ((df["a"] + 3 * df["sex"]) > 6).astype(int)
    df.to_csv(tmp_path / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(df[["sex", "a"]], df["y"]), tmp_path / "model.skops")
    from typer.testing import CliRunner

    from chiralfair.cli import app

    res = CliRunner().invoke(app, ["run", "--data", str(tmp_path / "data.csv"), "--model",
                                   str(tmp_path / "model.skops"), "--label", "y", "--protected", "sex", "--generator",
                                   GENERATOR, "--seeds", SEEDS, "--max-global", "10", "--max-local", "2", "--json"])
    assert res.exit_code == 0, res.output
    config = json.loads(res.stdout)["meta"]["config"]
    assert config["generator"] == GENERATOR and config["seeds"] == SEEDS
