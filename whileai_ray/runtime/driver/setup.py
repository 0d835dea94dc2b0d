"""What the Driver opens before its loop starts: files, what is already on disk, the planner.

``open_run(spec)`` opens the checkpoint (refusing a foreign one before any work), the ``output=``
stream, the index of rows already on disk (a resume), the planner snapshots, and the planner:
restored from the last snapshot when an exact resume has one, else made fresh (a resume of a
changed plan counts the rows on disk up front). Slow parts run in threads, so the Driver keeps
answering ``poll()`` while a large checkpoint loads; when the checkpoint's sidecar says this
plan wrote it, the snapshot's planner is built while the checkpoint is scanned, and its settled
rows are claimed once the scan says which rows are on disk. ``close_run(opened)`` writes what is left.

No Ray here.
"""
from __future__ import annotations

import asyncio
import gc
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ...core.columns import State
from ...store.checkpoint.meta import read_sidecar
from ...store.checkpoint.lines import HEADER_KEY
from ...store.snapshots.keeper import PlanSnapshots
from ...store.checkpoint.resume import ResumeIndex
from ...store.checkpoint.sink import StreamSink

__all__ = ["OpenedRun", "open_run", "close_run"]


@dataclass
class OpenedRun:
    sink: object | None             # CheckpointSink (checkpoint=), or None
    stream: object | None           # StreamSink (output=), or None
    resume: ResumeIndex
    snapshots: PlanSnapshots
    planner: object
    restored: dict | None           # the planner snapshot continued from, or None
    loaded: int                     # rows found on disk


async def open_run(spec) -> OpenedRun:
    build = partial(build_from_snapshot, spec)
    early = _prepare_early(spec, build)        # the snapshot's planner, built while the checkpoint is scanned
    sink, loaded = None, []
    try:
        if spec.make_sink is not None:
            sink = await asyncio.to_thread(spec.make_sink)       # refuses a foreign checkpoint before any work
            loaded = sink.loaded
    except BaseException:
        if early is not None:
            await asyncio.gather(early[1], return_exceptions=True)
        raise
    stream = StreamSink(spec.stream_path) if spec.stream_path else None
    if loaded:
        gc.freeze()   # the rows on disk live as long as the run: keep the collector off them
    header = sink.header if sink is not None else None
    resume = await asyncio.to_thread(ResumeIndex, loaded, header, spec.plan_fingerprint)
    snapshots = PlanSnapshots(spec.snapshot, spec.snapshot_every_s, (header or {}).get("created") if sink else None,
                              spec.plan_fingerprint, budget=spec.cap)
    usable = snapshots.enabled and resume.mode == "exact" and resume.total
    if early is not None and usable and early[0].created == snapshots.created:
        prepared = await early[1]
        snapshots.restore_s = early[0].restore_s
        snap = await asyncio.to_thread(snapshots.settle, resume, prepared, build)
    else:
        if early is not None:
            await asyncio.gather(early[1], return_exceptions=True)
        snap = await asyncio.to_thread(snapshots.restore, resume, build)
    if snap is not None:
        planner = snap["planner"]                   # with this call's settings (run id, budget)
    else:
        planner = spec.make_planner(**resume.planner_overrides())
    return OpenedRun(sink, stream, resume, snapshots, planner, snap, len(loaded))


def _prepare_early(spec, build):
    """``(PlanSnapshots, task)`` reading and building the planner snapshot in a thread, started
    before the checkpoint is scanned (a million-row scan is CRC work that lets go of the GIL),
    when the checkpoint's sidecar says this plan wrote it; else None."""
    if spec.make_sink is None or not spec.checkpoint or not spec.snapshot:
        return None
    side = read_sidecar(Path(spec.checkpoint), HEADER_KEY)
    if not side or ((side.get("fingerprint") or {}).get("plan")) != spec.plan_fingerprint or not spec.plan_fingerprint:
        return None
    early = PlanSnapshots(spec.snapshot, spec.snapshot_every_s, side.get("created"), spec.plan_fingerprint,
                          budget=spec.cap)
    if not early.enabled:
        return None
    return early, asyncio.ensure_future(asyncio.to_thread(early.prepare, build))


def build_from_snapshot(spec, meta: dict, arrays: dict):
    """A planner (this call's settings and writer) and the decided rounds, from snapshot data."""
    planner = spec.make_planner().restore(State({"planner": meta["planner"]}, logs=arrays).part("planner"))
    rounds = arrays["pending_round"]
    units = planner.decode_units(arrays["pending"])
    if rounds.ndim != 1 or len(rounds) != len(units) or (len(rounds) and rounds.min() < 0):
        raise ValueError("pending rounds do not match their units")
    pending: dict = {}
    for r, u in zip(rounds.tolist(), units):
        pending.setdefault(r, []).append(u)
    return planner, pending


async def close_run(opened: OpenedRun, compact: bool = True) -> None:
    """After the loop (and its last snapshot: ``DriverLoop.finish_snapshots``): the checkpoint
    (Parquet compacted unless ``compact`` is False: an orphaned Driver lets go at once and leaves
    that to the resume), the stream."""
    if opened.sink is not None:
        await asyncio.to_thread(opened.sink.close, compact)
    if opened.stream is not None:
        opened.stream.close()
