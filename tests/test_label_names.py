"""The verdict, report and model card name a label by what it stands for in the user's data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from chiralfair.datasets import from_frame
from chiralfair.reporting.model_card import cyclonedx_model_card
from chiralfair.verdict import estimate


def _verdict(positive_class: str, favourable: int):
    rng = np.random.default_rng(0)
    people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    other = "1" if positive_class == "0" else "no"
    people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, positive_class, other)
    data = from_frame(people, label="y", positive_class=positive_class, protected="sex")
    model = LogisticRegression().fit(data.X, data.y)
    return estimate(model, data, population="rows", favourable=favourable)


@pytest.mark.parametrize(("favourable", "favoured", "unfavoured"),
                         [(1, "label 1 (yes)", "label 0 (no)"), (0, "label 0 (no)", "label 1 (yes)")])
def test_the_card_and_the_summary_name_the_labels_by_the_positive_class(favourable, favoured, unfavoured):
    verdict = _verdict("yes", favourable)
    assert verdict.n_harmed > 0  # a harms entry exists to read
    assert f"Who is harmed (favourable {favoured})" in verdict.summary()
    harms = [a["harms"] for a in cyclonedx_model_card(verdict)["considerations"]["fairnessAssessments"]]
    assert harms and all(f"unfavourable outcome ({unfavoured})" in h and f"favourable one ({favoured})" in h
                         for h in harms)


def test_a_positive_class_of_1_adds_nothing():
    verdict = _verdict("1", 1)
    assert "Who is harmed (favourable label 1):" in verdict.summary()
