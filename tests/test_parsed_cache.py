"""A benchmark's raw file is parsed once, then read from the parsed-data cache, keyed by the file's bytes."""

import logging

import numpy as np
import pytest
import realdata

from chiralfair.datasets import catalog, load_dataset, parsed_cache
from chiralfair.datasets._spec import DatasetSpec

pytestmark = pytest.mark.usefixtures("offline")


@pytest.fixture(scope="module")
def real_home():
    return realdata.real_data_home_or_skip()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHIRALFAIR_CACHE", str(tmp_path / "cache"))
    catalog._encode_cached.cache_clear()  # the process's own memo would answer before the disk
    yield tmp_path / "cache" / "parsed"
    catalog._encode_cached.cache_clear()


def no_parsing(monkeypatch):
    def refuse(self, path, display):
        raise AssertionError(f"{display} was parsed again")
    monkeypatch.setattr(DatasetSpec, "encode_file", refuse)
    catalog._encode_cached.cache_clear()


def recount_census_labels(path):
    """y from the raw text itself: a data line is income >50K when its last field says so."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return np.array([line.rsplit(",", 1)[1].strip() == ">50K" for line in lines], dtype=np.int64)


def test_the_second_load_reads_the_cache_and_gives_the_same_dataset(real_home, cache, monkeypatch):
    first = load_dataset("census", protected="sex", data_home=real_home)
    assert [p.suffix for p in cache.iterdir()] == [".npz"]
    no_parsing(monkeypatch)
    second = load_dataset("census", protected="sex", data_home=real_home)
    np.testing.assert_array_equal(second.X, first.X)
    np.testing.assert_array_equal(second.y, first.y)
    assert second.X.dtype == second.y.dtype == np.int64
    assert second.domain.names == first.domain.names
    assert [f.labels for f in second.domain.features] == [f.labels for f in first.domain.features]
    assert second.domain.describe_couplings() == first.domain.describe_couplings()
    np.testing.assert_array_equal(second.y, recount_census_labels(real_home / "census/raw/adult.data"))


def test_another_file_is_parsed_under_its_own_key(real_home, cache, tmp_path, monkeypatch):
    load_dataset("census", protected="sex", data_home=real_home)
    lines = (real_home / "census/raw/adult.data").read_text().splitlines()[:300]
    edited = tmp_path / "home" / "census" / "raw" / "adult.data"
    edited.parent.mkdir(parents=True)
    edited.write_text("\n".join(lines) + "\n")
    small = load_dataset("census", protected="sex", data_home=tmp_path / "home", allow_checksum_mismatch=True)
    assert small.X.shape == (300, 13) and len(list(cache.iterdir())) == 2
    np.testing.assert_array_equal(small.y, recount_census_labels(edited))
    no_parsing(monkeypatch)
    again = load_dataset("census", protected="sex", data_home=tmp_path / "home", allow_checksum_mismatch=True)
    np.testing.assert_array_equal(again.X, small.X)


def test_an_entry_that_does_not_read_is_ignored_and_the_file_parsed(real_home, cache, caplog):
    first = load_dataset("census", protected="sex", data_home=real_home)
    (entry,) = cache.iterdir()
    entry.write_bytes(b"not an npz file")
    catalog._encode_cached.cache_clear()
    with caplog.at_level(logging.WARNING):
        again = load_dataset("census", protected="sex", data_home=real_home)
    assert "ignoring the parsed-data cache entry" in caplog.text and str(entry) in caplog.text
    np.testing.assert_array_equal(again.X, first.X)
    assert np.load(entry)["X"].shape == first.X.shape, "the entry is written again"


def test_an_entry_of_other_shapes_is_refused(real_home, cache):
    from chiralfair.datasets import home

    load_dataset("census", protected="sex", data_home=real_home)
    (entry,) = cache.iterdir()
    with np.load(entry) as kept:
        X, y, meta = kept["X"], kept["y"], kept["meta"]
    digest = home.sha256_of(real_home / "census/raw/adult.data")
    assert parsed_cache.load("census", digest) is not None
    np.savez(entry, X=X[:, :5], y=y, meta=meta)  # 5 columns for 13 names
    assert parsed_cache.load("census", digest) is None
    np.savez(entry, X=X.astype(np.float64), y=y, meta=meta)
    assert parsed_cache.load("census", digest) is None


def test_a_cache_folder_that_cannot_be_written_costs_only_the_cache(real_home, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CHIRALFAIR_CACHE", str(blocker))
    catalog._encode_cached.cache_clear()
    try:
        data = load_dataset("census", protected="sex", data_home=real_home)
    finally:
        catalog._encode_cached.cache_clear()
    assert data.X.shape == (32561, 13)
