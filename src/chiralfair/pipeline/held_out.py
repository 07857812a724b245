"""The held-out rows as fairlearn users read them: each row's labels and ``is_idi``, and the metrics per group.

:func:`held_out_frame` checks every held-out row of the inputs in one batch
(:func:`chiralfair.verdict.group_metrics.held_out_rows`); :func:`measure_group_metrics` turns that frame into
selection rate, TPR and FPR per protected group with fairlearn's ``MetricFrame``. The run pipeline measures them
beside the verdict, so they reach ``result.json``, the report and :class:`~.front.AuditResult`.
"""

from __future__ import annotations

from typing import Any


def held_out_frame(inputs):
    """Per held-out row: ``row``, ``y_true``, ``y_pred``, ``is_idi`` and the protected values (one batch).

    Parameters
    ----------
    inputs : RunInputs

    Returns
    -------
    pandas.DataFrame, shape (len(inputs.test_index), 4 + n_protected)
        Costs ``len(test_index) × n_combinations`` model queries (not counted in the search's).
    """
    from ..verdict.group_metrics import held_out_rows

    inputs.model.reset_queries()
    frame = held_out_rows(inputs.model, inputs.dataset, inputs.test_index)
    inputs.model.reset_queries()
    return frame


def measure_group_metrics(inputs, *, random_state: int = 0, **params: Any):
    """Selection rate, TPR, FPR and IDI rate per protected group on the held-out rows of ``inputs``.

    Parameters
    ----------
    inputs : RunInputs
    random_state : int
        Seeds fairlearn's bootstrap (with ``n_boot > 0``).
    **params
        Of :func:`chiralfair.verdict.group_metrics.group_metrics` (``n_boot``, ``confidence``).

    Returns
    -------
    GroupMetrics
    """
    from ..verdict.group_metrics import group_metrics

    return group_metrics(held_out_frame(inputs), inputs.domain.protected_names, random_state=random_state,
                         rows=inputs.test_rows, **params)


__all__ = ["held_out_frame", "measure_group_metrics"]
