"""The Driver of one run: a thin shell around the Driver's loop, hosted by the Driver actor.

The Driver actor is a ``DriverHost`` (``driver_host.py``), which outlives one run so the next
``simulate()`` of the process starts warm; it makes one ``DriverWorker`` per run. It runs on the
caller's node (the files it writes are the caller's files). ``run()`` builds the
run's pools (``actor_pool.py`` on Ray actors, or ``caller_pool.py`` when the caller plays), opens
the checkpoint and the planner (``run_setup.py``), hands them to the loop (``driver_loop.py``,
where every decision lives), and returns a ``RunResult``. ``poll()`` answers the caller's
progress questions while the loop runs (each poll also tells it the caller is still there:
``caller_watch.py``); ``pull()`` / ``push()`` are how the caller's own pool takes chunks and
brings back their results. It feeds the run's Ray metrics (``metrics.py``).
"""
from __future__ import annotations

import asyncio
import time

from ..store.disk_rows import gc_paused
from .actor_pool import judge_pool, rollout_pool
from .caller_pool import CallerOutbox, CallerPool
from .caller_watch import CALLER_GONE, CallerWatch
from .dataplane import DataPlane
from .driver_loop import DriverLoop, LoopSettings
from .job_spec import JobSpec
from .landing import Landing
from .loop_rules import local_deadline
from .metrics import run_metrics
from .pool_sizing import PoolPlan
from .run_result import RunResult
from .run_setup import close_run, open_run


class DriverWorker:
    def __init__(self, spec: JobSpec, plan: PoolPlan, caller_node: str | None = None, rollouts=None):
        self.spec, self.plan, self.caller_node = spec, plan, caller_node
        self.rollouts = rollouts        # the rollout pool, made before the run (driver_host.py), or None: made here
        self.judges = None
        self.t0 = time.monotonic()
        calls_home = plan.where == "caller" or (plan.graded and plan.judges_where == "caller")
        self.outbox = CallerOutbox() if calls_home else None
        self.opened = None
        self.loop: DriverLoop | None = None
        self.plane: DataPlane | None = None
        self.landing: Landing | None = None
        self.done = False
        self.stopped_because = None
        self.resumed = 0
        self.metrics = run_metrics(spec.metrics)           # NoMetrics when metrics are off
        self.watch = CallerWatch(spec.caller, spec.caller_timeout_s)

    # ------------------------------------------------------------- the caller's pool
    async def pull(self) -> list | None:
        """The chunks waiting for the caller's pool (None once the run is over)."""
        return await self.outbox.pull()

    async def push(self, token: int, results: list | None, error: str | None = None) -> None:
        self.outbox.push(token, results, error)

    # ------------------------------------------------------------------ polling
    def poll(self) -> dict:
        self.watch.polled()
        loop, landing = self.loop, self.landing
        elapsed = round(time.monotonic() - self.t0, 1)
        if loop is None:
            return {"rows": self.resumed, "cap": self.spec.cap, "landed": 0, "resumed": self.resumed,
                    "rerolled": 0, "rerolled_by": {}, "timed_out": 0, "lost": 0, "lost_by": {},
                    "inflight": 0, "situations": 0, "elapsed_s": elapsed,
                    "done": self.done, "stopped_because": self.stopped_because}
        p, opened = loop.planner, self.opened
        return {"rows": len(landing.rows) + len(landing.resumed_rows) + len(opened.snapshots.deferred) +
                opened.resume.leftover_count(),
                "cap": self.spec.cap, "landed": len(landing.rows),
                "resumed": self.resumed, "rerolled": p.rerolled,
                "rerolled_by": {k: v for k, v in p.rerolled_by.items() if v},
                "timed_out": p.timed_out, "lost": p.lost,
                "lost_by": {k: v for k, v in p.lost_by.items() if v},
                "inflight": loop.inflight, "situations": p.situations_opened, "elapsed_s": elapsed,
                "done": self.done, "stopped_because": self.stopped_because}

    # --------------------------------------------------------------------- run
    async def run(self) -> RunResult:
        spec, plan = self.spec, self.plan
        # rollout actors start while the checkpoint loads (a large resume reads for seconds)
        rollouts = (CallerPool(self.outbox, "roll", plan.per_actor, self.caller_node) if plan.where == "caller"
                    else self.rollouts or rollout_pool(spec, plan))
        opened = self.opened = await open_run(spec)
        self.resumed = opened.loaded
        await rollouts.start()
        judges = None
        if plan.graded:
            judges = self.judges = (CallerPool(self.outbox, "judge", spec.judge_concurrency, self.caller_node)
                      if plan.judges_where == "caller" else judge_pool(spec))
            await judges.start()
        self.landing = Landing(judge_name=spec.judge_name, scoring_run_id=spec.scoring_run_id,
                               label_source=spec.label_source, sink=opened.sink, stream=opened.stream, t0=self.t0)
        plane = self.plane = DataPlane(spec.shards) if spec.shards else None     # shared storage
        loop = DriverLoop(LoopSettings.of(spec), opened.planner, rollouts, self.landing, opened.resume,
                          judges=judges, snapshots=opened.snapshots, restored=opened.restored, t0=self.t0,
                          should_stop=self.watch.gone, metrics=self.metrics,
                          unpack=plane.unpack if plane is not None else None,
                          deadline=local_deadline(spec.deadline_at, time.time(), time.monotonic()))
        self.loop = loop
        try:
            self.stopped_because = await loop.run()
        finally:
            self.done = True
            for pool in (rollouts, judges):
                if pool is not None:
                    await pool.close()
        if self.plane is not None:      # Parquet for the rows of actors that died before their last part
            await asyncio.to_thread(self.plane.fill, getattr(rollouts, "flushed", None))
        orphan = self.stopped_because == CALLER_GONE
        await loop.finish_snapshots(final=not orphan)      # an orphan writes no last snapshot
        await close_run(opened, compact=not orphan)         # and lets go at once
        return self._result(rollouts)

    def _result(self, rollouts) -> RunResult:
        loop, landing, opened = self.loop, self.landing, self.opened
        p = loop.planner
        with gc_paused():
            landing.resumed_rows.extend(opened.snapshots.deferred_rows(opened.resume, p.s.run_id))
        rows = sorted(landing.rows + landing.resumed_rows, key=lambda r: r.get("_ordinal", 0))
        return RunResult(
            rows=rows, leftover_rows=opened.resume.leftover(),
            resume={**opened.resume.summary(), **opened.snapshots.summary()},
            stopped_because=self.stopped_because, elapsed_s=time.monotonic() - self.t0,
            first_row_s=landing.first_row_s, planner=p.stats(self.stopped_because),
            node_rows=dict(landing.node_rows), errors=landing.errors, chunks_reissued=loop.chunks_reissued,
            chunk_retry=loop.retry.stats(),
            checkpoint_warnings=list(opened.sink.warnings) if opened.sink is not None else [],
            abandoned=loop.abandoned, pool=self.plan.where, n_actors=rollouts.lanes,
            actor_nodes=list(rollouts.nodes), stuck_units=dict(loop.stuck),
            writer=p.writer.stats() if hasattr(p.writer, "stats") else None, clock=loop.clock_summary(),
            data_plane=self.plane.figures() if self.plane is not None else None)
