"""KeyTally: which rows a Parquet file holds, in three numbers kept in its footer.

A checkpoint's Parquet side mirrors its JSONL. A resume must know whether the two hold the same
rows before it can write new rows without looking up each one in the side's keys, and reading
and hashing a million ``row_key`` strings costs seconds before the first row. Each Parquet file
the sink writes carries, in its key-value metadata (``KEY``), the count, the sum (mod 2**64) and
the XOR of the first 64 bits of its rows' ``identity.key_digest``; the same three numbers of the
JSONL come from its key index in one numpy pass. Equal tallies mean the same set of keys (two
different sets of blake2b digests agree on count, sum and XOR about once in 2**64); a file
without a tally (written by ``write_parquet``, or by an older version) makes the sink read the
keys instead.
"""
from __future__ import annotations

import json

import numpy as np

__all__ = ["KeyTally", "KEY"]

KEY = b"whileai_ray.row_keys"
_M64 = (1 << 64) - 1


class KeyTally:
    __slots__ = ("n", "sum", "xor")

    def __init__(self, n: int = 0, total: int = 0, xor: int = 0) -> None:
        self.n, self.sum, self.xor = n, total & _M64, xor

    def add(self, a: int) -> None:
        self.n += 1
        self.sum = (self.sum + a) & _M64
        self.xor ^= a

    def merge(self, other: "KeyTally") -> "KeyTally":
        return KeyTally(self.n + other.n, self.sum + other.sum, self.xor ^ other.xor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyTally) and (self.n, self.sum, self.xor) == (other.n, other.sum, other.xor)

    def __repr__(self) -> str:
        return f"KeyTally(n={self.n})"

    def meta(self) -> dict:
        """The key-value metadata entry a Parquet file carries."""
        return {KEY: json.dumps({"n": self.n, "sum": self.sum, "xor": self.xor}).encode()}

    @classmethod
    def of_digests(cls, a: np.ndarray | list[int]) -> "KeyTally":
        a = np.asarray(a, dtype=np.uint64)
        if not len(a):
            return cls()
        return cls(len(a), int(a.sum(dtype=np.uint64)), int(np.bitwise_xor.reduce(a)))

    @classmethod
    def of_metadata(cls, metadata: dict[bytes, bytes] | None, num_rows: int) -> "KeyTally | None":
        """The tally in a Parquet file's key-value metadata, or None (none there, or not for
        ``num_rows`` rows)."""
        raw = (metadata or {}).get(KEY)
        try:
            got = json.loads(raw) if raw else None
            out = cls(int(got["n"]), int(got["sum"]), int(got["xor"])) if isinstance(got, dict) else None
        except (ValueError, KeyError, TypeError):
            return None
        return out if out is not None and out.n == num_rows and 0 <= out.xor <= _M64 else None
