"""Seed strategy ``i``: initial IDIs found with a chiral model (the "I" of I&D), topped up with data rows."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._validation import check_int
from ..oracle import DiscriminationCheck
from .base import SeedStrategy, register_seed_strategy
from .chiral import ChiralTrainer, train_chiral_model, wrap_like
from .random import random_rows


@register_seed_strategy("i")
class InitialIDISeeds(SeedStrategy):
    """Initial IDIs found with a chiral model; a shortfall is filled with random data rows.

    Initial IDIs are the data rows where the chiral model and the model under test disagree and that pass the
    discrimination check, deduplicated by IDI key, in random order.

    Steps:

    1. train the chiral model (see :func:`~chiralfair.seeds.chiral.train_chiral_model`) on the 60% training
       split with mutated protected attributes, unless ``chiral_model`` is given;
    2. predict every row of the dataset with both models (the paper screens all of X, training rows included,
       algorithms.md §12.11); the rows where they differ are the candidates (``n_candidates``);
    3. run the discrimination check on the candidates in one batch; the IDIs among them, one per IDI key
       (``n_initial_idis``), shuffled with ``random_state``, are the initial IDIs;
    4. take up to ``n_seeds`` of them (:meth:`_order` decides which; I&D overrides it); fill a shortfall with
       random data rows whose key is not among the initial IDIs (paper §3.2 says random; the reference code
       uses data order), and check those rows too. ``is_idi`` is therefore known for every seed.

    Parameters
    ----------
    chiral_model : object, optional
        An already trained chiral model (anything :func:`~chiralfair.models.as_model` accepts), wrapped with
        the declarations of the model under test (``positive_class``, ``to_frame``, ``output``).
    chiral_trainer : callable, optional
        ``chiral_trainer(X, y, random_state) -> model``: trains the architecture of the model under test on
        int codes ``X`` and labels ``y`` in {0, 1} (1 = positive); ``random_state`` is an int (e.g.
        ``GradientBoostingClassifier(random_state=random_state)``). Needed for models that carry neither a
        model spec nor an sklearn estimator (e.g. a plain torch module).
    split_random_state : int, optional
        ``random_state`` of the 60/40 split the chiral model is trained on; by default drawn from the
        strategy's ``random_state`` (or from ``chiral_random_state`` when that is set).
    chiral_random_state : int, optional
        Seeds the chiral model's split, mutation and training instead of the selection's ``random_state``.
        The chiral model is then a property of the model under test, not of one selection: repeated
        selections (``random_state`` 0, 1, ...) share one chiral model, loaded from the model cache for zoo
        models (:func:`~chiralfair.models.training.train_model`) and kept in this strategy for other models
        while the same model and dataset objects are passed. ``chiralfair run`` and ``chiralfair seeds`` set
        it to the model's ``random_state``. ``SeedReport.meta["chiral_model"]["from_cache"]`` says whether
        the chiral model was reused.
    chiral_cache_dir : str or os.PathLike, optional
        Model cache folder for a zoo model's chiral model (default: that of
        :func:`~chiralfair.models.training.train_model`); give the model under test's, so both are cached together.
    chiral_reference : bool, default=True
        Load a zoo model's chiral network shipped with the package when its recipe matches one
        (:mod:`chiralfair.models.reference`); False trains it on this machine.

    References
    ----------
    .. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
       Instances." arXiv:2209.08321, §3.1-3.2.
    """

    name = "i"

    def __init__(self, *, chiral_model=None, chiral_trainer: ChiralTrainer | None = None,
                 split_random_state: int | None = None, chiral_random_state: int | None = None,
                 chiral_cache_dir=None, chiral_reference: bool = True, **params):
        if chiral_random_state is not None:
            chiral_random_state = check_int(chiral_random_state, "chiral_random_state", minimum=0)
        super().__init__(chiral_model=None if chiral_model is None else type(chiral_model).__name__,
                         chiral_trainer=None if chiral_trainer is None else getattr(
                             chiral_trainer, "__qualname__", type(chiral_trainer).__name__),
                         split_random_state=split_random_state, chiral_random_state=chiral_random_state,
                         chiral_cache_dir=None if chiral_cache_dir is None else str(chiral_cache_dir),
                         chiral_reference=bool(chiral_reference), **params)
        self.chiral_model = chiral_model
        self.chiral_trainer = chiral_trainer
        self.split_random_state = split_random_state
        self.chiral_random_state = chiral_random_state
        self.chiral_cache_dir = chiral_cache_dir
        self.chiral_reference = bool(chiral_reference)
        self._kept_chiral: tuple | None = None  # (model, dataset, chiral, info) of the last chiral training

    def _choose(self, model, dataset, n_seeds, rng) -> tuple[np.ndarray, dict[str, Any]]:
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        chiral, chiral_info = self._chiral(model, dataset, rng)
        seconds["chiral_training"] = time.perf_counter() - t0

        t0, q0 = time.perf_counter(), model.n_queries
        check = DiscriminationCheck(model, dataset.domain)
        initial, n_candidates, n_candidate_idis = initial_idis(model, chiral, check, dataset.X, rng)
        seconds["prediction_and_check"] = time.perf_counter() - t0
        n_initial_queries = model.n_queries - q0

        order, clustering = self._order(model, dataset, initial, rng, seconds)
        chosen = initial[order[:n_seeds]]
        notes = []
        if n_candidates == 0:
            notes.append("the chiral model never disagrees with the model under test: no initial IDIs, "
                         "every seed is a random data row")
        elif len(initial) == 0:
            notes.append(f"none of the {n_candidates} rows where the chiral model disagrees is an IDI")
        is_idi = np.ones(len(chosen), dtype=bool)
        n_fill = n_seeds - len(chosen)
        if n_fill > 0:
            t0 = time.perf_counter()
            fill, fill_idi, n_pool = _fill(check, dataset, initial, n_fill, rng)
            seconds["prediction_and_check"] += time.perf_counter() - t0
            chosen = np.concatenate([chosen, fill])
            is_idi = np.concatenate([is_idi, fill_idi])
            notes.append(f"{len(initial)} initial IDIs for {n_seeds} seeds: filled with {n_fill} random data "
                         f"rows, {int(fill_idi.sum())} of which are IDIs")
            if n_fill > n_pool:
                notes.append(f"n_seeds={n_seeds} exceeds the initial IDIs plus the {n_pool} other data rows: "
                             "fill rows repeat")
        info = {"is_idi": is_idi, "seconds": seconds, "n_candidates": int(n_candidates),
                "n_candidate_idis": int(n_candidate_idis), "n_initial_queries": int(n_initial_queries),
                "chiral_training_rows": int(chiral_info.get("n_train", 0)),
                "n_initial_idis": int(len(initial)), "notes": tuple(notes),
                "meta": {"chiral_model": chiral_info}}
        if clustering is not None:
            info["clustering"] = clustering
        return chosen, info

    def _chiral(self, model, dataset, rng) -> tuple:
        """The chiral model and how it was obtained (``meta["chiral_model"]`` of the report)."""
        if self.chiral_model is not None:
            return wrap_like(self.chiral_model, model), {"how": "given", "from_cache": False}
        if self.chiral_random_state is None:
            return train_chiral_model(model, dataset, rng, chiral_trainer=self.chiral_trainer,
                                      split_random_state=self.split_random_state, cache_dir=self.chiral_cache_dir,
                                      reference=self.chiral_reference)
        kept = self._kept_chiral
        if kept is not None and kept[0] is model and kept[1] is dataset:
            return kept[2], {**kept[3], "from_cache": True, "cache": "strategy"}
        chiral, info = train_chiral_model(model, dataset, np.random.default_rng(self.chiral_random_state),
                                          chiral_trainer=self.chiral_trainer,
                                          split_random_state=self.split_random_state,
                                          cache_dir=self.chiral_cache_dir, reference=self.chiral_reference)
        info = {**info, "chiral_random_state": self.chiral_random_state}
        if info["how"] != "spec+cache":  # zoo models are reused through the model cache on disk
            self._kept_chiral = (model, dataset, chiral, info)
        return chiral, info

    def _order(self, model, dataset, initial, rng, seconds) -> tuple[np.ndarray, dict | None]:
        """Order in which initial IDIs become seeds: here their (already random) order."""
        return np.arange(len(initial)), None


def initial_idis(model, chiral, check: DiscriminationCheck, X: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, int, int]:
    """Find the initial IDIs among the rows of ``X`` where ``model`` and ``chiral`` disagree.

    Parameters
    ----------
    model, chiral : CountingModel
        The model under test (costs n_samples queries plus n_combinations per candidate) and its chiral model.
    check : DiscriminationCheck
        Discrimination check of ``model`` over the protected attributes under test.
    X : numpy.ndarray, shape (n_samples, n_features)
    rng : numpy.random.Generator
        Shuffles the result.

    Returns
    -------
    initial : numpy.ndarray of int64, shape (n_initial_idis, n_features)
        One row per IDI key, in random order.
    n_candidates : int
        Rows where the two models disagree.
    n_candidate_idis : int
        Those that are IDIs, before deduplication.
    """
    candidates = X[model.predict(X) != _chiral_labels(chiral, X)]
    hits = candidates[check.check(candidates).is_idi] if len(candidates) else candidates
    _, first = np.unique(check.domain.keys(hits), return_index=True)
    unique = hits[np.sort(first)]
    return unique[rng.permutation(len(unique))], int(len(candidates)), int(len(hits))


def _chiral_labels(chiral, X: np.ndarray) -> np.ndarray:
    """The chiral model's labels; its failure on a data row is chiralfair's chiral model's, never the user's."""
    from ..exceptions import ModelInputError

    try:
        return chiral.predict(X)
    except (ModelInputError, ValueError) as err:  # an encoder's "unknown categories" is a ValueError
        raise ModelInputError(
            f"chiralfair's chiral model (a copy of your model that I and I&D seeds train on the data with the "
            f"protected attributes mutated, not your model) fails on a data row: {err}. Your model is not at fault: "
            "choose seeds that need no chiral model (seeds='cluster' or 'random'; --seeds cluster), or pass "
            "chiral_model= to the seed strategy") from err


def _fill(check: DiscriminationCheck, dataset, initial: np.ndarray, n_fill: int,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, int]:
    """Draw ``n_fill`` random data rows whose IDI key is not among the initial IDIs.

    Returns the rows, whether each is an IDI, and the number of rows drawn from (with replacement when it is
    smaller than ``n_fill``).
    """
    keys = dataset.domain.keys(dataset.X)
    taken = np.isin(keys, dataset.domain.keys(initial)) if len(initial) else np.zeros(len(keys), dtype=bool)
    fill = random_rows(dataset.X, n_fill, rng, exclude=taken)
    n_pool = int((~taken).sum()) or dataset.n_samples
    return fill, check.check(fill).is_idi, n_pool
