"""The Parquet copy of a checkpoint, written by a process of its own: what crosses, and the writer.

A checkpointed run keeps a Parquet copy beside its JSONL (``checkpoint/sink.py`` ->
``ParquetSink``). Building it (a table per part, zstd, the compaction at close) is ~65 us of CPU
per row, and the Driver is the one serial process of a run (issue 32), so the copy is written
by a writer beside the Driver (``runtime/driver/parquet_writer.py``: a Ray actor on the
Driver's node, the same filesystem) that owns the ``ParquetSink``. This module is that writer's
logic, with no Ray in it, and the form a landed batch crosses in:

* ``pack`` (``lane_protocol.py``): a landed batch as its lines, plus the rows whose line the
  Driver made itself as dicts.
* ``unpack(blob, dicts)``: the rows, ``row_json`` texts and key digests ``ParquetSink.write``
  takes. A lane's line is decoded back into its row: a lane's row is in normal form
  (``core/row_values.py``: what ``strict_json`` writes decodes to the very row that was
  written), so the decoded row is the row the Driver held and every column comes out the same
  (``tests/unit/store/parquet/test_lane.py`` compares the files byte for byte).
* ``ParquetLane``: the writer: opens the folder (``mode="a"``), takes batches in landing order,
  answers which rows on disk at open the Parquet side lacks (a resume's fill), takes those, and
  closes (compacting). A batch that fails latches the failure: every later call raises it, so
  the side never holds a gap the Driver did not hear of.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...core.identity import key_digest, key_string, row_key
from .folder import ParquetSink
from .lane_protocol import ROW_GROUP, Loose

__all__ = ["unpack", "ParquetLane", "LocalLane"]

_DECODE = json.JSONDecoder().decode


def unpack(blob: bytes, dicts: Sequence[Loose]) -> tuple[list[dict], list[str], list[tuple[int, int, str]]]:
    """``(rows, texts, digests)`` of a packed batch, in its order. A line is one row's stored
    JSON (ASCII, no raw newline) and its newline: its text is ``row_json``."""
    texts = [line.decode("ascii") for line in blob.split(b"\n")[:-1]]
    rows: list[Any] = [None] * len(texts)
    digests: list[Any] = [None] * len(texts)
    for i, row, digest in dicts:
        if not 0 <= i < len(texts):
            raise ValueError(f"packed batch: row position {i} outside its {len(texts)} lines")
        rows[i], digests[i] = row, digest
    for i, text in enumerate(texts):
        if rows[i] is None:
            rows[i] = row = _DECODE(text)
            digests[i] = key_digest(key_string(row_key(row)))
    return rows, texts, digests


class ParquetLane:
    """The Parquet side of one run's checkpoint, in the process that writes it.

    ``a``/``b``: the key digests (``DiskRows.digests``) of the rows the JSONL held at open: when
    the files found hold exactly those keys (``ParquetSink.mirrors``), every row the JSONL takes
    is new to the side and is not looked up (as ``CheckpointSink`` does in one process)."""

    def __init__(self, folder: str, a: Any, b: Any, row_group_size: int = ROW_GROUP) -> None:
        self.sink = ParquetSink(folder, row_group_size=row_group_size, mode="a")
        self.a, self.b = a, b
        self.mirrored = self.sink.mirrors(a)
        self.warnings = list(self.sink.warnings)
        self.failed: BaseException | None = None

    def _check(self) -> None:
        if self.failed is not None:
            raise RuntimeError(f"the Parquet copy stopped at an earlier batch: {type(self.failed).__name__}: "
                               f"{self.failed}") from self.failed

    def take(self, blob: bytes, dicts: Sequence[Loose]) -> int:
        """A landed batch, as the JSONL took it; returns the rows the side took."""
        self._check()
        try:
            rows, texts, digests = unpack(blob, dicts)
            return self.sink.write(rows, new=self.mirrored, digests=digests, texts=texts)
        except BaseException as exc:
            self.failed = exc
            raise

    def missing(self, keys: Sequence[str] | None = None) -> list[int] | None:
        """Positions of the rows on disk at open that the side lacks (none when it mirrored
        them). None when telling needs the keys' texts (two keys share their first 64 bits):
        ask again with ``keys`` (each row's ``key_string``)."""
        self._check()
        if self.mirrored:
            return []

        def text_of(i: int) -> str:
            if keys is None:
                raise _NeedKeys
            return keys[i]
        try:
            # (a 1-tuple's key_string is its one item: missing_digests takes the text as it is)
            return self.sink.missing_digests(self.a, self.b, lambda i: (text_of(i),))
        except _NeedKeys:
            return None

    def fill(self, rows: list[dict]) -> int:
        """Rows on disk at open that the side lacked (``missing``), decoded from the JSONL."""
        self._check()
        try:
            return self.sink.write(rows)
        except BaseException as exc:
            self.failed = exc
            raise

    def close(self, compact: bool = True) -> list[str]:
        """Flush the last rows; with ``compact`` merge the folder into ``rows.parquet``. Returns
        the warnings of the folder's open (an unreadable file removed)."""
        self._check()
        self.sink.close(compact=compact)
        return self.warnings


class _NeedKeys(Exception):
    """``ParquetLane.missing`` needs the keys' texts."""



class LocalLane:
    """A ``ParquetLane`` in the caller's own process, as a ``Lane``: what the writer actor does,
    without Ray (the tests compare it with ``CheckpointSink``'s own ``ParquetSink``)."""

    def __init__(self, folder: str, a: Any, b: Any) -> None:
        self.lane = ParquetLane(folder, a, b)

    def send(self, blob: bytes, dicts: list[Loose]) -> None:
        self.lane.take(blob, dicts)

    def missing(self, keys: Sequence[str] | None = None) -> list[int] | None:
        return self.lane.missing(keys)

    def fill(self, rows: list[dict]) -> None:
        self.lane.fill(rows)

    def close(self, compact: bool) -> list[str]:
        return self.lane.close(compact)
