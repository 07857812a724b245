"""The query budget (``max_queries``): every generator and the seed strategy stop before passing it, and say so."""

import json

import numpy as np
import pytest
from toys import biased_module, toy_dataset, toy_domain
from typer.testing import CliRunner

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.cli import app
from chiralfair.exceptions import ConfigError
from chiralfair.generators import GENERATORS, make_generator
from chiralfair.models import as_model
from chiralfair.models.protocol import QueryBudgetSpent

NAMES = sorted(GENERATORS)
MAX_QUERIES = 300


def is_real_idi(model, idis, counterparts) -> np.ndarray:
    """Each pair asked of the model again: True where the two labels differ."""
    return model.predict(idis) != model.predict(counterparts)


@pytest.mark.parametrize("name", NAMES)
def test_a_generator_stops_at_the_query_budget_and_says_so(name):
    domain = toy_domain(("sex",))
    model = as_model(biased_module())
    seeds = domain.sample(40, np.random.default_rng(0))
    gen = make_generator(name, max_global=40, max_local=1000, max_queries=MAX_QUERIES)
    res = gen.run(model, domain, seeds, random_state=0)
    assert res.n_queries <= MAX_QUERIES
    assert model.n_queries == res.n_queries  # nothing sent to the model outside the count
    assert res.meta["stopped_by"] == "max_queries" and res.meta["max_queries"] == MAX_QUERIES
    assert any("query budget" in note for note in res.notes)
    assert res.n_idis > 0
    assert is_real_idi(as_model(biased_module()), res.idis, res.counterparts).all()


@pytest.mark.parametrize("name", NAMES)
def test_the_pipeline_budget_covers_the_seeds_and_the_search(name):
    from chiralfair.pipeline import SearchPlan, run_pipeline
    from chiralfair.pipeline.inputs import inputs_from_objects

    data = toy_dataset(400)
    model = as_model(biased_module())
    inputs = inputs_from_objects(model, data, test_size=0.5, random_state=0)
    plan = SearchPlan(seeds="random", generator=name, max_global=40, max_local=1000, max_queries=MAX_QUERIES)
    outcome = run_pipeline(inputs, plan, verdict=False)
    budget = outcome.result.meta["query_budget"]
    assert budget["n_queries"] == budget["n_seed_queries"] + budget["n_search_queries"] <= MAX_QUERIES
    assert budget["n_seed_queries"] > 0 and budget["hit"]
    assert outcome.summary()["query_budget"] == budget
    assert is_real_idi(as_model(biased_module()), outcome.result.idis, outcome.result.counterparts).all()


def test_a_budget_the_seed_strategy_spends_stops_the_run_before_the_search():
    from chiralfair.pipeline import SearchPlan, run_pipeline
    from chiralfair.pipeline.inputs import inputs_from_objects

    inputs = inputs_from_objects(as_model(biased_module()), toy_dataset(400), test_size=0.5, random_state=0)
    plan = SearchPlan(seeds="random", generator="aequitas", max_global=100, max_local=10, max_queries=50)
    outcome = run_pipeline(inputs, plan, verdict=False)
    assert outcome.result.n_seeds == 0 and outcome.result.n_queries == 0
    budget = outcome.result.meta["query_budget"]
    assert budget["hit"] and budget["n_queries"] <= 50
    assert any("spent selecting seeds" in note for note in outcome.result.notes)


def test_a_model_budget_refuses_the_call_that_would_pass_it():
    model = as_model(biased_module())
    X = toy_domain().sample(10, np.random.default_rng(0))
    with model.query_budget(15):
        model.predict(X)
        with pytest.raises(QueryBudgetSpent, match="query budget of 15"):
            model.predict(X)
        model.predict(X[:5])
        assert model.remaining_queries == 0
    assert model.n_queries == 15 and model.remaining_queries is None


@pytest.mark.parametrize("bad", [0, -5, 2.5, "300", True])
def test_a_bad_budget_is_refused_naming_max_queries(bad):
    from chiralfair.pipeline import SearchPlan

    with pytest.raises(ConfigError, match=r"max_queries \(--max-queries\)"):
        SearchPlan(max_queries=bad).check()


@pytest.mark.parametrize("bad", ["0", "-3", "many", "2.5"])
def test_the_cli_refuses_a_bad_max_queries(bad):
    res = CliRunner().invoke(app, ["run", "--dataset", "census", "--model", "lr", "--max-queries", bad])
    assert res.exit_code != 0
    assert "--max-queries" in res.output


def test_run_max_queries_on_the_command_line(tmp_path):
    import pandas as pd
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    people = pd.DataFrame({"sex": rng.choice([0, 1], 600), "hours": rng.integers(20, 60, 600)})
    people["y"] = (people["hours"] + 10 * people["sex"] > 45).astype(int)
    people.to_csv(tmp_path / "people.csv", index=False)
    sio.dump(LogisticRegression().fit(people[["sex", "hours"]], people["y"]), tmp_path / "lr.skops")
    res = CliRunner().invoke(
        app,
        [
            "run",
            "--data",
            str(tmp_path / "people.csv"),
            "--model",
            str(tmp_path / "lr.skops"),
            "--trust-model-file",
            "--label",
            "y",
            "--protected",
            "sex",
            "--seeds",
            "random",
            "--generator",
            "auto",
            "--max-global",
            "50",
            "--max-local",
            "1000",
            "--max-queries",
            "200",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["query_budget"]["n_queries"] <= 200 and summary["query_budget"]["hit"]
    assert summary["meta"]["config"]["max_queries"] == 200
    assert summary["generator_choice"]["generator"] == summary["generator"]  # auto, said in the output
    assert any(note.startswith("query budget: ") for note in summary["notes"])


def test_seeds_selected_before_count_in_the_budget_of_the_search():
    from chiralfair.pipeline import SearchPlan, run_pipeline
    from chiralfair.pipeline.inputs import inputs_from_objects

    inputs = inputs_from_objects(as_model(biased_module()), toy_dataset(400), test_size=0.5, random_state=0)
    plan = SearchPlan(seeds="random", generator="aequitas", max_global=40, max_local=1000, max_queries=MAX_QUERIES)
    stored = run_pipeline(inputs, plan, verdict=False).seed_report
    outcome = run_pipeline(inputs, plan, verdict=False, reuse_seeds=lambda select: stored)
    budget = outcome.result.meta["query_budget"]
    assert budget["n_seed_queries"] == stored.n_queries > 0
    assert budget["hit"] and budget["n_queries"] <= MAX_QUERIES
