"""Seed strategies: ``select(model, dataset, n_seeds, *, random_state) -> SeedReport``.

See architecture: seed strategies.
"""

from __future__ import annotations

import importlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._random import RandomState, resolve_random_state
from .._registry import Registry
from .._validation import check_int
from ..datasets.base import Dataset
from ..exceptions import ConfigError, ModelInputError
from ..models.adapters import as_model
from ..models.protocol import CountingModel, in_domain_terms
from ..oracle import DiscriminationCheck
from ..results import SeedReport, base_meta

logger = logging.getLogger(__name__)

SEED_STRATEGIES: Registry[Callable[..., SeedStrategy]] = Registry("seed strategy")


def register_seed_strategy(name: str):
    """Class decorator registering a seed strategy under ``name``.

    Parameters
    ----------
    name : str
        The registry name (``make_seed_strategy(name)``); a name registered twice is refused.

    Returns
    -------
    callable
        The class decorator.
    """
    def deco(cls):
        return SEED_STRATEGIES.add(name, cls)
    return deco


def make_seed_strategy(name: str, **params) -> SeedStrategy:
    """Build the registered seed strategy ``name``.

    Parameters
    ----------
    name : str
        A registered name: ``random``, ``rows``, ``cluster``, ``data_rows``, ``i``, ``iandd``, ``expga``.
    **params
        Parameters of the strategy's class (e.g. ``explainer=`` of ``iandd``, ``n_clusters=`` of ``cluster``).

    Returns
    -------
    SeedStrategy

    Raises
    ------
    ConfigError
        If ``name`` is not registered (the message lists the valid names).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.datasets import from_frame
    >>> from chiralfair.models import as_model
    >>> from chiralfair.seeds import make_seed_strategy
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
    >>> data = from_frame(people, label="y", positive_class="yes", protected="sex")
    >>> model = as_model(LogisticRegression().fit(data.X, data.y))
    >>> seeds = make_seed_strategy("iandd").select(model, data, 20, random_state=0)  # trains the chiral model
    >>> seeds.strategy, seeds.seeds.shape, seeds.initialization_rate
    ('iandd', (20, 2), 0.45)
    """
    from .names import SEED_STRATEGY_MODULES

    if name in SEED_STRATEGY_MODULES:  # a built-in name: its own module registers it, the others are not imported
        importlib.import_module(f"{__package__}.{SEED_STRATEGY_MODULES[name]}")
    else:  # an installed one (the registry loads it), or an unknown one, refused listing every name
        from . import _load_all  # noqa: F401  (registers the built-in strategies)
    return SEED_STRATEGIES.make(name, **params)


class SeedStrategy(ABC):
    """The rule that picks the starting inputs of a search.

    Subclasses implement :meth:`_choose`; :meth:`select` validates, times, runs the discrimination check on
    seeds whose IDI status the strategy did not establish, and builds the :class:`SeedReport`.
    """

    name: ClassVar[str] = "strategy"

    def __init__(self, **params: Any):
        self.params = dict(params)

    def select(self, model, dataset: Dataset, n_seeds: int, *, random_state: RandomState = None) -> SeedReport:
        """Choose ``n_seeds`` seeds for testing ``model`` on ``dataset``.

        Parameters
        ----------
        model : CountingModel or anything :func:`~chiralfair.models.as_model` accepts
        dataset : Dataset
            Its domain names the protected attributes under test; its rows are the pool of data seeds, except
            :attr:`~chiralfair.datasets.Dataset.missing_protected` rows (said in ``notes``).
        n_seeds : int
            Number of seeds, >= 1.
        random_state : None, int, numpy.random.RandomState or numpy.random.Generator
            As scikit-learn accepts it; recorded readably in ``meta`` (see ``chiralfair._random``).

        Returns
        -------
        SeedReport
            ``seeds`` of shape (n_seeds, n_features) (fewer only if the strategy's pool is smaller, which is
            said in ``notes``), with ``is_idi`` and the time split in seconds.

        Raises
        ------
        ConfigError
            If ``n_seeds`` < 1.
        ModelInputError
            If the model fails on an input (a data row, a counterpart); the message names the feature, the value,
            whether it is protected, and what to do.
        """
        n_seeds = check_int(n_seeds, "n_seeds", minimum=1)
        model = as_model(model)
        try:
            return self._select(model, dataset, n_seeds, random_state)
        except ModelInputError as err:  # name the feature as the domain does, and whether it is protected
            clear = in_domain_terms(err, dataset.domain)
            if clear is err:
                raise
            raise clear from err

    def _select(self, model: CountingModel, dataset: Dataset, n_seeds: int, random_state) -> SeedReport:
        rng, random_state_described = resolve_random_state(random_state)
        q0 = model.n_queries
        t0 = time.perf_counter()
        # Rows with a missing protected value are reported apart, never drawn as seeds
        # (architecture: the model under test).
        pool = dataset.without_missing_protected()
        seeds, info = self._choose(model, pool, n_seeds, rng)
        if pool is not dataset:
            info["notes"] = (*info.get("notes", ()), f"{dataset.n_samples - pool.n_samples} data rows with a "
                             "missing protected value are not drawn as seeds")
        absent = dataset.domain.unobserved_protected_values(dataset.X)
        if absent:  # a declared (or hand-built) protected domain with values the data never holds
            note = ("protected values that no data row holds: " + "; ".join(
                f"{name} = {', '.join(map(repr, values))}" for name, values in absent.items()) +
                " (tried as counterparts only: no seed or group has them)")
            logger.warning(note)
            info["notes"] = (*info.get("notes", ()), note)
        proposed = self._proposal_shape_checked(seeds, dataset.domain, info.get("is_idi"))
        # Seeds are rounded into the bounds and satisfy the domain's constraints like every input a generator
        # proposes; a seed that moved is checked again, so its IDI flag is the model's answer for what is searched.
        seeds = dataset.domain.repair(dataset.domain.clip(proposed))
        seconds = dict(info.pop("seconds", {}))
        is_idi = info.pop("is_idi", None)
        moved = (seeds != proposed).any(axis=1)
        if moved.any():
            info["notes"] = (*info.get("notes", ()), f"{int(moved.sum())} seeds were outside the domain's bounds "
                             "or broke one of its constraints and were moved into it (Domain.clip, Domain.repair)"
                             + (", then checked again" if is_idi is not None else ""))
        if is_idi is not None and moved.any():
            t1 = time.perf_counter()
            is_idi = np.array(is_idi, dtype=bool, copy=True)
            is_idi[moved] = DiscriminationCheck(model, dataset.domain).check(seeds[moved]).is_idi
            seconds["seed_check"] = seconds.get("seed_check", 0.0) + time.perf_counter() - t1
        extra_meta = info.pop("meta", {})  # e.g. how I/I&D trained the chiral model
        if is_idi is None:
            t1 = time.perf_counter()
            is_idi = DiscriminationCheck(model, dataset.domain).check(seeds).is_idi
            seconds["seed_check"] = seconds.get("seed_check", 0.0) + time.perf_counter() - t1
        seconds["total"] = time.perf_counter() - t0
        meta = base_meta(params=self.params, dataset=dataset.name, model=model.name,
                         protected=dataset.domain.protected_names,
                         random_state=random_state_described, **extra_meta)
        return SeedReport(strategy=self.name, seeds=seeds, is_idi=np.asarray(is_idi, dtype=bool),
                          seconds=seconds, n_queries=model.n_queries - q0, meta=meta, **info)

    def _proposal_shape_checked(self, seeds, domain, is_idi) -> np.ndarray:
        """The strategy's seeds as an array of shape (n, n_features), with as many IDI flags; else a ConfigError."""
        proposed = np.asarray(seeds)
        if proposed.ndim != 2 or proposed.shape[1] != domain.n_features:
            raise ConfigError(f"seed strategy {self.name!r} proposed seeds of shape {proposed.shape}; the domain "
                              f"needs (n_seeds, {domain.n_features})")
        if is_idi is not None and np.shape(is_idi) != (len(proposed),):
            raise ConfigError(f"seed strategy {self.name!r} gave {np.shape(is_idi)} IDI flags for "
                              f"{len(proposed)} seeds")
        return proposed

    @abstractmethod
    def _choose(self, model: CountingModel, dataset: Dataset, n_seeds: int,
                rng: np.random.Generator) -> tuple[np.ndarray, dict]:
        """Return seeds of shape (n_seeds, n_features) and extra SeedReport fields.

        The extra fields are any of ``is_idi``, ``seconds``, ``n_initial_idis``, ``n_candidates``,
        ``n_candidate_idis``, ``n_initial_queries``, ``chiral_training_rows``, ``clustering`` and ``notes``.
        """
