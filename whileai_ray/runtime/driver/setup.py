"""What the Driver opens before its loop starts: files, what is already on disk, the planner.

The spec is plain data (``job_spec.py``): the checkpoint is opened here from its path and header
(``open_sink``), the planner built here from its recipe (``build_planner``), the row spool made
here (``make_spool``); nothing of ``simulate()``'s runs on the Driver.

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
import dataclasses
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ...core.columns import State
from ...score.row_facts import fact_spill_writer
from ...search.planner.planner import Planner
from ...situations.template_writer import TemplateWriter
from ...store.checkpoint.disk_rows import DiskRows
from ...store.checkpoint.jsonl import JsonlCheckpoint
from ...store.checkpoint.sink import CheckpointSink, StreamSink
from ...store.parquet.lane_protocol import LaneOpener
from ...store.row_spool import RowSpool
from ...store.shards.storage import open_shards
from ...store.checkpoint.meta import read_sidecar
from ...store.checkpoint.lines import HEADER_KEY
from ...store.snapshots.keeper import PlanSnapshots
from ...store.checkpoint.resume import ResumeIndex

__all__ = ["OpenedRun", "open_run", "close_run", "open_sink", "build_planner", "make_spool"]


def build_planner(spec, **overrides) -> Planner:
    """The run's planner from ``spec.planner`` (a ``PlannerRecipe``); ``overrides`` replace
    settings (a resume of a changed plan counts the rows on disk up front)."""
    recipe = spec.planner
    settings = dataclasses.replace(recipe.settings, **overrides) if overrides else recipe.settings
    writer = recipe.writer or TemplateWriter(recipe.tools, recipe.system_prompt, recipe.seed)
    return Planner(settings, writer, recipe.cells)


def open_sink(spec, lane: LaneOpener | None = None) -> CheckpointSink:
    """The checkpoint's sink, from the spec's plain data (its path, the header ``simulate()``
    worked out, the caller, the shards folder): a foreign checkpoint is refused here, and on
    shared storage every shard file the stubs point at must be there. ``lane``: who writes the
    Parquet copy (the Driver's writer actor, ``driver/parquet_writer.py``); None: the sink."""
    sink = CheckpointSink(JsonlCheckpoint(spec.checkpoint, spec.checkpoint_header, run_id=spec.run_id,
                                          caller=spec.caller), stubs=bool(spec.shards), lane=lane)
    try:
        sink.warnings.extend(open_shards(spec.shards, spec.run_id, spec.checkpoint))
    except BaseException:
        sink.close(compact=False)
        raise
    return sink


def make_spool(spec) -> RowSpool:
    """Where the Driver lands rows: a list up to ``spec.spool_rows``, Parquet files (with the fact
    columns summaries read, ``score/row_facts.py``) past it."""
    return RowSpool(spec.spool_rows, fact_spill_writer)


@dataclass
class OpenedRun:
    sink: CheckpointSink | None     # checkpoint=, or None
    stream: StreamSink | None       # output=, or None
    resume: ResumeIndex
    snapshots: PlanSnapshots
    planner: object
    restored: dict | None           # the planner snapshot continued from, or None
    loaded: int                     # rows found on disk


async def open_run(spec, lane: LaneOpener | None = None) -> OpenedRun:
    build = partial(build_from_snapshot, spec)
    early = _prepare_early(spec, build)        # the snapshot's planner, built while the checkpoint is scanned
    sink = None
    loaded: DiskRows | list[dict] = []
    try:
        if spec.checkpoint:
            sink = await asyncio.to_thread(open_sink, spec, lane)     # refuses a foreign checkpoint before any work
            loaded = sink.loaded
    except BaseException:
        if early is not None:
            await asyncio.gather(early[1], return_exceptions=True)
        raise
    stream = StreamSink(spec.stream_path) if spec.stream_path else None
    if loaded:
        gc.freeze()   # the rows on disk live as long as the run: keep the collector off them
    header = sink.header if sink is not None else None
    # a run that is not reproducible draws another plan on resume: never replayed (store/checkpoint/resume.py)
    replays = spec.reproducible or bool(spec.planner.settings.pinned)
    resume = await asyncio.to_thread(ResumeIndex, loaded, header, spec.plan_fingerprint, replays)
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
        planner = build_planner(spec, **resume.planner_overrides())
    return OpenedRun(sink, stream, resume, snapshots, planner, snap, len(loaded))


def _prepare_early(spec, build):
    """``(PlanSnapshots, task)`` reading and building the planner snapshot in a thread, started
    before the checkpoint is scanned (a million-row scan is CRC work that lets go of the GIL),
    when the checkpoint's sidecar says this plan wrote it; else None."""
    if not spec.checkpoint or not spec.snapshot:
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
    planner = build_planner(spec).restore(State({"planner": meta["planner"]}, logs=arrays).part("planner"))
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
