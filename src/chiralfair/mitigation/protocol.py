"""The protocol of a mitigation run: the training rows, their validation splits, and what a method is handed.

Leak-free by default (architecture: mitigation): every choice is made on validation splits carved from the training
rows (:func:`~chiralfair.mitigation.validation.validation_split`), never on the test rows. :class:`ValidationSplits`
holds those splits with the model's own kind trained on each split's fitting rows (the reference every candidate
is compared with) and, on the first split, once per further training seed (the model's own F1 spread,
:mod:`.spread`). :class:`MitigationRun` is what :func:`~chiralfair.mitigation.retrain` hands each method's
:meth:`~chiralfair.mitigation.base.MitigationMethod.build`: the model under test, the data, the training rows, the
seeds, the splits and the bounds. The leak count is :mod:`.leakage`'s, the guardrail :mod:`.guardrail`'s, and the
before/after figures on the held-out rows :mod:`.evaluation`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..datasets.base import Dataset
from ..exceptions import ConfigError
from ..models.protocol import CountingModel
from .evaluation import Evaluator
from .kinds import can_fit_kind, fit_model_kind

DEFAULT_VALIDATION_REPEATS = 3


@dataclass
class ValidationSplit:
    """One validation split of the training rows, and the model's kind trained on its fitting rows.

    Attributes
    ----------
    fit_rows, validation_rows : numpy.ndarray of int64
        Dataset rows.
    evaluate : Evaluator
        Measures a model on ``validation_rows``.
    reference_model : CountingModel
        The model's kind trained on ``fit_rows`` with the model's own training seed.
    reference : dict
        Its figures on ``validation_rows``.
    """

    fit_rows: np.ndarray
    validation_rows: np.ndarray
    evaluate: Evaluator
    reference_model: CountingModel
    reference: dict[str, Any]


@dataclass
class ValidationSplits:
    """The validation splits of the training rows, with the model's own F1 spread measured on the first.

    None figures and no split when not measured (said in :attr:`notes`).

    Attributes
    ----------
    spread : dict or None
        :func:`~chiralfair.mitigation.spread.measure_spread`'s, on the first split.
    splits : list of ValidationSplit
        The first, then the further ones made for ``auto`` (``repeats``).
    notes : list of str
    """

    spread: dict[str, Any] | None = None
    splits: list[ValidationSplit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def measure(cls, model: CountingModel, dataset: Dataset, train, trainer, *, seeds, validation_size: float,
                random_state: int, needed: bool, wanted: bool, repeats: int = 1,
                plausible_only: bool = False) -> ValidationSplits:
        """Carve the splits and train the model's kind on them.

        Parameters
        ----------
        model : CountingModel
        dataset : Dataset
        train : numpy.ndarray of int64
        trainer : callable or None
        seeds : sequence of int
            Training seeds of the spread; the first is the model's own.
        validation_size : float
        random_state : int
            Of the first split; split ``i`` uses ``random_state + i``.
        needed : bool
            A method chooses on validation rows (``auto``): a split that cannot be made is refused.
        wanted : bool
            The spread is asked for.
        repeats : int, default=1
            Validation splits to make (``auto`` chooses over all of them).
        plausible_only : bool, default=False

        Returns
        -------
        ValidationSplits

        Raises
        ------
        ConfigError
            When ``needed`` and the training rows are too few for a validation split.
        """
        from .spread import measure_spread
        from .validation import validation_split

        if not (needed or wanted):
            return cls()
        if not can_fit_kind(model, trainer):
            return cls(notes=[f"the model's own F1 spread was not measured: chiralfair cannot train {model.name!r} "
                              "again (pass trainer=)"])
        splits: list[ValidationSplit] = []
        spread = None
        for i in range(max(1, int(repeats)) if needed else 1):
            try:
                fit_at, validation_at = validation_split(dataset.y[train], validation_size,
                                                         random_state=random_state + i)
            except ConfigError as err:
                if needed:
                    raise ConfigError(f"method 'auto' chooses on a validation split of the training rows: "
                                      f"{err}") from None
                return cls(notes=[f"the model's own F1 spread was not measured: {err}"])
            fit_rows, validation_rows = train[fit_at], train[validation_at]
            evaluate = Evaluator(dataset, validation_rows, domain_rate=False, plausible_only=plausible_only,
                                 keep_predictions=True)
            fitted = lambda rows, seed: fit_model_kind(model, dataset, rows, seed, trainer)  # noqa: E731
            if i == 0:
                spread, models = measure_spread(fitted, evaluate, fit_rows, seeds)
                spread["n_validation"] = int(len(validation_rows))
                reference_model, reference = models[0], spread["reference"]
            else:
                reference_model = fitted(fit_rows, int(seeds[0]))
                reference = evaluate(reference_model)
            splits.append(ValidationSplit(fit_rows, validation_rows, evaluate, reference_model, reference))
        return cls(spread=spread, splits=splits)


@dataclass
class MitigationRun:
    """What :func:`~chiralfair.mitigation.retrain` hands a method's ``build``: one run's model, rows and bounds.

    Attributes
    ----------
    model : CountingModel
        The model under test.
    dataset : Dataset
    train : numpy.ndarray of int64
        Its training rows.
    train_seed : int
        Its training seed (the model's own when known).
    trainer : callable or None
        ``trainer(X, y, random_state)`` for models chiralfair cannot train (``paper`` only).
    mode : str
        How ``paper`` trains the model again (``"retrain"``, ``"fine-tune"``).
    cache_dir : path or None
    validation : ValidationSplits
    bounds : dict
        ``max_f1_loss``, ``max_group_increase``.
    method_seeds : dict of str to int
        Each method's own seed.
    """

    model: CountingModel
    dataset: Dataset
    train: np.ndarray
    train_seed: int
    trainer: Any = None
    mode: str = "retrain"
    cache_dir: Any = None
    validation: ValidationSplits = field(default_factory=ValidationSplits)
    bounds: dict[str, Any] = field(default_factory=dict)
    method_seeds: dict[str, int] = field(default_factory=dict)

    def on(self, model: CountingModel, train: np.ndarray) -> MitigationRun:
        """The same run with another model and training rows (a candidate fitted on a validation split's rows).

        Parameters
        ----------
        model : CountingModel
        train : numpy.ndarray of int64

        Returns
        -------
        MitigationRun
        """
        from dataclasses import replace
        return replace(self, model=model, train=np.asarray(train, dtype=np.int64))

    def seed_of(self, name: str) -> int:
        """The seed of method ``name`` (the train seed for a method given no seed of its own).

        Parameters
        ----------
        name : str

        Returns
        -------
        int
        """
        return int(self.method_seeds.get(name, self.train_seed))
