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

        n = len(keys)
        pairs = np.empty(n, dtype=[("a", "<u8"), ("b", "<i8")])
        texts = []
        a_col, b_col = [], []
        for key in keys:
            a, b, text = _digests(key)
            a_col.append(a), b_col.append(b), texts.append(text)
        pairs["a"], pairs["b"] = a_col, b_col
        _, first = np.unique(pairs, return_index=True)
        first.sort()
        out = cls()
        a_first = pairs["a"][first]
        out._table = DigestTable.of(a_first, pairs["b"][first])
        _, a_once, a_count = np.unique(a_first, return_index=True, return_counts=True)
        if (a_count > 1).any():              # 64 bits shared, 128 not: the later ones kept aside
            shared = set(a_first[a_once[a_count > 1]].tolist())
            seen_a = set()
            for i in first.tolist():
                if int(pairs["a"][i]) in shared:
                    if int(pairs["a"][i]) in seen_a:
                        out._aside.add(texts[i])
                    seen_a.add(int(pairs["a"][i]))
        return out, first.tolist()
