"""Method ``paper``: the I&D paper's retraining with IDIs, as a meta-estimator.

The estimator is fitted; a search finds IDIs of the fitted model with seeds from the rows it was fitted on
(:class:`~chiralfair.datasets.base.Dataset` of those rows only, so inside a cross-validation fold no other fold's
row is ever a seed); each pair is labelled by the LR/SVC/DTC/MLP vote trained on the same rows without the
protected attributes (:mod:`.labelling`); a share of the pairs is added, both rows or the IDI only; the estimator is
refitted on rows plus pairs, or, for the paper's DNN, fine-tuned for 10 epochs from its weights (paper §4.4,
architecture: mitigation). :func:`~chiralfair.mitigation.retrain` runs the same steps on a model under test and its
split, with the model cache and the other model kinds.

References
----------
.. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances." arXiv:2209.08321, §4.4 (RQ1 usefulness, Tables 4 and 5).
.. [2] Zhang et al. "White-box Fairness Testing through Adversarial Sampling." ICSE 2020 (ADF: 5% of the IDIs).
"""

from __future__ import annotations

import numpy as np

from .._random import as_generator, derive_seed
from .._validation import check_choice
from ..exceptions import ConfigError, ModelCapabilityError
from .base import MitigationMethod, check_shares, fit_plain, register_method, unfitted_copy
from .dnn import PaperDNNClassifier
from .labelling import fit_vote, vote_labels

FINE_TUNE_EPOCHS = 10
PAIRS = ("both", "idi")


def added_rows(X_idi, X_counterpart, labels, chosen, pairs: str):
    """The rows and labels a share of the IDI pairs adds: both rows of each chosen pair, or the IDI only.

    Parameters
    ----------
    X_idi : numpy.ndarray of int64, shape (n_pairs, n_features)
    X_counterpart : numpy.ndarray of int64, shape (n_pairs, n_features), or None
    labels : numpy.ndarray of int64, shape (n_pairs,)
        The vote's label of each pair.
    chosen : numpy.ndarray of int64
        The pairs added.
    pairs : {"both", "idi"}

    Returns
    -------
    rows : numpy.ndarray of int64, shape (n_added, n_features)
    labels : numpy.ndarray of int64, shape (n_added,)
    """
    if pairs == "idi" or X_counterpart is None:
        return X_idi[chosen], labels[chosen]
    return np.vstack([X_idi[chosen], X_counterpart[chosen]]), np.concatenate([labels[chosen], labels[chosen]])


def shared_count(share: float, n: int) -> int:
    """Pairs a share of ``n`` adds: ``round(share * n)``, at least one.

    Parameters
    ----------
    share : float
        In (0, 1].
    n : int
        Pairs available.

    Returns
    -------
    int
    """
    return max(1, round(share * n))


@register_method("paper")
class PaperRetraining(MitigationMethod):
    """Retraining with the IDIs of a search, labelled by a vote that ignores the protected attributes.

    Parameters
    ----------
    estimator : sklearn classifier or PaperDNNClassifier
        Unfitted; cloned. A :class:`PaperDNNClassifier` is fine-tuned 10 epochs after the pairs are added, any
        other estimator refitted from scratch.
    domain : Domain
    generator : str, default="aequitas"
    seeds : str, default="cluster"
        Seed strategy; it selects from the rows given to :meth:`fit` only.
    max_global, max_local : int, default=100
    share : float, default=1.0
        Share of the pairs added, in (0, 1].
    pairs : {"both", "idi"}, default="both"
    ensemble : sklearn classifier, optional
        The labelling vote (default: :func:`~chiralfair.mitigation.labelling.default_ensemble`).
    random_state : int, numpy.random.Generator or None, default=None
        Of the search, the vote, the choice of pairs, and of the estimator when its own is None.

    Attributes
    ----------
    estimator_ : the retrained estimator
    info_ : dict
        ``n_idis`` (pairs found), ``n_pairs_added``, ``n_rows_added``, ``label_counts``, ``how``.

    References
    ----------
    .. [1] Ma et al., arXiv:2209.08321, §4.4.
    """

    uses_idis = True
    not_a_candidate = ("it retrains with the labelled IDI pairs of a search on the model under test, which auto's "
                       "candidates, fitted on a validation split's rows, do not have")

    @classmethod
    def check_params(cls, params) -> None:
        """Refuse every parameter: in :func:`~chiralfair.mitigation.retrain` they are retrain()'s own.

        Parameters
        ----------
        params : dict

        Raises
        ------
        ConfigError
            For any parameter.
        """
        if params:
            raise ConfigError("method 'paper' takes its parameters from retrain() itself (share, pairs, ensemble, "
                              f"mode), not from method_params; got {sorted(params)}")

    @classmethod
    def cannot_run(cls, run, params) -> str | None:
        """Why the model cannot be trained again in the run's mode (``trainer=`` trains any model).

        Parameters
        ----------
        run : MitigationRun
        params : dict

        Returns
        -------
        str or None
        """
        from .kinds import check_trainable

        try:
            check_trainable(run.model, run.mode, run.trainer)
        except ModelCapabilityError as err:
            return str(err)
        return None

    @classmethod
    def candidate_params(cls, run) -> list:
        """None: ``paper`` is not one of ``auto``'s candidates (:attr:`not_a_candidate`).

        Parameters
        ----------
        run : MitigationRun

        Returns
        -------
        list
        """
        return []

    @classmethod
    def build(cls, run, params, added=None):
        """The model under test trained again on its training rows plus ``added`` (the zoo DNN fine-tuned).

        Parameters
        ----------
        run : MitigationRun
        params : dict
            Empty (:meth:`check_params`).
        added : (numpy.ndarray, numpy.ndarray)
            The labelled IDI rows.

        Returns
        -------
        retrained : CountingModel
        info : dict
            ``n_rows_added``, ``how`` (``"spec"``, ``"fine-tune"``, ``"sklearn-clone"`` or ``"trainer"``).
        """
        from .kinds import train_again

        if added is None:
            raise ConfigError("method 'paper' retrains with IDI pairs: pass idis=")
        X_new, y_new = added
        retrained, how = train_again(run.model, run.dataset, run.train, X_new, y_new, mode=run.mode,
                                     trainer=run.trainer, random_state=run.train_seed, cache_dir=run.cache_dir,
                                     epochs=FINE_TUNE_EPOCHS)
        return retrained, {"n_rows_added": int(len(X_new)), "how": how}

    def __init__(self, estimator=None, domain=None, *, generator: str = "aequitas", seeds: str = "cluster",
                 max_global: int = 100, max_local: int = 100, share: float = 1.0, pairs: str = "both",
                 ensemble=None, random_state=None):
        self.estimator = estimator
        self.domain = domain
        self.generator = generator
        self.seeds = seeds
        self.max_global = max_global
        self.max_local = max_local
        self.share = share
        self.pairs = pairs
        self.ensemble = ensemble
        self.random_state = random_state

    def _fit(self, X, y, sample_weight=None, idis=None, counterparts=None) -> None:
        if sample_weight is not None:
            raise ModelCapabilityError(f"{type(self).__name__} takes no sample_weight")
        if self.estimator is None:
            raise ConfigError("PaperRetraining needs estimator=<an sklearn classifier or PaperDNNClassifier>")
        pairs = check_choice(self.pairs, "pairs", PAIRS)
        (share,) = check_shares(self.share)
        rng = as_generator(self.random_state)
        search_seed, vote_seed, choice_seed, fit_seed = (derive_seed(rng) for _ in range(4))
        base = fit_plain(unfitted_copy(self.estimator, fit_seed), X, y)
        if idis is None:
            idis, counterparts = self._search(base, X, y, search_seed)
        else:
            idis = self._codes(idis)
            counterparts = None if counterparts is None else self._codes(counterparts)
        if len(idis) == 0:
            self.estimator_ = base
            self.info_ = {"n_idis": 0, "n_pairs_added": 0, "n_rows_added": 0, "label_counts": {},
                          "how": "no IDI found: the fitted estimator is kept"}
            return
        voter, _ = fit_vote(X, y, self.domain, self.ensemble, random_state=vote_seed)
        labels = vote_labels(voter, idis, self.domain)
        chosen = np.random.default_rng(choice_seed).permutation(len(idis))[: shared_count(share, len(idis))]
        X_new, y_new = added_rows(idis, counterparts, labels, chosen, pairs)
        X_all, y_all = np.vstack([X, X_new]), np.concatenate([y, y_new])
        if isinstance(base, PaperDNNClassifier):
            self.estimator_ = base.fine_tune(X_all, y_all, epochs=FINE_TUNE_EPOCHS, random_state=fit_seed)
            how = "fine-tune"
        else:
            self.estimator_ = fit_plain(unfitted_copy(self.estimator, fit_seed), X_all, y_all)
            how = "refit"
        values, counts = np.unique(labels, return_counts=True)
        self.info_ = {"n_idis": int(len(idis)), "n_pairs_added": int(len(chosen)), "n_rows_added": int(len(X_new)),
                      "label_counts": {str(k): int(v) for k, v in zip(values, counts, strict=True)}, "how": how}

    def _search(self, base, X, y, seed: int):
        from ..datasets.base import Dataset
        from ..generators import make_generator
        from ..models.adapters import as_model
        from ..seeds import make_seed_strategy

        rows = Dataset(name="fit-rows", X=X, y=y, domain=self.domain)
        model = as_model(base, name=type(base).__name__)
        generator = make_generator(self.generator, max_global=self.max_global, max_local=self.max_local)
        seeds = make_seed_strategy(self.seeds).select(model, rows, generator.max_global, random_state=seed)
        found = generator.run(model, self.domain, seeds, random_state=seed)
        return found.idis, found.counterparts
