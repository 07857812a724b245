"""An open-addressing hash set of int64 keys with a flag byte each: the newest keys of a search's key table.

A local walk locates a few hundred keys a step, over a thousand steps; in sorted numpy runs each locate costs a
sort, a search of every run and a merge, about 0.25 ms a step on the census DNN (issue 34). Here a locate is one
compiled loop over the batch (numba, which shap already brings): a multiplicative hash, then linear probing in a
table kept at most half full, so a probe sequence is short and usually one cache line. The table doubles as it
fills; :class:`~chiralfair.generators.key_table.KeyTable` moves its keys into sorted runs (9 bytes a key) once it
reaches :data:`~chiralfair.generators.key_table.FRONT_MAX_KEYS`, so memory stays that of the runs.

Keys are any int64 but :data:`EMPTY` (the smallest int64), which marks a free slot; a domain's keys are never
negative (:meth:`Domain.keys <chiralfair.domain.Domain.keys>`).
"""

from __future__ import annotations

import numba
import numpy as np

#: Marks a free slot; the one int64 that cannot be a key.
EMPTY = np.iinfo(np.int64).min
# Fibonacci hashing: the golden-ratio multiplier spreads consecutive keys (mixed-radix keys of neighbouring inputs
# differ by a radix weight) over the whole table.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIN_SLOTS = 1 << 12


@numba.njit(cache=True, nogil=True)
def _probe(slots: np.ndarray, shift: int, keys: np.ndarray, add: bool, out: np.ndarray) -> int:  # pragma: no cover
    """Each key's slot (``out``), adding the absent keys when ``add`` (else -1 for them); the keys added.

    ``slots`` has a power-of-two length, ``64 - shift`` its bit width; the caller keeps it at most half full.
    """
    mask = len(slots) - 1
    added = 0
    for i in range(len(keys)):
        key = keys[i]
        s = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))
        while True:
            held = slots[s]
            if held == key:
                out[i] = s
                break
            if held == EMPTY:
                if add:
                    slots[s] = key
                    added += 1
                    out[i] = s
                else:
                    out[i] = -1
                break
            s = (s + 1) & mask
    return added


@numba.njit(cache=True, nogil=True)
def _probe_rows(slots: np.ndarray, shift: int, keys: np.ndarray, out: np.ndarray, inverse: np.ndarray,
                distinct: np.ndarray) -> tuple[int, int]:  # pragma: no cover
    """:func:`_probe` with ``add`` for keys that may repeat; returns (keys added, distinct keys).

    Fills each row's slot (``out``), its index among the batch's distinct keys (``inverse``, in order of first
    appearance) and the distinct keys' slots (``distinct``).
    """
    added = _probe(slots, shift, keys, True, out)
    n = len(keys)
    width, bits = 2, 1
    while width < 2 * n:
        width *= 2
        bits += 1
    seen = np.full(width, -1, dtype=np.int64)  # a slot of ``slots`` -> its index among the distinct keys
    local_shift = np.uint64(64 - bits)
    n_distinct = 0
    for i in range(n):
        s = out[i]
        j = np.int64((np.uint64(s) * _GOLDEN) >> local_shift)
        while True:
            u = seen[j]
            if u == -1:
                seen[j] = n_distinct
                distinct[n_distinct] = s
                inverse[i] = n_distinct
                n_distinct += 1
                break
            if distinct[u] == s:
                inverse[i] = u
                break
            j = (j + 1) & (width - 1)
    return added, n_distinct


class KeyHash:
    """int64 keys (not :data:`EMPTY`), each once, with a uint8 of flags, in an open-addressing table.

    Parameters
    ----------
    n_slots : int, default=MIN_SLOTS
        Initial slots, rounded up to a power of two; the table doubles whenever :meth:`reserve` asks for room.
    """

    def __init__(self, n_slots: int = MIN_SLOTS):
        self._allocate(_power_of_two(max(n_slots, MIN_SLOTS)))
        self.n_keys = 0

    def _allocate(self, n_slots: int) -> None:
        self.slots = np.full(n_slots, EMPTY, dtype=np.int64)
        #: The flags of the key in each slot (0 in a free one).
        self.flags = np.zeros(n_slots, dtype=np.uint8)
        self._shift = 64 - (n_slots.bit_length() - 1)

    def __len__(self) -> int:
        return self.n_keys

    @property
    def nbytes(self) -> int:
        """Bytes held: 9 per slot (key and flags)."""
        return self.slots.nbytes + self.flags.nbytes

    def reserve(self, n_more: int) -> None:
        """Make room for ``n_more`` keys more at most half-full, doubling the table (slots move) if needed.

        Parameters
        ----------
        n_more : int
        """
        needed = 2 * (self.n_keys + n_more)
        if needed <= len(self.slots):
            return
        occupied = self.slots != EMPTY
        keys, flags = self.slots[occupied], self.flags[occupied]
        self._allocate(_power_of_two(needed))
        where = np.empty(len(keys), dtype=np.int64)
        _probe(self.slots, self._shift, keys, True, where)
        self.flags[where] = flags

    def find(self, keys: np.ndarray, *, add: bool) -> np.ndarray:
        """Each key's slot, shape (n,); absent keys are added with flags 0 when ``add``, else get -1.

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n,)
            With ``add``, distinct, and room reserved for them (:meth:`reserve`).
        add : bool

        Returns
        -------
        numpy.ndarray of int64, shape (n,)

        Raises
        ------
        ValueError
            If a key is :data:`EMPTY`.
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        if len(keys) and keys.min() == EMPTY:
            raise ValueError(f"key {EMPTY} marks a free slot of the key table and cannot be stored")
        self.n_keys += _probe(self.slots, self._shift, keys, add, out)
        return out

    def locate_rows(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add the absent keys (flags 0) and say where each distinct key sits: one compiled pass, no sort.

        Parameters
        ----------
        keys : numpy.ndarray of int64, shape (n,)
            May repeat; room reserved for all of them (:meth:`reserve`).

        Returns
        -------
        slots : numpy.ndarray of int64, shape (n_distinct,)
            The distinct keys' slots, in order of first appearance.
        inverse : numpy.ndarray of int64, shape (n,)
            Each row's index into ``slots``.

        Raises
        ------
        ValueError
            If a key is :data:`EMPTY`.
        """
        keys = np.ascontiguousarray(keys, dtype=np.int64)
        n = len(keys)
        if n and keys.min() == EMPTY:
            raise ValueError(f"key {EMPTY} marks a free slot of the key table and cannot be stored")
        out, inverse, distinct = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        added, n_distinct = _probe_rows(self.slots, self._shift, keys, out, inverse, distinct)
        self.n_keys += added
        return distinct[:n_distinct], inverse

    def drain(self) -> tuple[np.ndarray, np.ndarray]:
        """Take every key out, sorted, with its flags, leaving the table empty (its size kept).

        Returns
        -------
        keys : numpy.ndarray of int64, shape (n_keys,)
            Ascending.
        flags : numpy.ndarray of uint8, shape (n_keys,)
        """
        occupied = self.slots != EMPTY
        keys, flags = self.slots[occupied], self.flags[occupied]
        order = np.argsort(keys)
        self.slots.fill(EMPTY)
        self.flags.fill(0)
        self.n_keys = 0
        return keys[order], flags[order]


def _power_of_two(n: int) -> int:
    return 1 << max(int(n) - 1, 1).bit_length()
