"""The Driver of one run: a thin shell around the Driver's loop, hosted by the Driver actor.

The Driver actor is a ``Driver`` (``driver/actor.py``), which outlives one run so the next
``simulate()`` of the process starts warm; it makes one ``DriverRun`` per run. It runs on the
caller's node (the files it writes are the caller's files). ``run()`` builds the
run's pools (``pools/actor_pool.py`` on Ray actors, or ``pools/caller_pool.py`` when the caller plays), opens
the checkpoint and the planner (``driver/setup.py``), hands them to the loop (``driver/loop.py``,
where every decision lives), and returns a ``RunResult``. ``poll()`` answers the caller's
progress questions while the loop runs (each poll also tells it the caller is still there:
``driver/caller_watch.py``); ``pull()`` / ``push()`` are how the caller's own pool takes chunks and
brings back their results. It feeds the run's Ray metrics (``metrics/recorder.py``).

Rows: the Driver keeps none. Each landed batch goes to the checkpoint and then to the run's
spool (``store/row_spool.py``, made by ``setup.make_spool``): a list while the run is small,
Parquet files in a temporary folder past ``spec.spill_rows``. The ``RunResult`` carries that list
or where the files are (``SpilledRows``), never a list of a large run's rows.
"""
from __future__ import annotations

import asyncio
import time

from ...core.identity import resumed_unit_key
from ...core.progress import Poll, ProgressSnapshot
from ...core.strict_json import gc_paused
from ..pools.actor_pool import judge_pool
from ..pools.protocol import Pool
from ..pools.caller_pool import CallerOutbox, CallerPool
from .caller_watch import CALLER_GONE, CallerWatch
from .edge_writing import EdgeWriting
from ..pools.dataplane import DataPlane
from .loop import DriverLoop, LoopSettings
from .heap_trim import HeapTrim
from ..job_spec import JobSpec
from ..messages import PoolChunk, PoolReply
from .landing import Landing
from .rules import first_units, local_deadline
from ..metrics.recorder import run_metrics
from .progress_marks import ProgressMarks
from ..pools.sizing import PoolPlan
from ..run_result import RunResult
from .setup import OpenedRun, close_run, make_spool, open_run
from .parquet_writer import parquet_lane

POLL_ROWS = 20_000          # released rows one progress poll carries at most
# A kept pool's actors renew themselves while the run opens (~5 ms; ActorPool.renew), and their
# answers take a few turns of the event loop to settle. Deciding a round a turn meanwhile held the
# first chunk back ~15-20 ms (five rounds decided, ~400 us a unit before the lanes' asks come) with
# every lane idle; a warm run now waits up to this long for them, and its first round goes out as
# soon as it is decided (the rounds after it are decided a round a turn, each sent before the next).
KEPT_WAIT_S = 0.02


async def prime_while_starting(loop, starting: asyncio.Future, kept: bool) -> None:
    """Decide the first rounds while the rollout actors start, a round a turn (``loop.prime()``);
    return once a lane can take work (``starting``: the pool's ``start()``). Once a lane answers,
    ``loop.run()`` sends what is decided and decides the rest a round at a time, each sent before
    the next. A pool ``kept`` from the last run renews itself while the run opens: its answers are
    in, or due within milliseconds, so they are awaited first (``KEPT_WAIT_S`` at most) and the
    first round goes out as soon as it is decided, not after the rounds decided meanwhile."""
    if kept:
        await asyncio.wait([starting], timeout=KEPT_WAIT_S)
    while loop.prime() and not starting.done():
        await asyncio.sleep(0)
    await starting


class DriverRun:
    def __init__(self, spec: JobSpec, plan: PoolPlan, caller_node: str | None = None, rollouts=None):
        self.spec, self.plan, self.caller_node = spec, plan, caller_node
        self.rollouts = rollouts        # the rollout pool, made before the run (driver/actor.py), or None: made here
        self.kept_pool = False          # that pool's actors were kept from the last run (renewing themselves)
        self.judges: Pool | None = None
        self.t0 = time.monotonic()
        calls_home = plan.where == "caller" or (plan.graded and plan.judges_where == "caller")
        self.outbox = CallerOutbox() if calls_home else None
        self.opened: OpenedRun | None = None
        self.loop: DriverLoop | None = None
        self.plane: DataPlane | None = None
        self.landing: Landing | None = None
        self.edge: EdgeWriting | None = None    # asks written at the rollout lanes (driver/edge_writing.py)
        self.done = False
        self.stopped_because: str | None = None
        self.resumed = 0
        self.caller_has = 0             # released rows the caller holds already (what its polls brought)
        self.metrics = run_metrics(spec.metrics)           # NoMetrics when metrics are off
        self.watch = CallerWatch(spec.caller, spec.caller_timeout_s)
        self.marks = ProgressMarks(spec.progress_every_rows)   # a line's numbers every N events

    # ------------------------------------------------------------- the caller's pool
    async def pull(self) -> list[PoolChunk] | None:
        """The chunks waiting for the caller's pool (None once the run is over)."""
        assert self.outbox is not None, "pull() is the caller's pool's: this run has none"
        return await self.outbox.pull()

    async def push(self, replies: list[PoolReply]) -> None:
        """Finished chunks of the caller's pool."""
        assert self.outbox is not None, "push() is the caller's pool's: this run has none"
        for reply in replies:
            self.outbox.push(reply)

    # ------------------------------------------------------------------ polling
    def poll(self, have: int | None = None) -> Poll:
        """Progress, for the caller's line and its orphan watch (``core/progress.py``); with
        ``have`` (the rows the caller holds), also ``new_rows``: the spool's released rows past
        those, while they are few (``POLL_ROWS`` at most a poll), so a small run's rows cross as
        it plays, not at its end; ``rows_spilled`` when they go to disk instead (a budget past
        the spool's list)."""
        self.watch.polled()
        snapshot, marks = self._snapshot(), tuple(self.marks.take())
        spool = self.landing.spool if self.landing is not None else None
        if have is None or spool is None or self.done:
            return Poll(snapshot, marks)
        if self.spec.cap > spool.threshold:      # the run's rows go to disk: they are read there
            return Poll(snapshot, marks, rows_spilled=True)
        self.caller_has = max(self.caller_has, have)
        new = spool.released(have, POLL_ROWS)
        if new is None:                          # more than the budget (a resume's rows): on disk after all
            return Poll(snapshot, marks, rows_spilled=True)
        return Poll(snapshot, marks, new_rows=new, rows_from=have)

    def _mark(self) -> None:
        """After a loop turn settled results: a progress mark when the events passed the next
        multiple of ``progress_every_rows`` (``driver/progress_marks.py``)."""
        loop, landing = self.loop, self.landing
        if self.edge is not None:
            self.edge.tick()
        if loop is not None and landing is not None:
            p = loop.planner
            self.marks.note(landing.landed + p.rerolled + p.lost, self._snapshot)

    def _snapshot(self) -> ProgressSnapshot:
        loop, landing, opened = self.loop, self.landing, self.opened
        elapsed = round(time.monotonic() - self.t0, 1)
        if loop is None or landing is None or opened is None:
            return ProgressSnapshot(rows=self.resumed, cap=self.spec.cap, resumed=self.resumed, elapsed_s=elapsed,
                                    done=self.done, stopped_because=self.stopped_because)
        p = loop.planner
        return ProgressSnapshot(
            rows=landing.landed + landing.resumed_count + len(opened.snapshots.deferred)
            + opened.resume.leftover_count(),
            cap=self.spec.cap, landed=landing.landed, resumed=self.resumed, rerolled=p.rerolled,
            rerolled_by={k: v for k, v in p.rerolled_by.items() if v}, timed_out=p.timed_out, lost=p.lost,
            lost_by={k: v for k, v in p.lost_by.items() if v}, inflight=loop.inflight,
            situations=p.situations_opened, elapsed_s=elapsed, done=self.done, stopped_because=self.stopped_because)

    # --------------------------------------------------------------------- run
    async def run(self) -> RunResult:
        spec = self.spec
        # rollout actors start while the checkpoint loads (a large resume reads for seconds)
        rollouts = self._rollouts()
        trim = HeapTrim()                  # (blocks of 1 MiB and up mapped alone from here on: see driver/heap_trim.py)
        opened = self.opened = await open_run(spec, lane=parquet_lane)   # the Parquet copy: beside
        self.resumed = opened.loaded
        if opened.loaded:                  # a resume's open freed hundreds of MB (its scan, the snapshot's
            trim.now()                     # frames, the planner's rebuild): back to the system before the run
        judges = self.judges = self._judges()
        self.landing = Landing(judge_name=spec.judge_name, scoring_run_id=spec.scoring_run_id,
                               label_source=spec.label_source, sink=opened.sink, stream=opened.stream, t0=self.t0,
                               spool=make_spool(spec),
                               lineage=spec.lineage)
        plane = self.plane = DataPlane(spec.shards) if spec.shards else None     # shared storage
        loop = DriverLoop(LoopSettings.of(spec), opened.planner, rollouts, self.landing, opened.resume,
                          judges=judges, snapshots=opened.snapshots, restored=opened.restored, t0=self.t0,
                          should_stop=self.watch.gone, metrics=self.metrics, on_settled=self._mark,
                          unpack=plane.unpack if plane is not None else None,
                          deadline=local_deadline(spec.deadline_at, time.time(), time.monotonic()))
        self.loop = loop
        first = first_units(loop.target if spec.reproducible else loop.ahead, spec.reproducible,
                            loop.book.next_decide, loop.book.lag, loop.planner.s.round_size)
        self.edge = EdgeWriting.start(spec, opened.planner, rollouts, first_units=first)
        if self.edge is not None:
            self.edge.tick(settled=False)  # the first asks are written while the lanes start
        starting = asyncio.ensure_future(rollouts.start())
        try:
            await prime_while_starting(loop, starting, kept=self.kept_pool)
            if judges is not None:
                await judges.start()
        except BaseException:
            starting.cancel()
            self.landing.spool.discard()
            raise
        try:
            self.stopped_because = await loop.run()
        except BaseException:
            self.landing.spool.discard()                     # nothing will read its folder
            raise
        finally:
            self.done = True
            edge = self.edge.close() if self.edge is not None else None
            for pool in (rollouts, judges):
                if pool is not None:
                    await pool.close()
        if self.plane is not None:      # the landed rows of the actors' Parquet parts go where readers see them
            await asyncio.to_thread(self.plane.publish, getattr(opened.sink, "landed_shards", None))
        orphan = self.stopped_because == CALLER_GONE
        await loop.finish_snapshots(final=not orphan)      # an orphan writes no last snapshot
        figures = self._planner_figures(edge)
        await close_run(opened, compact=not orphan)         # and lets go at once
        # in a thread: turning a large resume's settled rows into the result's files takes minutes,
        # and poll() keeps answering meanwhile (the caller's progress and orphan watch)
        return await asyncio.to_thread(self._result, rollouts, figures)

    def _rollouts(self) -> Pool:
        """The caller's own pool (the caller plays), or the Ray actors' pool the Driver actor made
        or kept for this run (``driver/actor.py``, the one place a rollout pool is built)."""
        if self.plan.where == "caller":
            assert self.outbox is not None
            return CallerPool(self.outbox, "roll", self.plan.per_actor, self.caller_node)
        assert self.rollouts is not None, "the Driver actor hands a run its rollout pool (Driver._rollouts)"
        return self.rollouts

    def _judges(self) -> Pool | None:
        """Judges in the caller's process or as Ray actors (None when the run is not graded)."""
        if not self.plan.graded:
            return None
        if self.plan.judges_where == "caller":
            assert self.outbox is not None
            return CallerPool(self.outbox, "judge", self.spec.judge_concurrency, self.caller_node)
        return judge_pool(self.spec)

    def _planner_figures(self, edge: dict | None = None) -> tuple:
        """The planner's end-of-run figures, taken once its last snapshot is written. A resume then
        compacts its checkpoint and writes its settled rows into the result: the planner keeps
        only what naming those rows reads (~400 MB less a million rows: ``keep_only_keys``)."""
        loop, opened = self.loop, self.opened
        assert loop is not None and opened is not None, "the run's figures are taken after its loop ran"
        p = loop.planner
        figures = p.stats(self.stopped_because), p.writer.stats() if hasattr(p.writer, "stats") else None
        if edge is not None:           # (the writer's figures: how many of its asks came from the lanes)
            figures = figures[0], {**(figures[1] or {}), "edge_asks": edge}
        if len(opened.snapshots.deferred) or opened.resume.leftover_count():
            p.keep_only_keys()
            HeapTrim().now()
        return figures

    def _result(self, rollouts, figures: tuple) -> RunResult:
        loop, landing, opened = self.loop, self.landing, self.opened
        assert loop is not None and landing is not None and opened is not None, "a result is made after the run"
        p = loop.planner
        resumed = landing.resumed_count + len(opened.snapshots.deferred)
        stats, writer = figures
        with gc_paused():
            # the rows a restored snapshot settled come first (smaller ordinals than any the loop
            # decided); rows on disk no unit matched come last, kept in precount mode
            landing.spool.head(opened.snapshots.iter_deferred_rows(opened.resume, p.s.run_id, landing.lineage))
            if opened.resume.mode == "precount":
                resumed += opened.resume.leftover_count()
                base = landing.spool.count + 10**9
                landing.spool.tail(landing.stamped(self._leftover(opened.resume.iter_leftover(), base, p.s.run_id,
                                                                  p.s.eval_run)))
        # an orphan keeps every row here (the caller may never read them: driver/actor.py writes them out)
        skip = 0 if self.stopped_because == CALLER_GONE else self.caller_has
        kept = landing.spool.finish(skip=skip)
        rows, spilled = (kept, None) if isinstance(kept, list) else ([], kept)
        return RunResult(
            rows=rows, spilled=spilled, row_count=landing.spool.count,
            rows_head=landing.spool.head_count, rows_shipped=skip if spilled is None else 0,
            resumed_count=resumed,
            resume={**opened.resume.summary(), **opened.snapshots.summary()},
            stopped_because=self.stopped_because, elapsed_s=time.monotonic() - self.t0,
            first_row_s=landing.first_row_s, last_row_s=landing.last_row_s, planner=stats,
            node_rows=dict(landing.node_rows), errors=landing.errors, chunks_reissued=loop.chunks_reissued,
            chunk_retry={**loop.retry.stats(), **getattr(rollouts, "lane_figures", dict)()},
            checkpoint_warnings=list(opened.sink.warnings) if opened.sink is not None else [],
            abandoned=loop.abandoned, pool=self.plan.where, n_actors=rollouts.lanes,
            actor_nodes=list(rollouts.nodes), stuck_units=dict(loop.stuck),
            writer=writer, clock=loop.clock_summary(),
            data_plane=self.plane.figures() if self.plane is not None else None,
            spool_edge_rows=landing.edge_texts, spool_slim_rows=landing.slim_rows)

    @staticmethod
    def _leftover(rows, base: int, run_id: str, eval_run: int):
        """Rows on disk no planned unit matched (precount mode): kept, after every other row."""
        for n, r in enumerate(rows):
            r = dict(r)
            r["lineage"] = {**(r.get("lineage") or {}), "resumed": True}
            r["_ordinal"] = base + n
            r["_key"] = resumed_unit_key(run_id, r, eval_run)
            yield r
