"""The generator family: one verb, ``run(model, domain, seeds, *, random_state)``, and a registry.

See architecture: generators.
"""

from __future__ import annotations

import contextlib
import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._random import RandomState, resolve_random_state
from .._registry import Registry
from .._validation import check_int
from ..domain import Domain
from ..exceptions import ConfigError, DomainError, ModelCapabilityError, ModelInputError
from ..models._torch import is_torch_module
from ..models.adapters import as_model
from ..models.protocol import QueryBudgetSpent, in_domain_terms
from ..models.threads import single_intra_op_thread
from ..results import SearchResult, SeedReport, base_meta
from ..results.run_folder import PairSink
from .recorder import IDIRecorder

GENERATORS: Registry[Callable[..., Generator]] = Registry("generator")


def register_generator(name: str, factory: Callable[..., Generator] | None = None):
    """Register a generator class (or a preset factory) under ``name``; usable as a class decorator.

    Parameters
    ----------
    name : str
        The registry name (``make_generator(name)``); a name registered twice is refused.
    factory : callable, optional
        A class or a function returning a Generator (e.g. a preset such as ``eidig-5``); None: return a class
        decorator.

    Returns
    -------
    callable
        The decorator, or ``factory`` itself when given.
    """
    def deco(obj):
        return GENERATORS.add(name, obj)
    return deco(factory) if factory is not None else deco


def make_generator(name: str, **params) -> Generator:
    """Build the registered generator ``name`` with hyper-parameters ``params``.

    Parameters
    ----------
    name : str
        A registered name: ``themis``, ``aequitas`` (``aequitas-fully``, ``aequitas-semi``, ``aequitas-random``),
        ``sg``, ``adf``, ``eidig`` (= ``eidig-inf``), ``eidig-5``, ``expga``, ``kosei``.
    **params
        Hyper-parameters of the generator's class (``max_global``, ``max_local`` and those its class documents).

    Returns
    -------
    Generator

    Raises
    ------
    ConfigError
        If ``name`` is not registered (the message lists the valid names), is ``"auto"`` (which stands for a
        generator only a model can pick: :func:`chiralfair.generators.names.auto_generator`), or a parameter is
        invalid.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from chiralfair.datasets import from_frame
    >>> from chiralfair.generators import make_generator
    >>> from chiralfair.models import as_model
    >>> from chiralfair.seeds import make_seed_strategy
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"sex": rng.choice(["f", "m"], 600), "hours": rng.integers(20, 60, 600)})
    >>> people["y"] = np.where(people["hours"] + 10 * (people["sex"] == "m") > 45, "yes", "no")
    >>> data = from_frame(people, label="y", positive_class="yes", protected="sex")
    >>> model = as_model(LogisticRegression().fit(data.X, data.y))
    >>> seeds = make_seed_strategy("iandd").select(model, data, 20, random_state=0)
    >>> search = make_generator("aequitas", max_global=20, max_local=10)
    >>> result = search.run(model, data.domain, seeds, random_state=0)
    >>> result.n_idis == result.n_global + result.n_local, result.n_idis > 0
    (True, True)
    >>> list(result.to_frame(data.domain).columns[:4])
    ['sex', 'hours', 'sex_counterpart', 'hours_counterpart']
    """
    from .names import AUTO, GENERATOR_MODULES

    if name in GENERATOR_MODULES:  # a built-in name: its own module registers it, the others are not imported
        importlib.import_module(f"{__package__}.{GENERATOR_MODULES[name]}")
    else:  # an installed one (the registry loads it), or an unknown one, refused listing every name
        from . import _load_all  # noqa: F401  (registers the built-in generators)
    if name == AUTO:  # a valid name, which only a model can resolve
        raise ConfigError("generator 'auto' is the one the model under test offers (eidig with an input gradient "
                          "and probabilities, else aequitas): name that generator here, or resolve it with "
                          "chiralfair.generators.names.auto_generator(has_gradient=..., has_proba=...); audit, "
                          "run and retrain pick it themselves")
    return GENERATORS.make(name, **params)


def _torch_threads(model):
    """:func:`~chiralfair.models.threads.single_intra_op_thread` for a torch model, else nothing."""
    if is_torch_module(model.estimator):
        return single_intra_op_thread()
    return contextlib.nullcontext()


class Generator(ABC):
    """A search for IDIs: a global phase from the seeds, then a local phase around each global IDI.

    Parameters
    ----------
    max_global : int
        Seeds taken by the global phase (the first ``max_global`` seeds).
    max_local : int
        Local iterations per global IDI.
    max_queries : int, optional
        Query budget of :meth:`run`: the search stops once this many model rows (checks, gradients, probes,
        training labels: everything the model wrapper counts) have been queried, and the result says so
        (``notes``, ``meta["stopped_by"] == "max_queries"``). A call that would pass it is not made. None: no
        budget but ``max_global`` and ``max_local`` (a budget already set on the model, e.g. by a run that
        counts the seeds' queries too, holds as well).
    **params
        Algorithm hyper-parameters, stored verbatim in :attr:`params`.
    """

    name: ClassVar[str] = "generator"
    #: Whether the search needs the model's ``input_gradient`` (ADF, EIDIG).
    needs_gradient: ClassVar[bool] = False
    #: Whether the search needs the model's ``predict_proba`` (ADF, EIDIG, MAFT); labels-only models are refused.
    needs_proba: ClassVar[bool] = False

    def __init__(self, *, max_global: int = 100, max_local: int = 100, max_queries: int | None = None,
                 **params: Any):
        self.max_global = check_int(max_global, "max_global", minimum=1)
        self.max_local = check_int(max_local, "max_local", minimum=0)
        self.max_queries = None if max_queries is None else check_int(max_queries, "max_queries", minimum=1)
        budget = {} if self.max_queries is None else {"max_queries": self.max_queries}
        self.params = {"max_global": self.max_global, "max_local": self.max_local, **budget, **params}

    def run(self, model, domain: Domain, seeds, *, random_state: RandomState = None,
            seed_strategy: str | None = None, sink: PairSink | None = None) -> SearchResult:
        """Search for IDIs of ``model`` starting from ``seeds``.

        Parameters
        ----------
        model : CountingModel or anything :func:`~chiralfair.models.as_model` accepts
        domain : Domain
            With the protected attributes under test, and the couplings and constraints the search respects
            (architecture: counterparts that could exist): counterparts change coupled columns, and every seed and
            proposal that breaks a constraint is repaired before it is checked (:meth:`Domain.repair`), in the shared
            recorder.
        seeds : SeedReport or array-like of int, shape (n_seeds, n_features)
            Inputs inside the domain; the global phase takes the first ``max_global``.
        random_state : None, int, numpy.random.RandomState or numpy.random.Generator
            As scikit-learn accepts it; recorded readably in ``meta`` (see ``chiralfair._random``).
        seed_strategy : str, optional
            Name recorded in the result; defaults to the SeedReport's strategy or ``"given"``.
        sink : PairSink, optional
            Streams the IDI pairs to disk as they are found (the result then reads them back lazily); without
            it they are kept in memory.

        Returns
        -------
        SearchResult

        Raises
        ------
        DomainError
            If a seed lies outside the domain (names the column, value and bound) or there are no seeds.
        ModelCapabilityError
            If the generator needs gradients or probabilities and the model has none
            (:meth:`require_capabilities`).
        ModelInputError
            If the model fails on an input the search sends (e.g. a protected value its encoder never saw); the
            message names the feature, the value, whether it is protected, and what to do.
        """
        model = as_model(model)
        self.require_capabilities(model)
        if isinstance(seeds, SeedReport):
            seed_strategy = seed_strategy or seeds.strategy
            seeds = seeds.seeds
        seed_strategy = seed_strategy or "given"
        X = domain.validate(seeds, what="seeds")
        if len(X) == 0:
            raise DomainError("no seeds: the global phase needs at least one seed")
        # onto the domain's constraints, as every proposal (architecture: counterparts that could exist)
        X = domain.repair(X[: self.max_global])
        rng, random_state_described = resolve_random_state(random_state)
        recorder = IDIRecorder(model, domain, sink=sink)
        stopped: dict[str, Any] = {}
        try:
            # a torch model's calls each run on one torch thread; set once here, each call's own switch (two
            # torch.set_num_threads a call, about 1% of a walk's time) finds it set
            with model.query_budget(self.max_queries), _torch_threads(model):
                try:
                    notes = self._search(recorder, X, rng) or ()
                except QueryBudgetSpent as spent:
                    notes, stopped = _budget_spent(spent, recorder)
        except ModelInputError as err:  # name the feature as the domain does, and whether it is protected
            clear = in_domain_terms(err, domain)
            if clear is err:
                raise
            raise clear from err
        finally:  # also on Ctrl-C, a deadline or a model's error: the pairs found so far reach the sink
            recorder.complete_pending()
        meta = base_meta(params=self.params, random_state=random_state_described,
                         model=model.name, protected=domain.protected_names, **stopped)
        return recorder.result(generator=self.name, seed_strategy=seed_strategy, n_seeds=len(X),
                               n_seed_idis=recorder.n_seed_idis, notes=notes, meta=meta)

    @abstractmethod
    def _search(self, recorder: IDIRecorder, seeds: np.ndarray, rng: np.random.Generator):
        """Run the global and local phases through ``recorder``; return notes (tuple of str) or None.

        Implementations set ``recorder.n_seed_idis`` to the number of seeds that are IDIs.
        """

    def require_capabilities(self, model) -> None:
        """Refuse a model that lacks a method this generator needs (:attr:`needs_gradient`, :attr:`needs_proba`).

        Called by :meth:`run` before anything is queried; front doors call it to refuse before seed selection.

        Parameters
        ----------
        model : CountingModel

        Raises
        ------
        ModelCapabilityError
            Naming the generator, the model and the missing method (``input_gradient`` first).
        """
        model = as_model(model)
        if self.needs_gradient:
            model.require("input_gradient", by=f"generator {self.name!r}")
        if self.needs_proba and not model.has_proba:
            raise ModelCapabilityError(
                f"generator {self.name!r} needs predict_proba() but model {model.name!r} does not provide it: it "
                "answers labels only. Wrap a model that returns probabilities (as_model(..., output='probability') "
                "for a callable that returns them), or use a labels-only generator (aequitas, aft, expga, kosei, "
                "sg, themis)")

    def query_budget(self, n_seeds: int, n_combinations: int, n_features: int | None = None) -> int:
        """Upper bound on model queries: each seed checked once, plus ``max_local`` checks per global IDI.

        The bound of generators whose local phase checks one input per iteration (AEQUITAS, THEMIS);
        generators that also query gradients or surrogate samples override it. Checked by the contract tests.

        Parameters
        ----------
        n_seeds : int
            Seeds given to :meth:`run` (only the first ``max_global`` are used).
        n_combinations : int
            PA-value combinations, i.e. model queries per checked input.
        n_features : int, optional
            Features of the domain; needed by generators whose cost grows with it (MAFT, whose gradient
            estimate probes every feature), ignored by the others.

        Returns
        -------
        int
            ``n * K + n * max_local * K`` with ``n = min(n_seeds, max_global)``, ``K = n_combinations``; one
            more query per checked input whose PA values lie outside the declared PA domains.
        """
        n = min(int(n_seeds), self.max_global)
        return n * n_combinations + n * self.max_local * n_combinations

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


def _budget_spent(spent: QueryBudgetSpent, recorder: IDIRecorder) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The note and the ``meta`` entries of a search the query budget stopped."""
    left = spent.max_queries - spent.spent
    note = (f"stopped: the query budget of {spent.max_queries:,} model queries was spent ({recorder.n_queries:,} by "
            f"this search; the next call, of {spent.asked:,} queries, would have passed it, {left:,} were left)")
    return (note,), {"stopped_by": "max_queries", "max_queries": spent.max_queries}
