"""The model's own F1 spread: how much its F1 moves with nothing but its training seed (the guardrail's yardstick).

The model's kind (its architecture and hyper-parameters) is trained on the fitting rows of a validation split
carved from the training rows (:func:`~chiralfair.mitigation.validation.validation_split`), once per training seed,
and measured on the validation rows; the test rows are never looked at. The spread is the largest minus the
smallest of those F1 values. A retrained model whose F1 loss is within it costs no more than training the model
again with another seed would; the paper's DNN moves by 0.03-0.05 F1 so (``benchmarks/dnn_f1_spread.py``), while
a model with no randomness (a LogisticRegression) has a spread of 0. The guardrail's F1 budget is the larger of
``max_f1_loss`` and the spread, and every F1 loss is also stated in units of the spread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

DEFAULT_SPREAD_SEEDS = 3
GROUP_METRICS = ("demographic_parity_difference", "equalized_odds_difference")


def measure_spread(fit: Callable[[np.ndarray, int], Any], evaluate: Callable[[Any], dict[str, Any]],
                   fit_rows: np.ndarray, seeds: Sequence[int]) -> tuple[dict[str, Any], list]:
    """Fit the model's kind once per seed on ``fit_rows`` and measure each on the validation rows.

    Parameters
    ----------
    fit : callable
        ``fit(rows, seed) -> model``: the model's kind trained on those dataset rows with that training seed.
    evaluate : callable
        ``evaluate(model) -> dict`` with ``f1`` (and the other figures) on the validation rows.
    fit_rows : numpy.ndarray of int64
        Dataset rows to train on (the training rows minus the validation rows).
    seeds : sequence of int
        Training seeds; the first is the model's own (its model is ``auto``'s reference).

    Returns
    -------
    spread : dict
        ``seeds``, ``validation_f1`` (one per seed), ``spread`` (max - min), ``std`` (sample standard deviation, 0
        for one seed), ``group_spread`` (max - min of the demographic-parity and of the equalized-odds difference
        over the seeds, keyed by their names; None where a seed's is undefined), ``reference`` (the figures of the
        first seed's model on the validation rows).
    models : list
        The fitted models, in the order of ``seeds``.
    """
    models, figures = [], []
    for seed in seeds:
        model = fit(fit_rows, int(seed))
        models.append(model)
        figures.append(evaluate(model))
    f1 = np.array([f["f1"] for f in figures], dtype=np.float64)
    group_spread = {}
    for key in GROUP_METRICS:
        values = [f.get(key) for f in figures]
        group_spread[key] = None if any(v is None for v in values) else float(np.ptp(np.asarray(values, float)))
    return {"seeds": [int(s) for s in seeds], "validation_f1": f1.tolist(), "spread": float(np.ptp(f1)),
            "std": float(f1.std(ddof=1)) if len(f1) > 1 else 0.0, "group_spread": group_spread,
            "reference": figures[0]}, models


def in_spreads(loss: float, spread: dict[str, Any] | None) -> float | None:
    """An F1 loss in units of the spread (None without a spread, or when the spread is 0).

    Parameters
    ----------
    loss : float
        F1 before minus F1 after.
    spread : dict or None
        :func:`measure_spread`'s.

    Returns
    -------
    float or None
    """
    if not spread or not spread.get("spread"):
        return None
    return float(loss / spread["spread"])
