"""DiskRows: the rows of a checkpoint, known by key at once and decoded only when used.

``JsonlCheckpoint.open()`` returns one. It holds the checkpoint's bytes, where each kept row's
line starts and ends, and each row's ``row_key``. ``rows[i]`` decodes one row; iterating (or
comparing with a list) decodes them all, once. A resumed run looks rows up by key and decodes
only those it settles, so the first new row does not wait for 100,000 rows to be parsed.
"""
from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Sequence

from ..core.identity import row_key

__all__ = ["DiskRows", "gc_paused"]

_DECODE = json.JSONDecoder().decode


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while decoding many rows.

    Decoding 100,000 rows allocates millions of dicts and lists; without the pause the
    collector re-scans them over and over and loading takes 3-4x longer. The rows form no
    cycles, so nothing is lost by collecting once afterwards.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()



class DiskRows(Sequence):
    def __init__(self, data: bytes, spans: list, keys: list, decoded: dict | None = None):
        if len(spans) != len(keys):
            raise ValueError("DiskRows: one key per span")
        self._data = data
        self._spans = spans                  # [(start, end)] of each row's line, newline excluded
        self.keys = keys                     # [row_key] in file order
        self._decoded = dict(decoded or {})  # index -> row already decoded while opening
        self._all: list | None = None

    @classmethod
    def of(cls, rows: list) -> "DiskRows":
        """Rows already in memory (no file behind them)."""
        rows = list(rows)
        return cls(b"", [(0, 0)] * len(rows), [row_key(r) for r in rows], dict(enumerate(rows)))

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.decode_all()[i]
        if self._all is not None:
            return self._all[i]
        if i < 0:
            i += len(self.keys)
        row = self._decoded.get(i)
        if row is None:
            start, end = self._spans[i]
            row = _DECODE(self._data[start:end].decode("utf-8", "replace"))
        return row

    def decode_all(self) -> list:
        """Every row, decoded once (the collector paused: the rows form no cycles)."""
        if self._all is None:
            with gc_paused():
                self._all = [self[i] for i in range(len(self.keys))]
            self._data, self._decoded = b"", {}
        return self._all

    def __iter__(self):
        return iter(self.decode_all())

    def __eq__(self, other):
        if isinstance(other, (list, tuple, DiskRows)):
            return self.decode_all() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"DiskRows({len(self)} rows)"
