"""The held-out rows as fairlearn users read them: each row's labels, ``is_idi`` and ``left_out``; group metrics.

:func:`held_out_frame` checks every held-out row of the inputs in one batch
(:func:`chiralfair.verdict.group_metrics.held_out_rows`), counting people as the run's verdict counts them (its
``gamma`` and ``plausible_only``, its left-out rule); :func:`measure_group_metrics` turns that frame into
selection rate, TPR and FPR per protected group with fairlearn's ``MetricFrame``, beside each group's IDI rate. The
run pipeline measures them beside the verdict, so they reach ``result.json``, the report and
:class:`~.front.AuditResult`.
"""

from __future__ import annotations

from typing import Any


def verdict_rule(verdict) -> dict[str, Any]:
    """The verdict's way of counting a person affected: ``gamma`` and ``plausible_only`` (its ``meta["params"]``).

    Parameters
    ----------
    verdict : Verdict or None
        None: the default rule (any label change through a counterpart that could exist).

    Returns
    -------
    dict
        ``gamma`` (float or None) and ``plausible_only`` (bool).
    """
    params = {} if verdict is None else dict(verdict.meta.get("params") or {})
    return {"gamma": params.get("gamma"), "plausible_only": bool(params.get("plausible_only", False))}


def held_out_frame(inputs, verdict=None):
    """Per held-out person: labels, ``is_idi``, ``left_out`` and protected values, counted as ``verdict`` counts them.

    Columns ``row``, ``y_true``, ``y_pred``, ``is_idi``, ``left_out``, ``why_left_out`` and one per protected
    attribute, from one checked batch.

    Parameters
    ----------
    inputs : RunInputs
    verdict : Verdict, optional
        The run's verdict, whose ``gamma`` and ``plausible_only`` decide ``is_idi`` (:func:`verdict_rule`).

    Returns
    -------
    pandas.DataFrame, shape (len(inputs.test_index), 6 + n_protected)
        Costs ``len(test_index) × n_combinations`` model queries (not counted in the search's).
    """
    from ..verdict.group_metrics import held_out_rows

    inputs.model.reset_queries()
    frame = held_out_rows(inputs.model, inputs.dataset, inputs.test_index, **verdict_rule(verdict))
    inputs.model.reset_queries()
    return frame


def measure_group_metrics(inputs, *, verdict=None, random_state: int = 0, **params: Any):
    """Selection rate, TPR, FPR and IDI rate per protected group on the held-out rows of ``inputs``.

    Parameters
    ----------
    inputs : RunInputs
    verdict : Verdict, optional
        The run's verdict: the IDI rate counts the people it counts, as it counts them (:func:`held_out_frame`).
    random_state : int
        Seeds fairlearn's bootstrap (with ``n_boot > 0``).
    **params
        Of :func:`chiralfair.verdict.group_metrics.group_metrics` (``n_boot``, ``confidence``).

    Returns
    -------
    GroupMetrics
    """
    from ..verdict.group_metrics import group_metrics

    return group_metrics(held_out_frame(inputs, verdict), inputs.domain.protected_names, random_state=random_state,
                         rows=inputs.test_rows, **params)


__all__ = ["held_out_frame", "measure_group_metrics"]
