"""Every IDI key a search met, once, with a byte of flags: what the recorder and a local walk know of it.

A search asks the same few questions of the keys (non-protected projections, :meth:`Domain.keys
<chiralfair.domain.Domain.keys>`) it meets: was this key checked (``n_tested``), is it a recorded IDI
(``n_idis``), has this local walk checked it already and with what outcome
(:class:`~chiralfair.generators.gradient_steps.KnownOutcomes`)? Each answer is a bit of one flag byte per key, in
one table. A batch is looked up once (:meth:`IntKeyTable.locate`): the walk reads what it knows there, the recorder
and the walk then set their bits at the same places (:meth:`~IntKeyTable.flags_at`, :meth:`~IntKeyTable.mark_at`)
without searching again.

int64 keys live in two levels. The keys met lately (at most :data:`RECENT_MAX_KEYS`, plus one batch) are in a hash
table, pandas' ``Int64HashTable`` (khash, the table of pandas' own joins), which maps each to its slot in a flag
array: locating a batch there is one lookup in C, whatever the number of keys, and the perf guard's search (350,000
keys) never leaves it. A key there costs about 45 bytes. When the next batch could overfill it, its keys are sorted
into a run of the older level: a few sorted numpy runs (a log-structured merge), where a key costs 9 bytes (10 with
the filter below) and is copied O(log n) times in all by the merges. A key of a run met again is copied into the hash
table with its flags (the run's copy is updated when the hash table is next emptied), so a batch's keys always end up
in the hash table's slots. A run large enough for its binary search to miss the cache at every step gets a fence
(every :data:`FENCE_STRIDE`-th key): the search then runs in the fence, which stays in the cache, and in one short
block of the run. Before the runs are searched, a bit map of the keys' hashes (a one-hash Bloom filter of at least
:data:`FILTER_BITS_PER_KEY` bits a key) says which keys cannot be in a run, so that new keys (most of a local walk's
batch) are searched in no run. Keys of domains with 2**63 points or more are bytes objects (:meth:`Domain.keys`) and
live in a dict.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from pandas._libs.hashtable import Int64HashTable

from ..domain import Domain

#: The key was checked (in either phase).
TESTED = 1
#: The key is a recorded IDI.
RECORDED = 2
# Bits a caller may borrow for its own questions (a local walk takes two, :meth:`IntKeyTable.borrow_bits`).
BORROWABLE = (4, 8, 16, 32, 64, 128)

# The hash table of the keys met lately holds at most this many before a batch (about 23 MiB with its arrays); the
# budget cap's 13 M keys go through it half a million at a time.
RECENT_MAX_KEYS = 1 << 19
# Slots its arrays start with; they double when the keys outgrow them.
RECENT_MIN_SLOTS = 1 << 12
# A newer run is merged into the one before it once that one is less than this many times larger, so the table
# holds O(log n) runs and each key is copied O(log n) times in total.
MERGE_RATIO = 4
# A run is not merged past this many keys (36 MiB with its flags): a merge copies both runs, so the last merges
# would otherwise hold twice the whole table at once (about 270 MB more on the budget cap's 15 M keys).
MAX_RUN_KEYS = 1 << 22
# Runs of at least this many keys are searched through a fence of every FENCE_STRIDE-th key.
# (``searchsorted`` is faster below about 2 M keys for batches of a few hundred to 60,000 keys, on 2026-12-06's
# machine; the fence wins on the budget cap's runs of 4 M keys.)
FENCE_MIN_KEYS = 1 << 21
FENCE_STRIDE = 32
# The filter keeps at least this many bits per key (one byte a key): a key not in the runs passes it (and is
# searched for in vain) with probability at most 1 - exp(-1/8), 12%.
FILTER_BITS_PER_KEY = 8
# Smallest filter, in bytes; the filter doubles when the keys outgrow it and is rebuilt from the runs in chunks of
# FILTER_CHUNK keys (so the rebuild holds no copy of the whole table).
FILTER_MIN_BYTES = 1 << 10
FILTER_CHUNK = 1 << 20
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the key times 2**64 / phi, its top bits
# Runs merged into at most this many keys are merged by one stable sort of both (timsort finds the two sorted runs
# and merges them), 2-3x faster than placing the newer keys through a mask on 2026-12-06's machine; it holds an
# index of 8 bytes a key for the merge, so the largest merges (up to MAX_RUN_KEYS, the budget cap's) keep the mask.
SORT_MERGE_KEYS = 1 << 20
# Row v: the bits of the byte v, so that a bincount of the bytes gained gives every bit's count in one product.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)
# Where some keys sit in a run: its flags, which keys (indices), their positions there.
_Place = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class KeyLocation:
    """Where the keys of a batch sit in a table (:meth:`IntKeyTable.locate`); valid until its next ``locate``.

    Attributes
    ----------
    keys : numpy.ndarray, shape (n_rows,)
        The rows' keys.
    inverse : numpy.ndarray of int64, shape (n_rows,)
        Each row's slot in ``flags``: rows of one key share it.
    flags : numpy.ndarray of uint8
        The flags the slots index, kept up to date by the table's :meth:`~IntKeyTable.mark_at` (shared by the
        locations of :meth:`rows`).
    repeats : bool
        Whether some key is on several rows of the batch.
    generation : int
        Which ``locate`` of its table made it (a location of an earlier one is refused).
    """

    keys: np.ndarray
    inverse: np.ndarray
    flags: np.ndarray
    repeats: bool
    generation: int = 0

    def rows(self, rows) -> KeyLocation:
        """The location of some rows only (indices or mask).

        Indices that name a row twice, or not in increasing order, make a location whose ``repeats`` is True, so
        that :meth:`IntKeyTable.mark_at` gives a key every row's bits and counts its gains once.

        Parameters
        ----------
        rows : array-like of int or bool

        Returns
        -------
        KeyLocation
        """
        inverse = self.inverse[rows]
        repeats = self.repeats
        if not repeats and len(inverse) > 1:
            picked = np.asarray(rows)
            # indices rising from 0 or more name distinct rows in order (a walk's nonzero()); others are read as the
            # rows they name (negative indices too)
            if picked.dtype != bool and not (picked[0] >= 0 and (picked[1:] > picked[:-1]).all()):
                picked = np.arange(len(self.inverse))[rows]
                repeats = not bool((picked[1:] > picked[:-1]).all())
        return KeyLocation(self.keys[rows], inverse, self.flags, repeats, self.generation)


class IntKeyTable:
    """int64 keys, each once, with a uint8 of flags: the keys met lately in a hash table, the others in sorted runs.

    Locating a batch of ``b`` keys costs a lookup in the hash table and, for the keys not there, a filter and a
    search of each run (O(log n) runs of at most :data:`MAX_RUN_KEYS` keys); reading and setting flags at a location
    costs a gather or scatter. A key costs about 45 bytes in the hash table (at most :data:`RECENT_MAX_KEYS` of
    them) and 10 in a run.
    """

    def __init__(self) -> None:
        self._keys: list[np.ndarray] = []
        self._flags: list[np.ndarray] = []
        self._fences: list[np.ndarray | None] = []
        self._generation = 0  # locates so far: a location is valid while this has not moved on
        self._counts = np.zeros(8, dtype=np.int64)
        self._free = list(BORROWABLE)
        self._n_run_keys = 0
        self._filter = np.zeros(FILTER_MIN_BYTES, dtype=np.uint8)
        self._filter_shift = np.uint64(64 - (FILTER_MIN_BYTES * 8).bit_length() + 1)
        self._recent: Int64HashTable
        self._recent_keys: np.ndarray
        self._recent_flags: np.ndarray
        self._owner: np.ndarray
        self._n_recent: int
        self._n_copied: int
        self._copies: list[_Place]
        self._empty_recent(RECENT_MIN_SLOTS)

    def __len__(self) -> int:
        return self._n_run_keys + self._n_recent - self._n_copied

    @property
    def nbytes(self) -> int:
        """Bytes held: the hash table's and its arrays', the runs' 9 a key, the fences' and the filter's."""
        recent = self._recent.sizeof() + self._recent_keys.nbytes + self._recent_flags.nbytes + self._owner.nbytes
        runs = sum(k.nbytes + f.nbytes + (0 if c is None else c.nbytes)
                   for k, f, c in zip(self._keys, self._flags, self._fences, strict=True))
        return recent + runs + self._filter.nbytes

    def count(self, bit: int) -> int:
        """Keys whose flags hold ``bit`` (:data:`TESTED`, :data:`RECORDED` or a borrowed bit).

        Parameters
        ----------
        bit : int
            A single bit.

        Returns
        -------
        int
        """
        return int(self._counts[int(bit).bit_length() - 1])

    def locate(self, keys) -> KeyLocation:
        """Find each key, adding the keys not in the table (with no flag set).

        The location is valid until the next call of ``locate`` (which may move the keys).

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n_keys,)

        Returns
        -------
        KeyLocation
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        if self._n_recent and self._n_recent + len(keys) > RECENT_MAX_KEYS:
            self._empty_into_runs()
        self._generation += 1
        slots = self._recent.lookup(keys)
        absent = (slots < 0).nonzero()[0]
        if len(absent):
            slots[absent] = self._admit(keys[absent])
        return KeyLocation(keys, slots, self._recent_flags, self._repeats(slots), self._generation)

    def flags_at(self, location: KeyLocation) -> np.ndarray:
        """The flags of each row's key, shape (n_rows,), uint8 (0 for a key added by the ``locate``).

        Parameters
        ----------
        location : KeyLocation
            Of this table's last :meth:`locate`.

        Returns
        -------
        numpy.ndarray of uint8, shape (n_rows,)
        """
        self._require_current(location)
        return location.flags[location.inverse]

    def mark_at(self, location: KeyLocation, bits) -> None:
        """Set ``bits`` in the flags of each row's key.

        Parameters
        ----------
        location : KeyLocation
            Of this table's last :meth:`locate` (or some of its rows, :meth:`KeyLocation.rows`).
        bits : int or numpy.ndarray of uint8, shape (n_rows,)
            One value for all rows or one per row (a key on two rows gets both rows' bits).
        """
        self._require_current(location)
        slots = location.inverse
        if not len(slots):
            return
        flags = location.flags
        before = flags[slots]
        if not location.repeats:
            after = before | np.asarray(bits, dtype=np.uint8)
            flags[slots] = after
            self._count_gains(before, after)
            return
        if np.ndim(bits) == 0:
            flags[slots] = before | np.uint8(bits)
        else:
            np.bitwise_or.at(flags, slots, np.asarray(bits, dtype=np.uint8))
        owner = self._owner_rows(slots)  # a key on several rows gains its bits once
        self._count_gains(before[owner], flags[slots[owner]])

    def flags(self, keys) -> np.ndarray:
        """The flags of each key, shape (n_keys,), uint8 (0 for a key not in the table); adds no key.

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n_keys,)

        Returns
        -------
        numpy.ndarray of uint8, shape (n_keys,)
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        slots = self._recent.lookup(keys)
        found = np.zeros(len(keys), dtype=np.uint8)
        here = slots >= 0
        found[here] = self._recent_flags[slots[here]]
        elsewhere = (~here).nonzero()[0]
        if len(elsewhere):
            found[elsewhere] = self._in_runs(keys[elsewhere])[0]
        return found

    def mark(self, keys, bits) -> np.ndarray:
        """Set ``bits`` in the flags of each key (adding keys not in the table); return the flags before.

        :meth:`locate`, :meth:`flags_at` and :meth:`mark_at` in one.

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n_keys,)
        bits : int or numpy.ndarray of uint8, shape (n_keys,)

        Returns
        -------
        numpy.ndarray of uint8, shape (n_keys,)
            Each key's flags before this call.
        """
        location = self.locate(keys)
        before = self.flags_at(location)
        self.mark_at(location, bits)
        return before

    def borrow_bits(self, n: int) -> tuple[int, ...]:
        """``n`` flag bits no one else uses, for a caller's own questions; give them back with :meth:`return_bits`.

        Parameters
        ----------
        n : int

        Returns
        -------
        tuple of int
            Single bits.

        Raises
        ------
        RuntimeError
            If fewer than ``n`` bits are free (at most three local walks hold bits at once).
        """
        return _borrow(self, n)

    def return_bits(self, bits) -> None:
        """Clear ``bits`` in every key's flags and make them free again.

        Parameters
        ----------
        bits : sequence of int
            Bits of :meth:`borrow_bits`.
        """
        mask = np.uint8(sum(bits))
        for flags in (*self._flags, self._recent_flags):
            flags &= ~mask
        self._generation += 1
        _free(self, bits)

    def _require_current(self, location: KeyLocation) -> None:
        if location.generation != self._generation:
            raise RuntimeError("this key location is out of date: a location is valid until the table's next locate "
                               "(which may move the keys), so flags must be read and set before the next one")

    def _admit(self, keys: np.ndarray) -> np.ndarray:
        """Put keys absent from the hash table into it (a key of a run with its flags); each row's slot, shape (n,).

        A key on several rows gets one slot: the hash table first maps each key to its last row's slot, and when
        some key repeats, the distinct keys are mapped again to consecutive slots.
        """
        first = self._n_recent
        slots = np.arange(first, first + len(keys))
        self._recent.map_keys_to_values(keys, slots)
        mapped = self._recent.lookup(keys)
        own = mapped == slots
        distinct = keys
        if not own.all():
            distinct = keys[own]
            self._recent.map_keys_to_values(distinct, np.arange(first, first + len(distinct)))
            mapped = self._recent.lookup(keys)
        end = first + len(distinct)
        self._reserve(end)
        self._recent_keys[first:end] = distinct
        if self._n_run_keys:
            flags, found, places = self._in_runs(distinct)
            self._recent_flags[first:end] = flags
            self._n_copied += int(found.sum())
            # the runs change only when the hash table is emptied, so these places hold until then
            self._copies.extend((run_flags, first + which, pos) for run_flags, which, pos in places)
        else:
            self._recent_flags[first:end] = 0
        self._n_recent = end
        return mapped

    def _owner_rows(self, slots: np.ndarray) -> np.ndarray:
        """One row of each slot (its last), as a mask, shape (n,)."""
        rows = np.arange(len(slots))
        self._owner[slots] = rows
        return self._owner[slots] == rows

    def _repeats(self, slots: np.ndarray) -> bool:
        return len(slots) > 1 and not self._owner_rows(slots).all()

    def _reserve(self, n: int) -> None:
        """Room for ``n`` keys in the hash table's arrays (doubled as needed)."""
        size = len(self._recent_flags)
        if n <= size:
            return
        size = max(n, min(2 * size, RECENT_MAX_KEYS))  # doubled, but not past the most it holds before a batch
        held = self._n_recent
        keys, flags = np.empty(size, dtype=np.int64), np.zeros(size, dtype=np.uint8)
        keys[:held], flags[:held] = self._recent_keys[:held], self._recent_flags[:held]
        self._recent_keys, self._recent_flags = keys, flags
        self._owner = np.empty(size, dtype=np.int32)

    def _empty_recent(self, size: int) -> None:
        self._recent = Int64HashTable()
        self._recent_keys = np.empty(size, dtype=np.int64)
        self._recent_flags = np.zeros(size, dtype=np.uint8)
        self._owner = np.empty(size, dtype=np.int32)  # scratch: a row per slot (:meth:`_owner_rows`)
        self._n_recent = 0
        self._n_copied = 0  # keys of the hash table that are in a run too (copied from there when met again)
        self._copies = []  # where they are: (the run's flags, their slots here, their positions there)

    def _empty_into_runs(self) -> None:
        """Move the hash table's keys into the runs.

        The keys copied from a run give it their flags; the others become a new run, merged at once.
        """
        held = self._n_recent
        keys, flags = self._recent_keys[:held], self._recent_flags[:held]
        if self._n_copied:
            new = np.ones(held, dtype=bool)
            for run_flags, slots, pos in self._copies:
                run_flags[pos] = flags[slots]
                new[slots] = False
            keys, flags = keys[new], flags[new]
        order = keys.argsort()
        keys, flags = keys[order], flags[order]
        del order
        self._empty_recent(RECENT_MIN_SLOTS)  # let the hash table go before the runs grow
        if len(keys):
            self._add_run(keys, flags)
            self._merge_newest()

    def _in_runs(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[_Place]]:
        """Each key's flags in the runs (0 where in none), and whether it is in one, shape (n,) each.

        With the places of those found: (the run's flags, which keys (indices), their positions there). Only the keys
        the filter lets pass are searched for.
        """
        flags, found = np.zeros(len(keys), dtype=np.uint8), np.zeros(len(keys), dtype=bool)
        places: list[_Place] = []
        if not self._n_run_keys:
            return flags, found, places
        todo = self._in_filter(keys).nonzero()[0]
        if len(self._keys[0]) >= FENCE_MIN_KEYS:  # sorted, a search of a large run reads it in order, cache-friendly
            todo = todo[keys[todo].argsort()]
        # the newest (smallest) runs first: fewer keys are left to search for in the oldest, largest runs, whose
        # searches miss the cache
        for run in range(len(self._keys) - 1, -1, -1):
            if not len(todo):
                break
            run_keys, run_flags = self._keys[run], self._flags[run]
            query = keys[todo]
            pos = _search(run_keys, self._fences[run], query)
            hit = run_keys[pos] == query
            if hit.any():
                which, pos = todo[hit], pos[hit]
                flags[which], found[which] = run_flags[pos], True
                places.append((run_flags, which, pos))
                todo = todo[~hit]
        return flags, found, places

    def _hash(self, keys: np.ndarray) -> np.ndarray:
        """Each key's bit in the filter (the top bits of the key times :data:`_GOLDEN`, modulo 2**64)."""
        return (keys.view(np.uint64) * _GOLDEN) >> self._filter_shift

    def _in_filter(self, keys: np.ndarray) -> np.ndarray:
        """False for the keys that are in no run; True for the others and for a few keys not in one."""
        h = self._hash(keys)
        return (self._filter.take(h >> np.uint64(3)) >> (h & np.uint64(7)).astype(np.uint8)) & 1 != 0

    def _add_to_filter(self, keys: np.ndarray) -> None:
        """Set the bits of ``keys`` (new to the runs), growing the filter first when the keys would outgrow it."""
        self._n_run_keys += len(keys)
        if self._n_run_keys * FILTER_BITS_PER_KEY > self._filter.size * 8:
            size = self._filter.size
            while self._n_run_keys * FILTER_BITS_PER_KEY > size * 8:
                size *= 2
            self._filter = np.zeros(size, dtype=np.uint8)
            self._filter_shift = np.uint64(64 - (size * 8).bit_length() + 1)
            for run in self._keys:  # the new keys' run is among them
                for start in range(0, len(run), FILTER_CHUNK):
                    self._set_filter_bits(run[start:start + FILTER_CHUNK])
        else:
            self._set_filter_bits(keys)

    def _set_filter_bits(self, keys: np.ndarray) -> None:
        h = self._hash(keys)
        np.bitwise_or.at(self._filter, h >> np.uint64(3),
                         np.left_shift(np.uint8(1), (h & np.uint64(7)).astype(np.uint8)))

    def _count_gains(self, before: np.ndarray, after: np.ndarray) -> None:
        gained = after & ~before
        if gained.any():  # every bit's count in one pass: how many keys gained each byte value, times its bits
            self._counts += np.bincount(gained, minlength=256) @ _BYTE_BITS

    def _add_run(self, keys: np.ndarray, flags: np.ndarray) -> None:
        self._keys.append(keys)
        self._flags.append(flags)
        self._fences.append(_fence(keys))
        self._add_to_filter(keys)

    def _merge_newest(self) -> None:
        """Merge the newest run into the ones before it while they are less than :data:`MERGE_RATIO` times larger."""
        keys, flags, fences = self._keys, self._flags, self._fences
        while (len(keys) > 1 and len(keys[-2]) < MERGE_RATIO * len(keys[-1])
               and len(keys[-2]) + len(keys[-1]) <= MAX_RUN_KEYS):
            newer, newer_flags = keys.pop(), flags.pop()
            fences.pop()
            keys[-1], flags[-1] = _merged(keys[-1], flags[-1], newer, newer_flags)
            fences[-1] = _fence(keys[-1])


class ObjectKeyTable:
    """The fallback for bytes keys of domains with 2**63 points or more (:meth:`Domain.keys`): a Python dict.

    The methods of :class:`IntKeyTable`, one dict operation per key.
    """

    def __init__(self) -> None:
        self._flags: dict[bytes, int] = {}
        self._counts = np.zeros(8, dtype=np.int64)
        self._free = list(BORROWABLE)

    def __len__(self) -> int:
        return len(self._flags)

    @property
    def nbytes(self) -> int:
        """Bytes the dict and its keys hold (as ``sys.getsizeof`` counts them; the flag ints are shared)."""
        return sys.getsizeof(self._flags) + sum(sys.getsizeof(k) for k in self._flags)

    def count(self, bit: int) -> int:
        """As :meth:`IntKeyTable.count`.

        Parameters
        ----------
        bit : int

        Returns
        -------
        int
        """
        return int(self._counts[int(bit).bit_length() - 1])

    def locate(self, keys) -> KeyLocation:
        """As :meth:`IntKeyTable.locate` (the location holds the keys themselves).

        Its ``inverse`` is each row's index among the batch's distinct keys.

        Parameters
        ----------
        keys : numpy.ndarray of bytes objects, shape (n_keys,)

        Returns
        -------
        KeyLocation
        """
        keys = np.asarray(keys, dtype=object)
        for k in keys:
            self._flags.setdefault(k, 0)
        # rows of one key share an index (the recorder counts a key on two IDI rows as one new IDI by it)
        index: dict[bytes, int] = {}
        inverse = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64, count=len(keys))
        return KeyLocation(keys, inverse, np.zeros(len(index), dtype=np.uint8), len(index) < len(keys))

    def flags_at(self, location: KeyLocation) -> np.ndarray:
        """As :meth:`IntKeyTable.flags_at`.

        Parameters
        ----------
        location : KeyLocation

        Returns
        -------
        numpy.ndarray of uint8, shape (n_rows,)
        """
        return self.flags(location.keys)

    def mark_at(self, location: KeyLocation, bits) -> None:
        """As :meth:`IntKeyTable.mark_at`.

        Parameters
        ----------
        location : KeyLocation
        bits : int or numpy.ndarray of uint8, shape (n_rows,)
        """
        table = self._flags
        bits = np.broadcast_to(np.asarray(bits, dtype=np.uint8), (len(location.keys),))
        for k, b in zip(location.keys, bits.tolist(), strict=True):
            before = table[k]
            after = before | b
            table[k] = after
            gained = after & ~before
            for bit in range(8):
                if gained >> bit & 1:
                    self._counts[bit] += 1

    def flags(self, keys) -> np.ndarray:
        """As :meth:`IntKeyTable.flags`.

        Parameters
        ----------
        keys : sequence of bytes, length n_keys

        Returns
        -------
        numpy.ndarray of uint8, shape (n_keys,)
        """
        get = self._flags.get
        return np.fromiter((get(k, 0) for k in keys), dtype=np.uint8, count=len(keys))

    def mark(self, keys, bits) -> np.ndarray:
        """As :meth:`IntKeyTable.mark`.

        Parameters
        ----------
        keys : sequence of bytes, length n_keys
        bits : int or numpy.ndarray of uint8, shape (n_keys,)

        Returns
        -------
        numpy.ndarray of uint8, shape (n_keys,)
        """
        before = self.flags(keys)
        location = self.locate(keys)
        self.mark_at(location, bits)
        return before

    def borrow_bits(self, n: int) -> tuple[int, ...]:
        """As :meth:`IntKeyTable.borrow_bits`.

        Parameters
        ----------
        n : int

        Returns
        -------
        tuple of int
        """
        return _borrow(self, n)

    def return_bits(self, bits) -> None:
        """As :meth:`IntKeyTable.return_bits`.

        Parameters
        ----------
        bits : sequence of int
        """
        mask = sum(bits)
        for k, f in self._flags.items():
            self._flags[k] = f & ~mask
        _free(self, bits)


def key_table_for(domain: Domain) -> IntKeyTable | ObjectKeyTable:
    """The table that fits the domain's keys: int64 keys in sorted arrays, bytes keys in a Python dict.

    Parameters
    ----------
    domain : Domain

    Returns
    -------
    IntKeyTable or ObjectKeyTable
    """
    bytes_keys = domain.keys(domain.lower[None, :]).dtype == object
    return ObjectKeyTable() if bytes_keys else IntKeyTable()


def _borrow(table, n: int) -> tuple[int, ...]:
    if n > len(table._free):
        raise RuntimeError(f"the key table has {len(table._free)} free flag bits, {n} were asked for")
    taken, table._free = tuple(table._free[:n]), table._free[n:]
    return taken


def _free(table, bits) -> None:
    for bit in bits:
        table._counts[int(bit).bit_length() - 1] = 0
    table._free = sorted([*table._free, *bits])


def _merged(keys: np.ndarray, flags: np.ndarray, newer: np.ndarray,
            newer_flags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint sorted runs (and their flags) as one, in linear time: the newer keys go to their places."""
    n = len(keys) + len(newer)
    if n <= SORT_MERGE_KEYS:  # one stable sort: the runs are disjoint, so the order is the same
        both = np.concatenate([keys, newer])
        order = np.argsort(both, kind="stable")
        return both.take(order), np.concatenate([flags, newer_flags]).take(order)
    at = np.searchsorted(keys, newer) + np.arange(len(newer))
    older = np.ones(n, dtype=bool)
    older[at] = False
    out_keys, out_flags = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.uint8)
    out_keys[at], out_flags[at] = newer, newer_flags
    out_keys[older], out_flags[older] = keys, flags
    return out_keys, out_flags


def _fence(run: np.ndarray) -> np.ndarray | None:
    return run[::FENCE_STRIDE].copy() if len(run) >= FENCE_MIN_KEYS else None


def _search(run: np.ndarray, fence: np.ndarray | None, query: np.ndarray) -> np.ndarray:
    """For each sorted query, a position in ``run`` that holds it if ``run`` does (in bounds, shape (m,)).

    Without a fence, ``searchsorted``. With one, the block of :data:`FENCE_STRIDE` keys that could hold each query
    comes from the fence, and a branch-free binary search inside the block finds the last key <= the query.
    """
    last = len(run) - 1
    if fence is None:
        return np.minimum(run.searchsorted(query), last)
    pos = np.maximum(np.searchsorted(fence, query, side="right") - 1, 0) * FENCE_STRIDE
    step = FENCE_STRIDE >> 1
    while step:
        probe = np.minimum(pos + step, last)
        pos = np.where(run[probe] <= query, probe, pos)
        step >>= 1
    return pos
