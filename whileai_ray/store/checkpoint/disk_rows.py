"""DiskRows: the rows of a checkpoint, known by key at once and decoded only when used.

``JsonlCheckpoint.open()`` returns one. It holds, in arrays, where each kept row's line starts
and ends in the checkpoint and the 128-bit digest of each row's ``row_key`` (``digests``, from
the key index: no Python object a row); ``keys`` (the key tuples) are read from the rows when
asked for. The bytes stay on disk (``DiskRows.at``: a line is
read by its offset when its row is used, through a file handle opened with the checkpoint, so a
later rewrite of the path does not move what it reads). ``rows[i]`` decodes one row; iterating
(or comparing with a list) decodes them all, once. A resumed run looks rows up by key and
decodes only those it settles, so the first new row does not wait for 100,000 rows to be parsed,
and a million-row checkpoint's 2 GB are never held.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np

from ...core.identity import row_key
from ...core.strict_json import gc_paused

__all__ = ["DiskRows"]

_DECODE = json.JSONDecoder().decode


class DiskRows(Sequence[dict]):
    def __init__(self, data: bytes, starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray,
                 decoded: dict[int, dict] | None = None) -> None:
        self._data = data
        self._starts = np.asarray(starts, dtype=np.int64)   # where each row's line starts
        self._ends = np.asarray(ends, dtype=np.int64)       # and ends (its newline excluded)
        self.digests = (np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.int64))   # row_key_set.key_digest
        if not len(self._starts) == len(self._ends) == len(self.digests[0]) == len(self.digests[1]):
            raise ValueError("DiskRows: one span and one digest per row")
        self._decoded = dict(decoded or {})  # index -> row already decoded while opening
        self._keys: list[tuple] | None = None
        self._all: list[dict] | None = None
        self._fd: int | None = None          # DiskRows.at: lines are read from this file

    @classmethod
    def at(cls, path: str | os.PathLike[str], starts: np.ndarray, ends: np.ndarray, a: np.ndarray,
           b: np.ndarray, decoded: dict[int, dict] | None = None) -> "DiskRows":
        """Rows whose lines are in the file at ``path`` (read by offset when used)."""
        rows = cls(b"", starts, ends, a, b, decoded)
        if len(rows._starts):
            rows._fd = os.open(path, os.O_RDONLY)
        return rows

    @property
    def keys(self) -> list[tuple]:
        """Every row's ``row_key`` (read from the rows, once: the digests are what a resume uses)."""
        if self._keys is None:
            with gc_paused():
                self._keys = [self.key_of(i) for i in range(len(self))]
        return self._keys

    def key_of(self, i: int) -> tuple:
        if self._keys is not None:
            return self._keys[i]
        return row_key(self[i])

    def _line(self, i: int) -> bytes:
        start, end = int(self._starts[i]), int(self._ends[i])
        if self._fd is not None:
            return os.pread(self._fd, end - start, start)
        return self._data[start:end]

    def line(self, i: int) -> bytes:
        """Row ``i``'s line as it is on disk (its newline excluded)."""
        return self._line(i)

    def row_and_line(self, i: int) -> tuple[dict, bytes]:
        """``(self[i], self.line(i))``, the line read from disk once for both."""
        line = self._line(i)
        row = self._all[i] if self._all is not None else self._decoded.get(i)
        if row is None:
            row = _DECODE(line.decode("utf-8", "replace"))
        return row, line

    def close(self) -> None:
        """Let go of the file (every row has been decoded, or none is needed any more)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    @classmethod
    def of(cls, rows: list[dict]) -> "DiskRows":
        """Rows already in memory (no file behind them)."""
        from ..row_key_set import digest_arrays
        rows = list(rows)
        keys = [row_key(r) for r in rows]
        zeros = np.zeros(len(rows), dtype=np.int64)
        out = cls(b"", zeros, zeros, *digest_arrays(keys), dict(enumerate(rows)))
        out._keys = keys
        return out

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, i: int) -> dict: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict]: ...

    def __getitem__(self, i: int | slice) -> dict | list[dict]:
        if isinstance(i, slice):
            return self.decode_all()[i]
        if self._all is not None:
            return self._all[i]
        if i < 0:
            i += len(self)
        row = self._decoded.get(i)
        if row is None:
            row = _DECODE(self._line(i).decode("utf-8", "replace"))
        return row

    def decode_all(self) -> list[dict]:
        """Every row, decoded once (the collector paused: the rows form no cycles)."""
        if self._all is None:
            with gc_paused():
                self._all = [self[i] for i in range(len(self))]
            self._data, self._decoded = b"", {}
            self.close()
        return self._all

    def __iter__(self) -> Iterator[dict]:
        return iter(self.decode_all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, DiskRows)):
            return self.decode_all() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"DiskRows({len(self)} rows)"
