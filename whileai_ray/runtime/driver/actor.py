"""Driver: the Driver actor, kept between the runs of one process (warm starts).

A notebook runs many small simulations; starting a Driver actor and its rollout actors costs a
worker process each (0.5-1 s of CPU apiece on a busy laptop), which a 1,000-row run of a 50 ms
agent feels as a third of its wall time. So the Driver actor is a host that plays one run at a
time and stays: each ``run()`` makes a fresh ``DriverRun`` (``driver/run.py``) for that run
alone (its planner, checkpoint, landing, caller watch, metrics), and ``poll``/``pull``/``push``
go to the run in progress. What stays from run to run is the process and one rollout pool:

* ``prebuilt`` given (``[(actor, node)]``, started by the caller beside this actor): the run
  plays on those, and the pool kept so far (a different agent or options) is stopped;
* ``prebuilt`` None and no pool kept here (a new host, the first run of a process): the Driver
  starts the rollout actors itself, now that it is up (``caller/run.py``'s ``_start_host``:
  a worker process starting beside it slowed its own start), and they start while it opens
  the run and decides its first rounds; ``report()["placement"]["warm"]["rollouts_started_by"]``
  says which of the two started them;
* ``prebuilt`` None otherwise: the caller found this host's pool fingerprint equal to the run's
  (``caller/warm_pools.py``), so the kept rollout actors are renewed with the run's arguments
  (``pools/warm_rollout.py``: a fresh copy of the agent, the run's meta and seed, nothing of the last
  run left in them) and play this run. They renew themselves while the Driver opens the run and
  decides its first units (``ActorPool.renew``); one that died meanwhile is started again.

A run that stops because its caller is gone (``driver/caller_watch.py``) and has no checkpoint keeps
its rows: they are written to a file (``caller_watch.keep_rows``), named in the Driver's log and
in ``RunResult.kept_at``, which the caller's error repeats when it is there to read it.

Between runs the host's heap is left alone: full collections wait until it is idle
(``pools/collector.py``).

Judge actors are per run (stopped after it). Which of the three happened, and the actors' ids,
come back in ``RunResult.warm`` (``report()["placement"]["warm"]``). The caller
(``caller/warm_pools.py``) decides when a host is reused, and stops it (and the rollout actors it
started) when a run fails, when it idles too long, and at exit.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque

from ..pools.actor_pool import ActorPool, rollout_args, rollout_pool
from .caller_watch import CALLER_GONE, keep_rows
from ..pools.collector import Collector
from .run import DriverRun
from ...core.progress import Poll, ProgressSnapshot
from ..job_spec import JobSpec
from ..pools.sizing import PoolPlan
from ..run_result import RunResult

__all__ = ["Driver", "RunHandle", "actor_id", "ARRIVAL_S"]

ARRIVAL_S = 60.0        # how long a poll/pull/push waits for its run to arrive
_log = logging.getLogger(__name__)   # a child of whileai_ray.runtime


def actor_id(actor) -> str | None:
    """A Ray actor handle's id, as hex (None when it has none)."""
    aid = getattr(actor, "_actor_id", None)
    return aid.hex() if aid is not None else None


class Driver:
    def __init__(self):
        self.worker: DriverRun | None = None
        self.pool: ActorPool | None = None       # the rollout pool kept for the next run
        self.pool_key: str | None = None
        self.runs = 0
        self.last_poll: Poll | None = None       # the finished run's last answer (its rows are let go)
        self.token: str | None = None           # the run in progress (its caller's token)
        self.finished: deque = deque(maxlen=64)  # tokens of the runs played here
        self.collector = Collector()             # full collections between runs, not in them

    def ping(self) -> int:
        return self.runs

    async def run(self, token: str, spec: JobSpec, plan: PoolPlan, caller_node: str | None, key: str | None,
                  prebuilt: list | None) -> tuple[RunResult, float]:
        """Play one run (``token``: its caller's name for it, unique in this process); returns its
        ``RunResult`` and the wall-clock time its Driver started (``time.time()``: the caller counts
        its time to the first row from its own call)."""
        self.collector.busy()
        worker = self.worker = DriverRun(spec, plan, caller_node)   # polls answer from now on
        self.token = token
        started_wall = time.time() - (time.monotonic() - worker.t0)
        self.runs += 1
        warm: dict[str, object] = {"driver": "reused" if self.runs > 1 else "started", "rollouts": plan.where}
        rollouts = None
        try:
            if plan.where == "actors":
                rollouts, warm["rollouts"] = self._rollouts(spec, plan, key, prebuilt)
                if warm["rollouts"] == "started":
                    warm["rollouts_started_by"] = "caller" if prebuilt is not None else "driver"
                worker.rollouts, worker.kept_pool = rollouts, warm["rollouts"] == "reused"
            result = await worker.run()
        finally:
            try:
                self.last_poll = worker.poll()
            except Exception:
                self.last_poll = None
            self.worker = None
            self.finished.append(token)
            if worker.judges is not None and isinstance(worker.judges, ActorPool):
                worker.judges.kill()                 # judges are per run
            if self.pool is not None:
                self.pool.trim()
            self.collector.idle()                    # a resume froze its rows; they go with the run
        if rollouts is not None:
            warm["rollout_ids"] = [actor_id(a) for a in rollouts.actors]
            if worker.loop is not None:       # units played in the slots of lanes still starting (driver/lending.py)
                warm["units_lent"] = worker.loop.lending.units_lent
        if result.stopped_because == CALLER_GONE and not spec.checkpoint:
            result = await asyncio.to_thread(_keep_orphan_rows, result, spec.run_id)
        return dataclasses.replace(result, warm=warm, last_poll=self.last_poll), started_wall

    def _rollouts(self, spec, plan, key, prebuilt) -> tuple[ActorPool, str]:
        if prebuilt is not None or self.pool is None or key is None or key != self.pool_key:
            if self.pool is not None:
                self.pool.kill()
            self.pool, self.pool_key = rollout_pool(spec, plan, prebuilt=prebuilt), key
            return self.pool, "started"
        # the run's own make() for lanes it replaces; the kept actors renew themselves while the
        # Driver opens the run and decides its first units (ActorPool.start settles the answers)
        self.pool = rollout_pool(spec, plan, prebuilt=self.pool.placed())
        self.pool.renew(*rollout_args(spec, plan))
        return self.pool, "reused"

    def drop_pool(self) -> None:
        """Stop the kept rollout actors (they hold resources other work may need)."""
        if self.pool is not None:
            self.pool.kill()
        self.pool = self.pool_key = None

    # ------------------------------------------------------------- the run in progress
    async def _worker(self, token: str) -> DriverRun | None:
        """The Driver of run ``token``; waits for it when the call came before the run did (an
        async actor need not start calls in the order they were sent); None once it is over."""
        deadline = time.monotonic() + ARRIVAL_S
        while True:
            worker = self.worker
            if worker is not None and self.token == token:
                return worker
            if token in self.finished or time.monotonic() > deadline:
                return None
            await asyncio.sleep(0.005)

    def beat(self, token: str) -> None:
        """The caller's heartbeat (a thread of its own, once a second): it is there, even while
        its polling loop waits on a slow ``on_progress`` (``driver/caller_watch.py``)."""
        worker = self.worker
        if worker is not None and self.token == token:
            worker.watch.beat()

    async def poll(self, token: str, have: int | None = None) -> Poll:
        worker = await self._worker(token)
        if worker is not None:
            return worker.poll(have)
        return self.last_poll or Poll(ProgressSnapshot(rows=0, cap=0, done=True))

    async def pull(self, token: str) -> list | None:
        worker = await self._worker(token)
        return await worker.pull() if worker is not None else None     # None: the run is over

    async def push(self, run: str, items: list) -> None:
        """Results of the caller's pool: ``[(token, results or None, error or None)]``."""
        worker = await self._worker(run)
        if worker is not None:
            await worker.push(items)


def _keep_orphan_rows(result: RunResult, run_id: str) -> RunResult:
    """The rows of a run whose caller was gone, without a checkpoint: written to a file (a large
    run's are already in its spill folder, which nobody adopts now), and where, logged as a warning
    (on stderr unless the user's logging says otherwise: the Driver's log, and the caller's terminal
    too while Ray forwards it)."""
    if result.spilled is not None:
        where = result.spilled.folder
    elif result.rows:
        try:
            where = keep_rows(result.rows, run_id)
        except OSError as exc:
            _log.error("whileai_ray: run %r stopped (%s) and its %d rows could not be kept: %s", run_id,
                       result.errors[-1] if result.errors else "caller gone", len(result.rows), exc)
            return result
    else:
        return result
    _log.warning("whileai_ray: run %r stopped (%s); its %d rows were kept in %s", run_id,
                 result.errors[-1] if result.errors else "caller gone", result.row_count, where)
    return dataclasses.replace(result, kept_at=where)


class RunHandle:
    """The Driver host as one run's caller sees it: ``poll``/``pull``/``push`` name the run by its
    token (``driver.pull.remote()`` as for a Driver of its own)."""

    def __init__(self, host, token: str):
        self.host, self.token = host, token
        self.poll, self.pull, self.push = _Bound(host.poll, token), _Bound(host.pull, token), _Bound(host.push, token)
        self.beat = _Bound(host.beat, token)


class _Bound:
    def __init__(self, method, token: str):
        self.method, self.token = method, token

    def remote(self, *args, **kwargs):
        return self.method.remote(self.token, *args, **kwargs)
