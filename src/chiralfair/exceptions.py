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
