"""The run folder on disk: safe folder checks, ``result.json``, and IDI pairs streamed to Parquet.

Pairs go to ``idis.parquet``, a Parquet *dataset folder* of part files ``part-000000.parquet``,
``part-000001.parquet``, ... in search order, which ``pandas.read_parquet`` and ``pyarrow.dataset`` read as one
table. A :class:`PairSink` keeps at most :data:`ROWS_PER_PART` pairs in memory; a part is written whenever that
many are buffered, or :data:`FLUSH_SECONDS` after the previous part, under a hidden temporary name that is renamed
once the file is complete (footer included). A killed run therefore leaves a readable ``idis.parquet`` holding
every pair up to the last part written (at most ``ROWS_PER_PART`` pairs or ``FLUSH_SECONDS`` of search are lost),
and its ``result.json`` still says ``"partial": true``. Readers skip the hidden temporaries (names starting with
``.``). See architecture: results and files.

Columns: every feature under its name, then again with suffix ``_counterpart``, ``prediction``,
``prediction_counterpart``, ``phase``, and ``plausible`` (bool: the IDI and its counterpart are both plausible,
architecture: counterparts that could exist) when the search scored plausibility. A feature with labels is a
dictionary-encoded string column (pandas reads it as a categorical of labels); a feature without labels is an int64
column of codes. The domain is kept in the schema metadata (key ``chiralfair.domain``), so the codes can be read back
without it (:func:`read_pairs`).

The rows shown are what the model was fed. For a model fed the data's own rows (:func:`fed_codec`), every column
holds the value the model was sent for its code (:mod:`chiralfair.datasets.codec`), in the dtype of the user's
column: a category its own value (a missing one as the data held it: ``"?"`` where the data wrote ``"?"``, a null
where it held NaN or None; a boolean as a boolean), an integer column its integers, and a binned column its bin's
representative value, the bin's label following it in ``<column> (bin)`` (:data:`BIN_SUFFIX`; with the
counterpart's, ``<column> (bin)_counterpart``); the schema metadata lists the binned columns (key
``chiralfair.bins``), whose codes are read back from the bin columns, and every other column's values are read back
to their codes through the domain's labels (:func:`feature_codes`). A model fed codes is fed each code, whose label
is shown. Files of earlier versions (labels everywhere, a binned column holding its bin's label) read back the same.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .._validation import check_float, check_int
from ..exceptions import ConfigError, DomainError, RunFolderError
from ..storage import atomic_path, atomic_write_bytes, folder_beside, replace_folder

if TYPE_CHECKING:  # the folder checks of a refused command line import no pandas
    import pandas as pd

    from ..datasets.codec import ColumnCodec, FrameCodec
    from ..domain import Domain, Feature

# Pairs buffered before a part file is written: with census (13 features) about 30 MB of int64 codes.
ROWS_PER_PART = 1 << 17
# A part is also written when this many seconds passed since the last one, so a slow search loses little if killed.
FLUSH_SECONDS = 30.0
# A labelled feature with more codes than this is stored as int64 codes (a dictionary that large helps nobody).
MAX_DICTIONARY = 1 << 16
PAIRS_NAME = "idis.parquet"
DOMAIN_KEY = b"chiralfair.domain"
# The binned columns shown as the value the model was fed, their bins in "<column> (bin)" (a JSON list of names).
BINS_KEY = b"chiralfair.bins"
# The other columns holding the value the model was fed, read back through the labels (a JSON list of names); a
# column in neither list holds labels (dictionary-encoded) or codes (int64).
FED_KEY = b"chiralfair.fed"
BIN_SUFFIX = " (bin)"
PHASES = ("global", "local", "leaf")  # leaf: met at a leaf of certification (chiralfair.certification)


# The report files of a run folder (removed from a folder a search starts in) and every file a run writes there.
REPORT_FILES = ("report.md", "report.html", "idis_by_protected_value.png", "harm_by_group.png",
                "share_affected_by_group.png", "probability_gap.png")
RUN_OUTPUTS = ("result.json", PAIRS_NAME, "individuals.parquet", *REPORT_FILES)


# ---------------------------------------------------------------------------------------------- the folder
def check_run_folder(path: str | os.PathLike) -> None:
    """Refuse a ``path`` that cannot receive a run, without creating anything.

    Parameters
    ----------
    path : str or path-like
        The run folder asked for.

    Raises
    ------
    RunFolderError
        If ``path`` is a file, or an existing non-empty folder that does not hold a previous run.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunFolderError(f"output path {str(path)!r} exists and is a file, not a run folder")
    if path.is_dir() and any(path.iterdir()) and not is_previous_run(path):
        raise RunFolderError(
            f"output folder {str(path)!r} exists, is not empty and is not a previous chiralfair run "
            "(no result.json with chiralfair metadata); choose another --out so nothing there is overwritten")


def prepare_run_folder(path: str | os.PathLike) -> list[Path]:
    """Check that ``path`` can receive a run, and create it (with any missing parents).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    list of pathlib.Path
        The folders this call created, deepest first (empty if ``path`` existed); a caller whose run fails
        removes them with :func:`remove_empty_folders`, so a failed run leaves nothing behind.

    Raises
    ------
    RunFolderError
        If ``path`` is a file, an existing non-empty folder that does not hold a previous run, or cannot be
        created (the message gives the operating system's reason).
    """
    path = Path(path)
    check_run_folder(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        remove_empty_folders(missing)
        raise RunFolderError(f"cannot create output folder {str(path)!r}: {err.strerror or err}") from err
    return missing


class StagedFolder:
    """A run folder written beside its target and put in the target's place only when the run succeeds.

    A target that holds an earlier run (or retrain) is left untouched while the new one is written into a fresh
    folder beside it, ``<name>.partial-<random>`` (where the search streams its pairs); when the block ends
    without error, that folder replaces the target (:func:`chiralfair.storage.replace_folder`), files a user put
    beside the earlier run's outputs carried over. When it fails (an error, Ctrl-C), the earlier run is untouched
    and the error gains a note (:meth:`BaseException.add_note`) saying where the partial output is (a run that wrote
    nothing there, refused before its search, removes the folder and adds no note). A missing or empty target has
    nothing to protect: the run is written there directly, so a killed run leaves its partial output where it was
    asked for.

    Parameters
    ----------
    target : str, path-like or None
        The folder asked for (``--out``); None: nothing is written and :attr:`path` is None.
    check : callable, default=check_run_folder
        ``check(target)`` refuses a target that cannot receive the folder (a file, a folder of something else),
        before any work.
    outputs : sequence of str, default=RUN_OUTPUTS
        The names of the folder's own outputs: those of the earlier folder are replaced (removed when the new one
        lacks them), any other entry is carried over. A name ending in ``*`` is a prefix.
    what : str, default="run"
        The folder's kind, for the messages (``"run"``, ``"retrain"``).

    Attributes
    ----------
    path : pathlib.Path or None
        Where to write: the folder beside the target, or the target itself.
    staged : bool
        Whether :attr:`path` is beside the target (an earlier folder is there).

    Raises
    ------
    RunFolderError
        On entry, as ``check``; when the finished folder cannot be put in place (it is then whole at
        :attr:`path`, and the message says so).
    """

    def __init__(self, target: str | os.PathLike | None, *, check=None, outputs=RUN_OUTPUTS, what: str = "run"):
        self.target = None if target is None else Path(target)
        self.check = check_run_folder if check is None else check
        self.outputs = tuple(outputs)
        self.what = what
        self.path: Path | None = None
        self.staged = False
        self.created: list[Path] = []

    def __enter__(self) -> StagedFolder:
        if self.target is None:
            return self
        self.check(self.target)
        if self.target.is_dir() and any(self.target.iterdir()):  # an earlier run: kept until this one succeeds
            try:
                self.path = folder_beside(self.target)
            except OSError as err:
                raise RunFolderError(f"cannot create a folder beside {str(self.target)!r} to write the new "
                                     f"{self.what} in: {err.strerror or err}") from err
            self.staged = True
        else:
            self.created = prepare_run_folder(self.target)
            self.path = self.target
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.target is None or self.path is None:
            return False
        if exc_type is None:
            if self.staged:
                try:
                    replace_folder(self.path, self.target, keep=lambda name: not self._is_output(name))
                except OSError as err:
                    raise RunFolderError(f"the {self.what} finished, but cannot replace {str(self.target)!r}: "
                                         f"{err.strerror or err}; it is whole in {str(self.path)!r}") from err
            return False
        note = self._failure_note()
        if note and exc is not None:
            exc.add_note(note)
        return False

    def moved(self, result):
        """``result`` (a :class:`~chiralfair.results.SearchResult`) reading its pairs from the target's folder.

        Once a staged folder is in place, the pairs a search streamed into :attr:`path` are in the target.

        Parameters
        ----------
        result : SearchResult or None

        Returns
        -------
        SearchResult or None
        """
        if not self.staged or result is None or result.pairs_path is None:
            return result
        try:
            inside = Path(result.pairs_path).relative_to(cast(Path, self.path))
        except ValueError:
            return result
        return result.with_pairs_path(str(cast(Path, self.target) / inside))

    def _is_output(self, name: str) -> bool:
        return any(name.startswith(o[:-1]) if o.endswith("*") else name == o for o in self.outputs)

    def _failure_note(self) -> str | None:
        target, path = str(self.target), str(self.path)
        if self.staged:
            if not any(cast(Path, self.path).iterdir()):  # refused before writing: nothing to say
                cast(Path, self.path).rmdir()
                return None
            return (f"the earlier {self.what} in {target!r} is untouched; this {self.what}'s partial output is in "
                    f"{path!r}")
        remove_empty_folders(self.created)
        if cast(Path, self.target).is_dir() and any(cast(Path, self.target).iterdir()):
            return f"this {self.what}'s partial output is in {target!r}"
        return None


def remove_empty_folders(folders: list[Path]) -> None:
    """Remove each folder of ``folders`` (deepest first) that is empty; leave the others.

    Parameters
    ----------
    folders : list of pathlib.Path
    """
    for folder in folders:
        try:
            folder.rmdir()
        except OSError as err:
            if err.errno in (errno.ENOTEMPTY, errno.EEXIST):  # holds files: it and its parents stay
                return
            # else it was never created (the failed part of the path): go on with its parents


def is_previous_run(path: Path) -> bool:
    """Whether ``path`` holds a chiralfair run (a ``result.json`` with chiralfair metadata), finished or partial.

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    bool
    """
    try:
        data = json.loads((path / "result.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "chiralfair_version" in data.get("meta", {})


def mark_partial(folder: str | os.PathLike, meta: dict[str, Any]) -> None:
    """Write ``result.json`` saying the run in ``folder`` has started and is not finished (``"partial": true``).

    Outputs of a previous run in the folder (pairs, report, plot) are removed first, so that nothing there
    can be mistaken for this run's.

    Parameters
    ----------
    folder : str or path-like
        An existing run folder (see :func:`prepare_run_folder`).
    meta : dict
        Must hold ``chiralfair_version``, so the folder is recognised as a run (:func:`is_previous_run`).
    """
    folder = Path(folder)
    for name in REPORT_FILES:
        (folder / name).unlink(missing_ok=True)
    remove_pairs(folder / PAIRS_NAME)
    text = json.dumps({"partial": True, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "meta": meta}, indent=2)
    atomic_write_bytes(folder / "result.json", text.encode())


def mark_interrupted(folder: str | os.PathLike, sink: PairSink | None) -> int:
    """Keep what an interrupted search found: write the buffered pairs, and say so in ``result.json``.

    ``result.json`` stays ``"partial": true`` and gains ``"interrupted": true`` and ``n_pairs_written``.

    Parameters
    ----------
    folder : str or path-like
        The run folder, marked partial by :func:`mark_partial`.
    sink : PairSink or None
        The search's pair sink (None when the search had not started).

    Returns
    -------
    int
        IDI pairs in ``folder/idis.parquet``.
    """
    folder = Path(folder)
    n_pairs = 0
    if sink is not None and sink.is_open:
        sink.close()
        n_pairs = sink.n_rows
    try:
        record = json.loads((folder / "result.json").read_text())
    except (OSError, ValueError):
        record = {"partial": True}
    record.update(interrupted=True, n_pairs_written=n_pairs,
                  stopped=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    atomic_write_bytes(folder / "result.json", json.dumps(record, indent=2).encode())
    return n_pairs


def remove_pairs(path: Path) -> None:
    """Remove an ``idis.parquet`` written by chiralfair: a single file (older versions) or a folder of parts.

    Parameters
    ----------
    path : pathlib.Path
        The ``idis.parquet`` path.

    Raises
    ------
    RunFolderError
        If the folder holds files chiralfair does not write (they are left untouched).
    """
    if path.is_file() or path.is_symlink():
        path.unlink()
        return
    if not path.is_dir():
        return
    for part in path.iterdir():
        if part.name.startswith(("part-", ".part-")) and part.name.endswith((".parquet", ".tmp")):
            part.unlink()
    try:
        path.rmdir()
    except OSError as err:
        raise RunFolderError(f"{str(path)!r} holds files that chiralfair did not write; move them away") from err


# ---------------------------------------------------------------------------------------------- pairs
class PairSink:
    """Streams IDI pairs to an ``idis.parquet`` dataset folder in part files, with bounded memory.

    Parameters
    ----------
    path : str or path-like
        The dataset folder to create (an ``idis.parquet`` of a previous run there is replaced).
    rows_per_part : int
        Pairs buffered before a part is written (default :data:`ROWS_PER_PART`).
    flush_seconds : float
        A part is also written when this many seconds passed since the previous one (default
        :data:`FLUSH_SECONDS`).
    codec : FrameCodec, optional
        How the codes searched are decoded into the rows the model is fed (:func:`fed_codec`): each binned column
        is then written as the value the model was fed, its bin in ``<column> (bin)``. None: a model fed codes.

    Raises
    ------
    ConfigError
        If ``rows_per_part`` < 1 or ``flush_seconds`` < 0.

    Notes
    -----
    Call :meth:`open` with the domain, :meth:`write` for each batch, :meth:`close` at the end (the recorder
    does all three). Memory: at most ``rows_per_part`` buffered pairs plus the batch being written.
    """

    def __init__(self, path: str | os.PathLike, *, rows_per_part: int = ROWS_PER_PART,
                 flush_seconds: float = FLUSH_SECONDS, codec: FrameCodec | None = None):
        self.path = Path(path)
        self.codec = codec
        self.rows_per_part = check_int(rows_per_part, "rows_per_part", minimum=1)
        self.flush_seconds = check_float(flush_seconds, "flush_seconds", minimum=0.0)
        self.n_rows = 0
        self.n_parts = 0
        self._buffer: list[tuple] = []
        self._n_buffered = 0
        self._last_flush = time.monotonic()
        self._encoder: _PairEncoder | None = None
        self._with_plausible: bool | None = None

    def open(self, domain: Domain) -> None:
        """Create the dataset folder for pairs over ``domain`` (removing a previous run's pairs there).

        Parameters
        ----------
        domain : Domain
            The domain of the pairs (decoded column names).

        Raises
        ------
        ConfigError
            If a binned column's ``<column> (bin)`` is the name of another feature (:func:`fed_bins`).
        """
        encoder = _PairEncoder(domain, self.codec)
        remove_pairs(self.path)
        self.path.mkdir(parents=True)
        self._encoder = encoder
        self._last_flush = time.monotonic()

    def write(self, X, C, y, yc, phase, *, plausible=None) -> None:
        """Buffer a batch of pairs; write full parts (and a due part) to disk.

        Parameters
        ----------
        X, C : numpy.ndarray of int64, shape (n_pairs, n_features)
            IDIs and their counterparts.
        y, yc : numpy.ndarray of int64, shape (n_pairs,)
            Their predictions.
        phase : {"global", "local"} or numpy.ndarray of str, shape (n_pairs,)
            The phase of every pair.
        plausible : numpy.ndarray of bool, shape (n_pairs,), optional
            Whether each pair is plausible; given for every batch or for none (the column is written when the
            first batch has it).
        """
        if self._encoder is None:
            raise RuntimeError("PairSink.open(domain) must be called before write()")
        if isinstance(phase, str):
            codes = np.full(len(X), PHASES.index(phase), dtype=np.int8)
        else:
            codes = (np.asarray(phase) == "local").astype(np.int8)
        if self._with_plausible is None:
            self._with_plausible = plausible is not None
        if self._with_plausible != (plausible is not None):
            raise ValueError("plausible must be given for every batch of a PairSink or for none")
        flags = np.asarray(plausible, dtype=bool) if plausible is not None else np.zeros(len(X), dtype=bool)
        self._buffer.append((X, C, y, yc, codes, flags))
        self._n_buffered += len(X)
        due = self.due
        if self._n_buffered >= self.rows_per_part or due:
            self._drain(everything=due)

    @property
    def due(self) -> bool:
        """Whether :attr:`flush_seconds` passed since the last part was written (the next write writes one)."""
        return time.monotonic() - self._last_flush >= self.flush_seconds

    @property
    def buffered_nbytes(self) -> int:
        """Bytes of the pairs buffered for the next part (at most about :attr:`rows_per_part` pairs)."""
        return sum(a.nbytes for batch in self._buffer for a in batch)

    @property
    def is_open(self) -> bool:
        """Whether :meth:`open` was called (pairs can be written)."""
        return self._encoder is not None

    def close(self) -> Path:
        """Write the buffered pairs (an empty part with the schema if there were none); return the folder.

        Returns
        -------
        pathlib.Path
        """
        if self._encoder is None:
            raise RuntimeError("PairSink.open(domain) must be called before close()")
        if self._n_buffered or not self.n_parts:
            self._drain(everything=True)
        return self.path

    def _drain(self, *, everything: bool) -> None:
        """Write every full part of the buffer, and the remainder too when ``everything``."""
        if self._buffer:
            arrays = [np.concatenate(a) for a in zip(*self._buffer, strict=True)]
        else:
            d = cast(_PairEncoder, self._encoder).domain.n_features  # opened: write() and close() check it
            arrays = [np.zeros((0, d), np.int64), np.zeros((0, d), np.int64), np.zeros(0, np.int64),
                      np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, bool)]
        n, start = len(arrays[0]), 0
        while n - start >= self.rows_per_part:
            self._write_part([a[start:start + self.rows_per_part] for a in arrays])
            start += self.rows_per_part
        if everything and (n > start or not self.n_parts):
            self._write_part([a[start:] for a in arrays])
            start = n
        self._buffer = [tuple(a[start:].copy() for a in arrays)] if n > start else []
        self._n_buffered = n - start
        self._last_flush = time.monotonic()

    def _write_part(self, arrays: list[np.ndarray]) -> None:
        import pyarrow.parquet as pq

        encoder = cast(_PairEncoder, self._encoder)  # opened: write() and close() check it
        table = encoder.table(*arrays[:5], plausible=arrays[5] if self._with_plausible else None)
        name = f"part-{self.n_parts:06d}.parquet"
        with atomic_path(self.path / name) as tmp:
            pq.write_table(table, tmp)
        self.n_parts += 1
        self.n_rows += table.num_rows


class _PairEncoder:
    """Turns pair arrays into an Arrow table with decoded column names and dictionary-encoded labels."""

    def __init__(self, domain: Domain, codec: FrameCodec | None = None):
        import pyarrow as pa

        self.domain = domain
        self._labels = [_dictionary(f) for f in domain.features]
        self._fed = fed_columns(domain, codec)
        # a category's values, code lo + i at dictionary entry i (None: its values are not one Arrow type, the
        # labels are written); a missing value is a null
        self._values = {j: _fed_dictionary(domain.features[j], c) for j, c in self._fed.items() if c.how == "category"}
        self._phases = pa.array(PHASES, type=pa.string())
        self._metadata = {DOMAIN_KEY: json.dumps(domain.to_dict()).encode()}
        binned = [domain.features[j].name for j, c in self._fed.items() if c.how == "bin"]
        if binned:
            self._metadata[BINS_KEY] = json.dumps(binned).encode()
        values = [domain.features[j].name for j, c in self._fed.items()
                  if c.how != "bin" and self._values.get(j, True) is not None]
        if values:
            self._metadata[FED_KEY] = json.dumps(values).encode()

    def table(self, X, C, y, yc, phase_codes, *, plausible=None):
        import pyarrow as pa

        columns, names = [], []
        for side, suffix in ((X, ""), (C, "_counterpart")):
            for j, f in enumerate(self.domain.features):
                names.append(f.name + suffix)
                fed = self._fed.get(j)
                if fed is not None and fed.how == "category" and self._values[j] is not None:
                    columns.append(_fed_column(side[:, j], f, *self._values[j]))  # the value the model was fed
                    continue
                if fed is not None and fed.how != "category":  # the value the model was fed, a bin's then its bin
                    columns.append(pa.array(fed.decode(side[:, j]), from_pandas=True))
                    if fed.how != "bin":
                        continue
                    names.append(f.name + BIN_SUFFIX + suffix)
                columns.append(self._column(side[:, j], f, self._labels[j]))
        columns += [pa.array(y, type=pa.int64()), pa.array(yc, type=pa.int64()),
                    pa.DictionaryArray.from_arrays(pa.array(phase_codes, type=pa.int8()), self._phases)]
        names += ["prediction", "prediction_counterpart", "phase"]
        if plausible is not None:
            columns.append(pa.array(plausible, type=pa.bool_()))
            names.append("plausible")
        return pa.Table.from_arrays(columns, names=names).replace_schema_metadata(self._metadata)

    @staticmethod
    def _column(codes: np.ndarray, feature: Feature, labels):
        import pyarrow as pa

        if labels is None:
            return pa.array(codes, type=pa.int64())
        return pa.DictionaryArray.from_arrays(pa.array((codes - feature.lo).astype(np.int32)), labels)


def fed_codec(model) -> FrameCodec | None:
    """The codec decoding the codes searched into the rows ``model`` is fed, or None for a model fed codes.

    A model fed the data's own rows (:attr:`ModelLanguage.reads_people
    <chiralfair.models.language.ModelLanguage.reads_people>`: a frame, or its values) is sent a binned column's
    code as its bin's representative value; a model fed codes, or fed through a ``to_frame`` of the user's own,
    is sent what it is sent, and its pairs show each code's label.

    Parameters
    ----------
    model : CountingModel or None

    Returns
    -------
    FrameCodec or None
    """
    language = getattr(model, "language", None)
    if language is None or not language.reads_people:
        return None
    return getattr(language.to_frame.__self__, "codec", None)


def fed_columns(domain: Domain, codec: FrameCodec | None) -> dict[int, ColumnCodec]:
    """The features whose pairs show the value the model was fed: feature index → its column's codec.

    With a codec (a model fed the data's own rows), every feature of the data: a category as its own value (a
    missing one as the data held it), an integer column in its dtype, a binned column as its bin's representative
    with the bin in ``<column> (bin)``.

    Parameters
    ----------
    domain : Domain
    codec : FrameCodec or None
        Of :func:`fed_codec`.

    Returns
    -------
    dict of int to ColumnCodec
        Empty without a codec.

    Raises
    ------
    ConfigError
        If ``<column> (bin)`` of a binned column is the name of another feature (the two could not be told apart).
    """
    if codec is None:
        return {}
    by_name = {str(c.name): c for c in codec.columns}
    fed = {j: by_name[f.name] for j, f in enumerate(domain.features) if f.name in by_name}
    names = {f.name for f in domain.features}
    clash = [domain.features[j].name for j, c in fed.items()
             if c.how == "bin" and domain.features[j].name + BIN_SUFFIX in names]
    if clash:
        raise ConfigError(f"column {clash[0] + BIN_SUFFIX!r} of the data has the name the IDI pairs give the bins of "
                          f"binned column {clash[0]!r}; rename it in the data")
    return fed


def decode_side(X, domain: Domain, codec: FrameCodec | None = None, *, suffix: str = "") -> pd.DataFrame:
    """IDIs (or counterparts) as shown: each column the value the model was fed, or each code's label.

    The one decoding of every door that shows IDI rows (``idis.parquet`` writes the same values).

    Parameters
    ----------
    X : numpy.ndarray of int64, shape (n_samples, n_features)
        Codes.
    domain : Domain
    codec : FrameCodec, optional
        Of :func:`fed_codec`: each column then holds the value the model was fed, in the user's dtype (a missing
        category as the data held it, ``"?"`` or NaN/None; a boolean as a boolean); a binned column its bin's
        representative, followed by ``<column> (bin)`` with its bin's label, as in ``idis.parquet``. Without it,
        :meth:`Domain.decode`: each code's label.
    suffix : str
        Appended to every column name (``"_counterpart"``).

    Returns
    -------
    pandas.DataFrame, shape (n_samples, n_features + n_binned)
    """
    import pandas as pd

    labels = domain.decode(X, suffix=suffix)
    fed = fed_columns(domain, codec)
    if not fed:
        return labels
    X = np.asarray(X, dtype=np.int64).reshape(-1, domain.n_features)
    columns: dict[str, Any] = {}
    for j, f in enumerate(domain.features):
        if j in fed:
            columns[f.name + suffix] = fed[j].series(X[:, j], labels.index)
            if fed[j].how == "bin":
                columns[f.name + BIN_SUFFIX + suffix] = labels[f.name + suffix]
        else:
            columns[f.name + suffix] = labels[f.name + suffix]
    return pd.DataFrame(columns, index=labels.index)


def feature_codes(values, feature: Feature, column: str) -> np.ndarray:
    """The codes of a column of IDI pairs as shown (:func:`decode_side`, ``idis.parquet``), read back.

    Each value is matched to the feature's labels as text (a category's label is its value as text; a number
    read back as a float, ``3.0``, matches the label ``3``); a missing value (NaN, None, null) is the feature's
    missing code, and so is the text the data used as its missing value (``"?"``, shown where the label says
    ``missing``); a code without a label is read from its number. A feature without labels holds its codes.

    Parameters
    ----------
    values : pandas.Series, shape (n_samples,)
    feature : Feature
    column : str
        The column's name, for messages.

    Returns
    -------
    numpy.ndarray of int64, shape (n_samples,)

    Raises
    ------
    ConfigError
        Naming the column and a value that is none of the feature's labels, or a column of codes that are not
        integers.
    """
    import pandas as pd

    from ..datasets.values import is_missing_token

    if not feature.labels:
        try:
            return values.to_numpy(dtype=np.int64)
        except (TypeError, ValueError) as err:
            raise ConfigError(f"IDI pairs column {column!r} is not integer codes: {err}") from None
    if isinstance(values.dtype, pd.CategoricalDtype):  # a dictionary column: its few categories looked up once
        entry = values.cat.codes.to_numpy()
        if (entry < 0).any() and feature.missing is None:
            raise ConfigError(f"IDI pairs column {column!r} holds a missing value, but feature {feature.name!r} "
                              "has none")
        known = feature_codes(pd.Series(values.cat.categories, dtype=object), feature, column)
        return np.append(known, feature.missing if feature.missing is not None else -1)[entry]  # -1: missing
    # a category's own text first (the lowest code of a label), the missing code's label only where no category has it
    code_of = {text: own for own, text in sorted(feature.labels.items(), reverse=True) if own != feature.missing}
    if feature.missing is not None:
        code_of.setdefault(feature.label(feature.missing), feature.missing)
    missing = values.isna().to_numpy()
    present = pd.unique(values[~missing].to_numpy(dtype=object))  # few distinct values: one look-up each
    found = {}
    for value in present:
        text = [str(value)]
        if isinstance(value, float | np.floating) and float(value).is_integer():
            text.append(str(int(value)))  # an integer category read back as a float
        code: int | None = next((code_of[t] for t in text if t in code_of), None)
        if code is None and feature.missing is not None and is_missing_token(value):
            code = feature.missing
        if code is None and str(value).lstrip("-").isdigit() and feature.lo <= int(value) <= feature.hi:
            code = int(value)  # a code without a label is written as its number (Feature.label)
        if code is None:
            raise ConfigError(f"IDI pairs column {column!r} holds {value!r}, which is none of feature "
                              f"{feature.name!r}'s labels")
        found[value] = code
    out = np.empty(len(values), dtype=np.int64)
    if missing.any():
        if feature.missing is None:
            raise ConfigError(f"IDI pairs column {column!r} holds a missing value, but feature {feature.name!r} "
                              "has none")
        out[missing] = feature.missing
    if (~missing).any():
        out[~missing] = pd.Series(values[~missing].to_numpy(dtype=object)).map(found).to_numpy(dtype=np.int64)
    return out


def _fed_dictionary(feature: Feature, codec: ColumnCodec):
    """A category's values as an Arrow dictionary, and each code's entry (-1: missing), or None if not one type."""
    import pandas as pd
    import pyarrow as pa

    try:
        values = np.asarray(codec.decode(np.arange(feature.lo, feature.hi + 1, dtype=np.int64)), dtype=object)
        missing = np.asarray(pd.isna(values), dtype=bool)
        dictionary = pa.array(values[~missing], from_pandas=True)
    except (DomainError, pa.ArrowInvalid, pa.ArrowTypeError):  # numbers and text in one column: written as labels
        return None
    entry = np.full(len(values), -1, dtype=np.int32)
    entry[~missing] = np.arange(int((~missing).sum()), dtype=np.int32)
    return dictionary, entry


def _fed_column(codes: np.ndarray, feature: Feature, dictionary, entry: np.ndarray):
    import pyarrow as pa

    index = entry[codes - feature.lo]
    return pa.DictionaryArray.from_arrays(pa.array(index, mask=index < 0), dictionary)


def _dictionary(feature: Feature):
    """The labels of codes ``lo..hi`` as an Arrow array, or None when the feature is stored as codes."""
    import pyarrow as pa

    if not feature.labels or feature.size > MAX_DICTIONARY:
        return None
    labels = [feature.label(c) for c in range(feature.lo, feature.hi + 1)]
    if len(set(labels)) != len(labels):  # two codes with one label could not be told apart when read back
        return None
    return pa.array(labels, type=pa.string())


def pair_parts(path: str | os.PathLike) -> list[Path]:
    """The part files of an ``idis.parquet`` dataset folder, in write order (a single file: itself).

    Parameters
    ----------
    path : str or path-like
        An ``idis.parquet`` folder or file.

    Returns
    -------
    list of pathlib.Path
    """
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(p for p in path.glob("part-*.parquet"))


def read_pairs(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read the pairs of an ``idis.parquet`` written by :class:`PairSink` back as code arrays.

    Parameters
    ----------
    path : str or path-like
        The dataset folder (or one part file).

    Returns
    -------
    dict
        ``idis`` and ``counterparts`` (int64, shape (n_idis, n_features)), ``idi_labels`` and
        ``counterpart_labels`` (int64, shape (n_idis,)), ``phase`` (str, shape (n_idis,)) and ``plausible``
        (bool, shape (n_idis,), or None when the pairs were not scored).

    Raises
    ------
    RunFolderError
        If ``path`` holds no part file, a part is damaged (naming it), or a part lacks chiralfair's domain
        metadata.
    """
    import pyarrow as pa

    parts = pair_parts(path)
    if not parts:
        raise RunFolderError(f"{str(path)!r} holds no Parquet part of IDI pairs")
    table = pa.concat_tables([_read_part(p) for p in parts])
    meta = table.schema.metadata or {}
    if DOMAIN_KEY not in meta:
        raise RunFolderError(f"{str(path)!r} was not written by chiralfair (no {DOMAIN_KEY.decode()} metadata)")
    from ..domain import Domain

    domain = Domain.from_dict(json.loads(meta[DOMAIN_KEY]))
    binned = set(json.loads(meta.get(BINS_KEY, b"[]")))  # shown as the value fed; codes from their bins
    fed = set(json.loads(meta.get(FED_KEY, b"[]")))  # the value fed, read back through the labels

    feats = domain.features
    names = [f.name + BIN_SUFFIX if f.name in binned else f.name for f in feats]
    idis = np.column_stack([_codes(table.column(name), f, name, name in fed)
                            for name, f in zip(names, feats, strict=True)])
    cf = np.column_stack([_codes(table.column(name + "_counterpart"), f, name + "_counterpart", name in fed)
                          for name, f in zip(names, feats, strict=True)])
    phase = table.column("phase").cast(pa.string()).to_numpy(zero_copy_only=False).astype(str)
    return {"idis": idis, "counterparts": cf,
            "idi_labels": table.column("prediction").to_numpy().astype(np.int64),
            "counterpart_labels": table.column("prediction_counterpart").to_numpy().astype(np.int64),
            "phase": phase,
            "plausible": (table.column("plausible").to_numpy().astype(bool) if "plausible" in table.column_names
                          else None)}


def _read_part(path: Path):
    """One Parquet part; a damaged one (cut short by a kill mid-write, emptied) is refused naming it."""
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except (OSError, ValueError) as err:  # pyarrow.ArrowInvalid is a ValueError
        raise RunFolderError(f"IDI pair part {str(path)!r} is damaged ({type(err).__name__}: {str(err)[:200]}); "
                             "remove it to read the other parts, or run the search again") from err


def _codes(column, feature: Feature, name: str, fed: bool) -> np.ndarray:
    """Codes of one column: labels or the values fed mapped back (:func:`feature_codes`), int64 codes as they are."""
    import pyarrow as pa

    if fed or pa.types.is_dictionary(column.type):
        return feature_codes(column.to_pandas(), feature, name)
    return column.to_numpy().astype(np.int64)


def read_run(folder: str | os.PathLike) -> dict[str, Any]:
    """What a ``chiralfair run`` folder's ``result.json`` says: its parameters, source and domain.

    Parameters
    ----------
    folder : str or path-like

    Returns
    -------
    dict
        ``config`` (result.json's ``meta.config``), ``source`` (``meta.source``: where the data and the model came
        from; None for folders written before it was recorded), ``domain`` (:class:`Domain`), ``n_idis``,
        ``generator_params``, ``generator`` (the generator that ran: the one ``auto`` picked when
        ``config["generator"]`` is ``"auto"``), ``generator_choice`` (what ``auto`` picked and why, as result.json
        records it; None for a named generator) and ``folder``.

    Raises
    ------
    RunFolderError
        If the folder is not a finished chiralfair run (naming what is missing).
    """
    from ..domain import Domain

    folder = Path(folder)
    try:
        summary = json.loads((folder / "result.json").read_text())
        meta = summary["meta"]
        domain = Domain.from_dict(meta["domain"])
        config = meta["config"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RunFolderError(f"{str(folder)!r} is not a chiralfair run folder (cannot read result.json's meta.config "
                             f"and meta.domain: {err})") from None
    if summary.get("partial"):
        raise RunFolderError(f"{str(folder)!r} holds a run that did not finish (result.json says partial)")
    choice = summary.get("generator_choice")
    return {"config": config, "source": meta.get("source"), "domain": domain, "n_idis": int(summary.get("n_idis", 0)),
            "generator_params": meta.get("generator_params") or {}, "folder": str(folder),
            "generator": (choice or {}).get("generator") or summary.get("generator") or config.get("generator"),
            "generator_choice": choice}
