"""The paper tables name each retrain cell's interval rule as the cell holds it (a cell stored before the verdict's
Clopper-Pearson interval reached retraining holds Wilson intervals, and its caption must not say otherwise)."""

import numpy as np
import pandas as pd
import pytest

from chiralfair.experiments.presets.paper_tables import _per_cell_protocols


def _tidy(flags):
    rows = []
    for state, flag in enumerate(flags):
        for seeds, low, high in (("iandd", 0.01, 0.02), ("cluster", 0.03, 0.05)):
            row = {"row": "census sex", "model": "dnn", "random_state": state, "seeds": seeds,
                   "remaining_idis": 10 if seeds == "iandd" else 20, "test_idi_rate_after": (low + high) / 2,
                   "test_idi_lower_after": low, "test_idi_upper_after": high}
            if flag is not None:
                row["test_idi_clopper_pearson"] = flag
            rows.append(row)
    return pd.DataFrame(rows)


@pytest.mark.parametrize(("flags", "rule"), [
    ((None, None), "(Wilson 95%, as retraining gave them when these cells ran)"),
    ((1.0, 1.0), "(Clopper-Pearson 95%)"),
    ((1.0, np.nan), "(Clopper-Pearson 95% in 2 of 4 rows, Wilson 95% in the others (cells stored before))"),
])
def test_the_caption_names_the_interval_rule_the_cells_hold(flags, rule):
    lines = _per_cell_protocols(_tidy(flags), ["iandd", "cluster"])
    holdout = next(line for line in lines if line.startswith("Holdout"))
    assert f"retraining {rule}:" in holdout
    assert "wholly below the cluster one in 2 cells, wholly above in 0." in holdout
