"""What an IDI test cannot see: proxies of a protected attribute, measured when the verdict finds no one affected.

Individual fairness testing asks whether changing a person's protected attribute, and nothing else, changes the
decision. A model that never reads the attribute passes by construction, whatever it does with the other columns:
if they predict the attribute well (a postcode for race, a job title for sex), the model can still treat the
groups differently, and no counterpart shows it. So a verdict of 0.00% affected says, beside it, how strongly the
other columns predict each protected attribute: the ROC AUC, on the held-out rows, of a small gradient boosting
model fitted on the training rows (one-vs-rest, macro-averaged, for an attribute with more than two values). An
AUC near 0.5 means the other columns say little about the attribute; near 1, that they stand in for it. Where to
look then: the group metrics (selection rate, true- and false-positive rates per group).

References
----------
.. [1] Dwork et al. "Fairness through awareness." ITCS 2012 (why blindness to the attribute is not fairness).
.. [2] Kusner et al. "Counterfactual fairness." NeurIPS 2017 (proxies and the attribute's descendants).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..models.threads import single_native_thread

# The proxy model: small enough to cost about a second on census, able to read interactions.
PROXY_ITERATIONS = 50


def proxy_strength(dataset, train_index, test_index, *, random_state: int = 0) -> list[dict[str, Any]]:
    """How well the non-protected columns predict each protected attribute on the held-out rows.

    Parameters
    ----------
    dataset : Dataset
        Its domain names the protected attributes; the other columns are the predictors (their codes).
    train_index, test_index : array-like of int
        Rows the proxy model is fitted on, and the held-out rows its AUC is measured on.
    random_state : int, default=0
        Seeds the proxy model.

    Returns
    -------
    list of dict
        One per protected attribute: ``attribute``, ``auc`` (ROC AUC in [0, 1], None when the held-out rows hold
        a single value of it), ``n_test`` (held-out rows with a valid value) and ``model`` (what measured it).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    domain = dataset.domain
    others = [j for j in range(domain.n_features) if j not in domain.protected]
    position = domain.protected_value_index(dataset.X)
    train_index, test_index = np.asarray(train_index), np.asarray(test_index)
    out = []
    for j, attribute in enumerate(domain.attributes):
        target = position[:, j]
        train = train_index[target[train_index] >= 0]
        test = test_index[target[test_index] >= 0]
        record = {"attribute": attribute.name, "auc": None, "n_test": int(len(test)),
                  "model": f"HistGradientBoostingClassifier(max_iter={PROXY_ITERATIONS}) on the other columns' codes"}
        out.append(record)
        if not others or len(np.unique(target[train])) < 2 or len(np.unique(target[test])) < 2:
            continue
        with single_native_thread():
            model = HistGradientBoostingClassifier(max_iter=PROXY_ITERATIONS, random_state=random_state)
            model.fit(dataset.X[train][:, others], target[train])
            proba = model.predict_proba(dataset.X[test][:, others])
        if len(model.classes_) == 2:
            record["auc"] = float(roc_auc_score(target[test], proba[:, 1]))
        elif set(np.unique(target[test])) <= set(model.classes_.tolist()):
            record["auc"] = float(roc_auc_score(target[test], proba, multi_class="ovr", average="macro",
                                                labels=model.classes_))
    return out


def blind_spot_line(proxies: list[dict[str, Any]]) -> str:
    """The first-screen line beside a verdict of no one affected: the proxies' strength, where to look instead.

    Parameters
    ----------
    proxies : list of dict
        From :func:`proxy_strength`.

    Returns
    -------
    str
        E.g. ``"what this test cannot see: proxies of the protected attribute (the other columns predict it: sex AUC
        0.92); read the group metrics"``.
    """
    strength = ", ".join(f"{p['attribute']} AUC {p['auc']:.2f}" for p in proxies if p["auc"] is not None)
    return ("what this test cannot see: proxies of the protected attribute (the other columns predict it: "
            f"{strength or 'not measured'}); read the group metrics")


def blind_spot_note(verdict, proxies: list[dict[str, Any]]) -> str:
    """The note beside a verdict that finds no one affected: what the test cannot see, and where to look.

    Parameters
    ----------
    verdict : Verdict
        With ``n_affected == 0``.
    proxies : list of dict
        From :func:`proxy_strength`.

    Returns
    -------
    str
    """
    gap = verdict.gap
    flat = gap is not None and max(gap["quantiles"].values()) == 0.0
    why = (f"the model's output does not depend on {', '.join(verdict.protected)} on any individual checked "
           "(probability gap 0)" if flat else "no counterpart changes a label")
    strength = "; ".join(f"{p['attribute']}: AUC {p['auc']:.2f}" if p["auc"] is not None else
                         f"{p['attribute']}: not measured (one value in the held-out rows)" for p in proxies)
    return (f"0 individuals affected: {why}. An IDI test cannot see proxies of the attribute: the other columns "
            f"predict it on the held-out rows with {strength} ({proxies[0]['model'] if proxies else 'no model'}; "
            "0.5 = they say nothing of it, 1 = they stand in for it); to see whether outcomes differ by group, read "
            "the group metrics (selection rate, TPR, FPR per group)")
