"""generator="auto" (``--generator auto``): the generator is picked by what the model offers, and the run says so."""

import numpy as np
import pytest
from toys import biased_module, toy_dataset

from chiralfair.exceptions import ConfigError
from chiralfair.models import as_model


def is_real_idi(model, idis, counterparts) -> np.ndarray:
    """Each pair asked of the model again: True where the two labels differ."""
    return model.predict(idis) != model.predict(counterparts)


# ------------------------------------------------------------------ generator="auto": picked by what the model offers
def _toy_probability(X):
    import torch

    with torch.no_grad():
        return biased_module()(torch.as_tensor(X, dtype=torch.float32))[:, 0].double().numpy()


AUTO_MODELS = {
    "gradient": (lambda: as_model(biased_module()), "eidig", "input gradient"),
    "probabilities only": (lambda: as_model(_toy_probability, output="probability"), "aequitas", "probabilities but"),
    "labels only": (lambda: as_model(lambda X: (_toy_probability(X) > 0.5).astype(int)), "aequitas", "labels only"),
}


@pytest.mark.parametrize("offers", sorted(AUTO_MODELS))
def test_auto_picks_the_generator_by_what_the_model_offers_and_says_why(offers):
    from chiralfair.pipeline import SearchPlan, run_pipeline
    from chiralfair.pipeline.inputs import inputs_from_objects

    make_model, expected, why = AUTO_MODELS[offers]
    inputs = inputs_from_objects(make_model(), toy_dataset(400), test_size=0.5, random_state=0)
    outcome = run_pipeline(
        inputs, SearchPlan(seeds="random", generator="auto", max_global=20, max_local=10), verdict=False
    )
    assert outcome.result.generator == expected and outcome.result.n_idis > 0
    choice = outcome.summary()["generator_choice"]
    assert choice["asked"] == "auto" and choice["generator"] == expected and why in choice["reason"]
    assert any(note.startswith(f"generator auto: {expected}, since ") for note in outcome.result.notes)
    assert is_real_idi(as_model(biased_module()), outcome.result.idis, outcome.result.counterparts).all()


def test_auto_with_generator_parameters_is_refused_naming_the_reason():
    from chiralfair.pipeline import SearchPlan

    with pytest.raises(ConfigError, match="need a named generator"):
        SearchPlan(generator="auto", generator_params={"max_iter": 3}).check()


@pytest.mark.parametrize("given_seeds", [False, True])
def test_retrain_with_auto_says_which_generator_its_search_ran(given_seeds):
    from chiralfair.pipeline import SearchPlan
    from chiralfair.pipeline.inputs import inputs_from_objects
    from chiralfair.pipeline.retraining import retrain_inputs, search_training_rows

    inputs = inputs_from_objects(as_model(biased_module()), toy_dataset(400), test_size=0.5, random_state=0)
    plan = SearchPlan(seeds="random", generator="auto", max_global=20, max_local=10)
    if given_seeds:
        found, _ = search_training_rows(inputs, plan, seeds=inputs.dataset.X[inputs.train_index][:20])
        assert found.meta["generator_choice"]["generator"] == "eidig"
        assert any(n.startswith("generator auto: eidig, since ") for n in found.notes)
        return
    from sklearn.linear_model import LogisticRegression

    data = toy_dataset(400)
    fitted = LogisticRegression().fit(data.X, data.y)
    inputs = inputs_from_objects(as_model(fitted), data, test_size=0.5, random_state=0)
    result = retrain_inputs(inputs, plan=plan, method=["paper"], spread_seeds=0, margin=0.2)
    assert [n for n in result.notes if n.startswith("generator auto: ")] == [
        "generator auto: eidig, since the model has an input gradient: EIDIG follows it (white box)"]
