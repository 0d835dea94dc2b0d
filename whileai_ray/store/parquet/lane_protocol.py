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

from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from typing import Any, Protocol

__all__ = ["pack", "join", "Lane", "LaneOpener", "Loose", "Packed", "ROW_GROUP", "SendWindow"]

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


def join(batches: Sequence[Packed], counts: Sequence[int] | None = None) -> Packed:
    """Several packed batches as one, in order (positions shifted): fewer, larger messages.
    ``counts``: each batch's rows, when the caller counted them already."""
    if len(batches) == 1:
        return batches[0]
    blobs: list[bytes] = []
    dicts: list[Loose] = []
    at = 0
    for n, (blob, loose) in enumerate(batches):
        blobs.append(blob)
        dicts.extend((at + i, row, digest) for i, row, digest in loose)
        at += blob.count(b"\n") if counts is None else counts[n]
    return b"".join(blobs), dicts


class SendWindow:
    """The order and the bound of what the Driver hands its writer (``runtime/driver/
    parquet_writer.py``), with no Ray in it: ``submit(blob, dicts)`` starts writing one message
    and returns its ``concurrent.futures.Future``; the writer takes messages in the order given.

    Batches are gathered into messages of ``send_rows`` rows (or ``send_bytes``) before they go
    (each costs the sender a submission; the side's parts are whole row groups anyway). The
    sender never waits while fewer than ``window`` messages are unwritten, and waits for the
    oldest when more are (backpressure: a slow writer slows the run rather than filling the
    sender's memory). A message that failed is raised at the next ``send`` (or ``drain``),
    through ``failed(exc)``, which says what happened in the caller's words."""

    def __init__(self, submit: Callable[[bytes, list[Loose]], Future], failed: Callable[[BaseException], Exception],
                 window: int = 16, send_rows: int = 512, send_bytes: int = 4 << 20) -> None:
        self.submit, self.failed = submit, failed
        self.window, self.send_rows, self.send_bytes = window, send_rows, send_bytes
        self.gathered: list[Packed] = []
        self.counts: list[int] = []         # rows of each gathered batch (counted once, in send)
        self.rows = self.bytes = 0
        self.flight: deque[Future] = deque()
        self.messages = 0
        self.waits = 0                      # times the sender waited for the writer

    def watch(self, future: Future) -> None:
        """Another call to the writer (its open, a fill), in order with the messages, under the
        same bound (a lost side's fill is a million rows)."""
        self.flight.append(future)
        self._bound()

    def send(self, blob: bytes, dicts: list[Loose]) -> None:
        """A landed batch: gathered, sent when enough are; raises what an earlier message met."""
        self.reap()
        rows = blob.count(b"\n")
        self.gathered.append((blob, dicts))
        self.counts.append(rows)
        self.rows += rows
        self.bytes += len(blob)
        if self.rows >= self.send_rows or self.bytes >= self.send_bytes:
            self.ship()

    def ship(self) -> None:
        """Send what is gathered now."""
        if not self.gathered:
            return
        blob, dicts = join(self.gathered, self.counts)
        self.gathered, self.counts, self.rows, self.bytes = [], [], 0, 0
        self.flight.append(self.submit(blob, dicts))
        self.messages += 1
        self._bound()

    def _bound(self) -> None:
        while len(self.flight) > self.window:       # the writer is `window` messages behind: wait
            self.waits += 1
            wait([self.flight[0]])
            self.reap()

    def reap(self) -> None:
        """Drop the messages already written; raise the first that failed."""
        flight = self.flight
        while flight and flight[0].done():
            self._result(flight.popleft())

    def drain(self) -> None:
        """Send what is gathered and wait until the writer has written everything sent."""
        self.ship()
        while self.flight:
            self._result(self.flight.popleft())

    def _result(self, future: Future) -> None:
        try:
            future.result()
        except Exception as exc:
            raise self.failed(exc) from exc
