"""Exception hierarchy of chiralfair.

Every error names the column, value, bound or parameter at fault. Each class also subclasses the matching
built-in (``ValueError``, ``TypeError``, ``FileNotFoundError``) so that callers who catch those still work.
"""


class ChiralfairError(Exception):
    """Base class of every error raised by chiralfair."""


class ConfigError(ChiralfairError, ValueError):
    """A parameter has a value outside what it accepts (the message names the parameter and the bound)."""


class DomainError(ChiralfairError, ValueError):
    """Inputs or a domain definition are inconsistent (the message names the feature and the bound)."""


class DatasetError(ChiralfairError, ValueError):
    """A dataset is unknown, malformed or does not support the request (names the file, line and column)."""


class DataHomeError(ChiralfairError, FileNotFoundError):
    """A raw data file is not in the data home and cannot be downloaded."""


class ChecksumError(ChiralfairError, ValueError):
    """A raw data file's SHA-256 differs from the expected digest (the message gives both digests)."""


class ModelCapabilityError(ChiralfairError, TypeError):
    """A model lacks a capability that an algorithm needs (the message names the model and the method)."""


class ModelInputError(ModelCapabilityError):
    """The model under test fails on an input (e.g. a category its encoder never saw when it was fitted).

    The message names the model, the column and the value at fault (when one column explains the failure), the
    model's own error, and what to do.

    Attributes
    ----------
    model_name : str
    column : int or None
        Index of the feature whose value the model refuses, when a single one does.
    code : int or None
        That feature's code in the input.
    model_error : str
        ``"ErrorType: first line of the model's message"``.
    in_domain_terms : bool
        Whether the message already names the feature and value as the domain does
        (:func:`chiralfair.models.protocol.in_domain_terms`).
    """

    in_domain_terms: bool = False

    def __init__(self, message: str, *, model_name: str = "model", column: int | None = None,
                 code: int | None = None, model_error: str = ""):
        super().__init__(message)
        self.model_name, self.column, self.code, self.model_error = model_name, column, code, model_error


class ModelCallError(ModelCapabilityError):
    """The model under test failed, and no value of its input explains it.

    Its error is not about the input (a lost connection, a timeout, a file or memory error), or it failed on every
    row tried alike, rows that share no value. The message quotes the model's error and gives no advice about
    protected values.

    Attributes
    ----------
    model_name : str
    model_error : str
        ``"ErrorType: first line of the model's message"``.
    """

    def __init__(self, message: str, *, model_name: str = "model", model_error: str = ""):
        super().__init__(message)
        self.model_name, self.model_error = model_name, model_error


class ModelFileError(ChiralfairError, ValueError):
    """A model file cannot be loaded: missing, unsupported, untrusted, or not interpretable (names the file)."""


class RunFolderError(ChiralfairError, ValueError):
    """An output folder cannot be used for a run (it exists and is not a previous run)."""


class DataWarning(UserWarning):
    """The data looks like it will give a misleading answer; the message names the columns and the fix.

    Raised as a warning for an ID-like feature, one-hot protected columns declared one by one, or a label with
    several spellings of one value.
    """


class ModelOutputError(ChiralfairError, ValueError):
    """A model's output contradicts the language declared for it.

    The message names the model, the value seen and the parameter that fixes it (``output=``,
    ``positive_class=``, ``classes=``).
    """


class MissingDependencyError(ChiralfairError, ImportError):
    """An optional dependency (torch) is needed and not installed (the message says how to install it)."""


class TimeLimitError(ChiralfairError, TimeoutError):
    """A job ran past its time limit (the message names the limit and the step it was in)."""


class GridError(ConfigError):
    """An experiment grid file is invalid (the message names the key at fault and the valid values)."""


class Refusals(ChiralfairError, ValueError):
    """Several problems with one request, found before anything expensive ran, reported together.

    Attributes
    ----------
    errors : list of ChiralfairError
        Each problem, with its own message (and type).
    """

    def __init__(self, errors):
        self.errors = list(errors)
        super().__init__(f"{len(self.errors)} problems, to fix together: "
                         + " ".join(f"({i}) {e}" for i, e in enumerate(self.errors, 1)))


class Problems:
    """Collects the refusals of several independent checks, so that one message lists them all.

    Examples
    --------
    >>> problems = Problems()
    >>> with problems.check():
    ...     raise DatasetError("label column 'y' is not in the data")
    >>> with problems.check():
    ...     raise ConfigError("max_global must be >= 1, got 0")
    >>> try:
    ...     problems.raise_all()
    ... except Refusals as err:
    ...     print(len(err.errors))
    2
    """

    def __init__(self) -> None:
        self.errors: list[ChiralfairError] = []

    def __bool__(self) -> bool:
        return bool(self.errors)

    def check(self):
        """A context in which a :class:`ChiralfairError` is kept for later instead of raised.

        Returns
        -------
        contextlib.AbstractContextManager
        """
        import contextlib

        @contextlib.contextmanager
        def keep():
            try:
                yield
            except Refusals as err:
                self.errors.extend(err.errors)
            except ChiralfairError as err:
                self.errors.append(err)
        return keep()

    def none_but(self, start: str) -> bool:
        """Whether every problem kept so far is one whose message starts with ``start``.

        Parameters
        ----------
        start : str

        Returns
        -------
        bool
        """
        return all(str(e).startswith(start) for e in self.errors)

    def raise_all(self) -> None:
        """Raise what was kept: nothing, the one error itself, or :class:`Refusals` holding them all.

        Raises
        ------
        ChiralfairError
            The one problem kept (its own type).
        Refusals
            When several were kept.
        """
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise Refusals(self.errors)
