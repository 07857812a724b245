"""A model that fails for a reason no value of its input explains (a lost connection, a timeout, memory, or a
failure on every row alike) is a ModelCallError quoting its error, never a ModelInputError with advice about
protected values, and no row is searched for when the error is not about the input."""

import numpy as np
import pandas as pd
import pytest
from toys import biased_module, toy_dataset, toy_domain

import chiralfair
import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.exceptions import ModelCallError, ModelCapabilityError, ModelInputError
from chiralfair.generators import make_generator
from chiralfair.models import as_model
from chiralfair.models.protocol import MODEL_INPUT_ADVICE

LABELS = as_model(biased_module())


class Unreachable:
    """A model served over a network that is down: every call raises ``error``; calls are counted."""

    def __init__(self, error):
        self.error, self.calls = error, 0

    def __call__(self, X):
        self.calls += 1
        raise self.error


@pytest.mark.parametrize("error", [ConnectionError("[Errno 111] Connection refused"),
                                   TimeoutError("the model server did not answer in 30 s"),
                                   OSError("[Errno 5] Input/output error")])
def test_a_model_that_cannot_be_reached_is_said_so_without_protected_value_advice(error):
    model = Unreachable(error)
    domain = toy_domain(("sex",))
    seeds = domain.sample(30, np.random.default_rng(0))
    with pytest.raises(ModelCallError) as raised:
        make_generator("aequitas", max_global=30, max_local=5).run(as_model(model, name="served"), domain, seeds,
                                                                  random_state=0)
    message = str(raised.value)
    assert f"{type(error).__name__}: {error}" in message and "'served'" in message
    assert "protected" not in message and MODEL_INPUT_ADVICE not in message
    assert not isinstance(raised.value, ModelInputError)
    assert model.calls == 1  # no bisection for a row: a connection is not about the rows


def test_a_model_out_of_memory_is_told_to_take_smaller_batches():
    model = as_model(Unreachable(MemoryError()), name="big")
    with pytest.raises(ModelCallError, match=r"MemoryError.*lower batch_size.*sent 12 rows"):
        model.predict(toy_domain().sample(12, np.random.default_rng(0)))


def test_a_model_failing_on_every_row_alike_is_not_blamed_on_a_value():
    calls = []

    def unfitted(X):  # fails whatever the row, as an unfitted or misconfigured model does
        calls.append(len(X))
        raise ValueError("This model instance is not fitted yet")

    X = toy_domain(("sex",)).sample(64, np.random.default_rng(1))
    assert not (X == X[0]).all(axis=0).any()  # rows that share no value: none can explain the failure
    with pytest.raises(ModelCallError, match=r"fails on each of \d+ rows tried one by one.*ValueError: This model "
                                             "instance is not fitted yet") as raised:
        as_model(unfitted, name="unfitted").predict(X)
    assert "protected" not in str(raised.value) and MODEL_INPUT_ADVICE not in str(raised.value)
    assert len(calls) <= 1 + 2 * int(np.log2(64)) + 16  # the batch, the bisection, the rows tried one by one


def test_rows_sharing_a_value_the_model_refuses_still_name_it():
    refused_value = 7

    def refuses_seven(X):  # refuses a = 7, as an encoder that never saw it
        X = np.asarray(X)
        if (X[:, 2] == refused_value).any():
            raise ValueError("Found unknown categories [7] in column 2")
        return (X @ np.array([3.0, 0, 1, 1, 0]) - 10.5 > 0).astype(np.int64)

    X = toy_domain(("sex",)).sample(64, np.random.default_rng(2))
    X[:, 2] = refused_value  # every row fails, and every row holds the value: it is the input's fault
    with pytest.raises(ModelInputError, match=r"such as codes \[\d+, \d+, 7, .*Found unknown categories \[7\]"):
        as_model(refuses_seven).predict(X)


def test_the_audit_of_an_unreachable_frame_model_says_so_before_the_search():
    data = toy_dataset(200)
    frame = pd.DataFrame(data.X, columns=data.domain.names).assign(y=data.y)
    model = Unreachable(ConnectionError("[Errno 111] Connection refused"))
    with pytest.raises(ModelCallError, match=r"ConnectionError: \[Errno 111\] Connection refused") as raised:
        chiralfair.audit(as_model(model, name="served"), frame, label="y", positive_class=1, favourable=1,
                         protected=["sex"], seeds="random", generator="aequitas", max_global=10, max_local=5)
    assert "protected" not in str(raised.value) and isinstance(raised.value, ModelCapabilityError)
    assert model.calls == 1


def test_a_model_that_recovers_answers_as_before():
    flaky = {"down": True}

    def sometimes(X):
        if flaky["down"]:
            raise ConnectionError("reset by peer")
        return LABELS.predict(X)

    model = as_model(sometimes, name="flaky")
    X = toy_domain(("sex",)).sample(20, np.random.default_rng(3))
    with pytest.raises(ModelCallError):
        model.predict(X)
    flaky["down"] = False
    assert np.array_equal(model.predict(X), (np.asarray(X) @ np.array([3.0, 0, 1, 1, 0]) - 10.5 > 0))
