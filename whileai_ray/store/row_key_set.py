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
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Union

from ..core.digest_table import DigestTable
from ..core.identity import key_digest, key_string

if TYPE_CHECKING:
    import numpy as np

__all__ = ["RowKeySet", "key_digest", "digest_arrays"]



Key = Union[tuple, str]     # a ``row_key`` tuple or its ``key_string``: the two forms of one key


def digest_arrays(keys: Iterable[Key]) -> tuple["np.ndarray", "np.ndarray"]:
    """``(a, b)`` numpy arrays (``uint64``, ``int64``) of many keys' digests."""
    import numpy as np
    blob = b"".join([hashlib.blake2b((k if isinstance(k, str) else key_string(k)).encode("utf-8", "surrogatepass"),
                                     digest_size=16).digest() for k in keys])
    pairs = np.frombuffer(blob, dtype=[("a", "<u8"), ("b", "<i8")])
    return pairs["a"].copy(), pairs["b"].copy()


class RowKeySet:
    """``add(key) -> bool`` (True when new), ``key in s``, ``len(s)``; a key is a ``row_key``
    tuple or its ``key_string`` (the two forms of one key are the same member)."""

    __slots__ = ("_table", "_aside")

    def __init__(self, keys: Iterable[Key] = ()) -> None:
        self._table = DigestTable(values=True)
        self._aside: set[str] = set()
        for key in keys:
            self.add(key)

    def __len__(self) -> int:
        return len(self._table) + len(self._aside)

    def add(self, key: Key) -> bool:
        return self.add_digest(*key_digest(key))

    def add_digest(self, a: int, b: int, text: str) -> bool:
        """``add`` of a key whose ``key_digest`` is known."""
        if self._table.add(a, b):           # (the usual case, a new key: one probe of the table)
            return True
        have = self._table.get(a)
        if have == b or text in self._aside:
            return False
        self._aside.add(text)
        return True

    def __contains__(self, key: object) -> bool:
        assert isinstance(key, (str, tuple)), "a row key is a tuple (or its string)"
        return self.has_digest(*key_digest(key))

    def has_digest(self, a: int, b: int, text: str) -> bool:
        have = self._table.get(a)
        return have is not None and (have == b or text in self._aside)

    def has_many(self, a: "np.ndarray", b: "np.ndarray", text_of: Callable[[int], str]) -> "np.ndarray":
        """Which of many keys, given by digest arrays, are members (a bool array);
        ``text_of(i)`` gives the ``key_string`` of key ``i``, asked only for the rare key whose
        first 64 bits are a member's and whose other 64 are not."""
        import numpy as np
        found, have = self._table.find(a)
        out = found & (have == np.asarray(b, dtype=np.int64))
        if self._aside:
            for i in np.flatnonzero(found & ~out).tolist():
                out[i] = text_of(i) in self._aside
        return out

    @classmethod
    def first_of(cls, keys: Iterable[Key]) -> tuple["RowKeySet", list[int]]:
        """A set of ``keys`` (a list, repeats allowed) and the positions of each key's first
        occurrence, in order: what a resume keeps of the rows on disk. Built at once."""
        texts = [key if isinstance(key, str) else key_string(key) for key in keys]
        a, b = digest_arrays(texts)
        out, firsts = cls.first_of_digests(a, b, texts.__getitem__)
        return out, firsts.tolist()

    @classmethod
    def first_of_digests(cls, a: "np.ndarray", b: "np.ndarray",
                         text_of: Callable[[int], str]) -> tuple["RowKeySet", "np.ndarray"]:
        """``first_of`` for keys given by their digest arrays (positions as an int64 array);
        ``text_of(i)`` gives key ``i``'s ``key_string``, asked only for keys that share their
        first 64 bits with another."""
        import numpy as np   # only here: the set itself needs no numpy call per key

        a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.int64)
        _, first_a, inv = np.unique(a, return_index=True, return_inverse=True)
        out = cls()
        out._table = DigestTable.of(a[first_a], b[first_a])
        if len(first_a) == len(a):
            return out, np.arange(len(a), dtype=np.int64)
        other = np.flatnonzero(b != b[first_a[inv.reshape(-1)]])
        firsts = first_a.tolist()
        if len(other):                       # 64 bits shared, 128 not: those keys kept aside, whole
            aside: dict[str, int] = {}
            for i in other.tolist():
                aside.setdefault(text_of(i), i)
            out._aside = set(aside)
            firsts += aside.values()
        return out, np.asarray(sorted(firsts), dtype=np.int64)
