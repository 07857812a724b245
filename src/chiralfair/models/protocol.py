"""The model protocol (architecture: the model under test) and the query-counting wrapper every algorithm talks to.

A model under test needs only ``predict(X) -> (n,) labels``; its adapter (:func:`~chiralfair.models.as_model`)
maps them to {0, 1}, 1 being the positive class. ``predict_proba(X) -> (n, 2)`` and ``input_gradient(X) -> (n, d)``
are optional capabilities; an algorithm that needs one asks
:meth:`CountingModel.require` and gets a :class:`~chiralfair.exceptions.ModelCapabilityError` naming the model
and the missing method otherwise.

Every model call of every algorithm passes :meth:`CountingModel._chunked`, so that is where a model's own failure
(sklearn's "Found unknown categories ['c'] in column 0", a torch shape error) becomes a
:class:`~chiralfair.exceptions.ModelInputError` naming the column and the value at fault: only once the model has
failed are a few more calls spent to find them (a bisection of the batch for one row the model refuses, then the
columns in which that row differs from a row it accepts), so the batched hot path costs nothing more.
:func:`in_domain_terms` then names the feature as the domain does, and whether it is a protected attribute.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from .._validation import check_int
from ..exceptions import ChiralfairError, ModelCallError, ModelCapabilityError, ModelInputError
from .language import ModelLanguage

if TYPE_CHECKING:
    from .zoo import ModelSpec

DEFAULT_BATCH_SIZE = 65_536
# A model's errors that no value of its input explains: a lost connection or a timeout (OSError's subclasses), a
# file it cannot read, memory. They become a ModelCallError quoting them, without a search for a failing row.
NOT_ABOUT_THE_INPUT: tuple[type[BaseException], ...] = (OSError, TimeoutError, MemoryError)


class QueryBudgetSpent(ChiralfairError):
    """A model call would pass the query budget (:meth:`CountingModel.query_budget`), so it was not made.

    Raised before the call: :attr:`CountingModel.n_queries` never passes the budget. A search catches it and ends
    with what it found, saying so (:meth:`chiralfair.generators.Generator.run`).

    Parameters
    ----------
    message : str
    max_queries : int
        The budget, in model queries (rows) since it was set.
    spent : int
        Queries spent under it when the call was refused.
    asked : int
        Queries the refused call would have cost (its rows, twice when it asks labels and probabilities of a
        model that answers them in two calls).
    """

    def __init__(self, message: str, *, max_queries: int, spent: int, asked: int):
        super().__init__(message)
        self.max_queries, self.spent, self.asked = int(max_queries), int(spent), int(asked)


@runtime_checkable
class Model(Protocol):
    """What chiralfair needs from a model under test: a batched ``predict``."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Return labels, shape (n_samples,), for encoded inputs of shape (n_samples, n_features).

        Parameters
        ----------
        X : numpy.ndarray of int64, shape (n_samples, n_features)
            Codes.
        """


class CountingModel:
    """Batched, query-counting access to a model under test.

    Every row passed to any method of the wrapped model adds one to :attr:`n_queries`, once per method called, so
    all generators are measured the same way (architecture: the counting rule, the model under test): labels and
    probabilities of the same rows cost two queries a row, unless one call of the model returns both
    (``predict_both``: a torch module, a model read through its probabilities). A query budget
    (:meth:`query_budget`) is enforced here, before the call, at that real cost. Large requests are split into
    chunks of ``batch_size`` rows to bound memory; a request is never split finer than that.

    Parameters
    ----------
    predict : callable
        ``predict(X: float64 (n, d)) -> (n,)`` labels in {0, 1}, 1 = the positive class.
    predict_proba : callable, optional
        ``predict_proba(X) -> (n, 2)``: P(negative), P(positive) (column 1 is always the positive class).
    input_gradient : callable, optional
        ``input_gradient(X) -> (n, d)``: gradient of the positive-class probability with respect to the
        encoded input.
    name : str
        Shown in errors and reports.
    batch_size : int
        Largest number of rows per call to the underlying model.
    estimator : object, optional
        The wrapped model object, kept for adapters and for training chiral models.
    predict_both : callable, optional
        ``predict_both(X) -> (n, 2)`` columns label and P(y=1) from one forward pass (an optimisation).
    language : ModelLanguage, optional
        How the wrapped model speaks (its classes, positive class, output kind, input frame), as declared to
        :func:`~chiralfair.models.as_model`; the default is a model taking codes and returning labels {0, 1}.

    Attributes
    ----------
    spec : chiralfair.models.zoo.ModelSpec or None
        The zoo configuration the model was trained from (set by ``ModelSpec.fit``), so that a chiral model
        can be trained with the same architecture and hyper-parameters; None for models wrapped directly.
    n_queries : int
        Queries counted (and budgeted) since the last :meth:`reset_queries`.
    n_rows : int
        Every row passed to the wrapped model's methods since it was wrapped, counted or not: the queries, and the
        calls the query count leaves out (:meth:`refused`'s probes, the bisection of a failing batch). Never reset;
        a run reads it before and after a step to say what the step sent outside the budget.
    """

    _budget: tuple[int, int, int] | None = None

    def __init__(self, predict, *, predict_proba=None, input_gradient=None, name: str = "model",
                 batch_size: int = DEFAULT_BATCH_SIZE, estimator=None, predict_both=None,
                 language: ModelLanguage | None = None):
        self.n_rows = 0
        self._predict = self._tallied(predict)
        self._predict_both = self._tallied(predict_both)
        self._predict_proba = self._tallied(predict_proba)
        self._input_gradient = self._tallied(input_gradient)
        self.name = name
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.estimator = estimator
        self.language = language if language is not None else ModelLanguage()
        self.spec: ModelSpec | None = None
        # (model object, as_model's keyword arguments), set by as_model
        self.wrapping: tuple[Any, dict[str, Any]] | None = None
        self.n_queries = 0
        self.n_gradient_queries = 0
        # (absolute cap on n_queries, the budget it came from, n_queries when it was set), or None: no budget
        self._budget = None

    def _tallied(self, fn):
        """``fn`` adding the rows of each call to :attr:`n_rows` (None stays None)."""
        if fn is None:
            return None

        def call(X):
            self.n_rows += len(X)
            return fn(X)
        return call

    @property
    def one_pass(self) -> bool:
        """Whether one call of the model gives labels and probabilities (else :meth:`predict_with_proba` costs 2n)."""
        return self._predict_both is not None

    @property
    def positive_index(self) -> int:
        """Index of the positive class among the wrapped model's own classes (its ``predict_proba`` column)."""
        return self.language.positive_index

    @property
    def takes_frame(self) -> bool:
        """Whether the wrapped model is fed a DataFrame (``to_frame``) rather than the integer codes."""
        return self.language.takes_frame

    @property
    def reads_people(self) -> bool:
        """Whether the data's rows as given are sent to the model (:attr:`ModelLanguage.reads_people`)."""
        return self.language.reads_people

    # -------------------------------------------------------------- capabilities
    @property
    def has_proba(self) -> bool:
        """Whether :meth:`predict_proba` is available."""
        return self._predict_proba is not None

    @property
    def has_gradient(self) -> bool:
        """Whether :meth:`input_gradient` is available."""
        return self._input_gradient is not None

    def require(self, capability: str, *, by: str) -> None:
        """Raise unless the model has ``capability`` (``"predict_proba"`` or ``"input_gradient"``).

        Parameters
        ----------
        capability : {"predict_proba", "input_gradient"}
        by : str
            The algorithm that needs it, for the message.

        Raises
        ------
        ModelCapabilityError
            Naming the model, the missing method and the algorithm ``by`` that needs it.
        """
        have = {"predict_proba": self.has_proba, "input_gradient": self.has_gradient}[capability]
        if not have:
            hint = (" Gradient generators need a torch module or sklearn MLPClassifier/LogisticRegression;"
                    " use a black-box generator (aequitas, sg, themis) instead."
                    if capability == "input_gradient" else "")
            raise ModelCapabilityError(f"{by} needs {capability}() but model {self.name!r} does not provide it.{hint}")

    # -------------------------------------------------------------- calls
    def predict(self, X) -> np.ndarray:
        """Predicted labels.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        numpy.ndarray of int64, shape (n_samples,)
            1 = the positive class, 0 = the other. Costs n_samples model queries.
        """
        return self._chunked(self._predict, X, count="n_queries").astype(np.int64, copy=False).reshape(-1)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape (n_samples, 2); costs n_samples queries.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, 2)

        Raises
        ------
        ModelCapabilityError
            If the model has no ``predict_proba``.
        """
        self.require("predict_proba", by="predict_proba")
        return self._chunked(self._predict_proba, X, count="n_queries").astype(np.float64)

    def predict_with_proba(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Labels and positive-class probabilities of the same rows: n queries in one pass, else 2 n.

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        labels : numpy.ndarray of int64, shape (n_samples,)
        proba : numpy.ndarray of float64, shape (n_samples,)
            P(y = 1). Costs n_samples queries when one call of the model gives both (:attr:`one_pass`), else
            2 n_samples (``predict`` and ``predict_proba`` each see the rows).

        Raises
        ------
        ModelCapabilityError
            If the model has no ``predict_proba``.
        """
        self.require("predict_proba", by="predict_with_proba")
        both = self._predict_both or (lambda Z: np.column_stack([self._predict(Z), self._predict_proba(Z)[:, 1]]))
        out = self._chunked(both, X, count="n_queries", calls=1 if self.one_pass else 2)
        return out[:, 0].astype(np.int64), out[:, 1].astype(np.float64)

    def input_gradient(self, X) -> np.ndarray:
        """Gradient of the positive-class probability w.r.t. the encoded input, shape (n_samples, n_features).

        Costs n_samples queries (also counted in :attr:`n_gradient_queries`).

        Parameters
        ----------
        X : array-like of int, shape (n_samples, n_features)
            Codes.

        Returns
        -------
        numpy.ndarray of float64, shape (n_samples, n_features)

        Raises
        ------
        ModelCapabilityError
            If the model has no gradient.
        """
        self.require("input_gradient", by="input_gradient")
        out = self._chunked(self._input_gradient, X, count="n_queries").astype(np.float64)
        self.n_gradient_queries += len(X)
        return out

    def spend(self, n: int) -> None:
        """Count ``n`` gradient queries sent to the model object outside this wrapper, refusing them past the budget.

        For an algorithm that must run the model outside this wrapper (shap.DeepExplainer runs a copy of a torch
        module): its rows are queries like any other's, counted in :attr:`n_queries`,
        :attr:`n_gradient_queries` and :attr:`n_rows`, and refused (:class:`QueryBudgetSpent`) before they are sent
        when they would pass the budget.

        Parameters
        ----------
        n : int
            Rows about to be sent (for DeepLIFT, one per (explained row, reference row) pair).

        Raises
        ------
        QueryBudgetSpent
            If ``n`` more queries would pass the current :meth:`query_budget`.
        """
        n = check_int(n, "n", minimum=0)
        self._spend("n_queries", n)
        self.n_gradient_queries += n
        self.n_rows += n

    # -------------------------------------------------------------- the query budget
    @contextmanager
    def query_budget(self, max_queries: int | None) -> Iterator[None]:
        """Within the block, refuse any call that would bring the queries past ``max_queries`` more than now.

        A refused call raises :class:`QueryBudgetSpent` before it reaches the model, so :attr:`n_queries` never
        passes the budget. Budgets nest: inside another one, the smaller remainder holds.

        Parameters
        ----------
        max_queries : int or None
            Model queries (rows) allowed inside the block, >= 0; None sets no budget (an outer one still holds).

        Yields
        ------
        None
            The block runs under the budget; on leaving it, the outer budget (or none) holds again.

        Raises
        ------
        ConfigError
            If ``max_queries`` is not an int >= 0.
        """
        if max_queries is None:
            yield
            return
        max_queries = check_int(max_queries, "max_queries", minimum=0)
        outer = self._budget
        cap = self.n_queries + max_queries
        self._budget = (cap, max_queries, self.n_queries) if outer is None or cap < outer[0] else outer
        try:
            yield
        finally:
            self._budget = outer

    @property
    def remaining_queries(self) -> int | None:
        """Queries left under the current :meth:`query_budget`; None when there is none."""
        return None if self._budget is None else max(self._budget[0] - self.n_queries, 0)

    def over_budget(self, n: int) -> QueryBudgetSpent:
        """The error refusing a call of ``n`` queries under the current :meth:`query_budget` (not raised here).

        For a caller that sends what fits of a batch and then stops (the IDI recorder's last check).

        Parameters
        ----------
        n : int
            Queries of the call that does not fit.

        Returns
        -------
        QueryBudgetSpent

        Raises
        ------
        RuntimeError
            If no query budget is in force.
        """
        if self._budget is None:
            raise RuntimeError("over_budget() needs a query budget in force (CountingModel.query_budget)")
        cap, budget, start = self._budget
        return QueryBudgetSpent(
            f"model {self.name!r}: a call of {n:,} queries would pass the query budget of {budget:,} "
            f"({self.n_queries - start:,} spent, {cap - self.n_queries:,} left), so it was not made",
            max_queries=budget, spent=self.n_queries - start, asked=n)

    def _spend(self, count: str, n: int) -> None:
        """Count ``n`` queries about to be sent, or refuse them (:class:`QueryBudgetSpent`) if they pass the budget."""
        if self._budget is not None and count == "n_queries" and self.n_queries + n > self._budget[0]:
            raise self.over_budget(n)
        setattr(self, count, getattr(self, count) + n)

    def _chunked(self, fn, X, *, count: str, calls: int = 1) -> np.ndarray:
        """``fn`` over ``X`` in chunks, after counting ``calls`` queries a row (the model methods ``fn`` calls)."""
        if is_frame(X):  # rows as the user gave them, for a model fed frames (Dataset.raw)
            return self._chunked_frame(fn, X, count=count, calls=calls)
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"model input must be 2-D (n_samples, n_features), got shape {X.shape}")
        n = X.shape[0]
        self._spend(count, n * calls)
        if n <= self.batch_size:
            return self._call(fn, X)
        return np.concatenate([self._call(fn, X[i:i + self.batch_size]) for i in range(0, n, self.batch_size)])

    def _chunked_frame(self, fn, frame, *, count: str, calls: int = 1) -> np.ndarray:
        if not self.takes_frame:
            raise ModelCapabilityError(f"model {self.name!r} takes integer codes, not a DataFrame of rows: send it "
                                       "the codes (Dataset.X)")
        n = len(frame)
        self._spend(count, n * calls)
        parts = [frame.iloc[i:i + self.batch_size] for i in range(0, n, self.batch_size)] or [frame]
        out = []
        for part in parts:
            try:
                out.append(np.asarray(fn(part)))
            except ChiralfairError:
                raise
            except NOT_ABOUT_THE_INPUT as err:
                raise model_call_error(self.name, err, len(part)) from err
            except Exception as err:  # the model's own error on the user's rows: quoted, with a row that fails
                raise _frame_input_error(self.name, fn, part, err) from err
        return out[0] if len(out) == 1 else np.concatenate(out)

    def _call(self, fn, X: np.ndarray) -> np.ndarray:
        try:
            return np.asarray(fn(X))
        except ChiralfairError:  # already clear (the adapters' own checks)
            raise
        except NOT_ABOUT_THE_INPUT as err:  # a connection, a timeout, memory: no row to look for
            raise model_call_error(self.name, err, len(X)) from err
        except Exception as err:  # the model's own error, e.g. sklearn's "Found unknown categories"
            raise self._input_error(fn, X, err) from err

    def refused(self, X) -> tuple[np.ndarray, str | None]:
        """Which rows the model fails on, each alone: for probing inputs before a search.

        A batch the model fails on is split in halves until the failing rows are single, so ``k`` refused rows
        among ``n`` cost about ``k log2(n)`` calls (one call when none is refused). The calls go to the wrapped
        model directly and are not counted in :attr:`n_queries`.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)

        Returns
        -------
        refused : numpy.ndarray of bool, shape (n_samples,)
        first_error : str or None
            ``"ErrorType: first line of the message"`` of the first failure; None when no row is refused.

        Raises
        ------
        ChiralfairError
            Errors of chiralfair's own checks (a label outside the classes, a code with no value) are not a
            refusal: they are raised.
        ModelCallError
            When the model's error is not about its input (:data:`NOT_ABOUT_THE_INPUT`: a lost connection, a
            timeout, memory), quoting it.
        """
        X = np.asarray(X, dtype=np.float64)
        refused = np.zeros(len(X), dtype=bool)
        first: list[str] = []

        def visit(index: np.ndarray) -> None:
            try:
                self._predict(X[index])
                return
            except ChiralfairError:
                raise
            except NOT_ABOUT_THE_INPUT as err:
                raise model_call_error(self.name, err, len(index)) from err
            except Exception as err:
                if not first:
                    first.append(_error_text(err))
            if len(index) == 1:
                refused[index] = True
                return
            half = len(index) // 2
            visit(index[:half])
            visit(index[half:])

        for start in range(0, len(X), self.batch_size):
            index = np.arange(start, min(start + self.batch_size, len(X)))
            if len(index):
                visit(index)
        return refused, (first[0] if first else None)

    def _input_error(self, fn, X: np.ndarray, err: Exception) -> ModelCapabilityError:
        """A ModelInputError for ``fn``'s failure on ``X``: one refused row and, if one explains it, the column.

        A :class:`ModelCallError` instead when no value explains it: the model fails on every row tried, and
        those rows share no value, or a call made to find the row fails for a reason not about the input.
        """
        text = _error_text(err)
        try:
            row, reference = _failing_row(fn, X)
        except NOT_ABOUT_THE_INPUT as again:
            return model_call_error(self.name, again, len(X))
        if row is None:
            return ModelInputError(f"model {self.name!r} fails on a batch of {len(X)} rows but on no row of it alone "
                                   f"({text})", model_name=self.name, model_error=text)
        if reference is None and (_share_no_value(X[_spread(len(X))]) or not _shared_values_explain(
                fn, X.astype(object), row, lambda changed: _array_probe(X, row, changed))):
            return failing_everywhere(self.name, text, len(_spread(len(X))))
        columns = [] if reference is None else _refused_columns(fn, X[row], reference)
        if len(columns) == 1:
            j = columns[0]
            frame = self._decoded(X[row])
            text = with_column_named(text, None if frame is None else str(frame.columns[j]))
            return ModelInputError(
                f"model {self.name!r} fails on inputs whose {self._describe(X[row], j)} ({text}): it cannot decide "
                "on such an input, most likely because it never saw that value when it was fitted (e.g. an encoder "
                f"with handle_unknown='error'). {MODEL_INPUT_ADVICE}",
                model_name=self.name, column=j, code=int(X[row, j]), model_error=text)
        return ModelInputError(f"model {self.name!r} fails on inputs such as {self._describe(X[row])} ({text}). "
                               f"{MODEL_INPUT_ADVICE}", model_name=self.name, model_error=text)

    def _decoded(self, row: np.ndarray):
        """The one-row frame a model fed a frame gets for ``row``, or None (a model fed codes, or no decoding)."""
        to_frame = self.language.to_frame
        if to_frame is None:
            return None
        try:
            return to_frame(np.rint(row[None, :]).astype(np.int64))
        except Exception:  # a row that does not decode is shown as codes
            return None

    def _describe(self, row: np.ndarray, column: int | None = None) -> str:
        """``column 'race' is 'c'`` (decoded, for a model fed a frame) or ``column 3 is code 7``.

        Without ``column``, the whole row.
        """
        frame = self._decoded(row)
        if column is None:
            if frame is not None:
                values = [v.item() if hasattr(v, "item") else v for v in frame.iloc[0]]
                return "{" + ", ".join(f"{c!r}: {v!r}" for c, v in zip(frame.columns, values, strict=True)) + "}"
            return "codes " + str([int(v) if float(v).is_integer() else float(v) for v in row])
        if frame is not None:
            value = frame.iloc[0, column]
            return f"column {frame.columns[column]!r} is {value.item() if hasattr(value, 'item') else value!r}"
        return f"column {column} is code {int(row[column])}"

    def reset_queries(self) -> None:
        """Set the query counters to zero (a query budget in force keeps what it has left)."""
        if self._budget is not None:
            cap, budget, start = self._budget
            self._budget = (cap - self.n_queries, budget, start - self.n_queries)
        self.n_queries = 0
        self.n_gradient_queries = 0

    def __repr__(self) -> str:
        caps = [c for c, h in (("proba", self.has_proba), ("gradient", self.has_gradient)) if h]
        return f"CountingModel({self.name!r}, capabilities={caps}, n_queries={self.n_queries})"


def is_frame(X) -> bool:
    """Whether ``X`` is a DataFrame of rows (the population) rather than an array of codes.

    Parameters
    ----------
    X : object

    Returns
    -------
    bool
    """
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _frame_input_error(name: str, fn, frame, err: Exception) -> ModelCapabilityError:
    """A ModelInputError for a model failing on rows given as a frame: the model's text and one row it refuses.

    A :class:`ModelCallError` when no value explains the failure (:meth:`CountingModel._input_error`).
    """
    text = _error_text(err)
    try:
        row = None
        low, high = 0, len(frame)
        while high - low > 1:  # bisection for one refused row: about log2(n) calls, only once the model has failed
            mid = (low + high) // 2
            if _fails(fn, frame.iloc[low:mid]):
                high = mid
            elif _fails(fn, frame.iloc[mid:high]):
                low = mid
            else:
                break
        if high - low == 1 and _fails(fn, frame.iloc[low:high]):
            tried = _spread(len(frame))
            if len(tried) > 1 and not any(not _fails(fn, frame.iloc[i:i + 1]) for i in tried if i != low):
                # every row tried fails: unless they share a value, none explains it
                values = frame.astype(object).to_numpy()
                if _share_no_value(values[tried]) or not _shared_values_explain(
                        fn, values, low, lambda changed: _frame_probe(frame, low, changed)):
                    return failing_everywhere(name, text, len(tried))
            values = {str(c): (v.item() if hasattr(v, "item") else v) for c, v in frame.iloc[low].items()}
            row = f" such as {values}"
    except NOT_ABOUT_THE_INPUT as again:
        return model_call_error(name, again, len(frame))
    return ModelInputError(f"model {name!r} fails on the given rows{row or ''} ({text}). {MODEL_INPUT_ADVICE}",
                           model_name=name, model_error=text)


def model_call_error(name: str, err: BaseException, n_rows: int) -> ModelCallError:
    """The error of a model that failed for a reason not about its input (:data:`NOT_ABOUT_THE_INPUT`).

    Parameters
    ----------
    name : str
        The model's name.
    err : BaseException
        Its error, quoted.
    n_rows : int
        Rows of the call that failed.

    Returns
    -------
    ModelCallError
    """
    text = _error_text(err)
    advice = (f"lower batch_size (as_model(..., batch_size=...); this call sent {n_rows:,} rows)"
              if isinstance(err, MemoryError) else
              "check that the model can be reached and answers (call it on a few data rows yourself), then run again")
    return ModelCallError(f"model {name!r} failed on a call of {n_rows:,} rows ({text}); this is the model's own "
                          f"failure, not about a value of its input: {advice}", model_name=name, model_error=text)


def failing_everywhere(name: str, text: str, n_tried: int) -> ModelCallError:
    """The error of a model that fails on every row tried, whatever their values (so none explains it).

    The rows tried share no value, or share some and one fails with those changed too.

    Parameters
    ----------
    name : str
        The model's name.
    text : str
        Its error, ``"ErrorType: first line"``.
    n_tried : int
        Rows tried one by one.

    Returns
    -------
    ModelCallError
    """
    return ModelCallError(f"model {name!r} fails on each of {n_tried} rows tried one by one, whatever their "
                          f"values (none they share, nor any other), with {text}: no value of its input explains "
                          "it. Check that the model is fitted and "
                          "takes these columns (call it on a few data rows yourself)", model_name=name,
                          model_error=text)


def _spread(n: int) -> np.ndarray:
    """Up to :data:`REFERENCE_TRIES` row numbers spread over ``n`` rows (the rows tried one by one)."""
    return np.unique(np.linspace(0, n - 1, min(REFERENCE_TRIES, n)).astype(np.int64))


def _share_no_value(rows: np.ndarray) -> bool:
    """Whether at least two rows are given and no column holds one value in all of them."""
    if len(rows) < 2:
        return False
    same = np.ones(rows.shape[1], dtype=bool)
    for j in range(rows.shape[1]):  # columns, not rows: a few dozen at most
        column = rows[:, j]
        same[j] = all(_equal(v, column[0]) for v in column[1:])
    return not same.any()


def _shared_values_explain(fn, values: np.ndarray, row: int, probe) -> bool:
    """Whether the values that the rows tried one by one (:func:`_spread`) all share may explain why each fails.

    The failing ``row`` with each shared value replaced by another value of its column in the batch is sent once:
    a model that fails on it too fails whatever those values are (a model never fitted, a broken one), so no
    value of the input explains the failure. A shared column with one value in the whole batch cannot be varied:
    its value may explain it.

    Parameters
    ----------
    fn : callable
        The model's method that failed.
    values : numpy.ndarray of object, shape (n, d)
        The batch's cells.
    row : int
        A row ``fn`` fails on alone.
    probe : callable
        ``probe({column: value}) -> input``: ``row`` with those cells changed, as ``fn`` takes it.

    Returns
    -------
    bool
    """
    tried = values[_spread(len(values))]
    changed = {}
    for j in range(values.shape[1]):  # columns, not rows: a few dozen at most
        if not all(_equal(v, tried[0, j]) for v in tried[1:, j]):
            continue
        other = next((v for v in values[:, j] if not _equal(v, values[row, j])), _NONE)
        if other is _NONE:
            return True
        changed[j] = other
    if not changed:
        return False
    try:
        return not _fails(fn, probe(changed))
    except Exception:  # a probe that cannot be built or sent: the old answer, a value may explain it
        return True


_NONE = object()


def _array_probe(X: np.ndarray, row: int, changed: dict) -> np.ndarray:
    out = X[row:row + 1].copy()
    for j, v in changed.items():
        out[0, j] = v
    return out


def _frame_probe(frame, row: int, changed: dict):
    out = frame.iloc[row:row + 1].copy()
    for j, v in changed.items():
        out.iloc[0, j] = v
    return out


def _equal(a, b) -> bool:
    """``a == b`` for one cell, missing values equal to each other."""
    try:
        if a != a and b != b:  # NaN
            return True
        return bool(a == b)
    except (TypeError, ValueError):
        return a is b


def from_positive_probability(proba1, *, name, batch_size, estimator, language, gradient=None) -> CountingModel:
    """A CountingModel whose labels are P(positive) > 0.5, from ``proba1(X) -> (n,)`` P(positive).

    Parameters
    ----------
    proba1 : callable
        ``proba1(X: (n, d) codes) -> (n,)`` positive-class probabilities.
    name, batch_size, estimator, language
        As for :class:`CountingModel`.
    gradient : callable, optional
        ``gradient(X) -> (n, d)``, d P(positive) / d X.

    Returns
    -------
    CountingModel
        Labels, probabilities and both from one call of ``proba1`` each.
    """
    def predict(X):
        return (proba1(X) > 0.5).astype(np.int64)

    def predict_proba(X):
        p = proba1(X)
        return np.column_stack([1 - p, p])

    def predict_both(X):
        p = proba1(X)
        return np.column_stack([(p > 0.5).astype(np.float64), p])

    return CountingModel(predict, predict_proba=predict_proba, input_gradient=gradient, name=name,
                         batch_size=batch_size, estimator=estimator, predict_both=predict_both, language=language)


MODEL_INPUT_ADVICE = (
    "If the column is a protected attribute, leave the value out of its values "
    "(chiralfair.models.probe.restrict_to_accepted_values(model, dataset), as chiralfair.audit does, or "
    "dataset.with_protected([...], values={...})); otherwise check every value a search may send before it with "
    "chiralfair.models.probe.check_model_accepts_values(model, dataset), or refit the model so that it accepts them "
    "(e.g. OneHotEncoder(handle_unknown='ignore'))")


# First lines that only announce the real cause, given on the error's last line (TorchScript's interpreter).
_ANNOUNCING = ("The following operation failed in the TorchScript interpreter",)


def _error_text(err: BaseException) -> str:
    """``"ErrorType: the line that says what went wrong"`` (at most 200 characters of it).

    The message's first line, unless it only announces a cause written on its last line (a TorchScript module's
    ``RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x3 and 5x1)`` after its traceback).
    """
    lines = [line for line in str(err).splitlines() if line.strip()] or [""]
    if lines[0].startswith(_ANNOUNCING) and len(lines) > 1:
        return lines[-1].strip()[:200]
    return f"{type(err).__name__}: {lines[0][:200]}"


_COLUMN_INDEX = re.compile(r"\bin column \d+\b")


def with_column_named(text: str, name: str | None) -> str:
    """The model's error text with the data's column name for its column index.

    sklearn's "in column 0" is an index into one encoder's columns, not the data's: it becomes ``in column
    'workclass'``, or a neutral phrase when ``name`` is None (several columns).

    Parameters
    ----------
    text : str
        The model's error message.
    name : str or None
        The data's column the error is about, if known.

    Returns
    -------
    str
    """
    return _COLUMN_INDEX.sub(f"in column {name!r}" if name is not None else "in one of its input columns", text)


def _fails(fn, X: np.ndarray) -> bool:
    try:
        fn(X)
    except ChiralfairError:
        raise
    except NOT_ABOUT_THE_INPUT:  # not the rows' fault: the caller says so (ModelCallError)
        raise
    except Exception:
        return True
    return False


# Rows of a failing batch tried one by one for a row the model accepts, when the bisection met none.
REFERENCE_TRIES = 16


def _failing_row(fn, X: np.ndarray) -> tuple[int | None, np.ndarray | None]:
    """One row ``fn`` fails on alone (bisection: about log2(n) calls) and one row it accepts, each or None."""
    index, reference = np.arange(len(X)), None
    while len(index) > 1:
        first, second = index[: len(index) // 2], index[len(index) // 2:]
        if _fails(fn, X[first]):
            index = first
        else:
            reference = X[first[0]]
            index = second
    if not _fails(fn, X[index]):
        return None, reference
    if reference is None:  # every half tried failed: look for an accepted row among a spread of the others
        for i in _spread(len(X)):
            if not _fails(fn, X[i:i + 1]):
                reference = X[i]
                break
    return int(index[0]), reference


def _refused_columns(fn, row: np.ndarray, reference: np.ndarray) -> list[int]:
    """The columns whose value of ``row``, put into ``reference`` (a row ``fn`` accepts), makes ``fn`` fail."""
    out = []
    for j in np.flatnonzero(row != reference):
        probe = reference.copy()
        probe[j] = row[j]
        if _fails(fn, probe[None, :]):
            out.append(int(j))
    return out


def in_domain_terms(err: ModelInputError, domain) -> ModelInputError:
    """The same error, naming the feature and the value as ``domain`` does and whether it is a protected attribute.

    Parameters
    ----------
    err : ModelInputError
        As raised by :class:`CountingModel` (its column is a feature index).
    domain : Domain

    Returns
    -------
    ModelInputError
        ``err`` itself when no single column explains it or it was already put in domain terms.
    """
    if err.column is None or err.in_domain_terms or not 0 <= err.column < domain.n_features:
        return err
    feature = domain.features[err.column]
    value = feature.label(err.code)
    err.model_error = with_column_named(err.model_error, feature.name)
    attribute = next((a.name for a in domain.attributes if err.column in a.columns), None)
    if attribute is not None:
        message = (f"model {err.model_name!r} refuses protected attribute {attribute!r} value {value!r} "
                   f"({err.model_error}): it cannot decide on an input holding it, most likely because it never saw "
                   "the value when it was fitted. Leave the value out of the attribute's values: "
                   "chiralfair.models.probe.restrict_to_accepted_values(model, dataset) (what chiralfair.audit does), "
                   f"or dataset.with_protected([{attribute!r}], values={{{attribute!r}: [...]}}) without it")
    else:
        message = (f"model {err.model_name!r} refuses column {feature.name!r} value {value!r} (code {err.code}; a "
                   f"generator may propose any code in the column's bounds [{feature.lo}, {feature.hi}]) "
                   f"({err.model_error}): it cannot decide on an input holding it, most likely because it never saw "
                   "the value when it was fitted. Check every value before a search with "
                   "chiralfair.models.probe.check_model_accepts_values(model, dataset) (it names them all, and lets "
                   "an integer column with gaps between its values take only the values the data holds), or refit "
                   "the model so that it accepts them (e.g. OneHotEncoder(handle_unknown='ignore'))")
    out = ModelInputError(message, model_name=err.model_name, column=err.column, code=err.code,
                          model_error=err.model_error)
    out.in_domain_terms = True
    return out
