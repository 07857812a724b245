"""The query budget (``max_queries``): every generator and the seed strategy stop before passing it, and say so."""

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from toys import biased_module, fair_module, toy_dataset, toy_domain
from typer.testing import CliRunner

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.cli import app
from chiralfair.exceptions import ConfigError, ModelCapabilityError
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
    assert any("that call was not made" in note for note in outcome.result.notes)


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


# ------------------------------------------------- the rows the user's model receives, counted by the user's object
class CountedLR(LogisticRegression):
    """The user's model: a LogisticRegression adding ``len(X)`` to :attr:`rows` per call of any of its methods.

    sklearn's own ``predict`` calls ``decision_function``: one call of the user's, counted once.
    """

    rows = 0
    _inside = False

    def _counted(self, method, X):
        if self._inside:
            return getattr(LogisticRegression, method)(self, X)
        self.rows += len(X)
        self._inside = True
        try:
            return getattr(LogisticRegression, method)(self, X)
        finally:
            self._inside = False

    def predict(self, X):
        return self._counted("predict", X)

    def predict_proba(self, X):
        return self._counted("predict_proba", X)

    def decision_function(self, X):
        return self._counted("decision_function", X)


class CountedLabels:
    """A labels-only callable (a black box) adding ``len(X)`` to :attr:`rows` per call."""

    def __init__(self, fitted):
        self.fitted, self.rows = fitted, 0

    def __call__(self, X):
        self.rows += len(X)
        return LogisticRegression.predict(self.fitted, X)


def _fitted_lr():
    data = toy_dataset(600)
    return CountedLR(C=100.0, max_iter=2000).fit(data.X, data.y)


# kind -> (the user's object, how it is wrapped); each object counts the rows passed to it
MODEL_KINDS = {
    "sklearn predict + predict_proba": lambda: (_fitted_lr(), {}),
    "probability only": lambda: (_fitted_lr(), {"output": "probability"}),
    "labels-only callable": lambda: (CountedLabels(_fitted_lr()), {}),
}


def _refuses(name, obj, kwargs) -> bool:
    gen, model = GENERATORS[name], as_model(obj, **kwargs)
    return (gen.needs_gradient and not model.has_gradient) or (gen.needs_proba and not model.has_proba)


@pytest.mark.parametrize("kind", sorted(MODEL_KINDS))
@pytest.mark.parametrize("name", NAMES)
def test_the_search_counts_every_row_the_users_model_receives(name, kind):
    obj, kwargs = MODEL_KINDS[kind]()
    domain = toy_domain(("sex",))
    seeds = domain.sample(40, np.random.default_rng(0))
    gen = make_generator(name, max_global=40, max_local=1000, max_queries=MAX_QUERIES)
    if _refuses(name, obj, kwargs):
        with pytest.raises(ModelCapabilityError):
            gen.run(as_model(obj, **kwargs), domain, seeds, random_state=0)
        assert obj.rows == 0  # refused before any row reached the model
        return
    res = gen.run(as_model(obj, **kwargs), domain, seeds, random_state=0)
    assert obj.rows == res.n_queries <= MAX_QUERIES  # labels and probabilities of one row: two rows received
    assert res.meta["stopped_by"] == "max_queries" and res.n_queries > 0


def test_labels_and_probabilities_cost_two_queries_unless_one_call_gives_both():
    X = toy_domain(("sex",)).sample(50, np.random.default_rng(0))
    two, one = _fitted_lr(), _fitted_lr()
    two_calls, one_call = as_model(two), as_model(one, output="probability")
    two_calls.predict_with_proba(X)
    one_call.predict_with_proba(X)
    assert (two.rows, two_calls.n_queries) == (100, 100)
    assert (one.rows, one_call.n_queries) == (50, 50)
    with two_calls.query_budget(99), pytest.raises(QueryBudgetSpent, match="a call of 100 queries"):
        two_calls.predict_with_proba(X)  # refused at its real cost, before the call
    assert two.rows == 100


@pytest.mark.parametrize("kind", sorted(MODEL_KINDS))
@pytest.mark.parametrize("name", NAMES)
def test_a_run_says_every_row_it_sent_outside_the_budget(name, kind):
    from chiralfair.pipeline import DataSpec, SearchPlan, inputs_from_objects, run_pipeline

    obj, kwargs = MODEL_KINDS[kind]()
    if _refuses(name, obj, kwargs):
        pytest.skip("refused before any query (test_the_search_counts_every_row_the_users_model_receives)")
    model = as_model(obj, **kwargs)
    inputs = inputs_from_objects(model, toy_dataset(400), settings=DataSpec(favourable=1), test_size=0.5,
                                 random_state=0)
    plan = SearchPlan(seeds="random", generator=name, max_global=40, max_local=1000, max_queries=MAX_QUERIES)
    outcome = run_pipeline(inputs, plan)
    summary = outcome.summary()
    queries, budget = summary["queries"], summary["query_budget"]
    outside = queries["outside_budget"]
    assert queries["n_queries"] == budget["n_queries"] <= MAX_QUERIES and queries["max_queries"] == MAX_QUERIES
    assert outside["verdict"] == outcome.verdict.n_queries > 0  # the verdict's own count
    assert outside["group_metrics"] > 0 and outside["probes"] > 0  # the rows probed before, the F1 rows
    assert obj.rows == budget["n_queries"] + sum(outside.values())  # nothing the model received goes unsaid
    assert obj.rows <= MAX_QUERIES + sum(outside.values())
    from chiralfair.reporting.report import outcome_lines

    line = next(line for line in outcome_lines(summary) if line.lstrip().startswith("n_queries"))
    assert (f"of the budget {MAX_QUERIES}; outside it: {outside['probes']:,} probe rows, "
            f"{outside['verdict']:,} held-out verdict rows") in line


def test_a_search_stopped_before_it_began_prints_its_note_once_and_says_the_verdict_is_apart():
    from chiralfair.pipeline import DataSpec, SearchPlan, inputs_from_objects, run_pipeline
    from chiralfair.reporting.report import NO_IDI_TEXT, outcome_lines, render_markdown

    inputs = inputs_from_objects(as_model(biased_module()), toy_dataset(400), settings=DataSpec(favourable=1),
                                 test_size=0.5, random_state=0)
    plan = SearchPlan(seeds="random", generator="aequitas", max_global=100, max_local=10, max_queries=50)
    outcome = run_pipeline(inputs, plan)
    summary = outcome.summary()
    assert outcome.result.n_idis == 0 and outcome.verdict.n_affected > 0
    lines = outcome_lines(summary)
    text = "\n".join(lines)
    assert sum("that call was not made" in line for line in lines) == 1
    assert NO_IDI_TEXT not in text
    assert "no search ran" in text and f"finds {outcome.verdict.share:.2%} of them affected" in text
    report = render_markdown(summary, None)
    assert report.count("that call was not made") == 1 and NO_IDI_TEXT not in report


@pytest.mark.parametrize(("seeds", "max_queries"), [("i", 400), ("iandd", 150)])
def test_a_budget_ended_in_the_seeds_says_how_many_queries_went_where(seeds, max_queries):
    from chiralfair.pipeline import DataSpec, SearchPlan, inputs_from_objects, run_pipeline
    from chiralfair.reporting.report import outcome_lines

    obj = _fitted_lr()
    inputs = inputs_from_objects(as_model(obj), toy_dataset(400), settings=DataSpec(favourable=1), test_size=0.5,
                                 random_state=0)
    plan = SearchPlan(seeds=seeds, generator="aequitas", max_global=100, max_local=10, max_queries=max_queries)
    outcome = run_pipeline(inputs, plan)
    summary = outcome.summary()
    outside = summary["queries"]["outside_budget"]
    by_seeds = obj.rows - sum(outside.values())  # what the user's model received inside the budget
    assert summary["query_budget"]["n_seed_queries"] == by_seeds <= max_queries
    assert summary["query_budget"]["n_search_queries"] == outcome.result.n_queries == 0
    assert summary["query_budget"]["stopped_in"] == "seeds"
    text = "\n".join(outcome_lines(summary))
    assert f"seed strategy {seeds!r} had used {by_seeds:,} of them when its next call" in text
    assert "Not done: the rest of the seed selection (no seed was selected) and the whole search (0 queries)" in text
    assert (f"query budget: {by_seeds:,} of {max_queries:,} model queries used ({by_seeds:,} by the seeds, 0 by "
            "the search); hit during the seed selection") in text
    assert "seeds that are IDIs" not in text and "none selected: the query budget ended during the seed" in text


def test_without_affected_people_no_idi_is_said_as_before():
    from chiralfair.pipeline import DataSpec, SearchPlan, inputs_from_objects, run_pipeline
    from chiralfair.reporting.report import NO_IDI_TEXT, outcome_lines

    inputs = inputs_from_objects(as_model(fair_module()), toy_dataset(400, biased=False),
                                 settings=DataSpec(favourable=1), test_size=0.5, random_state=0)
    outcome = run_pipeline(inputs, SearchPlan(seeds="random", generator="aequitas", max_global=20, max_local=10))
    assert outcome.result.n_idis == 0 and outcome.verdict.n_affected == 0
    assert f"  {NO_IDI_TEXT}" in outcome_lines(outcome.summary())


def _sequential_toy():
    """The biased toy as an nn.Sequential, whose layers shap.DeepExplainer hooks."""
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(5, 1), torch.nn.Sigmoid())
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([[6.0, 0, 2, 2, 0]]))
        net[0].bias.fill_(-21.0)
    return net


def test_deeplift_on_a_copy_of_the_module_spends_queries_of_the_budget():
    from chiralfair.seeds.explainers import explain

    X = toy_domain(("sex",)).sample(30, np.random.default_rng(0)).astype(float)
    background = toy_domain(("sex",)).sample(10, np.random.default_rng(1)).astype(float)
    model = as_model(_sequential_toy())
    explain(model, X, background, np.random.default_rng(0), explainer="deep")
    # the copy runs on each (row, reference) pair and reads its output's width from one row; the summation
    # check asks the model itself for the rows and the references
    assert model.n_queries == 30 * 10 + 1 + 30 + 10
    assert model.n_gradient_queries == 30 * 10 + 1
    small = as_model(_sequential_toy())
    with small.query_budget(30 * 10), pytest.raises(QueryBudgetSpent):
        explain(small, X, background, np.random.default_rng(0), explainer="deep")
    assert small.n_queries == 1  # refused before the pairs were run
