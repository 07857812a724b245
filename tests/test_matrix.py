"""The differential test matrix: one question, one answer at every door, for every model kind and data kind.

"What share of these held-out people would get another label if only their protected attributes changed, and who
is harmed?" Each cell runs one door (audit, estimate, check, certify, retrain, the model card, the report, the CLI)
on one model kind and one data kind (``matrix_cells``), and asserts each figure the door gives equal to a recount
written in ``matrix_cells`` with plain numpy/pandas/scipy through the user's own model object. A refusal by design
is asserted by its words. A cell that fails because of a known defect is marked ``xfail(strict=True)`` with the
defect in words, so that it turns into a failure to remove the mark once the fix lands. ``benchmarks/matrix.py``
runs the same cells and writes their figures.
"""

from __future__ import annotations

import pytest
from matrix_cells import (
    DATA,
    DOORS,
    FILE_DATA,
    MODELS,
    cannot_be_typed,
    expected_refusal,
    known,
    run_budget,
    run_cell,
    slow,
)


def cells(test: str, doors=DOORS):
    """The cells of one test: a model kind and a data kind that cannot be typed together are one skipped cell."""
    out = []
    for model in MODELS:
        for data in DATA:
            if cannot_be_typed(model, data, "estimate"):
                if test == "figures":
                    out.append(pytest.param(model, data, "any", id=f"{model}-{data}"))
                continue
            for door in doors:
                if door == "cli" and data not in FILE_DATA:
                    continue  # the CLI reads files
                if cannot_be_typed(model, data, door):
                    if test == "figures":
                        out.append(pytest.param(model, data, door, id=f"{model}-{data}-{door}"))
                    continue
                marks = []
                if reason := known(test, model, data, door):
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                if slow(model, door):
                    marks.append(pytest.mark.slow)
                out.append(pytest.param(model, data, door, marks=marks, id=f"{model}-{data}-{door}"))
    return out


_RUN: dict = {}


def cell(model: str, data: str, door: str):
    """Each cell runs once per process (three tests read it)."""
    key = (model, data, door)
    if key not in _RUN:
        try:
            _RUN[key] = run_cell(model, data, door)
        except Exception as err:
            _RUN[key] = err
    got = _RUN[key]
    if isinstance(got, Exception):
        raise got
    return got


@pytest.mark.parametrize("model, data, door", cells("figures"))
def test_figures(model, data, door):
    """Every figure (share and n affected, n harmed, groups, F1, per-person status) equals the recount."""
    if why := cannot_be_typed(model, data, "estimate" if door == "any" else door):
        pytest.skip(why)
    c = cell(model, data, door)
    if expected_refusal(model, data, door):
        assert c.refusal is not None and c.unequal() == [], (c.refusal, c.unequal())
        return
    assert c.refusal is None
    figures = [f for f in c.figures if not f[0].startswith("worst group")]
    assert figures, "the door gave no figure to compare"
    unequal = [(n, t, r) for n, t, r in figures if (n, t, r) in c.unequal()]
    assert unequal == [], unequal


WORST_DOORS = ("estimate", "audit", "check", "report", "card", "cli")


@pytest.mark.parametrize("model, data, door", cells("worst", WORST_DOORS))
def test_worst_group(model, data, door):
    """The most harmed group, its n harmed of n and its interval (Clopper-Pearson, from scipy) equal the recount."""
    if expected_refusal(model, data, door):
        pytest.skip("a refusal by design gives no group (asserted by test_figures)")
    c = cell(model, data, door)
    worst = [f for f in c.figures if f[0].startswith("worst group")]
    assert worst, "the door named no worst group"
    assert c.unequal("worst group") == []


@pytest.mark.parametrize("model, data, door", cells("budget", ("estimate", "audit", "check")))
def test_rows_within_budget(model, data, door):
    """Every row the user's model receives is stated: the queries inside the budget (within max_queries) plus every
    row stated outside it (an audit's ``queries.outside_budget``: probes, verdict, group metrics, diversity)."""
    if expected_refusal(model, data, door):
        pytest.skip("a refusal by design sends no budgeted rows")
    c = run_budget(model, data, door)
    if c.rows is None:
        pytest.skip("the model is a file: no counting wrapper fits around it")
    assert c.unequal() == []
    received, stated = c.rows
    # <=: a row counted that the model did not receive hides no query from the user (the budget's promise is an
    # upper bound of what the model is sent); benchmarks/matrix.py shows both figures, equal in every cell so far
    # but one intermittent run (torch_values-numeric: probes stated 1,976 for 1,975 received).
    assert received <= stated, f"the model received {received:,} rows; the output states {stated:,}: {c.detail}"
