"""The Parquet writer: a process beside the Driver that writes a checkpoint's Parquet copy.

The Driver is the one serial process of a run (issue 32). Building the Parquet copy of its
checkpoint there (a table per part, zstd, the compaction at close) cost it ~65 us a row; here
a ``ParquetWriter`` actor does it, pinned to the Driver's node (the checkpoint's filesystem),
and the Driver only hands it each landed batch as the lines it has just written
(``store/parquet/lane_protocol.py``). What the writer does is ``store/parquet/lane.py``'s
``ParquetLane``, so the folder holds what the Driver would have written, byte for byte.

``parquet_lane(folder, a, b)`` (a ``LaneOpener`` for ``CheckpointSink``) opens one run's lane on
this Driver process's writer, started at the first checkpointed run and kept, like the rollout
pool, for the next runs of the same Driver host (its CPU then shows in the driver bench line as
its own role, ``ray::ParquetWriter``). ``RemoteLane`` is the Driver's side:

* batches are gathered into messages of ``SEND_ROWS`` rows (or ``SEND_BYTES``) before they go:
  each call costs the Driver a Ray submission, and the side's parts are whole row groups anyway;
* the Driver never waits for the writer while the run goes, unless ``WINDOW`` messages are
  still unwritten (backpressure: a slow disk slows the run rather than filling the Driver's
  memory with a million rows): ``store/parquet/lane_protocol.py``'s ``SendWindow``;
* a failed message (the writer died, its disk is full) is raised on the Driver at the next
  batch as a ``ParquetWriterError`` that says what happened and that the JSONL holds every row
  (a resume rebuilds the copy): the run stops, as it does when the JSONL cannot be written.
  Only the close waits for the writer (the last rows, the resume's fill, the compaction).
"""
from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Sequence
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ...core.strict_json import gc_paused
from ...store.parquet.lane_protocol import Loose, SendWindow

__all__ = ["ParquetWriter", "RemoteLane", "ParquetWriterError", "parquet_lane", "SEND_ROWS", "WINDOW"]

SEND_ROWS = 512             # rows gathered into one message
SEND_BYTES = 4 << 20        # or this many bytes of lines
WINDOW = 16                 # messages the writer may be behind before the Driver waits for it


class ParquetWriterError(RuntimeError):
    """The Parquet writer beside the Driver failed: the Parquet copy is incomplete."""


class ParquetWriter:
    """The actor: one run's ``ParquetLane`` at a time (``open`` closes a lane a failed run left,
    without compacting: its parts stay for the resume)."""

    def __init__(self) -> None:
        self.lane: Any = None

    def open(self, folder: str, a: Any, b: Any) -> None:
        from ...store.parquet.lane import ParquetLane
        self.abandon()
        self.lane = ParquetLane(folder, a, b)

    def abandon(self) -> None:
        """Let go of a lane whose run never closed it: its whole parts stay, its buffer is lost
        (the JSONL holds those rows; the next run's close fills them in)."""
        lane, self.lane = self.lane, None
        if lane is not None and lane.failed is None:
            lane.sink.close(compact=False)

    def _lane(self) -> Any:
        if self.lane is None:
            raise RuntimeError("the Parquet writer has no open lane (its open failed, or the run closed it)")
        return self.lane

    def take(self, blob: bytes, dicts: list[Loose]) -> int:
        # (a message's rows decoded into dicts, in no cycle, gone once in the table: the collector
        # rescanning them cost the writer ~0.65 s of a 30,000-row run, a sixth of its CPU)
        with gc_paused():
            return self._lane().take(blob, dicts)

    def missing(self, keys: Sequence[str] | None = None) -> list[int] | None:
        return self._lane().missing(keys)

    def fill(self, rows: list[dict]) -> int:
        with gc_paused():
            return self._lane().fill(rows)

    def close(self, compact: bool) -> list[str]:
        lane, self.lane = self._lane(), None
        return lane.close(compact)

    def pid(self) -> int:
        return os.getpid()


_actor: Any = None       # this Driver process's writer (kept between runs)


def writer_actor(fresh: bool = False) -> Any:
    """This process's ``ParquetWriter`` actor, started on this node the first time (or again
    with ``fresh``). It lives as long as the Driver actor that started it."""
    global _actor
    if _actor is None or fresh:
        here = ray.get_runtime_context().get_node_id()
        _actor = ray.remote(ParquetWriter).options(
            num_cpus=0, max_concurrency=1, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)).remote()
    return _actor


def parquet_lane(folder: str, a: Any, b: Any) -> "RemoteLane":
    """A ``LaneOpener``: the lane of ``folder`` on this process's writer. The open is sent, not
    waited for (a first run does not wait for the writer's process to start); a kept writer
    that died since its last run is replaced here. A folder path that is a file is refused at
    once, as ``ParquetSink`` refuses it."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"ParquetSink folder {folder!r} is a file; pass a folder path")
    if _actor is not None:
        try:
            _await(_actor.pid.remote(), folder)
        except ParquetWriterError:
            writer_actor(fresh=True)
    return RemoteLane(writer_actor(), folder, a, b)


def _await(ref: Any, folder: str) -> Any:
    """``ref``'s value (in the thread that asks: never the Driver's event loop), a failure as a
    ``ParquetWriterError``."""
    try:
        return _future(ref).result()
    except Exception as exc:
        raise _failed(folder, exc) from exc


def _future(ref: Any) -> concurrent.futures.Future:
    """``ref`` as a future (which keeps the ref alive until it is read)."""
    future = ref.future()
    future.ref = ref
    return future


def _failed(folder: str, exc: BaseException) -> ParquetWriterError:
    died = isinstance(exc, ray.exceptions.RayActorError)
    what = "died" if died else f"failed ({type(exc).__name__}: {str(exc)[-600:]})"
    return ParquetWriterError(
        f"the Parquet writer of {folder} (a process beside the Driver) {what}; the Parquet copy "
        "lacks rows from then on. The JSONL checkpoint holds every landed row: run again with the same "
        "checkpoint= to resume, and the resume rebuilds the Parquet copy from it.")


class RemoteLane:
    """The Driver's side of a lane on the writer actor (a ``Lane`` for ``CheckpointSink``): the
    batches go through a ``SendWindow`` (gathered, in order, bounded, failures raised)."""

    def __init__(self, actor: Any, folder: str, a: Any, b: Any, window: int = WINDOW,
                 send_rows: int = SEND_ROWS) -> None:
        self.actor, self.folder = actor, folder
        self.window = SendWindow(lambda blob, dicts: _future(actor.take.remote(blob, dicts)),
                                 lambda exc: _failed(folder, exc), window, send_rows, SEND_BYTES)
        self.window.watch(_future(actor.open.remote(folder, a, b)))

    def send(self, blob: bytes, dicts: list[Loose]) -> None:
        self.window.send(blob, dicts)

    def missing(self, keys: Sequence[str] | None = None) -> list[int] | None:
        self.window.drain()
        return _await(self.actor.missing.remote(keys), self.folder)

    def fill(self, rows: list[dict]) -> None:
        self.window.ship()
        self.window.reap()
        self.window.watch(_future(self.actor.fill.remote(rows)))

    def close(self, compact: bool) -> list[str]:
        self.window.drain()
        warnings: list[str] = _await(self.actor.close.remote(compact), self.folder)
        return warnings
