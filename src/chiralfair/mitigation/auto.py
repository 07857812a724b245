"""Method ``auto``: the lowest IDI rate that keeps F1 and the group metrics, chosen on repeated validation splits.

A meta-method over the registry (:class:`AutoMitigation`). The candidates (:func:`candidates`) are every registered
method's ``candidate_params`` on the model's kind, a user's plugin included, except a method whose class says it
is not one for an IDI goal (``not_a_candidate``) or cannot train the kind (``cannot_run``). Each is trained on the
fitting rows of ``validation_repeats`` (default 3) validation splits carved from the training rows and measured
on their validation rows, beside the model's own kind trained on the same fitting rows (the reference; with other
training seeds on the first split, the F1 spread, :mod:`.spread`); its figures are averaged over the splits (its
group metrics are computed over the splits' validation rows pooled), so the choice holds beyond one split. A
candidate is *within the bounds* when its validation F1 is at most ``max(max_f1_loss, spread)`` below the
reference's and neither its demographic-parity nor its equalized-odds difference exceeds the reference's by more
than ``max_group_increase``, each *within the noise*: the F1 loss or the rise plus, in quadrature, its one-sided
95% paired bootstrap margin over the validation rows (pooled over the splits; for F1 times ``sqrt(2)``, as the
held-out rows the loss is judged on have a noise of their own) and the training seed's part (for F1 the one-sided
95% quantile of the F1 difference of two training seeds, ``1.645 * sqrt(2)`` times the model's own F1 standard
deviation over seeds, :func:`f1_margin`; for DPD and EOD the model's own spread of that difference over seeds).
A bare F1 loss said "within" on validation rows and missed on the test rows: on the
census HGB at model state 2, sex and race, validation losses 0.004 and 0.001 against a budget of 0.010 became test
losses 0.015 and 0.011 (``benchmarks/results/retrain_family_hgb.md`` as of commit 8517cc0). On the held-out rows
the rise is measured against the model under test, one draw of its training seed, and a retrained model is
another: on the census sex DNN, consistency fine-tuned 10 epochs from the reference lowered the pooled validation
EOD by 0.058, yet fine-tuned from the model under test it raised the held-out EOD 0.088 -> 0.112, so fine-tuning
does not keep the start's group figures either (measured with ``benchmarks/retrain_family.py``); a
difference undefined on the validation rows (a group without a positive or a negative row) is a bound that cannot
be checked, said as such. ``auto`` picks, among the candidates
within the bounds, the lowest validation IDI rate; a candidate whose rate lies inside the 95% Clopper-Pearson interval
(the verdict's) of that lowest one is as low within the noise of the validation rows, and of those the one with the
highest validation F1 is picked (then the earlier candidate): a lower rate that the rows cannot tell apart is not bought
with F1. If none is within the bounds, it says so first (each bound no candidate met and by how much the closest
missed it, :func:`unmet_bounds`), and picks the one that lies the least beyond its farthest bound (in units of that
bound, :func:`excess`), then the lowest IDI rate. The pick is trained again on all training rows; the test rows are
never looked at before the final figures. Those figures then check the claim: the report's headline says, right
after anything the validation rows said, whether the pick reached the goal on the held-out test rows (IDI rate at
least ``IDI_GOAL`` lower, F1 within its budget, neither group metric raised beyond its bound) and names every part
it missed (:func:`chiralfair.mitigation.guardrail.goal_misses`): a claim within the noise can still miss, as on an
LR census sex cell that met every bound on validation and lost 0.01005 F1 against a budget of 0.010 on the test
rows.

The built-in methods' candidates:

- the paper's DNN: ``consistency`` fine-tuned 10 epochs from the model's weights, λ in (0.3, 1) × reweighing
  strength in (0, 1), and at λ = 1 with a group term of weight 1 or 3 (the network's equalized-odds gap): the
  penalty removes the use of the protected attributes while the start keeps the model's decision boundary, and
  reweighing or the group term hold the group metrics; ``consistency`` from scratch at λ = 1, reweighing 0.5 (on a
  few hundred rows, 10 epochs are too few steps); ``counterfactual`` and ``unaware`` from scratch at strength 0
  and 1;
- any other model chiralfair can refit: ``counterfactual`` and ``unaware``, each at reweighing strength
  (0, 0.25, 0.5, 0.75, 1), and, for an sklearn estimator (on the codes, or a raw-frame Pipeline refitted in its
  own values and labels) whose final step takes ``sample_weight``, ``reductions`` (each group constraint with the
  estimator blind, and equalized odds on augmented rows).

References
----------
.. [1] Garg et al. "Counterfactual Fairness in Text Classification through Robustness." AIES 2019.
.. [2] Kamiran, Calders. "Data preprocessing techniques for classification without discrimination." KAIS 2012.
.. [3] GRFT (ICSE 2025): the counterfactual loss over every protected value (``pairing="all"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import ConfigError, ModelCapabilityError
from .base import MitigationMethod, register_method
from .guardrail import IDI_GOAL

TORCH_LAMS = (0.3, 1.0)
REWEIGH_STRENGTHS = (0.0, 1.0)
# The group term of consistency's loss (the network's own equalized-odds gap over the protected groups).
GROUP_WEIGHTS = (1.0, 3.0)
# A model refitted from scratch in seconds gets a finer grid: the F1 a strength costs and the group gap it closes
# both move with it, and the bounds are often met in a narrow band.
SKLEARN_REWEIGH_STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)
FINE_TUNE_EPOCHS = 10
# From scratch too: on a few hundred rows, 10 epochs from the model's weights are too few optimiser steps.
SCRATCH_LAM = 1.0
TORCH_SCRATCH_STRENGTHS = (0.0, 1.0)  # counterfactual and unaware, each a training of the DNN from scratch


def reweigh_strengths(run) -> tuple[float, ...]:
    """The reweighing strengths ``auto`` tries a method from scratch at: fewer for the DNN (a training is slower).

    Parameters
    ----------
    run : MitigationRun

    Returns
    -------
    tuple of float
    """
    from .kinds import is_zoo_dnn
    return TORCH_SCRATCH_STRENGTHS if is_zoo_dnn(run.model) else SKLEARN_REWEIGH_STRENGTHS


def reweigh_candidates(run) -> list[dict[str, float]]:
    """``auto``'s candidate parameters of a method trained from scratch: one per reweighing strength.

    Parameters
    ----------
    run : MitigationRun

    Returns
    -------
    list of dict
        ``{"reweigh": strength}`` for each of :func:`reweigh_strengths`.
    """
    return [{"reweigh": r} for r in reweigh_strengths(run)]


def candidates(run) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, str]]:
    """The (method, parameters) ``auto`` tries on the run's kind of model: every registered method's candidates.

    A registered method (a user's plugin included) is a candidate unless its class says it is not one for an IDI
    goal (``not_a_candidate``), cannot train this kind of model (``cannot_run``) or is too costly to try among
    the candidates on it (``left_out_of_auto``); its class gives the parameters to try (``candidate_params``).

    Parameters
    ----------
    run : MitigationRun

    Returns
    -------
    tried : list of (str, dict)
    left_out : dict of str to str
        Each registered method not tried, and why.
    """
    from .base import method_class, method_names

    tried, left_out = [], {}
    for name in method_names():
        cls = method_class(name)
        if cls.not_a_candidate:
            left_out[name] = cls.not_a_candidate
            continue
        why = cls.cannot_run(run, {}) or cls.left_out_of_auto(run)
        if why:
            left_out[name] = why
            continue
        tried += [(name, dict(p)) for p in cls.candidate_params(run)]
    return tried, left_out


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
    from .base import method_class
    return method_class(name).describe(params)


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
    out = [max(0.0, _f1_loss_of(figures, reference) - f1_budget) / max(f1_budget, 1e-12)]
    for key in ("demographic_parity_difference", "equalized_odds_difference"):
        rise = _rise_of(figures, reference, key)
        if rise is not None:
            out.append(max(0.0, rise - max_group_increase) / max(max_group_increase, 1e-12))
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
    loss = _f1_loss_of(figures, reference)
    if loss > f1_budget and "f1_margin" in figures:  # auto's own candidates: the loss with its noise
        out.append(f"F1 {figures['f1']:.3f} against {reference['f1']:.3f}: loss "
                   f"{reference['f1'] - figures['f1']:+.3f}, up to {loss:+.3f} within the noise > {f1_budget:.3f}")
    elif loss > f1_budget:
        out.append(f"F1 {figures['f1']:.3f} < {reference['f1']:.3f} - {f1_budget:.3f}")
    for key, short in (("demographic_parity_difference", "DPD"), ("equalized_odds_difference", "EOD")):
        a, b = figures.get(key), reference.get(key)
        if "rise_bound" in figures:  # auto's own candidates: the rise with its noise
            rise, bound = figures["rise"].get(key), figures["rise_bound"].get(key)
            if bound is None:
                out.append(f"{short} {_undefined(figures, key)}")
            elif bound > max_group_increase:
                out.append(f"{short} {a:.3f} against {b:.3f}: rise {rise:+.3f}, up to {bound:+.3f} within the noise "
                           f"> {max_group_increase:g}")
        elif a is not None and b is not None and a - b > max_group_increase:
            out.append(f"{short} {a:.3f} > {b:.3f} + {max_group_increase:g}")
    return out


def _undefined(figures: dict[str, Any], key: str) -> str:
    """Why a candidate's rise of a group metric cannot be told on the validation rows."""
    if figures["rise"].get(key) is None:
        return "undefined on the validation rows (a group without a positive or a negative row)"
    return ("not told apart from the model's own spread over training seeds, undefined on the first split's "
            "validation rows (a group without a positive or a negative row)")


def _f1_loss_of(figures: dict[str, Any], reference: dict[str, Any]) -> float:
    """How much F1 a candidate may lose: the loss plus its noise margin (``f1_margin``), or the plain loss."""
    return float(reference["f1"] - figures["f1"] + figures.get("f1_margin", 0.0))


def _rise_of(figures: dict[str, Any], reference: dict[str, Any], key: str) -> float | None:
    """How far a group metric may rise: the bound of the rise with its noise, or the plain rise (None: unknown)."""
    if "rise_bound" in figures:
        return figures["rise_bound"].get(key)
    a, b = figures.get(key), reference.get(key)
    return None if a is None or b is None else a - b


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
        Validation rows the IDI rates were measured on (for their Clopper-Pearson interval, the verdict's).

    Returns
    -------
    index : int
    why : str
    """
    broken = [broken_bounds(t, reference, f1_budget=f1_budget, max_group_increase=max_group_increase)
              for t in tried]
    # A candidate with validation F1 0 labels no positive row right (e.g. one label for everyone): it has no IDIs and
    # no group gap by construction, and its noise-free group figures would otherwise win against real models.
    usable = [i for i, t in enumerate(tried) if t["f1"] > 0] or list(range(len(tried)))
    dropped = len(tried) - len(usable)
    never = (f"; {dropped} candidate{'s' if dropped > 1 else ''} with validation F1 0 (no positive row labelled "
             f"right) never picked" if dropped else "")
    within = [i for i in usable if not broken[i]]
    if within:
        from .evaluation import share_interval

        lowest = min(tried[i]["idi_rate"] for i in within)
        _, upper = share_interval(round(lowest * n_validation), n_validation)
        tied = [i for i in within if tried[i]["idi_rate"] <= upper]
        pick = max(tied, key=lambda i: (tried[i]["f1"], -i))
        why = (f"the highest validation F1 ({tried[pick]['f1']:.3f}) among the {len(tied)} candidates whose "
               f"validation IDI rate is as low as the lowest ({lowest:.2%}) within its 95% Clopper-Pearson interval "
               f"(up to {upper:.2%}), of the {len(within)} of {len(tried)} within the bounds{never}")
    else:
        beyond = [excess(t, reference, f1_budget=f1_budget, max_group_increase=max_group_increase) for t in tried]
        pick = min(usable, key=lambda i: (beyond[i], tried[i]["idi_rate"], -tried[i]["f1"], i))
        # In units of a bound only when no bound is 0 (a zero bound makes any miss "infinitely many bounds").
        units = f": {beyond[pick]:.2f} of a bound beyond" if min(f1_budget, max_group_increase) > 0 else ""
        why = (f"no candidate stayed within the bounds on the validation rows; it lies the least beyond them "
               f"({'; '.join(broken[pick])}{units}), with a validation IDI rate of {tried[pick]['idi_rate']:.2%}"
               f"{never}")
    return pick, why


def unmet_bounds(tried: list[dict[str, Any]], reference: dict[str, Any], *, f1_budget: float,
                 max_group_increase: float) -> list[str]:
    """Each bound no candidate met, and by how much the closest candidate missed it (empty: some candidate met it).

    Parameters
    ----------
    tried : list of dict
        As :func:`choose`.
    reference : dict
    f1_budget, max_group_increase : float

    Returns
    -------
    list of str
    """
    out = []
    miss = [_f1_loss_of(t, reference) - f1_budget for t in tried]
    if tried and min(miss) > 0:
        i = int(np.argmin(miss))
        noise = " within the noise of the validation rows and training seeds" if "f1_margin" in tried[i] else ""
        out.append(f"F1 (no candidate within {f1_budget:.3f} of the reference's {reference['f1']:.3f}{noise}; the "
                   f"closest, {tried[i]['label']}, by {miss[i]:.3f})")
    for key, short in (("demographic_parity_difference", "DPD"), ("equalized_odds_difference", "EOD")):
        b = reference.get(key)
        rises = [(_rise_of(t, reference, key), t["label"]) for t in tried]
        values = [(r - max_group_increase, label) for r, label in rises if r is not None]
        noisy = any("rise_bound" in t for t in tried)
        if values and min(values)[0] > 0:
            gap, label = min(values)
            out.append(f"{short} (no candidate at most {max_group_increase:g} above the reference's "
                       f"{_short(b)}{' within the noise of the validation rows and training seeds' if noisy else ''}"
                       f"; the closest, {label}, by {gap:.3f})")
        elif tried and not values and (noisy or b is None):
            out.append(f"{short} ({_undefined(tried[0], key) if noisy else 'undefined on the validation rows'}, "
                       "for every candidate: the bound cannot be checked)")
    return out


def _gaps(figures: dict[str, Any], reference: dict[str, Any], f1_budget: float,
          max_group_increase: float) -> list[tuple[str, float]]:
    """The bounds a candidate breaks and by how much it lies beyond each."""
    out = []
    f1 = _f1_loss_of(figures, reference) - f1_budget
    if f1 > 0:
        out.append((f"F1 ({figures['f1']:.3f} against {reference['f1']:.3f}, loss up to "
                    f"{_f1_loss_of(figures, reference):+.3f} within the noise > {f1_budget:.3f})"
                    if "f1_margin" in figures else
                    f"F1 ({figures['f1']:.3f} < {reference['f1']:.3f} - {f1_budget:.3f})", f1))
    for key, short in (("demographic_parity_difference", "DPD"), ("equalized_odds_difference", "EOD")):
        a, b, rise = figures.get(key), reference.get(key), _rise_of(figures, reference, key)
        if rise is not None and rise - max_group_increase > 0:
            out.append((f"{short} ({_short(a)} against {_short(b)}, rise up to {rise:+.3f} within the noise > "
                        f"{max_group_increase:g})" if "rise_bound" in figures else
                        f"{short} ({_short(a)} > {_short(b)} + {max_group_increase:g})", rise - max_group_increase))
    return out


class _PooledRows:
    """The validation rows of every split pooled: their labels, groups and the reference's predictions.

    ``auto``'s group figures are computed over them (:func:`~chiralfair.mitigation.evaluation.pooled_group_figures`):
    a group with few rows in one split still counts with its rows of the others, so the differences are defined
    and steadier than a mean of each split's. The rise of a candidate's difference over the reference's comes with
    its noise: a one-sided 95% bootstrap bound over the rows and the model's own spread of that difference over
    training seeds (the model under test is one draw of its seed), the two added in quadrature.
    """

    def __init__(self, dataset, splits):
        from .evaluation import protected_groups_frame

        rows = [np.asarray(s.validation_rows, dtype=np.int64) for s in splits]
        self.y = np.concatenate([dataset.y[r] for r in rows])
        frames = [protected_groups_frame(dataset.domain, dataset.X[r]) for r in rows]
        self.groups = np.concatenate([f.astype(str).agg("/".join, axis=1).to_numpy(dtype=str) for f in frames])
        self.reference = np.concatenate([np.asarray(s.reference["predicted"], dtype=np.int64) for s in splits])

    def reference_figures(self) -> dict[str, Any]:
        from .evaluation import pooled_group_figures

        pooled = pooled_group_figures(self.y, self.groups, self.reference, self.reference)
        return {key: pooled[key]["reference"] for key in GROUP_KEYS}

    def figures(self, predicted: np.ndarray, seed_spread: dict[str, Any] | None,
                f1_seed_std: float | None = None) -> dict[str, Any]:
        """A candidate's pooled differences, their rise and its bound, and the noise margin of its F1 loss.

        ``seed_spread``: the model's own spread of each group metric over training seeds (None adds no seed
        margin). ``f1_margin`` is :func:`f1_margin` of the one-sided 95% paired bootstrap margin of the F1 loss over
        the pooled rows (``f1_margin_rows``) and ``f1_seed_std`` (the standard deviation of the model's own F1 over
        training seeds; None or 0 adds no seed margin). ``f1_counts`` are the pooled rows' counts per (label,
        candidate's prediction, reference's prediction), label-major, from which the bootstrap is drawn.
        """
        from .evaluation import pooled_f1_loss, pooled_group_figures

        pooled = pooled_group_figures(self.y, self.groups, predicted, self.reference)
        f1 = pooled_f1_loss(self.y, predicted, self.reference)
        counts = np.bincount(np.asarray(self.y, dtype=np.int64) * 4 + np.asarray(predicted, dtype=np.int64) * 2
                             + self.reference, minlength=8)
        out: dict[str, Any] = {"rise": {}, "rise_bound": {}, "f1_margin_rows": f1["margin"],
                               "f1_margin": f1_margin(f1["margin"], f1_seed_std), "f1_counts": counts.tolist()}
        for key in GROUP_KEYS:
            p = pooled[key]
            out[key] = p["value"]
            out["rise"][key] = p["rise"]
            seed = 0.0 if seed_spread is None else seed_spread.get(key)
            if p["rise"] is None or p["rise_upper"] is None or seed is None:
                out["rise_bound"][key] = None
            else:
                rows = max(0.0, p["rise_upper"] - p["rise"])
                out["rise_bound"][key] = float(p["rise"] + np.hypot(rows, seed))
        return out


GROUP_KEYS = ("demographic_parity_difference", "equalized_odds_difference")
# One-sided 95% quantile of the standard normal: the seed part of the F1 margin.
Z_ONE_SIDED_95 = 1.6448536269514722


def f1_margin(rows_margin: float, seed_std: float | None) -> float:
    """The noise margin of a validation F1 loss as a claim about held-out rows: rows and training seed, in quadrature.

    ``sqrt(rows² + seed²)`` with two parts. The rows: the held-out loss is measured on other rows than the
    validation loss, each estimate with its own noise; for a held-out sample as large as the pooled validation rows
    the two estimates differ by ``sqrt(2)`` times one's, so the rows' part is ``sqrt(2) * rows_margin``. The seed:
    the held-out loss compares the model under test, one draw of its training seed, with the candidate trained again,
    another draw; their F1 differs by the seed alone with a standard deviation of ``sqrt(2) * seed_std``, whose
    one-sided 95% quantile is the seed's part.

    Parameters
    ----------
    rows_margin : float
        One-sided 95% paired bootstrap margin of the loss over the validation rows
        (:func:`~chiralfair.mitigation.evaluation.pooled_f1_loss`).
    seed_std : float or None
        Standard deviation of the model's own validation F1 over training seeds (None: not measured, no seed part).

    Returns
    -------
    float
    """
    seed = Z_ONE_SIDED_95 * np.sqrt(2.0) * float(seed_std or 0.0)
    return float(np.hypot(np.sqrt(2.0) * rows_margin, seed))


def idi_goal_unmet(picked: dict[str, Any], reference: dict[str, Any], *, within: bool,
                   goal: float = IDI_GOAL) -> str | None:
    """Why the pick falls short of removing ``goal`` of the reference's validation IDI rate; None when it does not.

    Parameters
    ----------
    picked, reference : dict
        The pick's and the reference's validation figures (``idi_rate``).
    within : bool
        Whether the pick is within every bound (then no candidate within them lowers the rate more).
    goal : float, default=IDI_GOAL

    Returns
    -------
    str or None
        None also when the reference has no IDI on the validation rows (nothing to remove).
    """
    before = reference.get("idi_rate")
    if not before:
        return None
    drop = 1.0 - picked["idi_rate"] / before
    if drop >= goal:
        return None
    lead = (f"no candidate within the bounds lowers the IDI rate by {goal:.0%} on the validation rows" if within
            else f"the IDI rate is not lowered by {goal:.0%} on the validation rows")
    return f"{lead}: the pick lowers it by {drop:.0%} ({before:.2%} -> {picked['idi_rate']:.2%})"


def first_sentence(within: bool, unmet: list[str], idi_short: str | None) -> str:
    """What ``auto``'s choice says first: the bounds no candidate meets, then an IDI goal the pick falls short of.

    Parameters
    ----------
    within : bool
    unmet : list of str
        :func:`unmet_bounds` (empty when ``within``).
    idi_short : str or None
        :func:`idi_goal_unmet`.

    Returns
    -------
    str
        Empty when the pick is within every bound and meets the IDI goal; else sentences ending in ``". "``.
    """
    parts = [] if within else ["no candidate meets every bound on the validation rows: " + "; ".join(unmet)]
    if idi_short:
        parts.append(idi_short)
    return "".join(p[0].upper() + p[1:] + ". " if i else p + ". " for i, p in enumerate(parts))


def _mean(values: list) -> float | None:
    """The mean of figures over the validation splits; None when a split's figure is undefined."""
    return None if any(v is None for v in values) else float(np.mean(values))


def _validation_figures(row: dict[str, Any]) -> dict[str, Any]:
    """A row of :class:`~chiralfair.mitigation.evaluation.Evaluator` on validation rows as ``auto`` reads it."""
    if "idi_rate" in row:
        return dict(row)
    return {"f1": row["f1"], "idi_rate": row["test_idi_rate"],
            "demographic_parity_difference": row["demographic_parity_difference"],
            "equalized_odds_difference": row["equalized_odds_difference"]}


def _short(value) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _candidate_text(tried: dict[str, Any], broken: list[str]) -> str:
    return (f"{tried['label']}: IDI rate {tried['idi_rate']:.2%}, F1 {tried['f1']:.3f}, DPD "
            f"{_short(tried['demographic_parity_difference'])}, EOD {_short(tried['equalized_odds_difference'])}"
            + (f" (breaks {', '.join(broken)})" if broken else ""))


FIGURES = ("f1", "idi_rate", "demographic_parity_difference", "equalized_odds_difference")


@register_method("auto")
class AutoMitigation(MitigationMethod):
    """The registered method with the lowest IDI rate within the F1 and group bounds, chosen on validation rows.

    A meta-method over the registry (see the module docstring): every registered method is a candidate unless its
    class says it is not one for an IDI goal or cannot train the model's kind; each candidate is fitted on the
    fitting rows of ``repeats`` validation splits of the training rows and measured on their validation rows, and
    its figures are averaged over the splits, so the choice holds beyond one split. The pick is fitted on all rows.

    Parameters
    ----------
    estimator : sklearn classifier, optional
        The model's kind (as :func:`~chiralfair.mitigation.retrain` passes it, the model under test itself).
    domain : Domain
    candidates : list of (str, dict), optional
        The (method, parameters) to try; default every registered method's (:func:`candidates`).
    repeats : int, default=3
        Validation splits to choose over (outside :func:`~chiralfair.mitigation.retrain`, which takes
        ``validation_repeats``).
    validation_size : float, default=0.2
    max_f1_loss, max_group_increase : float, default=0.01, 0.02
        The bounds (outside retrain; retrain passes its own).
    random_state : int or None, default=None

    Attributes
    ----------
    estimator_ : MitigationMethod
        The picked method, fitted on all rows.
    info_ : dict
        ``choice`` (what was picked and why), ``candidates`` (every candidate's validation figures), ``pick``.
    """

    not_a_candidate = "it is the choice among the other methods"
    chooses_on_validation = True

    def __init__(self, estimator=None, domain=None, *, candidates=None, repeats: int = 3,
                 validation_size: float = 0.2, max_f1_loss: float = 0.01, max_group_increase: float = 0.02,
                 random_state=None):
        self.estimator = estimator
        self.domain = domain
        self.candidates = candidates
        self.repeats = repeats
        self.validation_size = validation_size
        self.max_f1_loss = max_f1_loss
        self.max_group_increase = max_group_increase
        self.random_state = random_state

    @classmethod
    def check_params(cls, params) -> None:
        """Refuse a parameter other than ``candidates`` (retrain passes the bounds and the splits itself).

        Parameters
        ----------
        params : dict

        Raises
        ------
        ConfigError
        """
        unknown = set(params) - {"candidates"}
        if unknown:
            raise ConfigError(f"auto: unknown parameters {sorted(unknown)} (candidates: a list of (method, params))")

    @classmethod
    def cannot_run(cls, run, params) -> str | None:
        """Why not: no registered method can train the run's kind of model (each method's reason).

        Parameters
        ----------
        run : MitigationRun
        params : dict

        Returns
        -------
        str or None
        """
        from .base import method_class

        given = params.get("candidates")
        if given:
            for name, p in given:
                why = method_class(name).cannot_run(run, dict(p))
                if why:
                    return f"candidate {name!r}: {why}"
            return None
        tried, left_out = candidates(run)
        if tried:
            return None
        return "no registered method can train this model: " + "; ".join(f"{n}: {w}" for n, w in left_out.items())

    @classmethod
    def build(cls, run, params, added=None):
        """Each candidate on the run's validation splits, the pick trained on all the training rows.

        Parameters
        ----------
        run : MitigationRun
            With :attr:`~chiralfair.mitigation.protocol.MitigationRun.validation` measured.
        params : dict
            ``candidates`` (optional).
        added : None

        Returns
        -------
        retrained : CountingModel
        info : dict
            ``choice``, ``how``, ``pick`` (``method``, ``params``, ``within_bounds``, ``unmet``), ``candidates``.

        Raises
        ------
        ConfigError
            Without validation splits.
        """
        from .base import method_class
        from .guardrail import f1_budget

        cls.check_params(params)
        validation = run.validation
        if validation.spread is None or not validation.splits:
            raise ConfigError("method 'auto' needs the model's kind trained on a validation split (none was made)")
        skipped: dict[str, str] = {}
        if params.get("candidates"):
            tried_on = [(str(n), dict(p)) for n, p in params["candidates"]]
        else:
            tried_on, skipped = candidates(run)
        splits = validation.splits
        pooled = _PooledRows(run.dataset, splits)
        reference = {k: _mean([_validation_figures(s.reference)[k] for s in splits]) for k in FIGURES}
        reference["f1"] = float(np.mean([s.reference["f1"] for s in splits]))
        reference.update(pooled.reference_figures())
        seed_spread = (validation.spread or {}).get("group_spread") or {}
        f1_seed_std = float((validation.spread or {}).get("std") or 0.0)
        budget = f1_budget(run.bounds["max_f1_loss"], validation.spread)
        bound = run.bounds["max_group_increase"]
        tried = []
        for name, candidate in tried_on:
            method = method_class(name)
            per_split, predicted = [], []
            for split in splits:
                fitted, _ = method.build(run.on(split.reference_model, split.fit_rows), dict(candidate))
                row = split.evaluate(fitted)
                per_split.append(_validation_figures(row))
                predicted.append(row["predicted"])
            figures = {k: _mean([f[k] for f in per_split]) for k in FIGURES}
            figures.update(pooled.figures(np.concatenate(predicted), seed_spread, f1_seed_std))
            tried.append({"label": method.describe(candidate), "method": name, "params": dict(candidate),
                          **figures, "idi_rate_min": min(f["idi_rate"] for f in per_split),
                          "idi_rate_max": max(f["idi_rate"] for f in per_split), "n_splits": len(splits)})
        n_validation = sum(len(s.validation_rows) for s in splits)
        pick, why = choose(tried, reference, f1_budget=budget, max_group_increase=bound, n_validation=n_validation)
        for t in tried:
            t["broken"] = broken_bounds(t, reference, f1_budget=budget, max_group_increase=bound)
        within = not tried[pick]["broken"]
        unmet = [] if within else unmet_bounds(tried, reference, f1_budget=budget, max_group_increase=bound)
        if not within and not unmet:  # each bound is met by some candidate, but none meets all at once
            unmet = [f"each bound is met by some candidate but none meets all at once; the closest, "
                     f"{tried[pick]['label']}, breaks " + ", ".join(
                         f"{b} (by {g:.3f})" for b, g in _gaps(tried[pick], reference, budget, bound))]
        name, chosen = tried_on[pick]
        retrained, info = method_class(name).build(run, dict(chosen))
        listed = "; ".join(_candidate_text(t, t["broken"]) for t in tried)
        idi_short = idi_goal_unmet(tried[pick], reference, within=within)
        first = first_sentence(within, unmet, idi_short)
        info["choice"] = (first + f"picked {tried[pick]['label']}: {why}. Bounds on {len(splits)} validation "
                          f"split(s) of the training rows ({n_validation} validation rows in all), against the model's "
                          f"kind trained on each split's other rows (F1 {reference['f1']:.3f}, DPD "
                          f"{_short(reference['demographic_parity_difference'])}, EOD "
                          f"{_short(reference['equalized_odds_difference'])}, means over the splits): F1 at most "
                          f"{budget:.3f} lower (the larger of max_f1_loss and the spread) and DPD and EOD at most "
                          f"{bound:g} higher, each within the noise (the loss or rise plus, in quadrature, a "
                          f"one-sided 95% paired bootstrap margin over the splits' validation rows pooled, for F1 "
                          f"times sqrt(2) for held-out rows as many, and the training seed's part: for F1 "
                          f"{Z_ONE_SIDED_95:.3f} x sqrt(2) x the model's own F1 standard deviation "
                          f"{f1_seed_std:.3f} over training seeds, for DPD and EOD the model's own spread of that "
                          f"difference; DPD and EOD over the pooled rows). Candidates: {listed}")
        info["how"] = f"auto: {name} ({info['how']})"
        info["pick"] = {"method": name, "params": dict(chosen), "within_bounds": within, "unmet": unmet,
                        "idi_goal_short": idi_short}
        info["candidates"] = {"reference": reference, "f1_budget": budget, "max_group_increase": bound,
                              "n_splits": len(splits), "n_validation": n_validation, "picked": pick,
                              "tried": tried, "left_out": skipped}
        return retrained, info

    def _fit(self, X, y, sample_weight=None) -> None:
        from .._random import as_generator, derive_seed
        from ..datasets.base import Dataset
        from ..models.adapters import as_model
        from .base import fit_plain, unfitted_copy
        from .protocol import MitigationRun, ValidationSplits

        if sample_weight is not None:
            raise ModelCapabilityError(f"{type(self).__name__} takes no sample_weight")
        if self.estimator is None:
            raise ConfigError("AutoMitigation needs estimator=<an sklearn classifier or PaperDNNClassifier>")
        rng = as_generator(self.random_state)
        seed, split_seed = derive_seed(rng), derive_seed(rng)
        model = as_model(fit_plain(unfitted_copy(self.estimator, seed), X, y), name=type(self.estimator).__name__)
        data = Dataset(name="fit-rows", X=X, y=y, domain=self.domain)
        rows = np.arange(len(X), dtype=np.int64)
        validation = ValidationSplits.measure(model, data, rows, None, seeds=[seed], random_state=split_seed,
                                              validation_size=self.validation_size, needed=True, wanted=True,
                                              repeats=self.repeats)
        run = MitigationRun(model=model, dataset=data, train=rows, train_seed=seed, validation=validation,
                            bounds={"max_f1_loss": self.max_f1_loss, "max_group_increase": self.max_group_increase})
        params = {} if self.candidates is None else {"candidates": self.candidates}
        fitted, info = self.build(run, params)
        self.estimator_ = fitted.estimator
        self.info_ = info
