"""MAFT (ICSE 2024): EIDIG's global and local phases on any model with probabilities, no gradient needed."""

from __future__ import annotations

import numpy as np

from .._validation import check_float
from ..exceptions import ConfigError
from .base import register_generator
from .eidig import EIDIG
from .finite_differences import FiniteDifferences
from .gradient_steps import GradientSource
from .recorder import IDIRecorder


@register_generator("maft")
class MAFT(EIDIG):
    """MAFT: :class:`~chiralfair.generators.eidig.EIDIG` with d P(y=1)/dx estimated by finite differences.

    The search is EIDIG's, phase for phase and draw for draw (momentum global phase, local walk with
    inverse-saliency feature probabilities; see :class:`~chiralfair.generators.eidig.EIDIG`); only the source of
    the gradient differs. Wherever EIDIG asks ``input_gradient`` at an input and its counterpart, MAFT estimates
    d P(y=1)/dx_j = (P(x + δ e_j) - P(x)) / δ from ``predict_proba``
    (:func:`~chiralfair.generators.finite_differences.finite_difference_gradient`): every chain, its counterpart
    and every movable non-protected feature in one model batch per step. So it runs on any model with
    probabilities (gradient boosting, forests, raw-frame pipelines, ONNX files), and on a model that *has*
    ``input_gradient`` it still uses the estimate (that is how MAFT and EIDIG are compared).

    Cost: a gradient pair (input and counterpart) costs ``2 m`` queries, m the number of non-protected features
    with more than one value (EIDIG: 2 gradient rows), plus one or two per flat probe in the global phase; checks
    cost the same as EIDIG's.

    Departures from the paper and its code (``wangzh1998/MAFT``: ``MAFT.py`` ``compute_grad``,
    ``global_generation``, ``local_generation``; ``README.md`` and ``experiments.py`` for the settings), each
    deliberate:

    - Everything EIDIG departs from (:class:`~chiralfair.generators.eidig.EIDIG`: the last global step is
      checked, keys are non-protected projections, all chains batched, stuck chains not re-checked).
    - **The probe stays in the domain**: forward ``+step`` where it fits the feature's bounds, else backward
      (the code always probes ``x + h``, also past the upper bound, where a model fitted on the data, or a
      frame pipeline decoding codes, sees an input that cannot occur).
    - **Only movable non-protected features are probed** (the code probes every feature, protected ones
      included, whose estimates EIDIG's step and saliency never use), and P(x) is taken from x's discrimination
      check rather than queried again: a pair costs ``2 m`` queries, not ``2 (d + 1)``.
    - **``perturbation_size`` defaults to 1.0**, the setting the authors' README calls optimal (the code's
      function default is 1e-4): on integer codes a probe of 1 is the neighbouring code, which a tree, a
      boosted ensemble or a decoded frame can tell from x; 1e-4 is below their resolution and estimates 0.
    - **Optional probes across plateaus in the global phase** (``across_plateaus=True``; off by default):
      where the probe at ``x + δ e_j`` sees no change of P (a tree ensemble's plateau), it is repeated at
      ``x - δ e_j`` and, where that is flat too, a quarter of the feature's range away (at least ``2 δ``); the
      first change seen, divided by its own step, is the estimate
      (:func:`~chiralfair.generators.finite_differences.finite_difference_gradient`). Where a smooth model's
      probabilities do not saturate no probe is flat and nothing more is sent. On census HGB and RF (sex, 300
      seeds, no budget) it finds 1.1-2.3x the global IDIs per seed, 0.8-1.1x per query; on a model flat one code
      around every seed it is what lets the chains move. The local saliency keeps the plain one-sided probe: its
      zeros are the features the model ignores, which EIDIG's local walk should move (measured: probing across
      plateaus there too cut RF's IDIs at 20,000 queries, random seeds, from 7,761 to 3,117).
    - **Under a query budget the global steps take a share of it** (``global_share``) and the local phase the
      rest; a batch that does not fit is cut to the chains that fit, and chains stopped early walk on when the
      local walks leave budget (see :class:`~chiralfair.generators.eidig.EIDIG`). The code has no budget.
    - **``update_interval`` defaults to None**, as ``eidig`` here (EIDIG-INF, the variant the I&D paper uses), so
      that ``maft`` and ``eidig`` differ only in the gradient. The MAFT paper's experiments run 5 (MAFT-5 against
      EIDIG-5): ``update_interval=5``.

    Parameters
    ----------
    max_global, max_local, max_queries, max_iter, decay, update_interval, step_global, step_local, epsilon, global_share
        As :class:`~chiralfair.generators.eidig.EIDIG` (same defaults).
    across_plateaus : bool
        Probe again where the global phase's first probe sees no change (default False: the paper's one probe).
        Off by default: on a model whose probabilities saturate (census LR) the repeated flat probes cost queries
        for nothing (MAFT/EIDIG IDIs per 1,000 queries 0.42x -> 0.26x, ``benchmarks/maft_smooth.py``), and at
        20,000 queries on census HGB/RF the budget's split, not the probe, decides the IDIs found.
    perturbation_size : float
        Finite-difference probe size h, in encoded units (1.0). On a model that takes a decoded DataFrame
        (``to_frame``), probes are rounded to codes, so h must be a whole number.

    Raises
    ------
    ConfigError
        If a parameter is out of range; at :meth:`run`, if ``perturbation_size`` is not a whole number and the
        model takes a DataFrame.
    ModelCapabilityError
        At :meth:`run`, if the model answers labels only (no ``predict_proba``); the message names the model.

    References
    ----------
    .. [1] Wang et al. "MAFT: Efficient model-agnostic fairness testing for deep neural networks via zero-order
       gradient search." ICSE 2024. Code: ``wangzh1998/MAFT``.
    .. [2] Zhang, Zhang, Zhang. "Efficient white-box fairness testing through gradient search." ISSTA 2021.
    """

    name = "maft"
    needs_gradient = False
    needs_proba = True

    def __init__(self, *, max_global: int = 1000, max_local: int = 1000, max_queries: int | None = None,
                 max_iter: int = 10, decay: float = 0.5,
                 update_interval: int | None = None, step_global: float = 1.0, step_local: float = 1.0,
                 epsilon: float = 1e-6, global_share: float = 0.5, perturbation_size: float = 1.0,
                 across_plateaus: bool = False):
        self.perturbation_size = check_float(perturbation_size, "perturbation_size", minimum=0,
                                             exclusive_minimum=True)
        if not isinstance(across_plateaus, bool | np.bool_):
            raise ConfigError(f"across_plateaus must be True or False, got {across_plateaus!r}")
        self.across_plateaus = bool(across_plateaus)
        super().__init__(max_global=max_global, max_local=max_local, max_queries=max_queries,
                         max_iter=max_iter, decay=decay,
                         update_interval=update_interval, step_global=step_global, step_local=step_local,
                         epsilon=epsilon, global_share=global_share)
        self.params["perturbation_size"] = self.perturbation_size
        self.params["across_plateaus"] = self.across_plateaus

    def _gradient_source(self) -> GradientSource:
        return FiniteDifferences(self.perturbation_size, across_plateaus=self.across_plateaus)

    def _local_gradient_source(self) -> GradientSource:
        return FiniteDifferences(self.perturbation_size)

    def _budget_features(self, n_features: int | None) -> int:
        if n_features is None:
            raise ConfigError("MAFT's query budget grows with the number of features (one probe per feature and "
                              "gradient row): pass n_features=")
        return int(n_features)

    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        if recorder.model.takes_frame and not float(self.perturbation_size).is_integer():
            raise ConfigError(f"perturbation_size={self.perturbation_size!r}: model {recorder.model.name!r} takes a "
                              "decoded DataFrame, so its inputs are whole codes and a fractional probe would be "
                              "rounded away; use a whole number such as 1.0")
        return super()._search(recorder, seeds, rng)
