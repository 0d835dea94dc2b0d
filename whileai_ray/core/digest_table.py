"""A set (or map to ints) of 64-bit digests in two flat arrays: what the planner keeps per prompt.

A Python ``set`` of 64-bit ints costs about 65 bytes a member (a 36-byte int object and its
slot) and a ``dict`` of them to ints about 100; a planner of a million prompts holds several
such sets. :class:`DigestTable` keeps the members in an ``array('Q')`` of slots (open addressing,
linear probing, at most 3/4 full) and, when it maps, their values in an ``array('q')`` beside
it: 11-21 bytes a member for a set, twice that for a map, nothing for the garbage collector to
walk. Members are never removed (the planner only adds).

The members are digests (blake2b, SHA-256 prefixes, MinHash values), so any bits are as good as
any others; they are still mixed (Fibonacci hashing) so that a run of related keys spreads out.
The digest 0 (``digest(None)``) cannot mark an empty slot and is kept aside.

* ``add(d) -> bool`` (True when new), ``d in t``, ``len(t)``;
* with ``values=True``: ``t.get(d, default)``, ``t.setdefault(d, v)``, ``t[d] = v``;
* ``DigestTable.of(digests, values=None)``: built at once from arrays (numpy, vectorised; with
  repeated digests the first one's value wins), as a snapshot restore needs;
* ``members()``: the digests (and values) as numpy arrays, in slot order;
* ``find(digests)``: which of many digests are members (and their values), vectorised.
"""
from __future__ import annotations

from array import array

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["DigestTable"]

_GOLD = 0x9E3779B97F4A7C15
_M64 = (1 << 64) - 1
_MIN_BITS = 4


class DigestTable:
    __slots__ = ("_keys", "_vals", "_bits", "_shift", "_mask", "_n", "_limit", "_zero", "values")
    _keys: array[int]
    _vals: array[int] | None          # the values of a map; None for a set (``values`` False)
    _bits: int
    _shift: int
    _mask: int
    _n: int
    _limit: int
    _zero: int | None
    values: bool

    def __init__(self, values: bool = False, capacity: int = 0) -> None:
        self.values = bool(values)
        bits = _MIN_BITS
        while (3 << bits) // 4 < capacity:
            bits += 1
        self._alloc(bits)
        self._n = 0
        self._zero = None             # the digest 0: None (absent), or its value (0 for a set)

    def _alloc(self, bits: int) -> None:
        size = 1 << bits
        self._bits, self._shift, self._mask = bits, 64 - bits, size - 1
        self._limit = (3 * size) // 4
        self._keys = array("Q", bytes(8 * size))
        self._vals = array("q", bytes(8 * size)) if self.values else None

    def __len__(self) -> int:
        return self._n + (self._zero is not None)

    def _slot(self, d: int) -> int:
        """The slot holding ``d``, or the empty slot where it would go. (``__contains__``, ``add``
        and ``get`` run this probe written out, a call less on the Driver's hot path: a change to
        the probe sequence changes all four.)"""
        keys, mask = self._keys, self._mask
        i = ((d * _GOLD) & _M64) >> self._shift
        while True:
            k = keys[i]
            if k == d or k == 0:
                return i
            i = (i + 1) & mask

    def __contains__(self, d: int) -> bool:
        if d == 0:
            return self._zero is not None
        keys, mask = self._keys, self._mask        # (``_slot`` inline: the planner asks several times a row)
        i = ((d * _GOLD) & _M64) >> self._shift
        while True:
            k = keys[i]
            if k == d:
                return True
            if k == 0:
                return False
            i = (i + 1) & mask

    def add(self, d: int, value: int = 0) -> bool:
        """Add ``d`` (with ``value`` in a map); True when it was new (a present one keeps its value)."""
        if d == 0:
            if self._zero is not None:
                return False
            self._zero = value
            return True
        keys, mask = self._keys, self._mask        # (``_slot`` inline: one lookup a new member, several a row)
        i = ((d * _GOLD) & _M64) >> self._shift
        while True:
            k = keys[i]
            if k == d:
                return False
            if k == 0:
                break
            i = (i + 1) & mask
        if self._n >= self._limit:
            self._grow()
            i = self._slot(d)
            keys = self._keys
        keys[i] = d
        if self._vals is not None:
            self._vals[i] = value
        self._n += 1
        return True

    def get(self, d: int, default: int | None = None) -> int | None:
        if d == 0:
            return default if self._zero is None else self._zero
        keys, mask = self._keys, self._mask        # (``_slot`` inline, as in ``__contains__``)
        i = ((d * _GOLD) & _M64) >> self._shift
        while True:
            k = keys[i]
            if k == d:
                break
            if k == 0:
                return default
            i = (i + 1) & mask
        assert self._vals is not None, "DigestTable.get needs a map (values=True)"
        return self._vals[i]

    def setdefault(self, d: int, value: int) -> int:
        """The value of ``d``, adding it with ``value`` first when absent."""
        if not self.add(d, value):
            have = self.get(d)
            assert have is not None         # add() returned False: ``d`` is a member
            return have
        return value

    def __setitem__(self, d: int, value: int) -> None:
        if d == 0:
            self._zero = value
            return
        i = self._slot(d)
        if self._keys[i] != d:
            self.add(d, value)
        else:
            assert self._vals is not None, "DigestTable[d] = v needs a map (values=True)"
            self._vals[i] = value

    def __getitem__(self, d: int) -> int:
        out = self.get(d)
        if out is None:
            raise KeyError(d)
        return out

    # ------------------------------------------------------------ whole arrays
    def find(self, digests: ArrayLike) -> tuple[np.ndarray, np.ndarray | None]:
        """``(found, values)`` for an array of digests: a bool per digest and, in a map, its
        value (0 where not found). Linear probing run for all of them at once, one probe step a
        pass (a table at most 3/4 full needs few passes)."""
        d = np.ascontiguousarray(digests, dtype=np.uint64).reshape(-1)
        table = np.frombuffer(self._keys, dtype=np.uint64)
        with np.errstate(over="ignore"):
            slot = ((d * np.uint64(_GOLD)) >> np.uint64(self._shift)).astype(np.int64)
        found = np.zeros(len(d), dtype=bool)
        at = np.full(len(d), -1, dtype=np.int64)
        todo = np.flatnonzero(d != 0)
        while len(todo):
            k = table[slot[todo]]
            hit = k == d[todo]
            found[todo[hit]] = True
            at[todo[hit]] = slot[todo[hit]]
            todo = todo[~hit & (k != 0)]
            slot[todo] = (slot[todo] + 1) & self._mask
        if self._zero is not None:
            found[d == 0] = True
        values: np.ndarray | None = None
        if self._vals is not None:
            values = np.zeros(len(d), dtype=np.int64)
            hit = at >= 0
            values[hit] = np.frombuffer(self._vals, dtype=np.int64)[at[hit]]
            if self._zero is not None:
                values[d == 0] = self._zero
        return found, values

    def members(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(digests, values)`` (values None for a set), slot order, the digest 0 last."""
        keys = np.frombuffer(self._keys, dtype=np.uint64)
        used = np.flatnonzero(keys)
        k = keys[used].copy()
        v = np.frombuffer(self._vals, dtype=np.int64)[used].copy() if self._vals is not None else None
        if self._zero is not None:
            k = np.append(k, np.uint64(0))
            if v is not None:
                v = np.append(v, np.int64(self._zero))
        return k, v

    def _grow(self) -> None:
        keys = np.frombuffer(self._keys, dtype=np.uint64)
        used = np.flatnonzero(keys)                  # the table's own members (the digest 0 is aside)
        k = keys[used].copy()
        v = np.frombuffer(self._vals, dtype=np.int64)[used].copy() if self._vals is not None else None
        del keys
        self._alloc(self._bits + 1)
        self._place(k, v)

    @classmethod
    def of(cls, digests: ArrayLike, values: ArrayLike | None = None, capacity: int = 0) -> "DigestTable":
        """A table of ``digests`` (any order, repeats allowed: the first one's value wins).

        One sort does it all: by the mixed digest (a bijection of the digest), which puts repeats
        side by side and orders the distinct ones by home slot, as ``_place`` needs."""
        d = np.ascontiguousarray(digests, dtype=np.uint64).reshape(-1)
        v = None if values is None else np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        if v is not None and len(v) != len(d):
            raise ValueError("DigestTable.of: one value per digest")
        with np.errstate(over="ignore"):
            mixed = d * np.uint64(_GOLD)
        order = np.argsort(mixed)
        ms = mixed[order]
        starts = np.flatnonzero(np.append(True, ms[1:] != ms[:-1])) if len(d) else np.zeros(0, np.int64)
        # the first of each run of repeats (by position in ``digests``): its value wins
        first = np.minimum.reduceat(order, starts) if len(starts) and len(starts) < len(d) else order[starts]
        out = cls(values=v is not None, capacity=max(capacity, len(first)))
        keys, vals, ms = d[first], (v[first] if v is not None else None), ms[starts]
        if len(keys) and keys[0] == 0:                     # the digest 0 mixes to 0: it sorts first
            out._zero = int(vals[0]) if vals is not None else 0
            keys, ms = keys[1:], ms[1:]
            vals = vals[1:] if vals is not None else None
        out._place(keys, vals, (ms >> np.uint64(out._shift)).astype(np.int64))
        return out

    def _place(self, keys: np.ndarray, vals: np.ndarray | None, home: np.ndarray | None = None) -> None:
        """Put distinct nonzero ``keys`` into this empty table at once. Sorted by home slot, a
        key's slot under linear probing is ``max(home, slot of the key before + 1)``, a running
        maximum; the few that run past the last slot are added one by one (they wrap).
        ``home``: the keys' home slots when ``keys`` are already in home order (``of``)."""
        n = len(keys)
        if home is None:
            with np.errstate(over="ignore"):
                home = ((keys * np.uint64(_GOLD)) >> np.uint64(self._shift)).astype(np.int64)
            order = np.argsort(home, kind="stable")
            keys, home = keys[order], home[order]
            vals = vals[order] if vals is not None else None
        rank = np.arange(n, dtype=np.int64)
        slot = rank + np.maximum.accumulate(home - rank) if n else rank
        fits = slot <= self._mask
        table = np.frombuffer(self._keys, dtype=np.uint64)
        table[slot[fits]] = keys[fits]
        if self._vals is not None and vals is not None:
            np.frombuffer(self._vals, dtype=np.int64)[slot[fits]] = vals[fits]
        del table
        self._n = int(fits.sum())
        for i in np.flatnonzero(~fits).tolist():
            self.add(int(keys[i]), int(vals[i]) if vals is not None else 0)
