"""Mitigation side by side on the held-out rows: whether the model gets fairer, and what it costs.

See architecture: mitigation. :func:`retrain` takes a model under test, its training split and (for the methods that add
them) the IDIs of a search, trains the model again with each mitigation method, and measures the model before and every
model after on the **same held-out test rows**: F1, accuracy, the IDI rate over the test rows (with the verdict's 95%
Clopper-Pearson interval, the one ``run`` and ``estimate`` give), the
IDI rate over domain draws, and fairlearn's demographic-parity and equalized-odds differences (:mod:`.evaluation`). The
methods (one module each, registered by name, :mod:`.base`):

- ``paper``: the I&D paper's retraining. IDI pairs labelled by the LR/SVC/DTC/MLP vote without the protected
  attributes (:mod:`.labelling`) are added to the training split; the zoo DNN is fine-tuned for 10 epochs from
  its weights (``mode="auto"``; ``"retrain"`` trains it from scratch as the I&D reference code does), other models
  are refitted (a zoo model through the model cache, an sklearn estimator as a clone in its own input language,
  anything else with ``trainer(X, y, random_state)``). ``share`` sweeps the share of pairs added.
- ``counterfactual``: every training row in every protected value, weights ``1/k`` (:mod:`.counterfactual`);
  ``method_params={"counterfactual": {"with_idis": True}}`` adds the labelled pairs too.
- ``unaware``: the protected columns removed from the input (:mod:`.unaware`): zero IDIs by construction, so its
  cost in F1 and group metrics is what it shows.
- ``consistency``: the zoo DNN trained with counterfactual logit pairing, λ chosen on a validation split carved
  from the training rows (:mod:`.consistency`).
- ``auto``: on a validation split of the training rows, the methods above at several strengths (λ, and the
  reweighing of the training rows by group and label, :mod:`.reweighing`); the pick has the lowest validation IDI
  rate among the candidates whose F1 and group metrics stay within the bounds, and the report says what and why
  (:mod:`.auto`).

Every method builds counterparts as the discrimination check does (:meth:`Domain.counterparts
<chiralfair.domain.Domain.counterparts>`: couplings applied, a counterpart that breaks a constraint left out). Of
several methods, one the model's kind cannot run is skipped with a note; a model in another language than the
codes (a raw-frame Pipeline, labels such as ``">50K"``) is refitted in its own (:mod:`.refit`); every retrained
model is given back as your kind of model (:meth:`RetrainResult.model_of`) and saved in its kind's format
(:meth:`RetrainResult.save`, :func:`chiralfair.models.files.save_model_file`).

Leak-free (:mod:`.leakage`): IDI pairs whose non-protected projection is a test row's (one no training row shares)
are excluded before anything is added, and every set of added rows is checked for test projections, a count that
must be 0 (``leakage`` in the result). Use :func:`chiralfair.pipeline.search_training_rows` to find the
IDIs with seeds from the training rows only. Choices (λ) are made on a validation split, never on the test rows.

Guardrail (:mod:`.guardrail`): a method that raises the demographic-parity or equalized-odds difference by more
than ``max_group_increase``, whose held-out IDI interval is not wholly below the before interval, or that costs
more F1 than the larger of ``max_f1_loss`` and the model's own F1 spread over training seeds (:mod:`.spread`), is
marked ``improved = False`` and said first in the report.

Protocols: ``holdout`` (default) measures the figures above; ``paper`` re-checks the union of the IDIs added and of
``recheck`` against each retrained model ("remaining IDIs", I&D Table 4) and skips the domain draws; ``both`` does
both. The paper's protocol leaks (the re-checked IDIs were trained on) and is never the headline: the test IDI rate
is measured under every protocol.

References
----------
.. [1] Ma et al. "Enhanced Fairness Testing via Generating Effective Initial Individual Discriminatory
   Instances." arXiv:2209.08321, §4.4 (RQ1 usefulness, Tables 4 and 5).
.. [2] Zhang et al. "White-box Fairness Testing through Adversarial Sampling." ICSE 2020 (ADF, RQ3: 5% of the
   IDIs, majority-vote labels).
.. [3] Udeshi, Arora, Chattopadhyay. "Automated Directed Fairness Testing." ASE 2018 (AEQUITAS: retraining
   sweep over shares of the training size).
.. [4] Garg et al. "Counterfactual Fairness in Text Classification through Robustness." AIES 2019.
.. [5] Bird et al. "Fairlearn: A toolkit for assessing and improving fairness in AI." Microsoft, 2020.
.. [6] Kamiran, Calders. "Data preprocessing techniques for classification without discrimination." KAIS 2012.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from .. import __version__
from .._random import derive_seed, resolve_random_state
from .._validation import check_choice, check_float, check_int
from ..datasets.base import Dataset
from ..domain import Domain
from ..exceptions import ConfigError, ModelCapabilityError
from ..models.adapters import as_model
from ..models.protocol import CountingModel
from ..models.training import TrainedModel
from ..results import SearchResult
from ..results.run_folder import BIN_SUFFIX, feature_codes
from ..storage import json_default
from .auto import _validation_figures
from .base import MitigationMethod, check_shares, method_class
from .evaluation import CONFIDENCE, INTERVAL_NAME, Evaluator, share_interval
from .guardrail import DEFAULT_MAX_F1_LOSS, DEFAULT_MAX_GROUP_INCREASE, IDI_GOAL, f1_budget, goal_misses, judge
from .kinds import kind_of, paper_mode
from .labelling import default_ensemble, fit_ensemble, vote_labels
from .leakage import HeldOutProjections
from .names import DEFAULT_METHOD
from .paper import FINE_TUNE_EPOCHS, added_rows, shared_count
from .protocol import DEFAULT_VALIDATION_REPEATS, MitigationRun, ValidationSplits
from .spread import DEFAULT_SPREAD_SEEDS, in_spreads

logger = logging.getLogger(__name__)

__all__ = ["CONFIDENCE", "FINE_TUNE_EPOCHS", "MODES", "PAIRS", "PROTOCOLS", "ROW_FIELDS", "RetrainResult",
           "check_methods", "check_shares", "default_ensemble", "fit_ensemble", "idis_from_frame", "retrain",
           "vote_labels", "share_interval"]

PROTOCOLS = ("holdout", "paper", "both")
PAIRS = ("both", "idi")
MODES = ("auto", "retrain", "fine-tune")
LEAK_NOTE = ("paper protocol: the re-checked IDIs include the ones added to the training data, so 'remaining "
             "IDIs' rewards memorising them (the leak of the I&D reference code); the test IDI rate measures on "
             "inputs retraining never saw")

# trainer(X, y, random_state): X int codes (n, d) (for a model fed values, model_input="values": its own float64
# values, each person's row as given), y labels in {0, 1} (1 = positive), random_state an int.
Trainer = Callable[[np.ndarray, np.ndarray, int], object]

ROW_FIELDS = ("stage", "method", "share", "n_pairs_added", "n_rows_added", "n_test_projections_added", "f1",
              "accuracy", "test_idi_rate", "test_idi_lower", "test_idi_upper", "test_n",
              "domain_idi_rate", "domain_idi_lower", "domain_idi_upper", "domain_n",
              "demographic_parity_difference", "demographic_parity_lower", "demographic_parity_upper",
              "equalized_odds_difference", "equalized_odds_lower", "equalized_odds_upper", "equalized_odds_undefined",
              "f1_loss_in_spread", "search_n_idis", "search_n_tested", "search_success_rate",
              "remaining_idis", "n_rechecked", "improved", "guardrail", "choice")


@dataclass(frozen=True, eq=False)  # holds models: compared by identity
class RetrainResult:
    """The model before and after each mitigation method, measured on one held-out split.

    See architecture: results and files; mitigation.

    Attributes
    ----------
    protocol : {"holdout", "paper", "both"}
    pairs : {"both", "idi"}
        Whether both rows of each IDI pair, or the IDI only, were added.
    mode : {"auto", "retrain", "fine-tune"}
        How the ``paper`` method trains the zoo DNN again.
    how : dict
        Per method, how the model was trained again: ``"spec"`` (zoo model, from scratch), ``"fine-tune"`` (zoo
        DNN), ``"sklearn-clone"``, ``"trainer"``, or the method's class name.
    n_idis : int
        IDI pairs available for retraining (after the leak exclusion); 0 when no method adds IDIs.
    rows : tuple of dict
        The first row is the model before (``stage == "before"``), then one row per method and share
        (``stage == "after"``; ``share`` None for a method that adds no IDIs), with the keys of
        :data:`ROW_FIELDS`; figures a protocol does not compute are None. Rates are shares in [0, 1]; intervals
        are the verdicts' 95% Clopper-Pearson intervals over the test rows (``test_n``, read as a sample of the
        people the model will meet: the interval ``run`` and ``estimate`` give) or domain draws (``domain_n``).
        ``improved``/``guardrail``: the verdict of :func:`~chiralfair.mitigation.guardrail.judge` and its words.
    ensemble : dict or None
        The labelling ensemble: ``members``, ``test_accuracy``, ``n_train``, ``label_counts``, ``notes``.
    notes : tuple of str
    seconds : dict
        Wall times in seconds: ``ensemble``, ``train`` (one per after-row), ``total``. The only figures that
        differ between two runs with the same ``random_state``.
    meta : dict
        Package version, parameters, resolved random states, dataset and model names, the couplings and
        constraints of the counterparts, and what ``auto`` picked (``auto_pick``: method and parameters).
    models : tuple of CountingModel
        The retrained models as chiralfair wrapped and measured them, one per after-row (not serialised; empty
        after :meth:`from_json`); :meth:`model_of` gives one as your kind of model, :meth:`save` writes it.
    methods : tuple of str
    leakage : dict
        ``n_idis_excluded`` (pairs with a test projection, excluded), ``n_test_projections_added`` (must be 0),
        ``n_test_rows_seen`` (test rows whose projection a training row shares: duplicates, not a leak),
        ``n_test``.
    max_f1_loss : float
        The F1 budget of the guardrail (raised to the model's own spread when that is larger).
    improved : bool
        Whether every method improved (every after-row's ``improved``).
    skipped : dict of str to str
        Methods given that could not train this model's kind again, and why.
    spread : dict or None
        The model's own F1 spread over training seeds on validation rows (:mod:`.spread`): ``seeds``,
        ``validation_f1``, ``spread``, ``std``, ``n_validation``, ``reference``; None when not measured.
    max_group_increase : float
        How much a method may raise a group metric.
    """

    protocol: str
    pairs: str
    mode: str
    how: dict[str, str]
    n_idis: int
    rows: tuple[dict[str, Any], ...]
    ensemble: dict[str, Any] | None
    notes: tuple[str, ...] = ()
    seconds: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    models: tuple = field(default=(), repr=False)
    methods: tuple[str, ...] = (DEFAULT_METHOD,)
    leakage: dict[str, Any] = field(default_factory=dict)
    max_f1_loss: float = DEFAULT_MAX_F1_LOSS
    improved: bool = True
    skipped: dict[str, str] = field(default_factory=dict)
    spread: dict[str, Any] | None = None
    max_group_increase: float = DEFAULT_MAX_GROUP_INCREASE

    @property
    def after(self) -> tuple[dict[str, Any], ...]:
        """The after-rows, in order."""
        return self.rows[1:]

    @property
    def shares(self) -> tuple[float | None, ...]:
        """The shares of the after-rows (None for methods that add no IDIs)."""
        return tuple(r["share"] for r in self.after)

    @property
    def failures(self) -> tuple[dict[str, Any], ...]:
        """The after-rows the guardrail did not pass."""
        return tuple(r for r in self.after if not r["improved"])

    @property
    def model(self):
        """The fairer model of the first method (its largest share), as :meth:`model_of` returns it.

        Raises
        ------
        ConfigError
            For a result read back from JSON, which holds no model.
        """
        return self.model_of(self.methods[0])

    def model_of(self, method: str):
        """The fairer model made by ``method`` (its largest share): your kind of model, to keep and deploy.

        It is the model the figures of ``method``'s row were measured through, without chiralfair's wrapper:
        it takes the input your model takes and predicts your model's labels, and it pickles.

        ==========================================  ===============================================================
        your model                                  what is returned
        ==========================================  ===============================================================
        an sklearn estimator or Pipeline (on your   the same kind, refitted (a Pipeline with the same steps, an HGB
        raw DataFrame and labels such as            an HGB), predicting your labels on your raw rows; for
        ``">50K"``, or on the codes)                ``unaware``, which cannot be your kind (it blinds the protected
                                                    side first), a Pipeline ``[("blind", Blinder), ("model",
                                                    your estimator refitted on blinded rows)]``
        the zoo DNN (a torch module on the codes)   a torch module on the codes, ``forward(x) -> (n, 1)`` P(y = 1):
                                                    the network retrained or fine-tuned; for ``unaware`` a
                                                    :class:`~chiralfair.mitigation.blinded_network.BlindedNetwork`
                                                    around it
        a model trained by ``trainer=``             what ``trainer`` returned
        ==========================================  ===============================================================

        ``auto`` returns the model of the method it picked. :meth:`save` writes it in its kind's format, which
        :func:`chiralfair.models.files.load_model_file` (``--model FILE``) loads back.

        Parameters
        ----------
        method : str
            A method in :attr:`methods`.

        Returns
        -------
        sklearn estimator, sklearn.pipeline.Pipeline, torch.nn.Module, or what ``trainer`` returned

        Raises
        ------
        ConfigError
            For a result read back from JSON, or a method not in :attr:`methods`.
        ModelCapabilityError
            For a method fitted on chiralfair's integer codes and labels {0, 1} of a model that speaks another
            language (it would not take your input or predict your labels).
        """
        wrapped = self._wrapped(method)
        estimator = wrapped.estimator
        if isinstance(estimator, MitigationMethod):
            if getattr(estimator, "in_model_language_", True) is False:
                raise ModelCapabilityError(
                    f"the {method} model was fitted on chiralfair's integer codes and labels 0/1, not on model "
                    f"{self.meta.get('model')!r}'s input and labels, so it is not your kind of model; its figures "
                    "are in the table")
            return estimator.deployable_model()
        return estimator

    def save(self, method: str, folder, *, like=None, stem: str | None = None):
        """Write :meth:`model_of` ``(method)`` in ``folder``, in its kind's format, so ``--model FILE`` loads it.

        An sklearn model as ``<stem>.skops`` (``.joblib`` when ``like`` is a joblib/pickle file), a torch module as
        TorchScript ``<stem>.pt`` with the result's meta beside it (:func:`chiralfair.models.files.save_model_file`).

        Parameters
        ----------
        method : str
            A method in :attr:`methods`.
        folder : str or path-like
            A folder; created (with its parents) when it does not exist.
        like : str or path-like, optional
            The file your model came from; its kind decides the format.
        stem : str, optional
            The file's name without its suffix; default ``model-<method>``.

        Returns
        -------
        pathlib.Path
            The file written.

        Raises
        ------
        ConfigError
            For a result read back from JSON, a method not in :attr:`methods`, or a ``folder`` that is a file or
            cannot be created (naming it).
        ModelFileError
            For a model that came from an ONNX file, or one fitted on the codes of a model that speaks another
            language.

        Examples
        --------
        >>> import numpy as np
        >>> import pandas as pd
        >>> import tempfile
        >>> from sklearn.linear_model import LogisticRegression
        >>> import chiralfair
        >>> from chiralfair.models.files import load_model_file
        >>> rng = np.random.default_rng(0)
        >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
        >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
        >>> data = chiralfair.datasets.from_frame(people, label="y", positive_class="yes", protected="sex")
        >>> train, test = data.split(random_state=0)
        >>> model = LogisticRegression().fit(data.X[train], data.y[train])
        >>> result = chiralfair.mitigation.retrain(model, data, method="counterfactual", train_index=train)
        >>> fairer = result.model_of("counterfactual")
        >>> type(fairer).__name__
        'LogisticRegression'
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     again = load_model_file(result.save("counterfactual", folder))
        >>> bool((again.predict(data.X[test]) == fairer.predict(data.X[test])).all())
        True
        """
        from pathlib import Path

        from ..models.files import save_model_file

        model = self._wrapped(method)
        path = Path(folder)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"folder {str(path)!r} is a file, not a folder: save into a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ConfigError(f"cannot create folder {str(path)!r} to save the model of {method!r} in: {err}") from err
        return save_model_file(model, path, like=like, stem=stem or f"model-{method}",
                               meta={"retrain": self.meta, "method": method})

    def _wrapped(self, method: str) -> CountingModel:
        """The model of ``method`` (its largest share) as the figures were measured through it."""
        if not self.models:
            raise ConfigError("this RetrainResult holds no retrained model (models are not serialised to JSON)")
        positions = [i for i, r in enumerate(self.after) if r["method"] == method]
        if not positions:
            raise ConfigError(f"method {method!r} was not run; ran: {', '.join(self.methods)}")
        return self.models[max(positions, key=lambda i: self.after[i]["share"] or 0.0)]

    def to_frame(self) -> pd.DataFrame:
        """One row per model (before, then each method and share), columns :data:`ROW_FIELDS`.

        Returns
        -------
        pandas.DataFrame, shape (1 + n_after, len(ROW_FIELDS))
        """
        return pd.DataFrame(list(self.rows), columns=list(ROW_FIELDS))

    def to_json(self) -> str:
        """Serialize everything but the models.

        Returns
        -------
        str
        """
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "models"}
        d["rows"] = list(self.rows)
        d["notes"] = list(self.notes)
        d["methods"] = list(self.methods)
        return json.dumps(d, indent=2, default=json_default)

    @classmethod
    def from_json(cls, text: str) -> RetrainResult:
        """Inverse of :meth:`to_json` (without the models).

        Parameters
        ----------
        text : str
            What :meth:`to_json` returned.

        Returns
        -------
        RetrainResult
            Without models (:meth:`model_of` refuses).
        """
        d = json.loads(text)
        d["rows"] = tuple(d["rows"])
        d["notes"] = tuple(d["notes"])
        d["methods"] = tuple(d.get("methods", (DEFAULT_METHOD,)))
        return cls(**d)

    def same_figures(self, other: RetrainResult) -> bool:
        """Whether two results hold the same figures: their JSON without :attr:`seconds` is identical.

        Parameters
        ----------
        other : RetrainResult

        Returns
        -------
        bool
        """
        return replace(self, seconds={}).to_json() == replace(other, seconds={}).to_json()

    def verdict_lines(self) -> list[str]:
        """The guardrail's words, first thing a reader sees: one line per method and share that did not improve.

        Returns
        -------
        list of str
            Markdown lines.
        """
        return self._auto_lines() + self._guardrail_lines()

    def _auto_lines(self) -> list[str]:
        """What ``auto`` says before anything else: bounds no candidate met, an IDI goal its pick falls short of."""
        pick = self.meta.get("auto_pick") or {}
        lines = []
        if not pick.get("within_bounds", True):
            table = self.meta.get("auto_candidates") or {}
            picked = (table.get("tried") or [None])[table.get("picked", 0)] or {}
            breaks = f", which breaks {', '.join(picked['broken'])}" if picked.get("broken") else ""
            lines.append(f"**auto: no candidate met every bound on the validation rows**: "
                         f"{'; '.join(pick.get('unmet') or ())}; it picked {picked.get('label', pick['method'])}"
                         f"{breaks}, by the rule under Choices.")
        if pick.get("idi_goal_short"):
            lines.append(f"**auto: short of its IDI goal**: {pick['idi_goal_short']}.")
        return lines + self._auto_test_lines(claimed=not lines)

    def _auto_test_lines(self, claimed: bool) -> list[str]:
        """Whether ``auto``'s pick reached its goal on the held-out test rows, where its validation claim is checked."""
        row = next((r for r in self.after if r["method"] == "auto"), None)
        if row is None:
            return []
        misses = goal_misses(self.rows[0], row, f1_budget=f1_budget(self.max_f1_loss, self.spread),
                             max_group_increase=self.max_group_increase)
        if not self.rows[0]["test_idi_rate"]:  # nothing to remove: the goal's first part cannot be met or missed
            return ["**auto on the held-out test rows: no IDI to remove** (the model under test has none there)"
                    + (f"; it misses: {'; '.join(misses)}." if misses else "; F1 and group metrics within their "
                       "bounds.")]
        if not misses:
            return [f"**auto on the held-out test rows: goal met** (IDI rate at least {IDI_GOAL:.0%} lower, F1 and "
                    "group metrics within their bounds)."]
        said = " (its validation rows said the pick met every bound and its IDI goal)" if claimed else ""
        return [f"**auto on the held-out test rows: goal missed**{said}: {'; '.join(misses)}."]

    def _guardrail_lines(self) -> list[str]:
        ran = list(dict.fromkeys(r["method"] for r in self.after))
        # a skipped method was not run, so not judged: the headline counts the methods that ran and names the others
        skipped = (f" Not run: {', '.join(self.skipped)} (skipped; why below), so not judged." if self.skipped
                   else "")
        if self.improved:
            who = ("every method" if not self.skipped else
                   f"the {len(ran)} methods that ran ({', '.join(ran)}) each" if len(ran) > 1 else
                   f"the one method that ran ({ran[0]})" if ran else "no method")
            return [f"**Improved**: {who} lowered the held-out IDI rate (95% interval wholly below the "
                    f"before one) at an F1 cost of at most {f1_budget(self.max_f1_loss, self.spread):g}"
                    + (" (the model's own F1 spread)" if f1_budget(self.max_f1_loss, self.spread) > self.max_f1_loss
                       else "") + f", and raised neither the demographic-parity nor the equalized-odds difference by "
                    f"more than {self.max_group_increase:g}." + skipped]
        that_ran = " that ran" if self.skipped else ""
        return [f"**Not an improvement** ({len(self.failures)} of {len(self.after)}{that_ran}):" + skipped] + [
            f"- {_label(r)}: {r['guardrail']}." for r in self.failures]

    def to_markdown(self, plot: str | None = None, candidates_plot: str | None = None) -> str:
        """The guardrail first, then the table, the leak check, the ensemble and the notes (``plot``: a PNG name).

        Parameters
        ----------
        plot : str, optional
            File name of the trade-off plot, linked at the end.
        candidates_plot : str, optional
            File name of ``auto``'s candidates plot (:meth:`plot_candidates`), linked under its table.

        Returns
        -------
        str
        """
        frame = self.to_frame()
        columns = [c for c in _TABLE if c not in _OPTIONAL or frame[c].notna().any()]
        lines = [f"# Mitigation: {self.meta.get('dataset')} / {','.join(self.meta.get('protected', []))} / "
                 f"{self.meta.get('model')}", "", *self.verdict_lines(), "",
                 f"- methods: {', '.join(self.methods)}; protocol: {self.protocol}; held-out rows: "
                 f"{self.meta.get('n_test')} test rows, never trained on",
                 f"- IDI rate intervals: {INTERVAL_NAME} (the test rows read as a sample of the people the model will "
                 "meet: the interval run and estimate give for the same rows and model)",
                 f"- counterparts: {counterparts_line(self.meta)}",
                 *[f"- method {name} skipped: {why}" for name, why in self.skipped.items()],
                 f"- {spread_line(self.spread, self.max_f1_loss, self.rows[0] if self.rows else None)}",
                 f"- leak check: {_pairs(self.leakage.get('n_idis_excluded', 0))} with a test row's projection "
                 f"excluded; test projections in the training data: {self.leakage.get('n_test_projections_added', 0)}"
                 f" (must be 0); {self.leakage.get('n_test_rows_seen', 0)} of {self.leakage.get('n_test', 0)} test "
                 "rows share a projection with a training row (duplicates in the data)"]
        if self.ensemble:
            lines.append(f"- IDI pairs available: {self.n_idis}; labelling ensemble "
                         f"({', '.join(self.ensemble['members'])}; hard vote, protected attributes removed): test "
                         f"accuracy {self.ensemble['test_accuracy']:.4f}")
        lines += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        for _, row in frame.iterrows():
            lines.append("| " + " | ".join(_cell(row, key) for key in columns) + " |")
        lines += ["", "Rates are shares of individuals with a counterpart that gets another label, with "
                  f"{INTERVAL_NAME} intervals; F1, accuracy, the test IDI rate and fairlearn's demographic-parity "
                  "(DPD) and equalized-odds (EOD) differences (95% bootstrap intervals over the rows) are measured on "
                  f"the held-out test rows, over the groups of {', '.join(self.meta.get('protected', ['?']))}. An EOD "
                  "is undefined when a group has no positive (or no negative) test row."]
        choices = [f"- {_label(r)}: {r['choice']}" for r in self.after if r.get("choice")]
        if choices:
            lines += ["", "## Choices (made on a validation split of the training rows)", "", *choices]
        lines += self._candidate_lines(candidates_plot)
        if plot:
            lines += ["", f"![F1 against the held-out IDI rate]({plot})"]
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def _candidate_lines(self, plot: str | None) -> list[str]:
        """``auto``'s candidates as a table: each one's validation figures, means over the splits, and its verdict."""
        table = self.meta.get("auto_candidates")
        if not table:
            return []
        ref = table["reference"]
        lines = ["", f"## auto's candidates (validation rows of {table['n_splits']} splits of the training rows, "
                 f"{table['n_validation']} rows in all; never the test rows)", "",
                 "| candidate | IDI rate, mean [min–max over splits] | F1 | DPD | EOD | within the bounds |",
                 "|---|---|---|---|---|---|",
                 f"| the model's kind (reference) | {ref['idi_rate']:.4f} | {ref['f1']:.4f} | "
                 f"{_figure(ref['demographic_parity_difference'])} | {_figure(ref['equalized_odds_difference'])} | – |"]
        for i, t in enumerate(table["tried"]):
            mark = " (**picked**)" if i == table["picked"] else ""
            lines.append(f"| {t['label']}{mark} | {t['idi_rate']:.4f} [{t['idi_rate_min']:.4f}–{t['idi_rate_max']:.4f}]"
                         f" | {t['f1']:.4f} | {_figure(t['demographic_parity_difference'])} | "
                         f"{_figure(t['equalized_odds_difference'])} | "
                         + ("yes" if not t["broken"] else "no: " + "; ".join(t["broken"])) + " |")
        lines += ["", f"Bounds: F1 at most {table['f1_budget']:.3f} below the reference's, DPD and EOD at most "
                  f"{table['max_group_increase']:g} above its within the noise: DPD and EOD over the splits' "
                  "validation rows pooled, their rise bounded by a one-sided 95% bootstrap over the rows and the "
                  "model's own spread over training seeds."]
        if table.get("left_out"):
            left = table["left_out"].items()
            lines += ["", "Registered methods not tried: " + "; ".join(f"{n}: {w}" for n, w in left)]
        if plot:
            lines += ["", f"![auto's candidates: F1 and group gaps against the validation IDI rate]({plot})"]
        return lines

    def plot_candidates(self, path) -> bool:
        """Draw ``auto``'s candidates: validation F1, and the rise of DPD and EOD, against the validation IDI rate.

        Parameters
        ----------
        path : str or path-like
            PNG file to write.

        Returns
        -------
        bool
            Whether ``auto`` ran (else nothing is written).
        """
        table = self.meta.get("auto_candidates")
        if not table:
            return False
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ref, tried = table["reference"], table["tried"]
        fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
        x = np.array([t["idi_rate"] for t in tried])
        ok = np.array([not t["broken"] for t in tried])
        for ax, ys, label, limit in (
                (axes[0], [t["f1"] for t in tried], "validation F1", ref["f1"] - table["f1_budget"]),
                (axes[1], [_rise(t, ref) for t in tried], "largest rise of DPD or EOD over the reference",
                 table["max_group_increase"])):
            y = np.array(ys, dtype=float)
            ax.scatter(x[ok], y[ok], marker="o", label="within the bounds")
            ax.scatter(x[~ok], y[~ok], marker="x", label="beyond a bound")
            ax.scatter([x[table["picked"]]], [y[table["picked"]]], s=160, facecolors="none", edgecolors="red",
                       label="picked")
            ax.axhline(limit, linestyle="--", color="grey", linewidth=1, label="bound")
            ax.set_xlabel("validation IDI rate (mean over the splits)")
            ax.set_ylabel(label)
            ax.legend(fontsize=7)
        fig.suptitle(f"auto's candidates on {table['n_splits']} validation splits "
                     f"({self.meta.get('dataset')} / {','.join(self.meta.get('protected', []))} / "
                     f"{self.meta.get('model')})", fontsize=9)
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
        return True

    def plot(self, path) -> None:
        """Draw F1 against the held-out IDI rate (95% interval), one point per method and share, and the model before.

        The dashed line is the F1 budget (F1 before minus ``max_f1_loss``): a point below it costs too much.

        Parameters
        ----------
        path : str or path-like
            PNG file to write.
        """
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        frame = self.to_frame()
        fig, ax = plt.subplots(figsize=(6, 4.2))
        before = frame.iloc[0]
        ax.errorbar([before["test_idi_rate"]], [before["f1"]], fmt="s", color="black", capsize=3, label="before",
                    xerr=[[max(0.0, before["test_idi_rate"] - before["test_idi_lower"])],
                          [max(0.0, before["test_idi_upper"] - before["test_idi_rate"])]])
        for k, method in enumerate(self.methods):
            part = frame[frame["method"] == method]
            x = part["test_idi_rate"].to_numpy(float)
            err = np.clip(np.vstack([x - part["test_idi_lower"].to_numpy(float),
                                     part["test_idi_upper"].to_numpy(float) - x]), 0.0, None)
            ax.errorbar(x, part["f1"].to_numpy(float), xerr=err, fmt="o^vD"[k % 4], capsize=3, label=method)
            for _, r in part.iterrows():
                if r["share"] is not None and not (isinstance(r["share"], float) and math.isnan(r["share"])):
                    ax.annotate(f"{r['share']:g}", (r["test_idi_rate"], r["f1"]), textcoords="offset points",
                                xytext=(4, 4), fontsize=8)
        ax.axhline(before["f1"] - self.max_f1_loss, linestyle="--", color="grey", linewidth=1,
                   label=f"F1 budget (-{self.max_f1_loss:g})")
        ax.set_xlabel("IDI rate over the held-out test rows (95% CI)")
        ax.set_ylabel("F1 on the held-out test rows")
        ax.set_title(f"{self.meta.get('dataset')} / {','.join(self.meta.get('protected', []))} / "
                     f"{self.meta.get('model')}: share added next to each point", fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)


_TABLE = ("stage", "method", "share", "n_rows_added", "f1", "f1_loss_in_spread", "accuracy", "test_idi_rate",
          "domain_idi_rate", "search_n_idis", "remaining_idis", "demographic_parity_difference",
          "equalized_odds_difference", "improved")
_OPTIONAL = ("domain_idi_rate", "search_n_idis", "remaining_idis", "share", "n_rows_added", "f1_loss_in_spread")


def _figure(value) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def _rise(tried: dict[str, Any], reference: dict[str, Any]) -> float:
    """The larger rise of DPD and EOD over the reference (NaN when neither is defined)."""
    rises = [tried[k] - reference[k] for k in ("demographic_parity_difference", "equalized_odds_difference")
             if tried.get(k) is not None and reference.get(k) is not None]
    return max(rises) if rises else float("nan")


def counterparts_line(meta: dict[str, Any]) -> str:
    """How the counterparts were built: the couplings and constraints on, or none (every table says which).

    Parameters
    ----------
    meta : dict
        :attr:`RetrainResult.meta`.

    Returns
    -------
    str
    """
    couplings, constraints = meta.get("couplings"), meta.get("constraints")
    if couplings is None:
        return "not recorded"
    text = "couplings on: " + "; ".join(couplings) if couplings else "no coupling (the protected columns only)"
    return text + (f"; constraints: {'; '.join(constraints)}" if constraints else "")


def spread_line(spread: dict[str, Any] | None, max_f1_loss: float, before: dict[str, Any] | None = None) -> str:
    """The model's own F1 spread and the F1 budget it sets, in words; each F1 says whose it is and on which rows.

    Parameters
    ----------
    spread : dict or None
    max_f1_loss : float
    before : dict, optional
        The table's row before (``f1`` of the model under test on the test rows, ``test_n`` rows): named beside
        the spread's F1 values, which are another model's (the model's kind trained on the training split's other
        rows) on other rows (its validation rows), so a reader does not take one for the other.

    Returns
    -------
    str
    """
    if not spread:
        return f"F1 budget {max_f1_loss:g} (the model's own F1 spread over training seeds was not measured)"
    values = ", ".join(f"{v:.3f}" for v in spread["validation_f1"])
    mut = ("" if not before or before.get("f1") is None else
           f"; the table's F1 before, {before['f1']:.3f}, is the model under test's on the "
           f"{before.get('test_n', 'held-out')} test rows")
    return (f"the model's own F1 spread: {spread['spread']:.3f} (its kind trained again on the training split's "
            f"other rows with {len(spread['seeds'])} training seeds: validation F1 {values}, on "
            f"{spread['n_validation']} validation rows of the training split{mut}); F1 budget: "
            f"{f1_budget(max_f1_loss, spread):.3f}, the larger of max_f1_loss ({max_f1_loss:g}) and the spread; the "
            "column f1_loss_in_spread is the F1 loss in units of the spread")


def _label(row) -> str:
    share = row.get("share")
    return row["method"] + ("" if share is None else f" (share {share:g})")


def _cell(row, key: str) -> str:
    value = row[key]
    if key == "equalized_odds_difference" and value is None and row.get("equalized_odds_undefined"):
        return "undefined"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if key in ("test_idi_rate", "domain_idi_rate"):
        prefix = key[: -len("rate")]
        return f"{value:.4f} [{row[prefix + 'lower']:.4f}, {row[prefix + 'upper']:.4f}]"
    if key in ("demographic_parity_difference", "equalized_odds_difference"):
        prefix = key[: -len("difference")]
        low, high = row.get(prefix + "lower"), row.get(prefix + "upper")
        return f"{value:.4f}" + ("" if low is None or high is None else f" [{low:.3f}, {high:.3f}]")
    if key == "f1_loss_in_spread":
        return f"{value:.2f}"
    if key == "remaining_idis":
        return f"{int(value)} / {int(row['n_rechecked'])} (paper protocol, leaks)"
    if key == "improved":
        return "yes" if value else "**no**"
    if key in ("search_n_idis", "n_rows_added"):  # counts (a float column where a row has none)
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:.4f}" if key != "share" else f"{value:g}"
    return str(value)


def check_methods(method) -> tuple[str, ...]:
    """Validate ``method`` (a name or a sequence of names) into a tuple of distinct registered method names.

    Parameters
    ----------
    method : str or sequence of str

    Returns
    -------
    tuple of str

    Raises
    ------
    ConfigError
        Naming the unknown method and the registered ones (plugins included), or for an empty sequence.
    """
    from . import _load_all  # noqa: F401  (registers the built-in methods)
    from .base import METHODS, method_names

    names = [method] if isinstance(method, str) else list(method)
    if not names:
        raise ConfigError(f"method must name at least one of {', '.join(method_names())}")
    for name in names:
        METHODS.check(name)
    return tuple(dict.fromkeys(names))


def retrain(model, dataset: Dataset, idis=None, *, method: str | Sequence[str] = DEFAULT_METHOD,
            protocol: str = "holdout", share: float | Sequence[float] = 1.0, pairs: str = "both", ensemble=None,
            mode: str = "auto",
            trainer: Trainer | None = None, recheck=None, train_index=None, searched_with: dict | None = None,
            search: bool | None = None, search_random_state: int | None = None,
            method_params: dict[str, dict] | None = None, max_f1_loss: float = DEFAULT_MAX_F1_LOSS,
            max_group_increase: float = DEFAULT_MAX_GROUP_INCREASE, spread_seeds: int = DEFAULT_SPREAD_SEEDS,
            validation_size: float = 0.2, validation_repeats: int = DEFAULT_VALIDATION_REPEATS,
            own_spread: dict | None = None, plausible_only: bool = False,
            margin: float = 0.005, cache_dir=None, random_state: int = 0) -> RetrainResult:
    """Train the model again with each mitigation method and compare before and after on the held-out rows.

    Parameters
    ----------
    model : TrainedModel, CountingModel, or anything :func:`~chiralfair.models.as_model` accepts
        The model under test. A :class:`TrainedModel` brings its split and its training ``random_state``.
    dataset : Dataset
        Its domain names the protected attributes.
    idis : SearchResult, or a pair ``(idis, counterparts)`` of arrays of shape (n_idis, n_features), optional
        The IDIs to add; needed by ``paper`` (and ``counterfactual`` with ``with_idis``). A bare array of IDIs is
        accepted with ``pairs="idi"``. Pairs with a test row's projection are excluded (``leakage``).
    method : str or sequence of str, default="paper"
        ``paper``, ``counterfactual``, ``unaware``, ``consistency``, ``auto`` (see the module docstring), one or
        several. Of several, one that cannot train this model's kind again is skipped with a note.
    protocol : {"holdout", "paper", "both"}, default="holdout"
    share : float or sequence of float, default=1.0
        Share of the IDI pairs added, in (0, 1]; several values retrain once per value (smaller shares are
        subsets of larger ones).
    pairs : {"both", "idi"}, default="both"
    ensemble : sklearn classifier, optional
        Labels the IDIs; cloned and fitted on the training split without the protected columns. Default
        :func:`~chiralfair.mitigation.labelling.default_ensemble`.
    mode : {"auto", "retrain", "fine-tune"}, default="auto"
        How ``paper`` trains the zoo DNN again: ``auto`` fine-tunes it for 10 epochs (architecture: mitigation),
        ``retrain`` trains from scratch (the I&D reference code).
    trainer : callable, optional
        ``trainer(X, y, random_state) -> model`` for ``paper`` with models chiralfair cannot train; ``X`` is in
        codes, or, for a model fed values (``model_input="values"``), in its own values (float64), and the model
        returned is fed as the model under test is.
    recheck : SearchResult or array of shape (n, n_features), optional
        Further IDIs re-checked under the paper protocol (I&D: the IDIs of the other seed strategy).
    train_index : array-like of int, optional
        The model's training rows; default: those of a :class:`TrainedModel`, else ``dataset.split(0)``.
    searched_with : dict, optional
        For ``idis`` given as arrays: ``{"generator", "seed_strategy", "params", "random_state"}``, so that the
        holdout protocol can search again.
    search : bool, optional
        Run a fresh search on every model (holdout protocol); default: when ``idis`` is a SearchResult whose
        seed strategy can select again.
    search_random_state : int, optional
    method_params : dict of str to dict, optional
        Constructor arguments per method, e.g. ``{"consistency": {"lam": 1.0}, "counterfactual":
        {"with_idis": True}}``.
    max_f1_loss : float, default=0.01
        The guardrail's F1 budget; the model's own F1 spread over training seeds raises it when larger.
    max_group_increase : float, default=0.02
        How much a method may raise the demographic-parity or equalized-odds difference on the test rows.
    spread_seeds : int, default=3
        Training seeds over which the model's kind is trained on a validation split of the training rows to measure
        its own F1 spread (:mod:`.spread`; 0: not measured unless ``auto`` needs it).
    validation_size : float, default=0.2
        Share of the training rows held out for the spread and for ``auto``'s choice.
    validation_repeats : int, default=3
        Validation splits ``auto`` chooses over (its candidates' figures averaged over them); the spread is
        measured on the first.
    own_spread : dict, optional
        The model's own F1 spread measured before (an earlier :attr:`RetrainResult.spread` of the same model and
        training rows), used instead of measuring it again (``auto`` still trains its reference).
    plausible_only : bool, default=False
        The IDI rates count plausible counterparts only (their values occur in the data); the methods still make
        the model consistent on every possible counterpart.
    margin : float, default=0.005
        Sampling margin of the IDI rate over domain draws, in (0, 0.5].
    cache_dir : str or path-like, optional
        Model cache folder for zoo models trained again by ``paper``.
    random_state : int, numpy.random.Generator or None, default=0
        Drives the ensemble, the choice of IDIs, the validation splits, the training seed (when the model's is
        unknown) and the domain draws; the same int gives the same figures.

    Returns
    -------
    RetrainResult

    Raises
    ------
    ConfigError
        For a parameter outside its bounds, an unknown method or method parameter, a method that adds IDIs
        without ``idis`` or with none left after the leak exclusion, IDIs of another width than the domain's, or
        ``auto`` with too few training rows for a validation split.
    ModelCapabilityError
        For a model no method given can train again (the message says what to pass), or ``mode="fine-tune"`` on
        a model that is not the zoo DNN.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.datasets import from_frame
    >>> from chiralfair.mitigation import retrain
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
    >>> data = from_frame(people, label="y", positive_class="yes", protected="sex")
    >>> train, test = data.split(random_state=0)
    >>> model = LogisticRegression().fit(data.X[train], data.y[train])
    >>> result = retrain(model, data, method="unaware", train_index=train)
    >>> print(result.to_frame()[["stage", "method", "test_idi_rate"]].to_string(index=False))
     stage  method  test_idi_rate
    before     NaN         0.2375
     after unaware         0.0000

    References
    ----------
    .. [1] Ma et al. arXiv:2209.08321, §4.4.
    .. [2] Garg et al. AIES 2019.
    """
    methods = check_methods(method)
    protocol = check_choice(protocol, "protocol", PROTOCOLS)
    pairs = check_choice(pairs, "pairs", PAIRS)
    mode = check_choice(mode, "mode", MODES)
    shares = check_shares(share)
    margin = check_float(margin, "margin", minimum=0.0, maximum=0.5, exclusive_minimum=True)
    max_f1_loss = check_float(max_f1_loss, "max_f1_loss", minimum=0.0)
    max_group_increase = check_float(max_group_increase, "max_group_increase", minimum=0.0)
    spread_seeds = check_int(spread_seeds, "spread_seeds", minimum=0)
    validation_repeats = check_int(validation_repeats, "validation_repeats", minimum=1)
    classes = {name: method_class(name) for name in methods}
    params = _method_params(method_params, classes)
    domain = dataset.domain
    start = time.perf_counter()
    rng, random_state_described = resolve_random_state(random_state)
    counting, train, test, train_seed = _model_and_split(model, dataset, train_index, rng)
    run = MitigationRun(model=counting, dataset=dataset, train=train, train_seed=train_seed, trainer=trainer,
                        mode=paper_mode(counting, mode, trainer), cache_dir=cache_dir,
                        bounds={"max_f1_loss": max_f1_loss, "max_group_increase": max_group_increase})
    methods, skipped = _runnable(classes, run, params)  # refused before any training
    chooses = [name for name in methods if classes[name].chooses_on_validation]
    ensemble_seed, choice_seed, domain_seed = derive_seed(rng), derive_seed(rng), derive_seed(rng)
    run.method_seeds = {name: derive_seed(rng) for name in (*methods, *skipped)}
    validation_seed, spread_extra = derive_seed(rng), [derive_seed(rng) for _ in range(max(0, spread_seeds - 1))]
    projections = HeldOutProjections.of(domain, dataset.X[train], dataset.X[test])
    leakage = {"n_idis_excluded": 0, "n_test_projections_added": 0,
               "n_test_rows_seen": projections.n_test_rows_seen, "n_test": projections.n_test}
    notes: list[str] = [f"method {name!r} skipped: {why}" for name, why in skipped.items()]

    with_idis = [name for name in methods if classes[name].needs_idis(params[name])]
    seconds: dict[str, Any] = {"ensemble": 0.0, "train": [], "spread": 0.0}
    X_idi = X_counterpart = labels = None
    ensemble_info, source = None, {"kind": "none"}
    if with_idis:
        if idis is None:
            raise ConfigError(f"method(s) {', '.join(with_idis)} add IDI pairs: pass idis= (a SearchResult, e.g. "
                              "from chiralfair.pipeline.search_training_rows, or (idis, counterparts))")
        X_idi, X_counterpart, source = _idi_arrays(idis, domain, pairs, searched_with)
        source = _auto_resolved(source, counting)
        hit = projections.hits(domain, X_idi)
        leakage["n_idis_excluded"] = int(hit.sum())
        X_idi = X_idi[~hit]
        X_counterpart = None if X_counterpart is None else X_counterpart[~hit]
        if len(X_idi) == 0:
            raise ConfigError("no IDIs to add: the search found none" + (
                f" outside the test rows' projections ({int(hit.sum())} excluded)" if hit.any() else "") +
                ", so there is nothing to retrain with (within its budget the model showed no discrimination; a "
                "larger budget or other seeds may find some)")
        t = time.perf_counter()
        voter, ensemble_info = fit_ensemble(dataset, train, test, ensemble, random_state=ensemble_seed)
        labels = vote_labels(voter, X_idi, domain)
        seconds["ensemble"] = time.perf_counter() - t
        values, counts = np.unique(labels, return_counts=True)
        ensemble_info["label_counts"] = {str(k): int(v) for k, v in zip(values, counts, strict=True)}

    t = time.perf_counter()
    run.validation = ValidationSplits.measure(
        counting, dataset, train, trainer, seeds=[train_seed, *spread_extra], validation_size=validation_size,
        random_state=validation_seed, needed=bool(chooses), wanted=spread_seeds > 0 and own_spread is None,
        repeats=validation_repeats, plausible_only=plausible_only)
    if own_spread is not None and not chooses:
        run.validation.spread = dict(own_spread)
    own = run.validation
    seconds["spread"] = time.perf_counter() - t
    notes += own.notes
    do_search = _resolve_search(search, protocol, source)
    fresh_state = _fresh_search_state(source, search_random_state) if do_search else None
    union = (_recheck_union(X_idi, recheck, domain) if X_idi is not None and protocol in ("paper", "both")
             else None)
    order = None if X_idi is None else np.random.default_rng(choice_seed).permutation(len(X_idi))
    evaluate = Evaluator(dataset, test, union=union, domain_rate=protocol != "paper",
                         source=source if do_search else None, search_state=fresh_state, margin=margin,
                         domain_seed=domain_seed, plausible_only=plausible_only)
    before = {**dict.fromkeys(ROW_FIELDS), **evaluate(counting), "stage": "before", "share": 0.0,
              "n_pairs_added": 0, "n_rows_added": 0, "n_test_projections_added": 0}
    rows, models, how, picked, candidates = [before], [], {}, None, None
    for name in methods:
        for s in (shares if name in with_idis else (None,)):
            added, n_pairs = None, 0
            if s is not None and X_idi is not None and order is not None:  # a share of the IDIs found above
                chosen = order[: shared_count(s, len(X_idi))]
                added, n_pairs = added_rows(X_idi, X_counterpart, labels, chosen, pairs), int(len(chosen))
                leakage["n_test_projections_added"] += projections.verify(domain, added[0], f"method {name!r}")
            t = time.perf_counter()
            retrained, info = classes[name].build(run, dict(params[name]), added)
            how[name] = info.pop("how")
            if "pick" in info:
                picked, candidates = info.pop("pick"), info.pop("candidates", None)
            seconds["train"].append(time.perf_counter() - t)
            logger.info("%s: retrained %s (share %s) in %.1f s", name, counting.name, s, seconds["train"][-1])
            row = {**dict.fromkeys(ROW_FIELDS), **evaluate(retrained), "stage": "after", "method": name, "share": s,
                   "n_pairs_added": n_pairs, "n_rows_added": info.get("n_rows_added", 0),
                   "n_test_projections_added": 0 if added is None else projections.verify(domain, added[0], name),
                   "choice": info.get("choice")}
            row["f1_loss_in_spread"] = in_spreads(before["f1"] - row["f1"], own.spread)
            row["improved"], row["guardrail"] = judge(before, row, max_f1_loss, max_group_increase=max_group_increase,
                                                      spread=own.spread)
            rows.append(row)
            models.append(retrained)

    notes += _notes(protocol, do_search, search, source, ensemble_info, pairs, with_idis)
    notes += [f"no fresh search on {name} (its search_n_idis is empty): the search's seed strategy could not run "
              f"on it: {why}"
              for name, why in evaluate.searches_not_run.items()]
    if X_idi is not None and protocol != "holdout" and recheck is None:
        notes.append("paper protocol: only the IDIs added were re-checked (no recheck= set, e.g. the IDIs of the "
                     "other seed strategy as in I&D Table 4)")
    if train_index is None and not isinstance(model, TrainedModel):
        notes.append("the model's training rows were taken to be dataset.split(0) (60/40); pass train_index= if "
                     "it was trained on others")
    if source["kind"] != "none":
        notes.append("leak-free only if the search drew its seeds from the training rows (search_training_rows "
                     "does); pairs with a test projection were excluded either way")
    meta = {"chiralfair_version": __version__, "dataset": dataset.name, "protected": domain.protected_names,
            "model": counting.name, "random_state": random_state_described, "train_random_state": train_seed,
            "search_random_state": fresh_state,
            "fine_tune_epochs": FINE_TUNE_EPOCHS if with_idis and run.mode == "fine-tune" else None,
            "couplings": [c for c in domain.describe_couplings() if "inactive" not in c],
            "constraints": domain.describe_constraints(),
            "params": {"methods": list(methods), "protocol": protocol, "share": list(shares), "pairs": pairs,
                       "mode": mode, "paper_mode": run.mode if with_idis else None, "margin": margin,
                       "confidence": CONFIDENCE,
                       "max_f1_loss": max_f1_loss, "max_group_increase": max_group_increase,
                       "spread_seeds": spread_seeds, "validation_size": validation_size,
                       "validation_repeats": validation_repeats, "method_params": params},
            "source": {k: v for k, v in source.items() if k != "result"}, "auto_pick": picked,
            "auto_candidates": candidates,
            "n_train": int(len(train)), "n_test": int(len(test)),
            "n_rechecked": None if union is None else int(len(union))}
    plain = tuple(_plain_row(r) for r in rows)
    return RetrainResult(protocol=protocol, pairs=pairs, mode=mode, how=how,
                         n_idis=0 if X_idi is None else int(len(X_idi)), rows=plain, ensemble=ensemble_info,
                         notes=tuple(notes), seconds={**seconds, "total": time.perf_counter() - start}, meta=meta,
                         models=tuple(models), methods=methods, leakage=leakage, max_f1_loss=max_f1_loss,
                         improved=all(r["improved"] for r in plain[1:]), skipped=skipped,
                         spread=_plain_spread(own.spread), max_group_increase=max_group_increase)


# ------------------------------------------------------------------------------------------- methods
def _runnable(classes: dict, run: MitigationRun, params: dict[str, dict]):
    """The methods that can train this model again, and those that cannot with why (skipped, said in the notes).

    Raises
    ------
    ModelCapabilityError
        When none can: the first method's reason.
    """
    runnable, skipped = [], {}
    for name, cls in classes.items():
        why = cls.cannot_run(run, params[name])
        if why:
            skipped[name] = f"{why} (model kind: {kind_of(run.model)})"
        else:
            runnable.append(name)
    if not runnable:
        raise ModelCapabilityError(next(iter(skipped.values())))
    return tuple(runnable), skipped


def _plain_spread(spread: dict[str, Any] | None) -> dict[str, Any] | None:
    if spread is None:
        return None
    kept = {k: v for k, v in spread.items() if k != "reference"}
    return {**kept, "reference": _validation_figures(spread["reference"])}


def _method_params(method_params, classes: dict) -> dict[str, dict]:
    given = dict(method_params or {})
    unknown = sorted(set(given) - set(classes))
    if unknown:
        raise ConfigError(f"method_params names method(s) {unknown} that are not run; run: {', '.join(classes)}")
    out = {}
    for name, cls in classes.items():
        value = given.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"method_params[{name!r}] must be a dict of constructor arguments, got "
                              f"{type(value).__name__}")
        cls.check_params(value)
        out[name] = dict(value)
    return out


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


def _auto_resolved(source: dict[str, Any], model: CountingModel) -> dict[str, Any]:
    """``source`` with generator ``"auto"`` replaced by the generator it stands for on ``model`` (and ``asked``).

    Resolved once, on the model under test, so that the fresh searches before and after retraining run the same one.
    """
    from ..generators.names import AUTO as AUTO_GENERATOR
    from ..generators.names import auto_generator

    if source.get("generator") != AUTO_GENERATOR:
        return source
    chosen, _ = auto_generator(has_gradient=model.has_gradient, has_proba=model.has_proba)
    return {**source, "generator": chosen, "generator_asked": AUTO_GENERATOR}


def idis_from_frame(frame: pd.DataFrame, domain: Domain) -> tuple[np.ndarray, np.ndarray]:
    """Encode the IDI pairs of a run folder's ``idis.parquet`` back to codes.

    Parameters
    ----------
    frame : pandas.DataFrame
        As :meth:`SearchResult.to_frame` with a domain writes it (``pandas.read_parquet`` of a file or of a
        folder of parts): one column per feature, the same with suffix ``_counterpart``, holding each code's label
        or the value the model was fed (a missing value as the data held it: ``"?"``, NaN, None); a binned column
        shown as the value the model was fed is read from its ``<column> (bin)`` beside it
        (:func:`~chiralfair.results.run_folder.feature_codes`).
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
    names = {f.name for f in domain.features}
    for j, feature in enumerate(domain.features):
        column = feature.name + suffix
        binned = feature.name + BIN_SUFFIX
        if binned not in names and binned + suffix in frame.columns:  # shown as the value fed: codes from the bin
            column = binned + suffix
        if column not in frame.columns:
            raise ConfigError(f"idis.parquet lacks column {column!r} of the run's domain")
        out[:, j] = feature_codes(frame[column], feature, column)
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


def _notes(protocol, do_search, search, source, ensemble_info, pairs, with_idis) -> list[str]:
    notes = []
    if protocol in ("paper", "both") and with_idis:
        notes.append(LEAK_NOTE)
    if protocol != "paper" and not do_search and with_idis:
        why = ("search=False" if search is False else
               "the IDIs did not come from a SearchResult with a seed strategy that can select again")
        notes.append(f"no fresh search after retraining ({why}); the holdout figures are the IDI rates")
    if ensemble_info is not None:
        notes.extend(ensemble_info.get("notes", ()))
        if set(ensemble_info["label_counts"]) != {"0", "1"}:
            only = next(iter(ensemble_info["label_counts"]), "none")
            notes.append(f"the ensemble gave every IDI the label {only}: retraining pushes the model one way")
    if pairs == "idi" and with_idis:
        notes.append("only the IDI of each pair was added (pairs='idi'); its counterpart was left out")
    return notes


def _plain_row(row: dict) -> dict:
    return {k: json_default(v) if isinstance(v, np.generic) else v for k, v in row.items()}


def _pairs(n: int) -> str:
    """``n`` IDI pairs, in the singular for one."""
    return f"{int(n):,} IDI pair" + ("" if int(n) == 1 else "s")
