import gc
import hashlib
import http.server
import io
import logging
import threading
import warnings
import zipfile
from pathlib import Path

import pytest
import realdata

from chiralfair.datasets import home, load_dataset
from chiralfair.exceptions import ChecksumError, DataHomeError

pytestmark = pytest.mark.usefixtures("offline")


@pytest.fixture(scope="module")
def real_home():
    return realdata.real_data_home_or_skip()

PAYLOAD = b"some raw bytes\n"
DIGEST = hashlib.sha256(PAYLOAD).hexdigest()


@pytest.fixture
def fake_raw(monkeypatch):
    raw = home.RawFile("toy/raw/toy.data", "https://example.org/toy.data", DIGEST)
    monkeypatch.setitem(home.RAW_FILES, raw.relpath, raw)
    return raw


def _downloader(payload, calls):
    """A pooch downloader that writes ``payload`` (``home.downloader`` returns it)."""
    def fake(url, output_file, pooch):
        calls.append(url)
        Path(output_file).write_bytes(payload)
    return lambda: fake


# ---------------------------------------------------------------- resolution
def test_argument_wins_over_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CHIRALFAIR_DATA", str(tmp_path / "env"))
    assert home.resolve_data_home(tmp_path / "arg") == tmp_path / "arg"


def test_environment_wins_over_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CHIRALFAIR_DATA", str(tmp_path / "env"))
    assert home.resolve_data_home() == tmp_path / "env"
    assert home.search_folders() == [tmp_path / "env", home.user_cache_dir()]


def test_cache_folder_honours_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("CHIRALFAIR_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert home.resolve_data_home() == tmp_path / "xdg" / "chiralfair" / "data"
    assert home.search_folders() == [tmp_path / "xdg" / "chiralfair" / "data"]


def test_relative_xdg_is_ignored(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert home.user_cache_dir() == Path.home() / ".cache" / "chiralfair" / "data"


def test_digests_match_the_data_sha256sums(real_home):
    sums = {}
    for line in (real_home / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.removeprefix("./")] = digest
    for relpath, raw in home.RAW_FILES.items():
        assert sums[relpath] == raw.sha256, relpath
        assert raw.url.startswith("https://")


def test_unknown_raw_file():
    with pytest.raises(DataHomeError, match="known: .*census/raw/adult.data"):
        home.raw_file("census/raw/nothing.csv")


# ---------------------------------------------------------------- found locally
def test_found_in_data_home_is_not_downloaded(tmp_path, fake_raw):
    (tmp_path / "toy" / "raw").mkdir(parents=True)
    (tmp_path / "toy" / "raw" / "toy.data").write_bytes(PAYLOAD)
    assert home.fetch_raw(fake_raw.relpath, data_home=tmp_path) == tmp_path / "toy" / "raw" / "toy.data"


def test_local_checksum_mismatch(tmp_path, fake_raw, caplog):
    (tmp_path / "toy" / "raw").mkdir(parents=True)
    (tmp_path / "toy" / "raw" / "toy.data").write_bytes(b"edited\n")
    actual = hashlib.sha256(b"edited\n").hexdigest()
    with pytest.raises(ChecksumError) as err:
        home.fetch_raw(fake_raw.relpath, data_home=tmp_path)
    message = str(err.value)
    assert "toy/raw/toy.data" in message and actual in message and DIGEST in message
    assert "allow_checksum_mismatch=True" in message and "--allow-checksum-mismatch" in message
    with caplog.at_level(logging.WARNING, logger="chiralfair.datasets.home"):
        path = home.fetch_raw(fake_raw.relpath, data_home=tmp_path, allow_checksum_mismatch=True)
    assert path.read_bytes() == b"edited\n"
    assert actual in caplog.text


# ---------------------------------------------------------------- download
def test_offline_error_names_file_folders_and_address(tmp_path, fake_raw, monkeypatch):
    def offline(url, output_file, pooch):
        import requests

        raise requests.exceptions.ConnectionError("Temporary failure in name resolution")

    monkeypatch.setattr(home, "downloader", lambda: offline)
    with pytest.raises(DataHomeError) as err:
        home.fetch_raw(fake_raw.relpath, data_home=tmp_path / "home")
    message = str(err.value)
    assert "toy/raw/toy.data" in message
    assert str(tmp_path / "home") in message and str(home.user_cache_dir()) in message
    assert "https://example.org/toy.data" in message
    assert not (home.user_cache_dir() / fake_raw.relpath).exists()


def test_download_into_cache_and_verify(tmp_path, fake_raw, monkeypatch):
    calls = []
    monkeypatch.setattr(home, "downloader", _downloader(PAYLOAD, calls))
    path = home.fetch_raw(fake_raw.relpath, data_home=tmp_path / "empty-home")
    assert path == home.user_cache_dir() / "toy" / "raw" / "toy.data"
    assert path.read_bytes() == PAYLOAD
    assert calls == ["https://example.org/toy.data"]
    assert home.fetch_raw(fake_raw.relpath, data_home=tmp_path / "empty-home") == path
    assert len(calls) == 1  # found in the cache the second time
    assert [p.name for p in path.parent.iterdir()] == ["toy.data"]  # no temporary file left behind


def test_download_with_wrong_digest_is_not_kept(tmp_path, fake_raw, monkeypatch, caplog):
    monkeypatch.setattr(home, "downloader", _downloader(b"tampered\n", []))
    with pytest.raises(ChecksumError) as err:
        home.fetch_raw(fake_raw.relpath, data_home=tmp_path)
    assert DIGEST in str(err.value) and hashlib.sha256(b"tampered\n").hexdigest() in str(err.value)
    assert "https://example.org/toy.data" in str(err.value)
    assert not (home.user_cache_dir() / fake_raw.relpath).exists()
    with caplog.at_level(logging.WARNING, logger="chiralfair.datasets.home"):
        path = home.fetch_raw(fake_raw.relpath, data_home=tmp_path, allow_checksum_mismatch=True)
    assert path.read_bytes() == b"tampered\n" and "allow_checksum_mismatch=True" in caplog.text


def test_download_extracts_zip_member(tmp_path, monkeypatch):
    raw = home.RawFile("toy/raw/inner.csv", "https://example.org/toy.zip", DIGEST, member="inner.csv")
    monkeypatch.setitem(home.RAW_FILES, raw.relpath, raw)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.csv", PAYLOAD)
        archive.writestr("other.csv", b"other")
    monkeypatch.setattr(home, "downloader", _downloader(buffer.getvalue(), []))
    assert home.fetch_raw(raw.relpath, data_home=tmp_path).read_bytes() == PAYLOAD


def test_download_that_is_not_a_zip(tmp_path, monkeypatch):
    raw = home.RawFile("toy/raw/inner.csv", "https://example.org/toy.zip", DIGEST, member="inner.csv")
    monkeypatch.setitem(home.RAW_FILES, raw.relpath, raw)
    monkeypatch.setattr(home, "downloader", _downloader(b"<html>not found</html>", []))
    with pytest.raises(DataHomeError, match="not a zip archive holding 'inner.csv'"):
        home.fetch_raw(raw.relpath, data_home=tmp_path)


def test_load_dataset_offline(tmp_path):
    with pytest.raises(DataHomeError) as err:
        load_dataset("german", data_home=tmp_path)
    message = str(err.value)
    assert "german/raw/german.data" in message and str(tmp_path) in message
    assert "statlog/german/german.data" in message


def test_load_dataset_after_download(tmp_path, monkeypatch, real_home):
    payload = (real_home / "german" / "raw" / "german.data").read_bytes()
    monkeypatch.setattr(home, "downloader", _downloader(payload, []))
    ds = load_dataset("german", data_home=tmp_path)
    assert ds.X.shape == (1000, 20)
    assert ds.sources == {"german/raw/german.data": str((home.user_cache_dir() / "german/raw/german.data")
                                                         .resolve())}


# ---------------------------------------------------------------- pooch over real HTTP, on this machine only
@pytest.fixture
def local_server(tmp_path):
    """An HTTP server on 127.0.0.1 serving ``tmp_path / "served"``; yields (folder, base address)."""
    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_pooch_downloads_verifies_and_unzips_over_http(tmp_path, monkeypatch, local_server):
    monkeypatch.setattr(home, "downloader", lambda: __import__("pooch").HTTPDownloader(timeout=10))
    folder, base = local_server
    (folder / "toy.data").write_bytes(PAYLOAD)
    with zipfile.ZipFile(folder / "toy.zip", "w") as archive:
        archive.writestr("inner.csv", PAYLOAD)
    plain = home.RawFile("toy/raw/toy.data", f"{base}/toy.data", DIGEST)
    zipped = home.RawFile("toy/raw/inner.csv", f"{base}/toy.zip", DIGEST, member="inner.csv")
    wrong = home.RawFile("toy/raw/wrong.data", f"{base}/toy.data", "0" * 64)
    missing = home.RawFile("toy/raw/missing.data", f"{base}/missing.data", DIGEST)
    for raw in (plain, zipped, wrong, missing):
        monkeypatch.setitem(home.RAW_FILES, raw.relpath, raw)
    assert home.fetch_raw(plain.relpath, data_home=tmp_path / "empty").read_bytes() == PAYLOAD
    assert home.fetch_raw(zipped.relpath, data_home=tmp_path / "empty").read_bytes() == PAYLOAD
    with pytest.raises(ChecksumError) as err:
        home.fetch_raw(wrong.relpath, data_home=tmp_path / "empty")
    assert DIGEST in str(err.value) and "0" * 64 in str(err.value) and f"{base}/toy.data" in str(err.value)
    assert not (home.user_cache_dir() / wrong.relpath).exists()
    # pooch's HTTPDownloader raises on the 404 before it closes the response, leaving its socket to the garbage
    # collector, which would warn in whichever later test it happens to run: collect it here.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed <socket", ResourceWarning)
        with pytest.raises(DataHomeError) as err:
            home.fetch_raw(missing.relpath, data_home=tmp_path / "empty")
        message = str(err.value)
        del err
        gc.collect()
    assert "404" in message and "toy/raw/missing.data" in message and str(tmp_path / "empty") in message
    assert sorted(p.name for p in (home.user_cache_dir() / "toy" / "raw").iterdir()) == ["inner.csv", "toy.data"]
