"""Method ``auto``: the lowest IDI rate that keeps F1 and the group metrics, chosen on validation rows.

The candidates (:func:`candidates`) are trained on the fitting rows of a validation split carved from the training
rows and measured on its validation rows, beside the model's own kind trained on the same fitting rows (the
reference, and with other training seeds the F1 spread, :mod:`.spread`). A candidate is *within the bounds* when its
validation F1 is at most ``max(max_f1_loss, spread)`` below the reference's and neither its demographic-parity nor
its equalized-odds difference exceeds the reference's by more than ``max_group_increase``. ``auto`` picks, among
the candidates within the bounds, the lowest validation IDI rate; a candidate whose rate lies inside the 95%
Wilson interval of that lowest one is as low within the noise of the validation rows, and of those the one with the
highest validation F1 is picked (then the earlier candidate): a lower rate that the rows cannot tell apart is not
bought with F1. If none is within the bounds, the one that lies the least beyond its farthest bound (in units of
that bound, :func:`excess`), then the lowest IDI rate, and it says so. The pick is
trained again on all training rows; the test rows are never looked at before the final figures.

Candidates, by model kind:

- the paper's DNN: ``consistency`` fine-tuned 10 epochs from the model's weights, λ in (0.3, 1) × reweighing
  strength in (0, 0.5, 1): the penalty removes the use of the protected attributes while the start keeps the
  model's decision boundary, and reweighing holds the group metrics; ``consistency`` trained from scratch at
  λ = 1 with each strength (on a few hundred rows, 10 epochs are too few steps); and ``counterfactual`` and
  ``unaware`` from scratch at strength 0 and 1;
- any other model chiralfair can refit: ``counterfactual`` and ``unaware``, each at reweighing strength
  (0, 0.25, 0.5, 0.75, 1).

References
----------
.. [1] Garg et al. "Counterfactual Fairness in Text Classification through Robustness." AIES 2019.
.. [2] Kamiran, Calders. "Data preprocessing techniques for classification without discrimination." KAIS 2012.
.. [3] GRFT (ICSE 2025): the counterfactual loss over every protected value (``pairing="all"``).
"""

from __future__ import annotations

from typing import Any

TORCH_LAMS = (0.3, 1.0)
REWEIGH_STRENGTHS = (0.0, 0.5, 1.0)
# A model refitted from scratch in seconds gets a finer grid: the F1 a strength costs and the group gap it closes
# both move with it, and the bounds are often met in a narrow band.
SKLEARN_REWEIGH_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
FINE_TUNE_EPOCHS = 10
# From scratch too: on a few hundred rows, 10 epochs from the model's weights are too few optimiser steps.
SCRATCH_LAM = 1.0
TORCH_SCRATCH_STRENGTHS = (0.0, 1.0)  # counterfactual and unaware, each a training of the DNN from scratch


def candidates(*, torch: bool) -> list[tuple[str, dict[str, Any]]]:
    """The (method, parameters) ``auto`` tries, for the paper's DNN (``torch``) or a model refitted from scratch.

    Parameters
    ----------
    torch : bool

    Returns
    -------
    list of (str, dict)
    """
    if torch:
        tuned = [("consistency", {"lam": lam, "reweigh": r, "fine_tune_epochs": FINE_TUNE_EPOCHS})
                 for lam in TORCH_LAMS for r in REWEIGH_STRENGTHS]
        scratch = [("consistency", {"lam": SCRATCH_LAM, "reweigh": r}) for r in REWEIGH_STRENGTHS]
        return tuned + scratch + [(name, {"reweigh": r}) for name in ("counterfactual", "unaware")
                                  for r in TORCH_SCRATCH_STRENGTHS]
    return [(name, {"reweigh": r}) for name in ("counterfactual", "unaware") for r in SKLEARN_REWEIGH_STRENGTHS]


def describe(name: str, params: dict[str, Any]) -> str:
    """A candidate in words, e.g. ``"consistency λ=1, reweigh 0.5, fine-tuned 10 epochs"``.

    Parameters
    ----------
    name : str
    params : dict

    Returns
    -------
    str
    """
    parts = [name]
    if "lam" in params:
        parts.append(f"λ={params['lam']:g}")
    parts.append(f"reweigh {params.get('reweigh', 0.0):g}")
    if params.get("fine_tune_epochs"):
        parts.append(f"fine-tuned {params['fine_tune_epochs']} epochs")
    return ", ".join(parts)


def excess(figures: dict[str, Any], reference: dict[str, Any], *, f1_budget: float,
           max_group_increase: float) -> float:
    """How far a candidate lies beyond its farthest bound, in units of that bound (0 within every bound).

    Parameters
    ----------
    figures, reference : dict
        As :func:`broken_bounds`.
    f1_budget, max_group_increase : float

    Returns
    -------
    float
    """
    out = [max(0.0, reference["f1"] - figures["f1"] - f1_budget) / max(f1_budget, 1e-12)]
    for key in ("demographic_parity_difference", "equalized_odds_difference"):
        a, b = figures.get(key), reference.get(key)
        if a is not None and b is not None:
            out.append(max(0.0, a - b - max_group_increase) / max(max_group_increase, 1e-12))
    return max(out)


def broken_bounds(figures: dict[str, Any], reference: dict[str, Any], *, f1_budget: float,
                  max_group_increase: float) -> list[str]:
    """The bounds a candidate's validation figures break, in words (empty: within every bound).

    Parameters
    ----------
    figures, reference : dict
        ``f1``, ``demographic_parity_difference``, ``equalized_odds_difference`` on the validation rows.
    f1_budget : float
    max_group_increase : float

    Returns
    -------
    list of str
    """
    out = []
    if reference["f1"] - figures["f1"] > f1_budget:
        out.append(f"F1 {figures['f1']:.3f} < {reference['f1']:.3f} - {f1_budget:.3f}")
    for key, short in (("demographic_parity_difference", "DPD"), ("equalized_odds_difference", "EOD")):
        a, b = figures.get(key), reference.get(key)
        if a is not None and b is not None and a - b > max_group_increase:
            out.append(f"{short} {a:.3f} > {b:.3f} + {max_group_increase:g}")
    return out


def choose(tried: list[dict[str, Any]], reference: dict[str, Any], *, f1_budget: float,
           max_group_increase: float, n_validation: int) -> tuple[int, str]:
    """The candidate ``auto`` picks among ``tried`` (validation figures), and why, in words.

    Parameters
    ----------
    tried : list of dict
        One per candidate: ``label`` and the validation ``f1``, ``idi_rate``, ``demographic_parity_difference``,
        ``equalized_odds_difference``.
    reference : dict
        The model's kind on the same validation rows.
    f1_budget, max_group_increase : float
    n_validation : int
        Validation rows the IDI rates were measured on (for their Wilson interval).

    Returns
    -------
    index : int
    why : str
    """
    broken = [broken_bounds(t, reference, f1_budget=f1_budget, max_group_increase=max_group_increase)
              for t in tried]
    within = [i for i, b in enumerate(broken) if not b]
    if within:
        from .evaluation import wilson

        lowest = min(tried[i]["idi_rate"] for i in within)
        _, upper = wilson(round(lowest * n_validation), n_validation)
        tied = [i for i in within if tried[i]["idi_rate"] <= upper]
        pick = max(tied, key=lambda i: (tried[i]["f1"], -i))
        why = (f"the highest validation F1 ({tried[pick]['f1']:.3f}) among the {len(tied)} candidates whose "
               f"validation IDI rate is as low as the lowest ({lowest:.2%}) within its 95% interval (up to "
               f"{upper:.2%}), of the {len(within)} of {len(tried)} within the bounds")
    else:
        beyond = [excess(t, reference, f1_budget=f1_budget, max_group_increase=max_group_increase) for t in tried]
        pick = min(range(len(tried)), key=lambda i: (beyond[i], tried[i]["idi_rate"], -tried[i]["f1"], i))
        why = (f"no candidate stayed within the bounds on the validation rows; it lies the least beyond them "
               f"({'; '.join(broken[pick])}: {beyond[pick]:.2f} of a bound beyond), with a validation IDI rate of "
               f"{tried[pick]['idi_rate']:.2%}")
    return pick, why
