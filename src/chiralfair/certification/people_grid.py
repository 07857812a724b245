"""Each person's neighbourhood over their own values: the per-person certificates of a model fed your rows.

A model fed your own rows (a raw-frame pipeline: :attr:`ModelLanguage.reads_people
<chiralfair.models.language.ModelLanguage.reads_people>`) is certified on the population, not on the bins the
search uses (architecture: the population and the domain). For ``similar={"age": 2, "hours-per-week": 4}`` a
person's neighbourhood is every row equal to theirs on every column but the listed ones, whose values are the whole
numbers within the radius of their own (in your units, a binned column included, inside the smallest and largest
value of the data), or the categories given, and the protected attributes (every combination is compared, the
coupled columns changing with them).

The search still runs over integer codes: :func:`people_grid` builds a grid whose codes are your values. The
protected attributes, their coupled columns and the columns a constraint reads keep the domain's codes (they must
be categories or whole numbers, so a code is one value); a listed numeric column's codes are the whole numbers the
people's neighbourhoods hold, in order; every other column's codes are the people's own values, so a point of a
person's box is that person's own row with only the listed and protected columns changed. The model's trees are
read over that grid through the model's own preprocessing (:mod:`.tree_reading`: each split a threshold or a set
of values of your column), and every cell is decided by the model itself on such rows.

Refused, naming the column: a radius on a column that is not numeric or holds values that are not whole numbers, a
neighbourhood of more than :data:`MAX_VALUES` values on one column, a value not in a categorical column, and a
protected, coupled or constrained column that is binned (its code is a bin, not one of your values).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import cast

import numpy as np
import pandas as pd

from ..domain import Domain, Feature
from ..exceptions import ConfigError
from .neighbourhood import check_similar

# Most values one listed column's neighbourhoods may hold together.
MAX_VALUES = 1 << 16


@dataclass(frozen=True, eq=False)
class PeopleGrid:
    """A grid of codes over the people's own values, with each person's boxes.

    Attributes
    ----------
    domain : Domain
        The dataset's domain with its features recoded (same protected attributes, couplings and constraints).
    values : list of pandas.Series
        For each feature, the value of each code (``values[f].iloc[code - lower]``), in the raw column's dtype.
    names : list of str
        The raw frame's columns, in the domain's order.
    X : numpy.ndarray of int64, shape (n_people, n_features)
        The people's own codes on the grid.
    lo, hi : numpy.ndarray of int64, shape (n_boxes, n_features)
        Each box (protected columns hold the person's own codes).
    person : numpy.ndarray of int64, shape (n_boxes,)
        The person (position among the rows given) of each box.
    """

    domain: Domain
    values: list
    names: list
    X: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    person: np.ndarray

    def frame(self, codes) -> pd.DataFrame:
        """The rows of the grid's codes, in your columns and dtypes.

        Parameters
        ----------
        codes : numpy.ndarray of int, shape (n, n_features)

        Returns
        -------
        pandas.DataFrame, shape (n, n_features)
        """
        codes = np.rint(np.asarray(codes)).astype(np.int64)
        lower = self.domain.lower
        return pd.DataFrame({name: self.values[f].iloc[codes[:, f] - lower[f]].to_numpy()
                             for f, name in enumerate(self.names)}).astype(
            {name: self.values[f].dtype for f, name in enumerate(self.names)})

    def model(self, model):
        """The model under test spoken to in the grid's codes: each row decoded by :meth:`frame`, then sent.

        Parameters
        ----------
        model : CountingModel
            Fed your rows.

        Returns
        -------
        CountingModel
            Its ``estimator`` is the model's; every row it is asked about goes to the model's own ``predict``
            (and is counted there too).
        """
        from ..models.language import ModelLanguage
        from ..models.protocol import CountingModel

        language = model.language
        grid_language = ModelLanguage(classes=language.classes, positive_class=language.positive_class,
                                      output="label", to_frame=self.frame, feature_names=language.feature_names,
                                      categories=language.categories, as_values=language.as_values)

        def predict(X):
            return model.predict(self.frame(X))

        wrapped = CountingModel(predict, name=model.name, batch_size=model.batch_size, estimator=model.estimator,
                                language=grid_language)
        return wrapped


def people_grid(dataset, rows: np.ndarray, similar) -> PeopleGrid:
    """Each person's neighbourhood (``similar=``) over their own values, as boxes of a grid of codes.

    Parameters
    ----------
    dataset : Dataset
        With its raw rows (:attr:`Dataset.raw <chiralfair.datasets.Dataset.raw>`).
    rows : numpy.ndarray of int64
        The people (dataset rows).
    similar : mapping
        Feature name to a radius in your units (a numeric column of whole numbers) or a set of values.

    Returns
    -------
    PeopleGrid

    Raises
    ------
    ConfigError
        Naming the column (see the module docstring).
    """
    domain = dataset.domain
    raw = dataset.raw
    codec = dataset.codec
    checked = check_similar(similar, domain, codec, raw=True)
    names = list(domain.names)
    missing = [n for n in names if n not in raw.columns]
    if missing:
        raise ConfigError(f"similar: the data's rows lack the columns {missing}; per-person neighbourhoods are read "
                          "on your rows")
    kept = set(domain.protected) | set(domain.coupled_columns) | {c for rule in domain.constraints
                                                                   for c in rule.columns}
    people = raw.iloc[rows].reset_index(drop=True)
    n, d = len(rows), len(names)
    X = np.zeros((n, d), dtype=np.int64)
    lo = np.zeros((n, d), dtype=np.int64)
    hi = np.zeros((n, d), dtype=np.int64)
    features, values = [], []
    sets: list[tuple[int, np.ndarray]] = []
    for f, name in enumerate(names):
        feature = domain.features[f]
        column = raw[name]
        if f in kept:
            how = codec.columns[f].how if codec is not None else "category"
            why = ("protected" if f in domain.protected else "coupled to a protected attribute"
                   if f in domain.coupled_columns else "read by a constraint")
            if how in ("bin", "rank") or name in checked:
                raise ConfigError(f"similar: column {name!r} is {why} and "
                                  + ("listed in similar" if name in checked else "binned (its codes are bins, not "
                                     "your values)")
                                  + "; per-person neighbourhoods of a model fed your rows keep such a column's own "
                                  "values: give it as categories or whole numbers, and leave it out of similar")
            codes = np.arange(feature.lo, feature.hi + 1)
            decoded = codec.columns[f].decode(codes) if codec is not None else codes
            values.append(_series(decoded, column.dtype))
            features.append(feature)
            X[:, f] = dataset.X[rows, f]
            lo[:, f] = hi[:, f] = X[:, f]
            continue
        radius = checked.get(name)
        if radius is None or isinstance(radius, tuple):  # fixed, or a set of categories: the values themselves
            pool = column if isinstance(radius, tuple) else people[name]
            table = pd.Series(pd.unique(pool), dtype=column.dtype)
            index = pd.Index(table)
            X[:, f] = index.get_indexer(people[name])
            if isinstance(radius, tuple):
                chosen = index.get_indexer(list(radius))
                if (chosen < 0).any():
                    bad = [v for v, c in zip(radius, chosen, strict=True) if c < 0][0]
                    shown = ", ".join(map(str, table.iloc[:20]))
                    raise ConfigError(f"similar: column {name!r} has no value {bad!r}; its values are {shown}")
                sets.append((f, np.unique(chosen)))
            values.append(table)
            features.append(Feature(name, 0, len(table) - 1, "categorical"))
            lo[:, f] = hi[:, f] = X[:, f]
            continue
        table, X[:, f], lo[:, f], hi[:, f] = _whole_numbers(name, column, people[name], float(cast(float, radius)))
        values.append(table)
        features.append(Feature(name, 0, len(table) - 1, "ordinal"))
    grid = replace(domain, features=tuple(features), support=None)
    person = np.arange(n, dtype=np.int64)
    if sets:
        lo, hi, person = _with_sets(lo, hi, X, sets)
    return PeopleGrid(grid, values, names, X, lo, hi, person)


def _series(values, dtype) -> pd.Series:
    series = pd.Series(np.asarray(values, dtype=object) if not isinstance(values, pd.Series) else values)
    try:
        return series.astype(dtype)
    except (TypeError, ValueError):
        return series


def _whole_numbers(name: str, column: pd.Series, own: pd.Series, radius: float):
    """The whole numbers the people's neighbourhoods hold on one column, and each person's codes and box."""
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        raise ConfigError(f"similar: column {name!r} is not numeric in your rows; give it a set of values, not a "
                          "radius")
    data = column.to_numpy(dtype=np.float64)
    present = data[~np.isnan(data)]
    if len(present) == 0 or (present != np.round(present)).any():
        raise ConfigError(f"similar: column {name!r} holds values that are not whole numbers, so a radius in its "
                          "units has no finite set of values; per-person neighbourhoods take radii on columns of "
                          "whole numbers (leave it out of similar)")
    low, high = float(present.min()), float(present.max())
    r = int(math.floor(radius + 1e-9))
    x = own.to_numpy(dtype=np.float64)
    known = ~np.isnan(x)
    ends_lo = np.maximum(x[known] - r, low)
    ends_hi = np.minimum(x[known] + r, high)
    if len(x) and int(np.sum(ends_hi - ends_lo + 1)) > 0:
        starts = np.unique(ends_lo)
        # every whole number some person's neighbourhood holds
        spans = [np.arange(a, b + 1) for a, b in zip(starts, [ends_hi[ends_lo == a].max() for a in starts],
                                                     strict=True)]
        numbers = np.unique(np.concatenate(spans + [x[known]])) if spans else np.unique(x[known])
    else:
        numbers = np.unique(x[known])
    if len(numbers) > MAX_VALUES:
        raise ConfigError(f"similar: the neighbourhoods of {name!r} hold {len(numbers):,} values together (at most "
                          f"{MAX_VALUES:,}); give it a smaller radius or certify fewer people at once")
    has_nan = not known.all()
    table = pd.Series(np.concatenate([numbers, [np.nan]]) if has_nan else numbers)
    if not has_nan and not column.isna().any():
        table = table.astype(column.dtype)
    codes = np.where(known, np.searchsorted(numbers, np.where(known, x, 0.0)), len(numbers))
    box_lo, box_hi = codes.copy(), codes.copy()
    box_lo[known] = np.searchsorted(numbers, ends_lo)
    box_hi[known] = np.searchsorted(numbers, ends_hi)
    return table, codes, box_lo, box_hi


def _with_sets(lo, hi, X, sets):
    """One box per person and chosen value of each set column (their own value once)."""
    import itertools

    person = np.arange(len(X), dtype=np.int64)
    parts_lo, parts_hi, parts_person = [], [], []
    for choice in itertools.product(*[np.concatenate([[-1], codes]) for _, codes in sets]):
        keep = np.ones(len(X), dtype=bool)
        p_lo, p_hi = lo.copy(), hi.copy()
        for (f, _), code in zip(sets, choice, strict=True):
            if code < 0:
                continue
            keep &= X[:, f] != code
            p_lo[:, f] = p_hi[:, f] = code
        parts_lo.append(p_lo[keep])
        parts_hi.append(p_hi[keep])
        parts_person.append(person[keep])
    return np.concatenate(parts_lo), np.concatenate(parts_hi), np.concatenate(parts_person)
