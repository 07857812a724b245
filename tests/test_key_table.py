"""The key table of a search: every key once, with its flags, in a hash table and sorted runs, or a dict."""

import numpy as np
import pytest
import torch
from toys import biased_module, toy_domain

import chiralfair.generators._load_all  # noqa: F401  (fills the registry)
from chiralfair.domain import Domain, Feature
from chiralfair.generators import key_table, make_generator
from chiralfair.generators.key_table import RECORDED, TESTED, IntKeyTable, ObjectKeyTable, key_table_for
from chiralfair.generators.recorder import IDIRecorder
from chiralfair.models import as_model


class ReferenceTable:
    """What a key table must answer, as a dict of Python ints."""

    def __init__(self):
        self.flags = {}

    def mark(self, keys, bits):
        before = [self.flags.get(k, 0) for k in keys]
        for k, b in zip(keys, np.broadcast_to(bits, (len(keys),)).tolist(), strict=True):
            self.flags[k] = self.flags.get(k, 0) | b
        return before

    def count(self, bit):
        return sum(1 for f in self.flags.values() if f & bit)


def as_keys(table, values):
    values = np.asarray(values, dtype=np.int64)
    if isinstance(table, ObjectKeyTable):
        return np.array([int(v).to_bytes(8, "little", signed=True) for v in values], dtype=object)
    return values


@pytest.fixture(params=["recent", "runs", "fenced", "dict"])
def table(request, monkeypatch):
    if request.param != "recent":  # a hash table of 50 keys: the others go into runs, and come back when met again
        monkeypatch.setattr(key_table, "RECENT_MAX_KEYS", 50)
        monkeypatch.setattr(key_table, "RECENT_MIN_SLOTS", 4)
    if request.param == "fenced":  # small runs, fences and a run cap, so that a few hundred keys reach every path
        monkeypatch.setattr(key_table, "FENCE_MIN_KEYS", 40)
        monkeypatch.setattr(key_table, "FENCE_STRIDE", 4)
        monkeypatch.setattr(key_table, "MAX_RUN_KEYS", 300)
        # merges past 100 keys place the newer keys through a mask, smaller ones sort both runs (the default table)
        monkeypatch.setattr(key_table, "SORT_MERGE_KEYS", 100)
        # and a filter of 16 bits that grows (rebuilt from the runs in chunks of 16 keys) 7 times over
        monkeypatch.setattr(key_table, "FILTER_MIN_BYTES", 2)
        monkeypatch.setattr(key_table, "FILTER_CHUNK", 16)
    return ObjectKeyTable() if request.param == "dict" else IntKeyTable()


def test_a_table_answers_like_a_dict_of_flags(table):
    rng = np.random.default_rng(1)
    ref = ReferenceTable()
    for size in rng.integers(0, 120, size=40):
        values = rng.integers(-300, 900, size=size)  # repeats within and across batches
        values[:size // 10] = np.iinfo(np.int64).min + np.arange(size // 10) % 3  # the extreme keys too
        bits = rng.choice(np.array([TESTED, TESTED | RECORDED, 4, 8], dtype=np.uint8), size=size)
        keys = as_keys(table, values)
        probe = as_keys(table, rng.integers(-350, 950, size=30))
        np.testing.assert_array_equal(table.flags(probe), [ref.flags.get(k, 0) for k in probe.tolist()])
        if size % 2:
            np.testing.assert_array_equal(table.mark(keys, bits), ref.mark(keys.tolist(), bits))
        else:  # the same through a location, its flags read and its rows marked in two halves
            where = table.locate(keys)
            np.testing.assert_array_equal(table.flags_at(where), [ref.flags.get(k, 0) for k in keys.tolist()])
            half = np.arange(size) < size // 2
            for rows in (half, ~half):
                table.mark_at(where.rows(rows), bits[rows])
                ref.mark(keys[rows].tolist(), bits[rows])
        for bit in (TESTED, RECORDED, 4, 8):
            assert table.count(bit) == ref.count(bit)
    if isinstance(table, IntKeyTable):
        runs = [len(r) for r in table._keys]
        assert all(np.all(np.diff(r) > 0) for r in table._keys), "each run is sorted and holds a key once"
        in_runs = np.concatenate([np.zeros(0, np.int64), *table._keys])
        assert sum(runs) == len(set(in_runs.tolist())), "runs are disjoint"
        assert len(runs) <= 8 + sum(runs) // key_table.MAX_RUN_KEYS, "runs are merged: their number grows like log n"
        assert len(table) == len(ref.flags)
        if key_table.RECENT_MAX_KEYS == 50:
            assert len(runs) > 1 and table._n_copied > 0, "keys went into runs and were met again"


def test_rows_named_twice_give_their_key_both_rows_bits_counted_once(table):
    keys = as_keys(table, [10, 20, 30])
    where = table.locate(keys)  # three distinct keys: only the rows picked below repeat one
    table.mark_at(where.rows(np.array([1, 1, -2, 0])), np.array([TESTED, RECORDED, 4, TESTED], dtype=np.uint8))
    table.mark_at(where.rows([2, 2]), 8)
    np.testing.assert_array_equal(table.flags(keys), [TESTED, TESTED | RECORDED | 4, 8])
    assert [table.count(bit) for bit in (TESTED, RECORDED, 4, 8)] == [2, 1, 1, 1]


def test_borrowed_bits_are_cleared_when_given_back(table):
    keys = as_keys(table, [5, 6, 7])
    first = table.borrow_bits(2)
    table.mark(keys, np.array([first[0], first[1], TESTED | first[0]], dtype=np.uint8))
    table.return_bits(first)
    np.testing.assert_array_equal(table.flags(keys), [0, 0, TESTED])
    assert table.count(first[0]) == 0 and table.count(TESTED) == 1
    assert table.borrow_bits(2) == first, "given back, the bits are free again"
    table.borrow_bits(4)
    with pytest.raises(RuntimeError, match="free flag bits"):
        table.borrow_bits(1)


def test_huge_domains_keep_bytes_keys_in_a_dict():
    feats = (Feature("sex", 0, 1), Feature("u", 0, 2**40), Feature("v", 0, 2**40))
    domain = Domain(feats).with_protected(["sex"])
    assert isinstance(key_table_for(domain), ObjectKeyTable)
    assert isinstance(key_table_for(toy_domain()), IntKeyTable)


def test_rows_of_one_key_share_their_place_in_a_location(table):
    values = np.array([7, -3, 7, 2**62, -3, 7])
    where = table.locate(as_keys(table, values))
    np.testing.assert_array_equal(np.equal.outer(where.inverse, where.inverse), np.equal.outer(values, values))
    assert where.repeats
    assert not table.locate(as_keys(table, [1, 2, 3])).repeats


def test_a_key_on_two_idi_rows_of_a_huge_domain_is_one_new_idi():
    feats = (Feature("sex", 0, 1), Feature("u", 0, 2**40), Feature("v", 0, 2**40))
    domain = Domain(feats).with_protected(["sex"])
    recorder = IDIRecorder(as_model(lambda X: np.asarray(X)[:, 0]), domain)  # the label is sex: every row an IDI
    X = np.array([[0, 5, 6], [1, 5, 6], [0, 2**40, 0], [1, 2**40, 0], [1, 5, 6]])  # three rows, two of one key
    res, new = recorder.check(X, "global")
    assert res.is_idi.all()
    np.testing.assert_array_equal(new, [True, False, True, False, False])
    assert recorder.n_idis == 2 and recorder.n_tested == 2


def test_a_location_is_refused_after_the_next_locate():
    table = IntKeyTable()
    first = table.locate(np.arange(10))
    table.locate(np.arange(5, 20))  # may merge the runs first's places point into
    with pytest.raises(RuntimeError, match="out of date"):
        table.mark_at(first, TESTED)
    with pytest.raises(RuntimeError, match="out of date"):
        table.flags_at(first.rows(np.arange(3)))


class _Seen(torch.nn.Module):
    """The biased toy, keeping every row the model is asked about."""

    def __init__(self):
        super().__init__()
        self.inner = biased_module()
        self.rows = []

    def forward(self, x):
        self.rows.append(torch.round(x.detach()).numpy().astype(np.int64))
        return self.inner(x)


@pytest.mark.parametrize("name", ["aequitas", "eidig-inf", "grft", "themis"])
def test_a_search_through_a_hash_level_of_five_keys_counts_what_the_model_saw(name, monkeypatch):
    # These searches send the model only checked inputs and their counterparts, which share the input's key: the
    # keys tested are the keys of the rows it saw, the IDIs those of the pairs, whatever the table's level sizes.
    domain = toy_domain()
    seeds = domain.sample(30, np.random.default_rng(0))
    results = []
    for max_keys, min_slots in ((key_table.RECENT_MAX_KEYS, key_table.RECENT_MIN_SLOTS), (5, 1)):
        monkeypatch.setattr(key_table, "RECENT_MAX_KEYS", max_keys)
        monkeypatch.setattr(key_table, "RECENT_MIN_SLOTS", min_slots)
        module = _Seen()
        res = make_generator(name, max_global=40, max_local=100).run(as_model(module), domain, seeds, random_state=1)
        assert res.n_tested == len(np.unique(domain.keys(np.concatenate(module.rows))))
        assert res.n_idis == res.n_global + res.n_local == len(res.idis) == len(np.unique(domain.keys(res.idis)))
        results.append(res)
    default, tiny = results
    assert (default.n_tested, default.n_idis, default.n_queries) == (tiny.n_tested, tiny.n_idis, tiny.n_queries)
    np.testing.assert_array_equal(default.idis, tiny.idis)
    np.testing.assert_array_equal(default.counterparts, tiny.counterparts)
