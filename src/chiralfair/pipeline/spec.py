"""What your data and model mean, said once: the one description every door takes.

A :class:`DataSpec` holds what chiralfair cannot read off the data or the model by itself: the label column, its
positive and favourable classes, the protected attributes, the bins of numeric columns, the columns coupled to a
protected attribute and the rules every input keeps, and what the model reads (``model_input``) and returns
(``model_output``). It is made once and handed to :func:`~chiralfair.audit`, :func:`~chiralfair.estimate`,
:func:`~chiralfair.retrain`, :func:`~chiralfair.certify` and the gate as ``spec=``, so every door reads the same
meaning of the same data; the command line builds the same object from its flags and ``--schema``. A door given
``spec=`` and one of its fields as a keyword argument as well refuses the call rather than pick one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..exceptions import ConfigError, DatasetError
from .checks import protected_list


@dataclass(frozen=True)
class DataSpec:
    """How to read your data and talk to your model: label, classes, protected attributes, bins, model language.

    Built from keyword arguments, a schema TOML (``chiralfair schema infer``) and command-line flags (flags win,
    :meth:`build`). ``couple`` and ``constraints`` (architecture: counterparts that could exist) are those of
    :func:`~chiralfair.datasets.from_frame`; the schema's ``[couple]`` table and ``constraints`` list apply when none
    are given.

    Parameters
    ----------
    label : column name, optional
        The label column of a frame or file (an encoded Dataset has its own).
    positive_class : object, optional
        The label value that is the model's positive class (encoded as 1). Needed unless the label holds only 0/1.
    favourable : object, optional
        The label value of the favourable outcome; default: the positive class.
    protected : str or sequence, optional
        Protected attributes under test: ``"race,sex"``, a list of names, or a tuple of columns for one attribute
        spread over several (one-hot) columns.
    bins : mapping of column to int or sequence of float, optional
        Bins of numeric columns for the search (:func:`~chiralfair.datasets.from_frame`); the people are never
        binned.
    categories, types : mapping, optional
        Column categories and types from a schema.
    schema : str, optional
        The schema TOML the values were read from.
    couple : mapping or False, optional
        Columns that change with a protected attribute, in the data's own values.
    constraints : str or sequence of str, optional
        Rules every input satisfies, e.g. ``"sex=Female excludes relationship=Husband"``.
    model_input : {"auto", "frame", "values", "codes"}, default="auto"
        What the model reads: ``"frame"`` a DataFrame of the data's columns, ``"values"`` the data's raw numbers in
        column order (a torch module or callable trained on them), ``"codes"`` the integer codes. ``"auto"``: the
        frame for an estimator with string ``feature_names_in_``; otherwise codes where codes are the values, and a
        refusal naming this parameter where they are not.
    model_output : {"probability", "logit"}, optional
        For torch modules and one-column ONNX models: what the output is.

    Notes
    -----
    As scikit-learn's estimators, the object stores what it is given (normalising only the spelling of
    ``protected`` and ``constraints``); each field is checked where it is used, with an error naming it (an unknown
    ``model_input`` when the model is wrapped, an unknown column when the data are read).

    Examples
    --------
    >>> from chiralfair import DataSpec
    >>> spec = DataSpec(label="income", positive_class=">50K", protected="race,sex")
    >>> spec.protected
    ('race', 'sex')
    """

    label: Any = None
    positive_class: Any = None
    favourable: Any = None
    protected: Any = ()  # a str or sequence given; a tuple of names once made
    bins: Mapping[str, Any] = field(default_factory=dict)
    categories: Mapping[str, Sequence] = field(default_factory=dict)
    types: Mapping[str, str] = field(default_factory=dict)
    schema: str | None = None
    couple: Any = None
    constraints: Any = ()  # a str or sequence given; a tuple once made
    model_input: str = "auto"
    model_output: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "protected", protected_list(self.protected or None))
        object.__setattr__(self, "bins", dict(self.bins or {}))
        constraints = self.constraints
        object.__setattr__(self, "constraints",
                           tuple([constraints] if isinstance(constraints, str) else constraints or ()))
        if self.schema is not None:
            object.__setattr__(self, "schema", str(self.schema))

    @classmethod
    def build(cls, *, label=None, positive_class=None, favourable=None, protected=None, bins=None,
              schema=None, couple=None, constraints=None, model_input: str | None = None,
              model_output: str | None = None) -> DataSpec:
        """Lay the given values over those of ``schema`` (a TOML path), if any.

        Parameters
        ----------
        label, positive_class, favourable, protected, bins, couple, constraints, model_input, model_output : optional
            As the class's parameters; None leaves the schema's value (or the default).
        schema : str or path-like, optional
            A schema TOML (``chiralfair schema infer``).

        Returns
        -------
        DataSpec

        Raises
        ------
        DatasetError
            For a schema that cannot be read.
        """
        base: dict[str, Any] = {}
        if schema is not None:
            from ..datasets.schema import read_schema

            base = read_schema(schema)
        return cls(label=base.get("label") if label is None else label,
                   positive_class=base.get("positive_class") if positive_class is None else positive_class,
                   favourable=favourable,
                   protected=base.get("protected") if protected is None else protected,
                   bins={**base.get("bins", {}), **dict(bins or {})}, categories=base.get("categories", {}),
                   types=base.get("types", {}), schema=schema,
                   couple=base.get("couple") if couple is None else couple,
                   constraints=base.get("constraints") if constraints is None else constraints,
                   model_input=model_input or "auto", model_output=model_output)

    def check(self) -> None:
        """Refuse a description that cannot describe a frame: no label, no protected attribute.

        Raises
        ------
        DatasetError
        """
        if self.label is None:
            raise DatasetError("label= is needed to tell the label column of the data (command line: --label COLUMN, "
                               "or a --schema that names it)")
        if not self.protected:
            raise DatasetError("protected= is needed: the protected attribute(s) to test (command line: --protected "
                               "A[,B], or a --schema that names them)")

    def to_dict(self) -> dict[str, Any]:
        """The description as plain values (lists for tuples), as recorded in a run folder.

        Returns
        -------
        dict
        """
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}


# The fields a door also takes one by one as keyword arguments (categories and types come from a schema only).
DOOR_FIELDS = tuple(f.name for f in fields(DataSpec) if f.name not in ("categories", "types"))


def resolve_spec(spec: DataSpec | None, **given: Any) -> DataSpec:
    """The one description of a door's call: ``spec`` or the keyword arguments, laid over the schema once.

    Parameters
    ----------
    spec : DataSpec or None
        The description made by the caller, if any.
    **given
        The door's own keyword arguments of the same names (:data:`DOOR_FIELDS`); None (or ``"auto"`` for
        ``model_input``) means not given.

    Returns
    -------
    DataSpec

    Raises
    ------
    ConfigError
        If ``spec`` is not a DataSpec, or a field is given both in ``spec`` and as a keyword argument.
    DatasetError
        For a schema that cannot be read.
    """
    stated = stated_fields(**given)
    if spec is None:
        return DataSpec.build(**stated)
    if not isinstance(spec, DataSpec):
        raise ConfigError(f"spec= takes a chiralfair.DataSpec, got {type(spec).__name__}")
    twice = sorted(stated)
    if twice:
        raise ConfigError(f"{', '.join(twice)} given both in spec= and as keyword argument(s); give each once "
                          f"(e.g. dataclasses.replace(spec, {twice[0]}=...))")
    if spec.schema is None:
        return spec
    own = {f: getattr(spec, f) for f in DOOR_FIELDS if not _unset(f, getattr(spec, f))}
    return DataSpec.build(**own)


def stated_fields(**given: Any) -> dict[str, Any]:
    """The door's keyword arguments that were given (not None, not the default ``model_input="auto"``).

    Parameters
    ----------
    **given
        Keyword arguments named as :data:`DOOR_FIELDS`.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        For a name that is not a field of :class:`DataSpec`.
    """
    unknown = sorted(set(given) - set(DOOR_FIELDS))
    if unknown:
        raise ConfigError(f"unknown data description field(s) {', '.join(unknown)}; valid: {', '.join(DOOR_FIELDS)}")
    return {k: v for k, v in given.items() if not _unset(k, v)}


def _unset(name: str, value: Any) -> bool:
    if value is None:
        return True
    if name == "model_input":
        return value == "auto"
    if name in ("protected", "constraints", "bins"):
        return len(value) == 0 if not isinstance(value, str) else value == ""
    return False
