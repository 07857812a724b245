"""The guardrail (design §8): a method that does not lower the held-out IDI rate, or costs too much F1, says so.

"Lower" means the 95% interval of the IDI rate over the test rows after mitigation lies wholly below the interval
before: a point estimate that moved inside the noise is not an improvement. The F1 loss is F1 before minus F1
after on the same test rows. Both are measured on the held-out test split: the guardrail judges the final figures;
no choice is made on them.
"""

from __future__ import annotations

from typing import Any

DEFAULT_MAX_F1_LOSS = 0.01


def judge(before: dict[str, Any], after: dict[str, Any], max_f1_loss: float = DEFAULT_MAX_F1_LOSS
          ) -> tuple[bool, str]:
    """Whether ``after`` improves on ``before``, and the words that say why not.

    Parameters
    ----------
    before, after : dict
        Rows with ``test_idi_rate``, ``test_idi_lower``, ``test_idi_upper`` and ``f1``.
    max_f1_loss : float, default=0.01
        The F1 budget.

    Returns
    -------
    improved : bool
    words : str
        Empty when improved; else one sentence per failure.
    """
    reasons = []
    if not after["test_idi_upper"] < before["test_idi_lower"]:
        where = "is higher" if after["test_idi_lower"] > before["test_idi_upper"] else "is not lower"
        reasons.append(f"the held-out IDI rate {where}: {_rate(after)} after against {_rate(before)} before "
                       "(95% intervals over the test rows; the after interval is not wholly below the before one)")
    loss = before["f1"] - after["f1"]
    if loss > max_f1_loss:
        reasons.append(f"it costs {loss:.3f} F1 on the test rows ({before['f1']:.3f} -> {after['f1']:.3f}), more "
                       f"than the budget of {max_f1_loss:g}")
    return not reasons, "; ".join(reasons)


def _rate(row: dict[str, Any]) -> str:
    return f"{row['test_idi_rate']:.2%} [{row['test_idi_lower']:.2%}, {row['test_idi_upper']:.2%}]"
