"""The row keys a writer has taken, as 128-bit digests: exactly-once without a Python tuple a row.

A checkpoint or Parquet writer refuses a row whose ``row_key`` it already holds. Kept as a
``set`` of key tuples (or key strings) that cost about 300 bytes a row, which a million-row run
carries twice in the driver. :class:`RowKeySet` keeps a 128-bit blake2b digest of the key's
``key_string`` in a :class:`~whileai_ray.core.digest_table.DigestTable` (first 64 bits as the
slot's digest, the other 64 as its value): about 32 bytes a row, nothing for the garbage
collector. Two different keys agree on all 128 bits about once in 10^26 million-row runs;
two that share only the first 64 bits (about once in 10^7 such runs) are told apart by keeping
the second one's full key string aside.
"""
from __future__ import annotations

import hashlib

from ..core.digest_table import DigestTable
from ..core.identity import key_string

__all__ = ["RowKeySet"]


def _digests(key) -> tuple[int, int, str]:
    text = key if isinstance(key, str) else key_string(key)
    h = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(h[:8], "little"), int.from_bytes(h[8:], "little", signed=True), text


class RowKeySet:
    """``add(key) -> bool`` (True when new), ``key in s``, ``len(s)``; a key is a ``row_key``
    tuple or its ``key_string`` (the two forms of one key are the same member)."""

    __slots__ = ("_table", "_aside")

    def __init__(self, keys=()):
        self._table = DigestTable(values=True)
        self._aside: set[str] = set()
        for key in keys:
            self.add(key)

    def __len__(self) -> int:
        return len(self._table) + len(self._aside)

    def add(self, key) -> bool:
        a, b, text = _digests(key)
        have = self._table.get(a)
        if have is None:
            self._table.add(a, b)
            return True
        if have == b or text in self._aside:
            return False
        self._aside.add(text)
        return True

    def __contains__(self, key) -> bool:
        a, b, text = _digests(key)
        have = self._table.get(a)
        return have is not None and (have == b or text in self._aside)

    @classmethod
    def first_of(cls, keys) -> tuple["RowKeySet", list[int]]:
        """A set of ``keys`` (a list, repeats allowed) and the positions of each key's first
        occurrence, in order: what a resume keeps of the rows on disk. Built at once."""
        import numpy as np   # only here: the set itself needs no numpy call per key

        texts = [key if isinstance(key, str) else key_string(key) for key in keys]
        blob = b"".join([hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=16).digest() for t in texts])
        pairs = np.frombuffer(blob, dtype=[("a", "<u8"), ("b", "<i8")])
        a, b = pairs["a"], pairs["b"]
        _, first_a, inv = np.unique(a, return_index=True, return_inverse=True)
        out = cls()
        out._table = DigestTable.of(a[first_a], b[first_a])
        firsts = first_a.tolist()
        other = np.flatnonzero(b != b[first_a[inv.reshape(-1)]])
        if len(other):                       # 64 bits shared, 128 not: those keys kept aside, whole
            aside: dict[str, int] = {}
            for i in other.tolist():
                aside.setdefault(texts[i], i)
            out._aside = set(aside)
            firsts += aside.values()
        firsts.sort()
        return out, firsts
