"""The benchmark datasets by name, loaded with a chosen protected attribute (descriptions: ``datasets.describe``).

Each dataset is encoded from its raw file in the data home (see :mod:`chiralfair.datasets.home`). Parsed
datasets are cached in memory per raw file (path, modification time and size); every call returns fresh
arrays.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from ..domain import Domain
from ..domain.coupling import check_coupled_attributes
from ..exceptions import ChecksumError, DatasetError
from . import bank, census, compas, german, home, parsed_cache
from ._spec import DatasetSpec, Encoded
from .base import Dataset
from .published import unknown_protected_error

logger = logging.getLogger(__name__)

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (census.SPEC, compas.SPEC, bank.SPEC,
                                                                   german.SPEC)}


def dataset_names() -> list[str]:
    """Names of the benchmark datasets, in the order of :data:`DATASETS`.

    Returns
    -------
    list of str
    """
    return list(DATASETS)


def dataset_spec(name: str) -> DatasetSpec:
    """Return the :class:`DatasetSpec` of ``name``.

    Parameters
    ----------
    name : str
        A benchmark dataset: ``census``, ``compas``, ``bank`` or ``german``.

    Returns
    -------
    DatasetSpec
        Its raw files, label, protected attributes and encoder.

    Raises
    ------
    DatasetError
        If ``name`` is not a benchmark dataset; the message lists the valid names.
    """
    try:
        return DATASETS[name]
    except (KeyError, TypeError):
        raise DatasetError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}") from None


def load_dataset(name: str, *, protected: str | Sequence[str] | None = None,
                 data_home: str | os.PathLike | None = None,
                 allow_checksum_mismatch: bool = False, couple=None, constraints=None) -> Dataset:
    """Load a benchmark dataset, encoded from its raw file, with its protected attributes set.

    Parameters
    ----------
    name : {"census", "compas", "bank", "german"}
    protected : str or sequence of str, optional
        Protected attribute names (any feature). Default: the dataset's first protected attribute in the
        literature: census ``age`` (of age, race, sex), compas ``sex`` (of sex, age, race), bank ``age``,
        german ``sex`` (of sex, age). Each one's domain is the set of values observed in the data.
    data_home : str or path-like, optional
        Folder holding the raw files in the layout ``<dataset>/raw/<file>``; default ``$CHIRALFAIR_DATA``,
        else the user cache folder (where a missing file is downloaded).
    allow_checksum_mismatch : bool
        Use a raw file whose SHA-256 differs from the published one (a warning is logged).
    couple : mapping, None or False
        Columns that change with a protected attribute (architecture: counterparts that could exist;
        :meth:`Domain.with_couplings <chiralfair.domain.Domain.with_couplings>`). None (default): the dataset's own
        couplings, on census ``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}`` (active when sex is
        protected); False or ``{}``: none, as in the I&D paper and its reference tools; a mapping replaces the default.
    constraints : str or sequence of str, optional
        Rules every input satisfies, e.g. ``"sex=Female excludes relationship=Husband"``
        (:meth:`Domain.with_constraints <chiralfair.domain.Domain.with_constraints>`). Default: the rules that
        come with the dataset's default couplings while one is active (census with sex protected: no female
        husband, no male wife), none otherwise; given rules replace them.

    Returns
    -------
    Dataset
        ``X`` of shape (n_rows, n_features), int64: census (32561, 13), compas (10577, 14), bank (45211, 16),
        german (1000, 20). ``sources`` maps the raw file to the path read. Its domain carries the data's
        support (for plausibility) and the couplings and constraints.

    Raises
    ------
    DatasetError
        If ``name`` is unknown (lists the valid names) or the raw file is malformed (names the file, line and
        column; a checksum mismatch is mentioned too).
    DataHomeError
        If the raw file is not in the data home and cannot be downloaded.
    ChecksumError
        If the raw file's SHA-256 differs and ``allow_checksum_mismatch`` is False.
    DomainError
        If a protected attribute is unknown (lists the valid names) or has one observed value, or a coupling or
        constraint names an unknown column or value.

    Examples
    --------
    >>> from chiralfair.datasets import load_dataset
    >>> data = load_dataset("census", protected="sex")      # from the raw Adult files in the data home
    >>> data.X.shape, data.domain.protected_names
    ((32561, 13), ['sex'])
    >>> data.domain.describe_couplings()                     # census's default (couple=False: the paper's)
    ['sex -> relationship: Husband <-> Wife']
    >>> train, test = data.split(random_state=0)             # the paper's 60/40 stratified split
    >>> len(train), len(test)
    (19536, 13025)
    """
    spec = dataset_spec(name)
    raw = home.raw_file(spec.raw)
    # Checksums of local files are checked below, after parsing, so that a broken file says what is wrong.
    path = home.fetch_raw(spec.raw, data_home=data_home, allow_checksum_mismatch=allow_checksum_mismatch,
                          verify_local=False).resolve()
    stat = path.stat()
    encoded, domain, actual = _encode_cached(spec.name, str(path), stat.st_mtime_ns, stat.st_size)
    if actual is not None:
        message = home.checksum_message(raw, path, actual)
        if not allow_checksum_mismatch:
            raise ChecksumError(f"{message}; {home.MISMATCH_HINT}")
        logger.warning("%s; proceeding because allow_checksum_mismatch=True", message)
    if protected is None:
        protected = [spec.protected[0]]
    if isinstance(protected, str):
        protected = [protected]
    unknown = [p for p in protected if p not in encoded.names]
    if unknown:
        raise unknown_protected_error(spec.name, unknown[0])
    X = encoded.X.copy()
    domain = domain.with_protected(protected, data=X)
    if couple is not None:  # the user's: it must act (a dataset's own default may be inactive)
        check_coupled_attributes(couple, domain.protected_names)
    domain = domain.with_couplings(spec.couple if couple is None else couple)
    if constraints is None and couple is None and domain.coupled_columns:
        # the dataset's own rules: the rows that break them are known and said in its docstring, not warned about
        domain = domain.with_constraints(spec.couple_constraints)
    elif constraints:
        domain = domain.with_constraints(constraints, data=X)
    return Dataset(name=spec.name, X=X, y=encoded.y.copy(), domain=domain,
                   label=spec.label, positive_class=spec.positive_class, sources={spec.raw: str(path)})


def default_couplings(name: str) -> dict:
    """The couplings a benchmark dataset declares by default (``{}`` for none), e.g. census sex -> relationship.

    Parameters
    ----------
    name : str
        A benchmark dataset.

    Returns
    -------
    dict
        As ``couple=`` takes it, e.g. ``{"sex": {"relationship": {"Husband": "Wife", "Wife": "Husband"}}}``.

    Raises
    ------
    DatasetError
        If ``name`` is not a benchmark dataset.
    """
    return dict(dataset_spec(name).couple or {})


@functools.lru_cache(maxsize=8)
def _encode_cached(name: str, path: str, mtime_ns: int, size: int) -> tuple[Encoded, Domain, str | None]:
    """Encode a raw file once per (path, mtime, size); also return its digest if it is not the published.

    A file encoded by an earlier command is read from the parsed-data cache (:mod:`.parsed_cache`, keyed by the
    file's SHA-256 and the encoder's source), not parsed again.
    """
    spec = DATASETS[name]
    raw = home.raw_file(spec.raw)
    digest = home.sha256_of(path)
    actual = None if digest == raw.sha256 else digest
    encoded = parsed_cache.load(spec.name, digest)
    if encoded is None:
        try:
            encoded = spec.encode_file(Path(path), f"{spec.raw} ({path})")
        except DatasetError as exc:
            if actual is None:
                raise
            raise DatasetError(f"{exc}. Also, {home.checksum_message(raw, path, actual)}; replace the file with "
                               f"the published one from {raw.url}") from None
        parsed_cache.store(spec.name, digest, encoded)
    encoded.X.setflags(write=False)
    encoded.y.setflags(write=False)
    domain = Domain.from_data(encoded.X, encoded.names, kinds=encoded.kinds, labels=encoded.labels)
    return encoded, domain, actual
