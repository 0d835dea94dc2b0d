"""What a landed batch crosses to the Parquet writer in, and what the checkpoint asks that writer.

No pyarrow here: the checkpoint (``checkpoint/sink.py``) packs every batch, and a run without a
Parquet copy never loads Arrow. The writer's side is ``parquet/lane.py``.

``pack(written, loose)``: the batch the JSONL just took (``JsonlCheckpoint.append_lines``'
``(row, line, digest)`` triples) as ``(blob, dicts)``: ``blob`` is its lines joined (the bytes the
Driver already holds and has just written), ``dicts`` lists ``(position, row, digest)`` for the
rows whose line the Driver made itself (``loose``: a graded row, a row sent without its lane's
line): those cross as they are, every other row as its line only.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = ["pack", "join", "Lane", "LaneOpener", "Loose", "Packed", "ROW_GROUP"]

ROW_GROUP = 2000            # ParquetSink's row group (a part's rows; the fill's chunk)
Loose = tuple[int, dict, tuple[int, int, str]]      # (position in the batch, row, key digest)
Packed = tuple[bytes, list[Loose]]


class Lane(Protocol):
    """The Parquet writer as the checkpoint sees it (``LocalLane``, or the Driver's actor)."""

    def send(self, blob: bytes, dicts: list[Loose]) -> None: ...

    def missing(self, keys: Sequence[str] | None = None) -> list[int] | None: ...

    def fill(self, rows: list[dict]) -> None: ...

    def close(self, compact: bool) -> list[str]: ...


LaneOpener = Callable[[str, Any, Any], Lane]        # (folder, a, b): the digests of the rows on disk


def pack(written: Sequence[tuple[dict, bytes, tuple[int, int, str]]], loose: set[int] | None) -> Packed:
    """``written`` (row, line, digest) as ``(blob, dicts)``. ``loose``: the ``id()`` of the rows
    whose line was made on the Driver (they cross as dicts too), or None when every row's was."""
    blob = b"".join([t[1] for t in written])
    if loose is not None and not loose:
        return blob, []
    return blob, [(i, t[0], t[2]) for i, t in enumerate(written) if loose is None or id(t[0]) in loose]


def join(batches: Sequence[Packed]) -> Packed:
    """Several packed batches as one, in order (positions shifted): fewer, larger messages."""
    if len(batches) == 1:
        return batches[0]
    blobs: list[bytes] = []
    dicts: list[Loose] = []
    at = 0
    for blob, loose in batches:
        blobs.append(blob)
        dicts.extend((at + i, row, digest) for i, row, digest in loose)
        at += blob.count(b"\n")
    return b"".join(blobs), dicts
