"""Retraining with the IDIs found: does the model get fairer, and what does it cost? (issue 12, design §8).

The IDIs of a search are labelled, added to the training split, and the model is trained again; then the
model before and after are compared on accuracy, F1 and fairness.

- **Labelling.** An IDI and its counterpart differ only in the protected attributes, so they must get *one*
  label, or retraining teaches nothing. Each IDI's non-protected projection is labelled by the majority vote
  of an ensemble trained on the training split with the protected attributes removed (default: logistic
  regression, a linear SVM, a decision tree and an MLP, as a hard-voting
  :class:`sklearn.ensemble.VotingClassifier`; the I&D paper's LR, SVC, DTC and MLP). Both rows of a pair get
  the label of their shared projection. The ensemble's own accuracy on the test split is recorded.
- **Retraining.** A zoo model (``model.spec``) is trained again from scratch with its own trainer on the
  augmented training split (through the model cache), or, for the zoo DNN with ``mode="fine-tune"``, trained
  further for 10 epochs from its weights; an sklearn estimator or pipeline is refit as a clone in its own
  input language (``to_frame``, its own classes); any other model needs ``trainer(X, y, random_state)``.
- **Two protocols.** ``paper`` re-checks the union of the IDIs (those added, plus ``recheck``: in the paper
  the IDIs found with the other seed strategy) against the retrained model; "remaining IDIs" are those still
  discriminatory (I&D Table 4). It leaks: the re-checked IDIs were used for training. ``holdout`` measures on
  inputs retraining never saw: the IDI rate over the test split's rows and over uniform draws from the domain
  (:func:`chiralfair.verdict.estimate`, 95% Wilson intervals), and a fresh search with another
  ``random_state`` on the model before and after. Group metrics from ``fairlearn`` (demographic parity and
  equalized odds differences on the test split, first protected attribute) and accuracy/F1 on the test split
  are reported under both.

Which matches the paper: the I&D reference code appends all IDIs and *refits* the same sklearn configuration
from scratch, and EIDIG fits a freshly built network; neither fine-tunes. ``mode="retrain"`` (the default)
corresponds to the paper's numbers; design §8's 10-epoch fine-tuning is ``mode="fine-tune"``.

References
----------
.. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances." arXiv:2209.08321, §4.4 (RQ1 usefulness, Tables 4 and 5).
.. [2] Zhang et al. "White-box Fairness Testing through Adversarial Sampling." ICSE 2020 (ADF, RQ3: 5% of the
   IDIs, majority-vote labels).
.. [3] Zhang et al. "Efficient White-box Fairness Testing through Gradient Search." ISSTA 2021 (EIDIG).
.. [4] Udeshi, Arora, Chattopadhyay. "Automated Directed Fairness Testing." ASE 2018 (AEQUITAS: retraining
   sweep over shares of the training size).
.. [5] Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in AI." Microsoft, 2020.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from . import __version__
from ._random import derive_seed, resolve_random_state
from ._validation import check_choice, check_float
from .datasets.base import Dataset
from .domain import Domain
from .exceptions import ConfigError, ModelCapabilityError
from .models.adapters import as_model
from .models.protocol import CountingModel
from .models.training import TrainedModel
from .oracle import DiscriminationCheck
from .results import SearchResult

logger = logging.getLogger(__name__)

PROTOCOLS = ("holdout", "paper", "both")
PAIRS = ("both", "idi")
MODES = ("retrain", "fine-tune")
FINE_TUNE_EPOCHS = 10
CONFIDENCE = 0.95
LEAK_NOTE = ("paper protocol: the re-checked IDIs include the ones added to the training data, so 'remaining "
             "IDIs' rewards memorising them (the leak of the I&D reference code); the holdout figures measure on "
             "inputs retraining never saw")

# trainer(X, y, random_state): X int codes (n, d), y labels in {0, 1} (1 = positive), random_state an int.
Trainer = Callable[[np.ndarray, np.ndarray, int], object]

ROW_FIELDS = ("stage", "share", "n_pairs_added", "n_rows_added", "f1", "accuracy",
              "test_idi_rate", "test_idi_lower", "test_idi_upper", "test_n",
              "domain_idi_rate", "domain_idi_lower", "domain_idi_upper", "domain_n",
              "demographic_parity_difference", "equalized_odds_difference",
              "search_n_idis", "search_n_tested", "search_success_rate",
              "remaining_idis", "n_rechecked")


@dataclass(frozen=True, eq=False)  # holds models: compared by identity
class RetrainResult:
    """The model before and after retraining with IDIs, one row per model (design §7).

    Attributes
    ----------
    protocol : {"holdout", "paper", "both"}
    pairs : {"both", "idi"}
        Whether both rows of each IDI pair, or the IDI only, were added.
    mode : {"retrain", "fine-tune"}
    how : str
        How the model was trained again: ``"spec"`` (zoo model, from scratch), ``"fine-tune"`` (zoo DNN),
        ``"sklearn-clone"`` or ``"trainer"``.
    n_idis : int
        IDI pairs available for retraining.
    rows : tuple of dict
        The first row is the model before (``stage == "before"``, ``share == 0``), then one row per share
        (``stage == "after"``), with the keys of :data:`ROW_FIELDS`; figures a protocol does not compute are
        None. Rates are shares in [0, 1]; intervals are 95% Wilson intervals.
    ensemble : dict
        The labelling ensemble: ``members``, ``test_accuracy``, ``n_train``, ``label_counts``.
    notes : tuple of str
        Including, under the paper protocol, that it leaks.
    seconds : dict
        Wall times in seconds: ``ensemble`` (fit and vote), ``train`` (one per share), ``total``. The only
        figures that differ between two runs with the same ``random_state``.
    meta : dict
        Package version, parameters, resolved random states, dataset and model names.
    models : tuple of CountingModel
        The retrained models, one per share (not serialised; empty after :meth:`from_json`).
    """

    protocol: str
    pairs: str
    mode: str
    how: str
    n_idis: int
    rows: tuple[dict[str, Any], ...]
    ensemble: dict[str, Any]
    notes: tuple[str, ...] = ()
    seconds: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    models: tuple = field(default=(), repr=False)

    @property
    def shares(self) -> tuple[float, ...]:
        """The shares retrained with, in row order."""
        return tuple(r["share"] for r in self.rows[1:])

    @property
    def model(self) -> CountingModel:
        """The model retrained with the largest share.

        Raises
        ------
        ConfigError
            For a result read back from JSON, which holds no model.
        """
        if not self.models:
            raise ConfigError("this RetrainResult holds no retrained model (models are not serialised to JSON)")
        return self.models[int(np.argmax(self.shares))]

    def to_frame(self) -> pd.DataFrame:
        """One row per model (before, then each share), columns :data:`ROW_FIELDS`.

        Returns
        -------
        pandas.DataFrame, shape (1 + n_shares, len(ROW_FIELDS))
        """
        return pd.DataFrame(list(self.rows), columns=list(ROW_FIELDS))

    def to_json(self) -> str:
        """Serialize everything but the models."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "models"}
        d["rows"] = list(self.rows)
        d["notes"] = list(self.notes)
        return json.dumps(d, indent=2, default=_json_default)

    @classmethod
    def from_json(cls, text: str) -> RetrainResult:
        """Inverse of :meth:`to_json` (without the models)."""
        d = json.loads(text)
        d["rows"] = tuple(d["rows"])
        d["notes"] = tuple(d["notes"])
        return cls(**d)

    def same_figures(self, other: RetrainResult) -> bool:
        """Whether two results hold the same figures: their JSON without :attr:`seconds` is identical."""
        return replace(self, seconds={}).to_json() == replace(other, seconds={}).to_json()

    def to_markdown(self, plot: str | None = None) -> str:
        """The before/after table, the ensemble, and the notes, as Markdown (``plot``: a PNG file name)."""
        frame = self.to_frame()
        lines = [f"# Retraining with IDIs: {self.meta.get('dataset')} / "
                 f"{','.join(self.meta.get('protected', []))} / {self.meta.get('model')}", "",
                 f"- protocol: {self.protocol}; pairs added: {self.pairs}; model trained again by: {self.how}",
                 f"- IDI pairs available: {self.n_idis}",
                 f"- labelling ensemble ({', '.join(self.ensemble['members'])}; hard vote, protected attributes "
                 f"removed): test accuracy {self.ensemble['test_accuracy']:.4f}", "",
                 "| " + " | ".join(_TABLE) + " |", "|" + "---|" * len(_TABLE)]
        for _, row in frame.iterrows():
            lines.append("| " + " | ".join(_cell(row, key) for key in _TABLE) + " |")
        lines += ["", "Rates are shares of individuals with a counterpart that gets another label, with 95% "
                  "Wilson intervals; DPD/EOD are fairlearn's demographic parity and equalized odds differences "
                  f"on the test split for {self.meta.get('protected', ['?'])[0]}."]
        if plot:
            lines += ["", f"![IDI rate against F1]({plot})"]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def plot(self, path) -> None:
        """Draw the fairness/accuracy trade-off: IDI rate over the test rows (95% interval) against F1, as PNG.

        Under the paper protocol alone (no IDI rate) the remaining IDIs are drawn instead.
        """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        frame = self.to_frame()
        holdout = frame["test_idi_rate"].notna().all()
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for stage, marker in (("before", "s"), ("after", "o")):
            part = frame[frame["stage"] == stage]
            if holdout:
                y = part["test_idi_rate"].to_numpy(float)
                err = np.vstack([y - part["test_idi_lower"].to_numpy(float),
                                 part["test_idi_upper"].to_numpy(float) - y])
                ax.errorbar(part["f1"], y, yerr=err, fmt=marker, capsize=3, label=stage)
            else:
                ax.plot(part["f1"], part["remaining_idis"], marker, label=stage)
            if stage == "after":
                for _, r in part.iterrows():
                    ax.annotate(f"{r['share']:g}", (r["f1"], r["test_idi_rate"] if holdout else r["remaining_idis"]),
                                textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel("F1 on the test split")
        ax.set_ylabel("IDI rate over test rows (95% CI)" if holdout else "remaining IDIs (paper protocol)")
        ax.set_title("Retraining with IDIs: share added next to each point", fontsize=9)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)


_TABLE = ("stage", "share", "n_rows_added", "f1", "accuracy", "test_idi_rate", "domain_idi_rate",
          "search_n_idis", "remaining_idis", "demographic_parity_difference", "equalized_odds_difference")


def _cell(row, key: str) -> str:
    value = row[key]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if key in ("test_idi_rate", "domain_idi_rate"):
        prefix = key[: -len("rate")]
        return f"{value:.4f} [{row[prefix + 'lower']:.4f}, {row[prefix + 'upper']:.4f}]"
    if key == "remaining_idis":
        return f"{int(value)} / {int(row['n_rechecked'])}"
    if isinstance(value, float):
        return f"{value:.4f}" if key != "share" else f"{value:g}"
    return str(value)


def retrain(model, dataset: Dataset, idis, *, protocol: str = "holdout", share: float | Sequence[float] = 1.0,
            pairs: str = "both", ensemble=None, mode: str = "retrain", trainer: Trainer | None = None,
            recheck=None, train_index=None, searched_with: dict | None = None, search: bool | None = None,
            search_random_state: int | None = None,
            margin: float = 0.005, cache_dir=None, random_state: int = 0) -> RetrainResult:
    """Label IDIs, add them to the training split, train the model again, and compare before and after.

    Parameters
    ----------
    model : TrainedModel, CountingModel, or anything :func:`~chiralfair.models.as_model` accepts
        The model under test. A :class:`TrainedModel` brings its split and its training ``random_state``.
    dataset : Dataset
        Its domain names the protected attributes; its training split is augmented.
    idis : SearchResult, or a pair ``(idis, counterparts)`` of arrays of shape (n_idis, n_features)
        The IDIs to add. A bare array of IDIs (no counterparts) is accepted with ``pairs="idi"``.
    protocol : {"holdout", "paper", "both"}
        How fairness after retraining is measured (see the module docstring).
    share : float or sequence of float
        Share of the IDI pairs added, in (0, 1] (1: all, as I&D; 0.05: as ADF and EIDIG). Several values
        retrain once per value (a sweep, as AEQUITAS); smaller shares are subsets of larger ones.
    pairs : {"both", "idi"}
        Add both rows of each pair (default) or the IDI only.
    ensemble : sklearn classifier, optional
        Labels the IDIs; cloned and fitted on the training split without the protected columns. Default
        :func:`default_ensemble`.
    mode : {"retrain", "fine-tune"}
        For the zoo DNN: train from scratch (the paper's protocol) or fine-tune 10 epochs from its weights.
    trainer : callable, optional
        ``trainer(X, y, random_state) -> model`` for models chiralfair cannot train: ``X`` int codes, shape
        (n_train, n_features), ``y`` labels in {0, 1} (1 = positive class), ``random_state`` an int.
    recheck : SearchResult or array of shape (n, n_features), optional
        Further IDIs re-checked under the paper protocol together with ``idis`` (I&D: the IDIs of the other
        seed strategy).
    train_index : array-like of int, optional
        The model's training rows; default: those of a :class:`TrainedModel`, else ``dataset.split(0)``.
    searched_with : dict, optional
        For ``idis`` given as arrays: how they were found, ``{"generator", "seed_strategy", "params",
        "random_state"}`` (e.g. from a run folder's result.json), so that the holdout protocol can search again.
    search : bool, optional
        Run a fresh search on the model before and after (holdout protocol); default: when ``idis`` is a
        SearchResult whose seed strategy can select again.
    search_random_state : int, optional
        ``random_state`` of the fresh search; default: the original search's plus one.
    margin : float
        Sampling margin of the IDI rate over domain draws, in (0, 0.5].
    cache_dir : str or path-like, optional
        Model cache folder for zoo models trained again.
    random_state : int, numpy.random.Generator or None
        Drives the ensemble, the choice of IDIs, the training seed (when the model's is unknown) and the
        domain draws; recorded readably in ``meta``. The same int gives the same figures.

    Returns
    -------
    RetrainResult

    Raises
    ------
    ConfigError
        For a parameter outside its bounds (a share outside (0, 1]), no IDIs to add, or IDIs whose width
        differs from the domain's.
    ModelCapabilityError
        For a model chiralfair cannot train again without ``trainer=`` (the message says what to pass), or
        ``mode="fine-tune"`` on a model that is not the zoo DNN.

    References
    ----------
    .. [1] Ma et al. arXiv:2209.08321, §4.4.
    """
    protocol = check_choice(protocol, "protocol", PROTOCOLS)
    pairs = check_choice(pairs, "pairs", PAIRS)
    mode = check_choice(mode, "mode", MODES)
    shares = check_shares(share)
    margin = check_float(margin, "margin", minimum=0.0, maximum=0.5, exclusive_minimum=True)
    domain = dataset.domain
    X_idi, X_counterpart, source = _idi_arrays(idis, domain, pairs, searched_with)
    if len(X_idi) == 0:
        raise ConfigError("no IDIs to add: the search found none, so there is nothing to retrain with (within "
                          "its budget the model showed no discrimination; a larger budget or other seeds may "
                          "find some)")
    start = time.perf_counter()
    rng, random_state_described = resolve_random_state(random_state)
    counting, train, test, train_seed = _model_and_split(model, dataset, train_index, rng)
    _check_trainable(counting, mode, trainer)

    ensemble_seed, choice_seed, domain_seed = derive_seed(rng), derive_seed(rng), derive_seed(rng)
    t = time.perf_counter()
    voter, ensemble_info = fit_ensemble(dataset, train, test, ensemble, random_state=ensemble_seed)
    labels = vote_labels(voter, X_idi, domain)
    seconds = {"ensemble": time.perf_counter() - t, "train": []}
    values, counts = np.unique(labels, return_counts=True)
    ensemble_info["label_counts"] = {str(k): int(v) for k, v in zip(values, counts, strict=True)}

    do_search = _resolve_search(search, protocol, source)
    fresh_state = _fresh_search_state(source, search_random_state) if do_search else None
    union = _recheck_union(X_idi, recheck, domain) if protocol in ("paper", "both") else None
    order = np.random.default_rng(choice_seed).permutation(len(X_idi))
    evaluate = _Evaluator(dataset, test, protocol, union, source if do_search else None, fresh_state, margin,
                          domain_seed)

    rows = [{**evaluate(counting), "stage": "before", "share": 0.0, "n_pairs_added": 0, "n_rows_added": 0}]
    models, how = [], None
    for s in shares:
        chosen = order[: max(1, round(s * len(X_idi)))]
        X_new, y_new = _added_rows(X_idi, X_counterpart, labels, chosen, pairs)
        t = time.perf_counter()
        retrained, how = _train_again(counting, dataset, train, X_new, y_new, mode=mode, trainer=trainer,
                                      random_state=train_seed, cache_dir=cache_dir)
        seconds["train"].append(time.perf_counter() - t)
        logger.info("retrained %s with %d rows (share %g) in %.1f s", counting.name, len(X_new), s,
                    seconds["train"][-1])
        rows.append({**evaluate(retrained), "stage": "after", "share": s, "n_pairs_added": int(len(chosen)),
                     "n_rows_added": int(len(X_new))})
        models.append(retrained)

    notes = _notes(protocol, do_search, search, source, ensemble_info, pairs)
    if protocol != "holdout" and recheck is None:
        notes.append("paper protocol: only the IDIs added were re-checked (no recheck= set, e.g. the IDIs of the "
                     "other seed strategy as in I&D Table 4)")
    if train_index is None and not isinstance(model, TrainedModel):
        notes.append("the model's training rows were taken to be dataset.split(0) (60/40); pass train_index= if "
                     "it was trained on others")
    meta = {"chiralfair_version": __version__, "dataset": dataset.name, "protected": domain.protected_names,
            "model": counting.name, "random_state": random_state_described, "train_random_state": train_seed,
            "search_random_state": fresh_state, "fine_tune_epochs": FINE_TUNE_EPOCHS if mode == "fine-tune" else None,
            "params": {"protocol": protocol, "share": list(shares), "pairs": pairs, "mode": mode, "margin": margin,
                       "confidence": CONFIDENCE},
            "source": {k: v for k, v in source.items() if k != "result"},
            "n_train": int(len(train)), "n_test": int(len(test)),
            "n_rechecked": None if union is None else int(len(union))}
    return RetrainResult(protocol=protocol, pairs=pairs, mode=mode, how=how, n_idis=int(len(X_idi)),
                         rows=tuple(_plain_row(r) for r in rows), ensemble=ensemble_info, notes=tuple(notes),
                         seconds={**seconds, "total": time.perf_counter() - start}, meta=meta,
                         models=tuple(models))


def check_shares(share) -> tuple[float, ...]:
    """Validate ``share`` (a number or a sequence) into a tuple of distinct values in (0, 1].

    Raises
    ------
    ConfigError
        Naming the value outside (0, 1], or for an empty sequence.
    """
    if isinstance(share, str) or not hasattr(share, "__iter__"):
        share = [share]
    values = list(share)
    if not values:
        raise ConfigError("share must hold at least one value in (0, 1]")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (0.0 < float(v) <= 1.0):
            raise ConfigError(f"share must lie in (0, 1] (the share of the IDI pairs added), got {v!r}")
        if float(v) not in out:
            out.append(float(v))
    return tuple(out)


# ------------------------------------------------------------------------------------------- labelling
def default_ensemble(random_state: int = 0):
    """The labelling ensemble: hard vote of LR, a linear SVM, a decision tree and an MLP.

    LR, the SVM and the MLP see standardised inputs. The SVM is ``LinearSVC`` rather than the RBF ``SVC`` of
    the paper: on census's 19.5k training rows (protected attribute removed) the RBF SVC took 10.7 s to fit
    and 7.8 s to predict the 13k test rows (test accuracy 0.837) against 0.08 s and 0.01 s for LinearSVC
    (0.811), on a loaded 2-core machine. With four voters a 2-2 tie goes to label 0 (sklearn's hard vote takes
    the first of the tied classes).

    Parameters
    ----------
    random_state : int

    Returns
    -------
    sklearn.ensemble.VotingClassifier
        Unfitted.
    """
    from sklearn.ensemble import VotingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    return VotingClassifier([
        ("lr", make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))),
        ("svc", make_pipeline(StandardScaler(), LinearSVC(random_state=random_state))),
        ("dtc", DecisionTreeClassifier(random_state=random_state)),
        ("mlp", make_pipeline(StandardScaler(), MLPClassifier(early_stopping=True, random_state=random_state))),
    ], voting="hard")


def fit_ensemble(dataset: Dataset, train, test, ensemble=None, *, random_state: int = 0):
    """Fit the labelling ensemble on the training rows without the protected columns; score it on the test rows.

    Parameters
    ----------
    dataset : Dataset
    train, test : numpy.ndarray of int64
        Row indices.
    ensemble : sklearn classifier, optional
        Cloned before fitting; default :func:`default_ensemble`.
    random_state : int

    Returns
    -------
    fitted : sklearn classifier
    info : dict
        ``members``, ``test_accuracy`` (share of test rows whose label the vote gets right), ``n_train``.

    Raises
    ------
    ConfigError
        If ``ensemble`` has no ``fit``/``predict`` or predicts labels other than 0 and 1.
    """
    import warnings

    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning

    from .models.threads import single_native_thread

    if ensemble is None:
        ensemble = default_ensemble(random_state)
    elif not (hasattr(ensemble, "fit") and hasattr(ensemble, "predict")):
        raise ConfigError(f"ensemble must be an sklearn classifier with fit() and predict(), got "
                          f"{type(ensemble).__name__}")
    else:
        ensemble = clone(ensemble)
    keep = dataset.domain.non_protected
    with warnings.catch_warnings(), single_native_thread():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = ensemble.fit(dataset.X[train][:, keep], dataset.y[train])
        predicted = np.asarray(fitted.predict(dataset.X[test][:, keep]))
    if not np.isin(predicted, (0, 1)).all():
        raise ConfigError("the ensemble must predict the labels 0 and 1 it was fitted on")
    members = [name for name, _ in getattr(fitted, "estimators", [])] or [type(fitted).__name__]
    return fitted, {"members": members, "test_accuracy": float(np.mean(predicted == dataset.y[test])),
                    "n_train": int(len(train))}


def vote_labels(voter, X, domain: Domain) -> np.ndarray:
    """Labels of the non-protected projections of ``X`` (n_samples, n_features): int64 in {0, 1}, (n_samples,).

    Rows that differ only in protected attributes get the same label by construction.
    """
    from .models.threads import single_native_thread

    if len(X) == 0:
        return np.zeros(0, dtype=np.int64)
    with single_native_thread():
        return np.asarray(voter.predict(np.asarray(X)[:, domain.non_protected]), dtype=np.int64)


# ------------------------------------------------------------------------------------------- inputs
def _idi_arrays(idis, domain: Domain, pairs: str, searched_with: dict | None):
    """IDIs, counterparts (or None) and a description of their source."""
    if isinstance(idis, SearchResult):
        X, C = idis.idis, idis.counterparts
        source = {"kind": "search", "generator": idis.generator, "seed_strategy": idis.seed_strategy,
                  "params": dict(idis.meta.get("params") or {}), "random_state": idis.meta.get("random_state"),
                  "n_idis": int(idis.n_idis), "result": idis}
    elif isinstance(idis, tuple | list) and len(idis) == 2:
        X, C = idis
        source = {"kind": "arrays"}
    else:
        X, C = idis, None
        source = {"kind": "arrays"}
        if pairs == "both":
            raise ConfigError("idis is one array of IDIs without counterparts: pass (idis, counterparts), a "
                              "SearchResult, or pairs='idi' to add the IDIs only")
    if source["kind"] == "arrays" and searched_with is not None:
        missing = {"generator", "seed_strategy", "params"} - set(searched_with)
        if missing:
            raise ConfigError(f"searched_with lacks {sorted(missing)}; it needs generator, seed_strategy, params "
                              "and random_state")
        source = {**source, "kind": "search", **{k: searched_with.get(k) for k in
                                                 ("generator", "seed_strategy", "params", "random_state")}}
    X = _codes(X, domain, "idis")
    C = None if C is None else _codes(C, domain, "counterparts")
    if C is not None and C.shape != X.shape:
        raise ConfigError(f"idis and counterparts must have the same shape, got {X.shape} and {C.shape}")
    return X, C, source


def idis_from_frame(frame: pd.DataFrame, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
    """Encode the IDI pairs of a run folder's ``idis.parquet`` back to codes.

    Parameters
    ----------
    frame : pandas.DataFrame
        As :meth:`SearchResult.to_frame` with a domain writes it (``pandas.read_parquet`` of a file or of a
        folder of parts): one column per feature with decoded labels, the same with suffix ``_counterpart``.
    domain : Domain
        The run's domain (``Domain.from_dict`` of result.json's ``meta.domain``).

    Returns
    -------
    idis, counterparts : numpy.ndarray of int64, shape (n_idis, n_features)

    Raises
    ------
    ConfigError
        Naming a missing column or a value that is none of the feature's labels.
    """
    return _encode_columns(frame, domain, ""), _encode_columns(frame, domain, "_counterpart")


def _encode_columns(frame: pd.DataFrame, domain: Domain, suffix: str) -> np.ndarray:
    out = np.empty((len(frame), domain.n_features), dtype=np.int64)
    for j, feature in enumerate(domain.features):
        column = feature.name + suffix
        if column not in frame.columns:
            raise ConfigError(f"idis.parquet lacks column {column!r} of the run's domain")
        values = frame[column]
        if feature.labels:
            codes = {text: code for code, text in feature.labels.items()}
            text = values.astype("string")
            # a code without a label is written as its number (Feature.label)
            mapped = text.map(codes).fillna(pd.to_numeric(text, errors="coerce"))
            unknown = text[mapped.isna()]
            if len(unknown):
                raise ConfigError(f"idis.parquet column {column!r} holds {unknown.iloc[0]!r}, which is none of "
                                  f"feature {feature.name!r}'s labels")
            out[:, j] = mapped.to_numpy(dtype=np.int64)
        else:
            try:
                out[:, j] = values.to_numpy(dtype=np.int64)
            except (TypeError, ValueError) as err:
                raise ConfigError(f"idis.parquet column {column!r} is not integer codes: {err}") from None
    return out


def _codes(X, domain: Domain, what: str) -> np.ndarray:
    X = np.asarray(X)
    if X.size == 0:
        return np.zeros((0, domain.n_features), dtype=np.int64)
    if X.ndim != 2 or X.shape[1] != domain.n_features:
        raise ConfigError(f"{what} must have shape (n, {domain.n_features}) for the dataset's domain, got {X.shape}")
    return domain.validate(X, what=what)


def _model_and_split(model, dataset: Dataset, train_index, rng):
    """The counting model, training and test rows, and the training seed (the model's own, when known)."""
    if isinstance(model, TrainedModel):
        counting, seed = model.model, int(model.random_state)
        train = model.train_index if train_index is None else np.sort(np.asarray(train_index, dtype=np.int64))
    else:
        counting, seed = as_model(model), derive_seed(rng)
        train = dataset.split(0)[0] if train_index is None else np.sort(np.asarray(train_index, dtype=np.int64))
    if train.ndim != 1 or len(train) == 0 or train.min() < 0 or train.max() >= dataset.n_samples:
        raise ConfigError(f"train_index must list rows in [0, {dataset.n_samples - 1}] of dataset {dataset.name!r}")
    test = np.setdiff1d(np.arange(dataset.n_samples, dtype=np.int64), train)
    if len(test) == 0:
        raise ConfigError("train_index leaves no test rows to measure the model before and after")
    return counting, train, test, seed


def _check_trainable(model: CountingModel, mode: str, trainer) -> None:
    spec = getattr(model, "spec", None)
    if mode == "fine-tune" and not (spec is not None and spec.is_torch and trainer is None):
        raise ModelCapabilityError(
            f"mode='fine-tune' continues training the zoo DNN from its weights; model {model.name!r} is not the "
            "zoo DNN (use mode='retrain')")
    if trainer is not None:
        if not callable(trainer):
            raise ConfigError(f"trainer must be callable as trainer(X, y, random_state), got {type(trainer).__name__}")
        return
    if spec is not None or _is_sklearn_estimator(model.estimator):
        return
    raise ModelCapabilityError(
        f"cannot train model {model.name!r} again: it is neither a zoo model nor an sklearn estimator. Pass "
        "trainer=<callable(X, y, random_state) -> model> that trains its architecture on int codes X (n, d) and "
        "labels y in {0, 1}")


def _is_sklearn_estimator(obj) -> bool:
    from sklearn.base import BaseEstimator
    return isinstance(obj, BaseEstimator)


def _resolve_search(search, protocol: str, source: dict) -> bool:
    if protocol == "paper":
        return False
    possible = source["kind"] == "search" and source["seed_strategy"] != "given"
    if search and not possible:
        raise ConfigError("search=True needs idis from a SearchResult with a seed strategy that can select "
                          "again (not 'given' seeds)")
    return possible if search is None else bool(search)


def _fresh_search_state(source: dict, search_random_state) -> int:
    if search_random_state is not None:
        return int(search_random_state)
    original = source.get("random_state")
    return original + 1 if isinstance(original, int) else 1


def _recheck_union(X_idi: np.ndarray, recheck, domain: Domain) -> np.ndarray:
    """Union (one row per IDI key) of the IDIs added and those of ``recheck``."""
    extra = recheck.idis if isinstance(recheck, SearchResult) else recheck
    X = X_idi if extra is None else np.vstack([X_idi, _codes(extra, domain, "recheck")])
    _, first = np.unique(domain.keys(X), return_index=True)
    return X[np.sort(first)]


def _added_rows(X_idi, X_counterpart, labels, chosen, pairs: str):
    if pairs == "idi":
        return X_idi[chosen], labels[chosen]
    return np.vstack([X_idi[chosen], X_counterpart[chosen]]), np.concatenate([labels[chosen], labels[chosen]])


# ------------------------------------------------------------------------------------------- training again
def _train_again(model: CountingModel, dataset: Dataset, train, X_new, y_new, *, mode, trainer, random_state,
                 cache_dir):
    """The model trained again on the training rows plus the new rows, and how."""
    X = np.vstack([dataset.X[train], X_new])
    y = np.concatenate([dataset.y[train], y_new])
    name = f"retrained-{model.name}"
    if trainer is not None:
        return _wrap_trained(trainer(X, y, int(random_state)), model, name), "trainer"
    spec = getattr(model, "spec", None)
    if spec is not None and mode == "fine-tune":
        from .models.dnn import fine_tune_dnn
        tuned = fine_tune_dnn(model.estimator, X, y, epochs=FINE_TUNE_EPOCHS, random_state=random_state,
                              batch_size=spec.params["batch_size"], lr=spec.params["lr"])
        return spec.wrap(tuned), "fine-tune"
    if spec is not None:
        from .models.training import train_model
        augmented = replace(dataset, X=np.vstack([dataset.X, X_new]), y=np.concatenate([dataset.y, y_new]),
                            name=f"{dataset.name}-retrained")
        rows = np.concatenate([train, np.arange(dataset.n_samples, dataset.n_samples + len(X_new))])
        trained = train_model(augmented, spec, random_state=random_state, train_index=rows, cache_dir=cache_dir)
        return trained.model, "spec"
    language = model.language
    fitted = _unfitted_copy(model.estimator, random_state).fit(language.model_input(X), language.model_labels(y))
    return as_model(fitted, name=name, batch_size=model.batch_size,
                    output="auto" if language.output == "label" else language.output,
                    positive_class=language.positive_class, to_frame=language.to_frame,
                    classes=None if hasattr(fitted, "classes_") else language.classes), "sklearn-clone"


def _unfitted_copy(est, seed: int):
    """A clone with the same hyper-parameters; a ``random_state`` left at None gets ``seed`` (reproducible)."""
    from sklearn.base import clone
    copy = clone(est)
    unset = {k: seed for k, v in copy.get_params(deep=True).items()
             if (k == "random_state" or k.endswith("__random_state")) and v is None}
    return copy.set_params(**unset) if unset else copy


def _wrap_trained(trained, model: CountingModel, name: str) -> CountingModel:
    """What ``trainer`` returned, read as learning labels {0, 1} from the codes (or its frame, if fitted on one)."""
    if isinstance(trained, CountingModel):
        return trained
    language = model.language
    to_frame = language.to_frame if getattr(trained, "feature_names_in_", None) is not None else None
    return as_model(trained, name=name, batch_size=model.batch_size, to_frame=to_frame,
                    output="logit" if language.output == "logit" else "auto")


# ------------------------------------------------------------------------------------------- evaluation
class _Evaluator:
    """The figures of one model: accuracy and F1, group metrics, and the protocol's fairness figures."""

    def __init__(self, dataset: Dataset, test, protocol: str, union, source, search_state, margin: float,
                 domain_seed: int):
        self.dataset, self.test, self.protocol, self.union = dataset, test, protocol, union
        self.source, self.search_state, self.margin, self.domain_seed = source, search_state, margin, domain_seed
        self.sensitive = _sensitive_feature(dataset.domain, dataset.X[test])

    def __call__(self, model: CountingModel) -> dict[str, Any]:
        from sklearn.metrics import accuracy_score, f1_score

        y_true = self.dataset.y[self.test]
        y_pred = model.predict(self.dataset.X[self.test])
        row = dict.fromkeys(ROW_FIELDS)
        row.update(f1=f1_score(y_true, y_pred, pos_label=1, zero_division=0), accuracy=accuracy_score(y_true, y_pred))
        row.update(_group_metrics(y_true, y_pred, self.sensitive))
        if self.protocol in ("paper", "both"):
            row.update(remaining_idis=int(DiscriminationCheck(model, self.dataset.domain).is_idi(self.union).sum()),
                       n_rechecked=int(len(self.union)))
        if self.protocol in ("holdout", "both"):
            row.update(self._idi_rates(model))
            if self.source is not None:
                row.update(self._fresh_search(model))
        return row

    def _idi_rates(self, model: CountingModel) -> dict[str, Any]:
        from .verdict import estimate

        favourable = _favourable(self.dataset)
        on_test = estimate(model, self.dataset, population="test", test_index=self.test, exact=True,
                           favourable=favourable, random_state=0)
        lower, upper = wilson(on_test.n_affected, on_test.n_individuals)
        on_domain = estimate(model, self.dataset, population="domain", margin=self.margin, confidence=CONFIDENCE,
                             favourable=favourable, random_state=self.domain_seed)
        return {"test_idi_rate": on_test.share, "test_idi_lower": lower, "test_idi_upper": upper,
                "test_n": on_test.n_individuals, "domain_idi_rate": on_domain.share,
                "domain_idi_lower": on_domain.lower, "domain_idi_upper": on_domain.upper,
                "domain_n": on_domain.n_individuals}

    def _fresh_search(self, model: CountingModel) -> dict[str, Any]:
        from .generators import make_generator
        from .seeds import make_seed_strategy

        params = dict(self.source["params"])
        generator = make_generator(self.source["generator"], **params)
        seeds = make_seed_strategy(self.source["seed_strategy"]).select(
            model, self.dataset, generator.max_global, random_state=self.search_state)
        found = generator.run(model, self.dataset.domain, seeds, random_state=self.search_state)
        return {"search_n_idis": found.n_idis, "search_n_tested": found.n_tested,
                "search_success_rate": found.success_rate}


def wilson(count: int, nobs: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson interval of a binomial share (statsmodels), treating the rows as a sample of the population.

    Returns
    -------
    lower, upper : float
        In [0, 1]; (0, 1) for ``nobs == 0``.
    """
    from statsmodels.stats.proportion import proportion_confint

    if nobs == 0:
        return 0.0, 1.0
    lower, upper = proportion_confint(count, nobs, alpha=1 - confidence, method="wilson")
    return float(lower), float(upper)


def _favourable(dataset: Dataset) -> int:
    """The favourable label for the estimate; only its harm table depends on it, which retraining does not use."""
    from .verdict import resolve_favourable
    try:
        return resolve_favourable(dataset, None)[0]
    except ConfigError:
        return 1


def _sensitive_feature(domain: Domain, X) -> np.ndarray:
    """The first protected attribute of each row as its value's label (``"missing"`` outside its values)."""
    attribute_labels = domain.protected_value_labels()[0]
    position = domain.protected_value_index(X)[:, 0]
    labels = np.asarray(list(attribute_labels) + ["missing"], dtype=object)
    return labels[np.where(position >= 0, position, len(attribute_labels))]


def _group_metrics(y_true, y_pred, sensitive) -> dict[str, float]:
    from fairlearn.metrics import demographic_parity_difference, equalized_odds_difference

    return {"demographic_parity_difference": float(demographic_parity_difference(
                y_true, y_pred, sensitive_features=sensitive)),
            "equalized_odds_difference": float(equalized_odds_difference(
                y_true, y_pred, sensitive_features=sensitive))}


def _notes(protocol, do_search, search, source, ensemble_info, pairs) -> list[str]:
    notes = []
    if protocol in ("paper", "both"):
        notes.append(LEAK_NOTE)
    if protocol != "paper" and not do_search:
        why = ("search=False" if search is False else
               "the IDIs did not come from a SearchResult with a seed strategy that can select again")
        notes.append(f"no fresh search after retraining ({why}); the holdout figures are the IDI rates")
    if set(ensemble_info["label_counts"]) != {"0", "1"}:
        only = next(iter(ensemble_info["label_counts"]), "none")
        notes.append(f"the ensemble gave every IDI the label {only}: retraining pushes the model one way")
    if pairs == "idi":
        notes.append("only the IDI of each pair was added (pairs='idi'); its counterpart was left out")
    return notes


def _plain_row(row: dict) -> dict:
    return {k: _json_default(v) if isinstance(v, np.generic) else v for k, v in row.items()}


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"cannot serialize {type(o).__name__}")
