"""The contract every mitigation method keeps (architecture: mitigation), runnable on your own method.

A method you register (:func:`chiralfair.mitigation.register_method`, or an installed package's entry point in the
group ``chiralfair.mitigation_methods``) is checked as generators and seed strategies are (:mod:`.contract`):
:func:`check_mitigation_method` runs every check and fails with the first broken one;
:func:`~chiralfair.testing.parametrize_with_checks` (``mitigation_methods=``) makes one pytest test per check.
chiralfair's own test suite runs them over every built-in method.

The checks run on a small biased population whose ``rel`` column is coupled to ``sex`` (husband <-> wife), with
the zoo LogisticRegression under test, or the zoo DNN for a method that trains only it (its class's
``cannot_run``), through :func:`~chiralfair.mitigation.retrain` as every door runs a method:

- **fit/predict round trip**: the method as an sklearn meta-estimator fitted on codes and two string labels predicts
  those labels, one per row, and a clone fitted again predicts the same;
- **saved and reloaded equal**: the retrained model saved in its kind's format and loaded back
  (:func:`~chiralfair.models.files.load_model_file`) predicts what the retrained model predicts on the test rows;
- **leak count 0**: no added row carries a test row's projection, and the IDI pairs excluded are exactly those
  whose key is a test row's (one no training row shares), recounted here;
- **the guardrail's first line true**: the report's first line says "Improved" exactly when every after-row's
  held-out IDI interval lies wholly below the before one, its F1 loss is within the budget and neither group
  metric rose beyond its bound, recounted here from the rows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

PEOPLE = 400
FAST: dict[str, Any] = {"margin": 0.2, "spread_seeds": 2, "validation_repeats": 2, "random_state": 0}


@functools.lru_cache(maxsize=1)
def _people():
    """A biased population (sex protected, rel coupled to it) and its 60/40 split.

    ``age`` plays no part in the label; its 30 bins make most people's non-protected projection their own, so a
    test row's projection is rarely a training row's and the leak exclusion has pairs to exclude.
    """
    import pandas as pd

    from ..datasets import from_frame

    rng = np.random.default_rng(0)
    sex = rng.choice(["f", "m"], PEOPLE)
    rel = np.where(rng.random(PEOPLE) < 0.5, np.where(sex == "m", "husband", "wife"), "child")
    frame = pd.DataFrame({"sex": sex, "rel": rel, "job": rng.choice(["a", "b", "c"], PEOPLE),
                          "hours": rng.integers(20, 60, PEOPLE), "age": rng.integers(18, 78, PEOPLE)})
    score = (frame["job"] == "c") * 1.0 + 0.05 * (frame["hours"] - 40) + 1.2 * (frame["sex"] == "m")
    frame["y"] = np.where(score + rng.normal(0, 0.4, PEOPLE) > 0.8, "yes", "no")
    data = from_frame(frame, label="y", positive_class="yes", protected="sex",
                      couple={"sex": {"rel": {"husband": "wife", "wife": "husband"}}}, bins={"hours": 4, "age": 30})
    train, test = data.split(0)
    return data, train, test


@functools.lru_cache(maxsize=2)
def _model(kind: str):
    from ..models import ModelSpec

    data, train, _ = _people()
    params = {"epochs": 3} if kind == "dnn" else {}
    return ModelSpec(kind, params).fit(data.X[train], data.y[train], random_state=0)


def _kind_for(name: str, params: dict) -> str:
    """The zoo LR, or the zoo DNN for a method that cannot train the LR (its class says why)."""
    from ..mitigation.base import method_class
    from ..mitigation.protocol import MitigationRun

    data, train, _ = _people()
    run = MitigationRun(model=_model("lr"), dataset=data, train=train, train_seed=0)
    return "lr" if method_class(name).cannot_run(run, params) is None else "dnn"


def _every_idi_pair(model, data):
    """Every data row that is an IDI, with a counterpart: test rows included, so the leak exclusion has work."""
    from ..oracle import DiscriminationCheck

    checked = DiscriminationCheck(model, data.domain).check(data.X)
    return checked.X[checked.is_idi], checked.counterparts(data.domain)[checked.is_idi]


@functools.lru_cache(maxsize=4)
def _retrained(name: str, frozen: tuple):
    from ..mitigation import retrain
    from ..mitigation.base import method_class

    params = dict(frozen)
    data, train, _ = _people()
    model = _model(_kind_for(name, params))
    idis = _every_idi_pair(model, data) if method_class(name).needs_idis(params) else None
    method_params = {name: params} if params else None
    result = retrain(model, data, idis, method=name, train_index=train, method_params=method_params, **FAST)
    return model, idis, result


def _frozen(params: dict) -> tuple:
    return tuple(sorted(params.items()))


def _check_fit_predict_round_trip(name: str, params: dict) -> None:
    from sklearn.base import clone

    from .._registry import accepted_parameters
    from ..mitigation.base import make_method, method_class
    from ..mitigation.kinds import base_estimator

    data, train, test = _people()
    cls = method_class(name)
    estimator = base_estimator(name, _model(_kind_for(name, params)), 0, None)
    extra = {"random_state": 0} if "random_state" in (accepted_parameters(cls) or ()) else {}
    method = make_method(name, estimator=estimator, domain=data.domain, **{**extra, **params})
    labels = np.where(data.y[train] == 1, "yes", "no")
    first = clone(method).fit(data.X[train], labels).predict(data.X[test])
    again = clone(method).fit(data.X[train], labels).predict(data.X[test])
    assert first.shape == (len(test),), f"predict gave shape {first.shape} for {len(test)} rows"
    assert set(np.unique(first)) <= {"yes", "no"}, f"predict gave labels {np.unique(first)[:5]}, not yes/no"
    assert (first == again).all(), f"two fits of a clone disagree on {(first != again).sum()} of {len(test)} rows"


def _check_saved_and_reloaded_equal(name: str, params: dict) -> None:
    import tempfile

    from ..models.adapters import as_model
    from ..models.files import load_model_file

    data, _, test = _people()
    _, _, result = _retrained(name, _frozen(params))
    kept = as_model(result.model_of(name), name="kept").predict(data.X[test])
    with tempfile.TemporaryDirectory() as folder:
        # trusted: the check is the round trip; a method whose file holds its own classes needs the user's trust
        loaded = as_model(load_model_file(result.save(name, folder), trust=True), name="loaded").predict(data.X[test])
    assert (kept == loaded).all(), f"the reloaded model disagrees on {(kept != loaded).sum()} of {len(test)} rows"


def _check_leak_count_is_zero(name: str, params: dict) -> None:
    data, train, test = _people()
    _, idis, result = _retrained(name, _frozen(params))
    assert result.leakage["n_test_projections_added"] == 0, result.leakage
    assert all(r["n_test_projections_added"] == 0 for r in result.after), "an after-row added a test projection"
    if idis is not None:  # recount: the pairs whose key is a test row's and no training row's
        keys = data.domain.keys
        held_out = set(keys(data.X[test]).tolist()) - set(keys(data.X[train]).tolist())
        expected = int(np.isin(keys(idis[0]), list(held_out)).sum())
        assert expected > 0, "the contract's IDI pairs hold no test projection: nothing was tested"
        assert result.leakage["n_idis_excluded"] == expected, (result.leakage, expected)


def _check_guardrail_first_line_is_true(name: str, params: dict) -> None:
    _, _, result = _retrained(name, _frozen(params))
    before = result.rows[0]
    budget = max(result.max_f1_loss, (result.spread or {}).get("spread", 0.0))
    expected = True
    for row in result.after:
        ok = row["test_idi_upper"] < before["test_idi_lower"] and before["f1"] - row["f1"] <= budget
        for key in ("demographic_parity_difference", "equalized_odds_difference"):
            if row[key] is not None and before[key] is not None:
                ok = ok and row[key] - before[key] <= result.max_group_increase
        expected = expected and ok
    lines = result.to_markdown().splitlines()
    head = lines[: next(i for i, line in enumerate(lines) if line.startswith("| "))]  # above the table
    verdicts = [line for line in head if line.startswith(("**Improved**", "**Not an improvement**"))]
    assert verdicts, f"no guardrail line above the table: {head[:4]}"
    first = verdicts[0]  # below auto's unmet bounds, which come first when it found no candidate within them
    says = first.startswith("**Improved**")
    assert says == expected, f"the report's first line says {first[:60]!r}, the rows say improved={expected}"
    assert first.startswith("**Not an improvement**") != expected, first[:60]


MITIGATION_CHECKS: tuple[Callable[[str, dict], None], ...] = (
    _check_fit_predict_round_trip, _check_saved_and_reloaded_equal, _check_leak_count_is_zero,
    _check_guardrail_first_line_is_true)


def mitigation_method_checks(method: str, **params) -> list[tuple[str, Callable[[], None]]]:
    """The contract's checks of one mitigation method, each as ``(name, check)`` with ``check()`` raising on a breach.

    Parameters
    ----------
    method : str
        A registered name.
    **params
        Constructor arguments of the method (``method_params`` of :func:`~chiralfair.mitigation.retrain`).

    Returns
    -------
    list of (str, callable)
    """
    if not isinstance(method, str):
        raise TypeError(f"pass a registered method's name, not {method!r}: the checks run it through retrain()")
    return [(check.__name__.lstrip("_"), functools.partial(check, method, dict(params))) for check in
            MITIGATION_CHECKS]


def check_mitigation_method(method: str, **params) -> None:
    """Run every check of :data:`MITIGATION_CHECKS` on a registered mitigation method (see the module docstring).

    Parameters
    ----------
    method : str
        A registered name.
    **params
        Its constructor arguments.

    Raises
    ------
    AssertionError
        Naming the method and the first check that failed, with its reason.

    Examples
    --------
    >>> from chiralfair.testing import check_mitigation_method
    >>> check_mitigation_method("unaware")
    """
    what = f"mitigation method {method!r}"
    for name, check in mitigation_method_checks(method, **params):
        try:
            check()
        except AssertionError as err:
            raise AssertionError(f"{what} breaks the contract: {name}: {err}") from err
        except Exception as err:  # an error where the contract expects an answer is a breach too
            raise AssertionError(f"{what} breaks the contract: {name}: raised {type(err).__name__}: {err}") from err
