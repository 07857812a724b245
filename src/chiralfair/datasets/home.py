"""The data home: where raw benchmark files are found, downloaded to, and checked by SHA-256.

Resolution (architecture: the population and the domain): the ``data_home`` argument, else the environment variable
``CHIRALFAIR_DATA``, else the user cache folder that platformdirs names (``$XDG_CACHE_HOME/chiralfair/data``,
``~/.cache/chiralfair/data`` on Linux; the platform's own elsewhere). Each raw file has a path relative to the data home
(``census/raw/adult.data``), its original public address and its SHA-256. A file that is in none of the searched
folders is downloaded into the user cache folder by pooch, which checks its SHA-256 (a file inside a zip archive,
whose archive has no published digest, is checked once extracted).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import ChecksumError, DataHomeError
from ..storage import atomic_path

logger = logging.getLogger(__name__)

ENV_VAR = "CHIRALFAIR_DATA"
MISMATCH_HINT = ("pass allow_checksum_mismatch=True (CLI: --allow-checksum-mismatch) to use the file anyway, "
                 "or delete it so that it is downloaded again")

_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases"
_PROPUBLICA = "https://raw.githubusercontent.com/propublica/compas-analysis/master"


@dataclass(frozen=True)
class RawFile:
    """One raw data file as published by its source.

    Parameters
    ----------
    relpath : str
        Path relative to the data home, with ``/`` separators (``"census/raw/adult.data"``).
    url : str
        Original public download address.
    sha256 : str
        Hex SHA-256 of the file's bytes.
    member : str, optional
        When ``url`` is a zip archive, the archive member that holds the file.
    """

    relpath: str
    url: str
    sha256: str
    member: str | None = None

    @property
    def filename(self) -> str:
        """Last component of :attr:`relpath`."""
        return self.relpath.rsplit("/", 1)[-1]


# Digests from the project's data/SHA256SUMS (the bytes of the unmodified public files).
RAW_FILES: dict[str, RawFile] = {f.relpath: f for f in (
    RawFile("census/raw/adult.data", f"{_UCI}/adult/adult.data",
            "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
    RawFile("census/raw/adult.test", f"{_UCI}/adult/adult.test",
            "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
    RawFile("census/raw/adult.names", f"{_UCI}/adult/adult.names",
            "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a"),
    RawFile("bank/raw/bank-full.csv", f"{_UCI}/00222/bank.zip",
            "d1513ec63b385506f7cfce9f2c5caa9fe99e7ba4e8c3fa264b3aaf0f849ed32d", member="bank-full.csv"),
    RawFile("bank/raw/bank.csv", f"{_UCI}/00222/bank.zip",
            "dc8d576e9bda0f41ee891251bd84bab9a39ce576cba715aac08adc2374a01fde", member="bank.csv"),
    RawFile("bank/raw/bank-names.txt", f"{_UCI}/00222/bank.zip",
            "3899a77082573ed676a7dfce3765a5307915c7f11b1fe2f6f55fd3c5467c12f7", member="bank-names.txt"),
    RawFile("compas/raw/compas-scores.csv", f"{_PROPUBLICA}/compas-scores.csv",
            "c9864c9e48c0a9e32ab23f7ad05a454d7624a4625c2a54d4447921de544fd8a2"),
    RawFile("compas/raw/compas-scores-two-years.csv", f"{_PROPUBLICA}/compas-scores-two-years.csv",
            "c451db85908b2f7fef1d83203bedf6b71ecda0d5af468d82ae62178f91d0cc7d"),
    RawFile("german/raw/german.data", f"{_UCI}/statlog/german/german.data",
            "b21f3d81db8071257d5ff1deaeba1fd4303b62712e6fcc9715c7a86202cb5871"),
    RawFile("german/raw/german.doc", f"{_UCI}/statlog/german/german.doc",
            "f8e14868ae174a9aa9b3c3bc3035ed3330175a17c8a5d08217bedc1b046e15d1"),
)}


# ---------------------------------------------------------------------- folders
def user_cache_dir() -> Path:
    """Return the user cache folder for raw data: ``data`` in platformdirs' user cache folder of chiralfair.

    On Linux ``$XDG_CACHE_HOME/chiralfair/data`` when ``XDG_CACHE_HOME`` is an absolute path (a relative one is
    ignored, as the XDG spec says), else ``~/.cache/chiralfair/data``.

    Returns
    -------
    pathlib.Path
    """
    import platformdirs

    return Path(platformdirs.user_cache_dir("chiralfair", appauthor=False)) / "data"


def resolve_data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Return the data home: ``data_home``, else ``$CHIRALFAIR_DATA``, else :func:`user_cache_dir`.

    Parameters
    ----------
    data_home : str or path-like, optional

    Returns
    -------
    pathlib.Path
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(ENV_VAR, "")
    if env:
        return Path(env).expanduser()
    return user_cache_dir()


def search_folders(data_home: str | os.PathLike | None = None) -> list[Path]:
    """Folders searched for raw files, in order: the resolved data home, then the user cache folder.

    Parameters
    ----------
    data_home : str or path-like, optional
        As :func:`resolve_data_home`: the argument, else ``$CHIRALFAIR_DATA``, else the user cache folder.

    Returns
    -------
    list of pathlib.Path
    """
    folders = [resolve_data_home(data_home)]
    cache = user_cache_dir()
    if cache not in folders:
        folders.append(cache)
    return folders


def raw_file(relpath: str) -> RawFile:
    """Return the :class:`RawFile` record of ``relpath``.

    Parameters
    ----------
    relpath : str
        The file's path inside a data home, e.g. ``"census/raw/adult.data"``.

    Returns
    -------
    RawFile
        Its download address and SHA-256.

    Raises
    ------
    DataHomeError
        If ``relpath`` is not a known raw file (the message lists the known ones).
    """
    try:
        return RAW_FILES[relpath]
    except KeyError:
        raise DataHomeError(f"unknown raw file {relpath!r}; known: {', '.join(sorted(RAW_FILES))}") from None


def find_raw(relpath: str, data_home: str | os.PathLike | None = None) -> Path | None:
    """Return where ``relpath`` lies in the searched folders, or None; never downloads.

    Parameters
    ----------
    relpath : str
        The file's path inside a data home.
    data_home : str or path-like, optional
        As :func:`search_folders`.

    Returns
    -------
    pathlib.Path or None
    """
    for folder in search_folders(data_home):
        path = folder / relpath
        if path.is_file():
            return path
    return None


# ---------------------------------------------------------------------- checksums
def sha256_of(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes (:func:`pooch.file_hash`).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    str
        64 hex digits.
    """
    import pooch

    return pooch.file_hash(str(path), alg="sha256")


def checksum_mismatch(path: str | os.PathLike, raw: RawFile) -> str | None:
    """Return the actual digest of ``path`` if it differs from ``raw.sha256``, else None.

    Parameters
    ----------
    path : str or path-like
        The file found.
    raw : RawFile
        Its record, with the expected digest.

    Returns
    -------
    str or None
    """
    actual = sha256_of(path)
    return None if actual == raw.sha256 else actual


def checksum_message(raw: RawFile, path: str | os.PathLike, actual: str) -> str:
    """Text naming the file and both digests (shared by :class:`ChecksumError` and parse errors).

    Parameters
    ----------
    raw : RawFile
        The record, with the expected digest.
    path : str or path-like
        The file found.
    actual : str
        Its digest.

    Returns
    -------
    str
    """
    return (f"SHA-256 of {raw.relpath} ({path}) is {actual}, expected {raw.sha256}: the file is not the "
            f"published one (truncated, edited or a different version)")


def verify(path: str | os.PathLike, raw: RawFile, *, allow_checksum_mismatch: bool = False) -> None:
    """Check a file's SHA-256 against ``raw.sha256``.

    Parameters
    ----------
    path : str or path-like
    raw : RawFile
    allow_checksum_mismatch : bool
        Log a warning instead of raising on a mismatch.

    Raises
    ------
    ChecksumError
        If the digests differ and ``allow_checksum_mismatch`` is False; names the file and both digests.
    """
    actual = checksum_mismatch(path, raw)
    if actual is None:
        return
    message = checksum_message(raw, path, actual)
    if not allow_checksum_mismatch:
        raise ChecksumError(f"{message}; {MISMATCH_HINT}")
    logger.warning("%s; proceeding because allow_checksum_mismatch=True", message)


# ---------------------------------------------------------------------- download
DOWNLOAD_TIMEOUT = 60  # seconds without an answer before a download fails


def downloader():
    """The pooch downloader of raw files: HTTP(S) with a 60 s timeout, no progress bar (tests replace it).

    Returns
    -------
    callable
        ``downloader(url, output_file, pooch)``, as :func:`pooch.retrieve` calls it.
    """
    import pooch

    return pooch.HTTPDownloader(timeout=DOWNLOAD_TIMEOUT, progressbar=False)


def _fetch_into(raw: RawFile, target: Path, *, check_digest: bool) -> None:
    """Download ``raw`` with pooch and move it to ``target`` only when complete (a zip: only its member).

    With ``check_digest`` pooch verifies a plain file's SHA-256 and deletes it on a mismatch (raising
    :class:`ValueError`); a zip member is verified by :func:`fetch_raw` once extracted.
    """
    import pooch

    target.parent.mkdir(parents=True, exist_ok=True)
    # pooch's own download file is 0600: its bytes are copied into a file made with the package's file mode
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp, atomic_path(target) as part:
        if raw.member is None:
            fetched = pooch.retrieve(raw.url, known_hash=f"sha256:{raw.sha256}" if check_digest else None,
                                     fname=raw.filename, path=tmp, downloader=downloader())
            shutil.copyfile(fetched, part)
        else:
            archive = pooch.retrieve(raw.url, known_hash=None, fname="archive.zip", path=tmp, downloader=downloader())
            try:
                with zipfile.ZipFile(archive) as zipped, zipped.open(raw.member) as src, open(part, "wb") as out:
                    shutil.copyfileobj(src, out)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise DataHomeError(f"{raw.url} is not a zip archive holding {raw.member!r} "
                                    f"(needed for {raw.relpath}): {exc}") from exc


def fetch_raw(relpath: str, *, data_home: str | os.PathLike | None = None,
              allow_checksum_mismatch: bool = False, verify_local: bool = True) -> Path:
    """Return the path of a raw file; download it into the user cache folder when no searched folder has it.

    Parameters
    ----------
    relpath : str
        Path relative to the data home (a key of :data:`RAW_FILES`).
    data_home : str or path-like, optional
        See :func:`resolve_data_home`.
    allow_checksum_mismatch : bool
        Use a file whose SHA-256 differs from the published one (a warning is logged).
    verify_local : bool
        Check the SHA-256 of a file found locally (a downloaded file is always checked).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    DataHomeError
        If the file is nowhere and cannot be downloaded; names the file, the folders searched and the address.
    ChecksumError
        If the digest differs and ``allow_checksum_mismatch`` is False. A downloaded file with the wrong
        digest is not kept.
    """
    raw = raw_file(relpath)
    found = find_raw(relpath, data_home)
    if found is not None:
        if verify_local:
            verify(found, raw, allow_checksum_mismatch=allow_checksum_mismatch)
        return found
    target = user_cache_dir() / relpath
    folders = ", ".join(str(f) for f in search_folders(data_home))
    logger.info("downloading %s from %s", relpath, raw.url)
    try:
        _fetch_into(raw, target, check_digest=not allow_checksum_mismatch)
    except DataHomeError:
        raise
    except ValueError as exc:
        if "hash" not in str(exc):
            raise DataHomeError(f"raw file {relpath} cannot be downloaded from {raw.url}: {exc}") from exc
        # pooch: the digest differs ("expected sha256:... but got ..."), and it deleted the download
        raise ChecksumError(f"downloaded from {raw.url}: {raw.relpath}: {exc}; {MISMATCH_HINT}") from None
    except OSError as exc:  # requests' errors are OSErrors: no network, a refused connection, HTTP 404
        raise DataHomeError(
            f"raw file {relpath} was not found in {folders} and could not be downloaded from {raw.url} "
            f"({exc}); download it by hand into one of those folders, or set {ENV_VAR} or pass data_home "
            "to the folder that holds it") from exc
    try:
        verify(target, raw, allow_checksum_mismatch=allow_checksum_mismatch)
    except ChecksumError as exc:
        target.unlink()
        raise ChecksumError(f"downloaded from {raw.url}: {exc}") from None
    return target
