"""The Driver actor: owns the planner, the budget, the rollout pool and the sinks.

It runs on the caller's node (files it writes are the caller's files). Its loop:
decide rounds (``Planner.decide``) as the ``RoundBook`` allows, cut them into chunks,
keep every rollout actor's slots full plus one chunk of prefetch, land each returned row
at once (result list + checkpoint), hand outcomes to the planner (in round order when
reproducible, as they arrive otherwise), and stop when the planner or the clock says so.
The caller polls ``poll()`` for progress and gets everything from ``run()`` at the end.
How actors are made and placed is ``driver_pool.py``; the planner's end figures are
``search/planner_stats.py``.
"""
from __future__ import annotations

import asyncio
import gc
import time
from collections import deque

from ..score.judging import apply_verdict, failed_markers, is_graded_failure
from ..search.clock import RunClock
from ..search.outcome import Outcome
from ..search.planner import Planner
from ..search.planner_stats import planner_stats
from ..search.rounds import RoundBook
from ..store.disk_rows import gc_paused
from ..store.plan_snapshot_keeper import PlanSnapshots
from ..store.resume import ResumeIndex
from ..store.sink import StreamSink
from .caller_watch import CALLER_GONE, CallerWatch
from .chunk_retry import ChunkRetry
from .driver_pool import DriverPool, await_ref
from .metrics import run_metrics
from .rollout_actor import _fault_parent



class DriverWorker(DriverPool):
    def __init__(self, job: dict):
        self.job = job
        self.t0 = time.monotonic()
        self.planner: Planner | None = None
        self.rows: list[dict] = []
        self.done = False
        self.stopped_because = None
        self.inflight_units = 0
        self.first_row_s = None
        self.node_rows: dict[str, int] = {}
        self.verdicts: list = []
        self.errors: list[str] = []
        self.sink = None   # opened in run(): files live on this (the caller's) node
        self.resumed = int(job.get("resumed", 0))
        self.chunks_reissued = 0
        self.abandoned = 0
        self._pending_sink: list = []
        self.resumed_rows: list = []
        self.stream = None
        self.judging = 0
        self._sent_at: dict = {}
        self.stuck: dict = {}          # unit key -> seconds in flight, for chunks past their deadline
        self._resume = None
        self.snapshots = PlanSnapshots(None, 0.0, None, None)   # replaced in run()
        self.metrics = run_metrics(job.get("metrics"))           # NoMetrics when metrics are off
        self.watch = CallerWatch(job.get("caller"), job.get("caller_timeout_s", 10.0))
        self.retry = ChunkRetry(key=lambda item: item[2].key)   # poison rollouts (chunk_retry.py)
        self._solo = {"task": None, "actor": None, "spare": None}  # the quarantine lane: one unit at a time

    # ------------------------------------------------------------------ polling
    def poll(self) -> dict:
        self.watch.polled()
        p = self.planner
        if p is None:
            return {"rows": self.resumed, "cap": self.job["cap"], "landed": 0, "resumed": self.resumed,
                    "rerolled": 0, "rerolled_by": {}, "timed_out": 0, "lost": 0, "lost_by": {},
                    "inflight": 0, "situations": 0, "elapsed_s": round(time.monotonic() - self.t0, 1),
                    "done": self.done, "stopped_because": self.stopped_because}
        return {"rows": len(self.rows) + len(self.resumed_rows) + len(self.snapshots.deferred) +
                self._resume.leftover_count(),
                "cap": self.job["cap"], "landed": len(self.rows),
                "resumed": self.resumed, "rerolled": p.rerolled,
                "rerolled_by": {k: v for k, v in p.rerolled_by.items() if v},
                "timed_out": p.timed_out, "lost": p.lost,
                "lost_by": {k: v for k, v in p.lost_by.items() if v},
                "inflight": self.inflight_units, "situations": p.situations_opened,
                "elapsed_s": round(time.monotonic() - self.t0, 1),
                "done": self.done, "stopped_because": self.stopped_because}

    # --------------------------------------------------------------------- run
    async def run(self) -> dict:
        job = self.job
        loaded = []
        # rollout actors start spawning while the checkpoint loads (a large resume reads for seconds)
        pending_actors = [self._new_actor() for _ in range(job["n_actors"])]
        if job.get("make_sink") is not None:
            # refuses a foreign checkpoint before any work; in a thread, so poll() keeps answering
            self.sink = await asyncio.to_thread(job["make_sink"])
            loaded = self.sink.loaded
        if job.get("stream_path"):
            self.stream = StreamSink(job["stream_path"])
        if loaded:
            gc.freeze()   # the rows on disk live as long as the run: keep the collector off them
        self._resume = await asyncio.to_thread(
            ResumeIndex, loaded, self.sink.header if self.sink else None, job.get("plan_fingerprint"))
        self.resumed = len(loaded)
        self.snapshots = PlanSnapshots(job.get("snapshot"), job.get("snapshot_every_s", 0.0),
                                       (self.sink.header or {}).get("created") if self.sink else None,
                                       job.get("plan_fingerprint"))
        snap = await asyncio.to_thread(self.snapshots.restore, self._resume)
        if snap is not None:
            fresh = job["make_planner"]()
            self.planner = planner = snap["planner"]
            planner.writer, planner.s = fresh.writer, fresh.s   # this call's run id and budget
        else:
            self.planner = planner = job["make_planner"](**self._resume.planner_overrides())
        actors = await self._start_actors(pending_actors)
        per_actor = job["per_actor_concurrency"]
        chunk = max(1, min(job["chunk_size"], per_actor))
        reproducible = job["reproducible"]
        book = RoundBook(job["lag"])
        round_units: dict = {}                  # round -> its units, until it is observed (snapshots)
        queue: deque = deque()                  # (round, index, unit) ready to dispatch
        tasks: dict = {}                        # asyncio task -> (kind, actor index, items)
        sent_on: dict = {}                      # asyncio task -> the actor handle it went to
        load = [0] * len(actors)
        clock = self.clock = RunClock(job.get("deadline_at"), job.get("timeout"))    # search/clock.py
        state = {"blocked": False}
        target = job["concurrency"] + chunk * len(actors)

        def settle_or_queue(r, units):
            """Units of a decided round: settled from disk when their row is there, else queued."""
            batch = []
            for i, u in enumerate(units):
                row = self._resume.take(u)
                if row is None:
                    queue.append((r, i, u))
                    continue
                o = self._land_resumed(u, row)
                if reproducible:
                    book.record(r, i, o)
                else:
                    batch.append(o)
            if batch:
                observe(batch)

        def pump():
            """Decide what may be decided, settle resumed units, observe what is complete.

            One round is observed at a time, and every decision it unlocks is taken before the
            next round is observed: the planner sees the same sequence of states whatever the
            completion order (reproducible mode)."""
            while True:
                while not state["blocked"]:
                    if reproducible and not book.may_decide():
                        break
                    if not reproducible and (len(queue) + self.inflight_units) >= target:
                        break
                    units = planner.decide(book.next_decide)
                    if not units:
                        state["blocked"] = True
                        break
                    r = book.add(units)
                    if snapshots:
                        round_units[r] = units
                    settle_or_queue(r, units)
                outs = book.pop_one() if reproducible else None
                if outs is None:
                    return
                observe(outs)
                if snapshots:
                    self.snapshots.after_round(planner, book, round_units, outs)

        def observe(outcomes):
            planner.observe(outcomes)
            state["blocked"] = False

        snapshots = self.snapshots.enabled and reproducible and self.sink is not None
        if snap is not None:
            book.restore(snap["next_decide"], snap["observed"], {r: len(u) for r, u in snap["pending"].items()})
            for r, units in sorted(snap["pending"].items()):
                round_units[r] = units
                settle_or_queue(r, units)

        judges = await self._start_judges()
        judge_load = [0] * len(judges)
        judge_chunk = max(1, min(job["chunk_size"], job.get("judge_concurrency", 32)))

        def send_to_judges(items):
            """Rows that landed from a rollout go to the least-loaded judge actor, in chunks."""
            for start in range(0, len(items), judge_chunk):
                part = items[start:start + judge_chunk]
                j = min(range(len(judges)), key=judge_load.__getitem__)
                ref = judges[j].judge_chunk.remote([res["row"] for _, _, res in part])
                tasks[asyncio.ensure_future(await_ref(ref))] = ("judge", j, part)
                judge_load[j] += len(part)
                self.judging += len(part)

        pump()
        while True:
            gone = self.watch.gone()
            if gone is not None:        # an orphan: stop appending now, a resume may be waiting
                self.stopped_because = CALLER_GONE
                self.errors.append(gone)
                break
            reason = planner.stop_reason()
            if (expired := clock.expired()):         # nothing new is dispatched; what is in flight may land
                queue.clear()
                if not tasks or clock.drain_over():
                    self.stopped_because = clock.stop()
                    break
            idle = self.inflight_units == 0 and self.judging == 0 and not self.retry.pending()
            if not expired and reason is not None and (idle or reason != "budget"):
                self.stopped_because = reason
                break
            # dispatch: fill every actor up to its slots plus one chunk of prefetch
            while queue:
                a = min(range(len(actors)), key=load.__getitem__)
                if load[a] >= per_actor + chunk:
                    break
                items = [queue.popleft() for _ in range(min(chunk, len(queue)))]
                if actors[a] is None:                # replaced only when there is work for it
                    actors[a] = self._new_actor()
                ref = actors[a].run_chunk.remote([u for _, _, u in items], clock.deadline_at)
                t = asyncio.ensure_future(await_ref(ref))
                tasks[t] = ("roll", a, items)
                self._sent_at[t] = time.monotonic()
                sent_on[t] = actors[a]
                load[a] += len(items)
                self.inflight_units += len(items)
            if not expired:                          # past the clock no suspect is tried alone
                self._dispatch_suspect(tasks, sent_on)
            if not tasks:
                pump()
                if queue:
                    continue
                self.stopped_because = planner.stop_reason() or "writer_exhausted"
                break
            wait_s = clock.wait_s()
            done, _ = await asyncio.wait(list(tasks), timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            self._watchdog(tasks)
            for t in done:
                self._sent_at.pop(t, None)
                kind, a, items = tasks.pop(t)
                handle = sent_on.pop(t, None)
                if kind == "judge":
                    judge_load[a] -= len(items)
                    self.judging -= len(items)
                else:
                    self.inflight_units -= len(items)
                    if kind == "roll":
                        load[a] -= len(items)
                    else:
                        self._solo["task"] = None
                try:
                    results = t.result()
                except Exception as exc:  # re-issue (keys make it exactly-once), or find a poison unit
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                    self.chunks_reissued += 1
                    if kind == "judge":
                        judges[a] = self._new_judge()
                        send_to_judges(items)
                        continue
                    cause = self._failure_cause(exc, handle)
                    died = self._actor_died(exc)
                    if kind == "roll":
                        if died and actors[a] is handle:     # the other chunks on it fail too: replace once,
                            actors[a] = None                 # when work comes (its start then competes with nothing)
                        queue.extendleft(reversed(self.retry.chunk_failed(items, cause)))
                        continue
                    if died:
                        self._solo["actor"] = None
                    settled = self.retry.solo_failed(items[0], cause)
                    if settled is None:
                        continue
                    results = [{"unit": items[0][2], "row": None, "unusable": settled, "timed_out": False,
                                "fault_parent": False, "error": f"{settled}: {type(exc).__name__}"}]
                else:
                    if kind == "solo":
                        self.retry.solo_ok(items[0])
                        self._ready_spare()
                landed, to_judge = [], []
                for item, res in zip(items, results):
                    if res.get("skipped"):           # the clock ran out before the actor started it
                        clock.skipped += 1
                        continue
                    if kind == "judge":
                        item[2]["verdict"] = res
                        landed.append(item)
                    elif judges and res["row"] is not None:
                        to_judge.append((item[0], item[1], res))
                    else:
                        landed.append((item[0], item[1], res))
                if to_judge:
                    send_to_judges(to_judge)
                batch = []
                n_before = len(self.rows)
                for r, i, res in landed:
                    o = self._land(res)
                    if reproducible:
                        book.record(r, i, o)
                    else:
                        batch.append(o)
                self.metrics.landed(self.rows[n_before:])      # metrics: once per landed batch
                if self._pending_sink:
                    if self.sink is not None:
                        self.sink.append(self._pending_sink)
                    if self.stream is not None:
                        self.stream.append(self._pending_sink)
                    self._pending_sink = []
                if not reproducible and batch:
                    observe(batch)
            pump()
            self.metrics.inflight(self.inflight_units, len(queue), self.judging)   # metrics: once a turn
            self.metrics.causes(planner.rerolled_by, planner.lost_by)
        # stop: abandon what is still in flight
        for t in tasks:
            t.cancel()
            self.abandoned += len(tasks[t][2])
            clock.cut += len(tasks[t][2]) if clock.expired() else 0
        self.abandoned += self.retry.pending()        # suspects never tried alone (a time budget ran out)
        self.inflight_units = 0
        self.metrics.finish(planner.rerolled_by, planner.lost_by)     # metrics: the run ended
        self.done = True
        await self.snapshots.flush()
        if self.sink is not None:          # an orphan lets go at once: compaction is left to the resume
            await asyncio.to_thread(self.sink.close, self.stopped_because != CALLER_GONE)
        if self.stream is not None:
            self.stream.close()
        self.rows.sort(key=lambda r: r.get("_ordinal", 0))
        return self._result(actors)

    def _land_resumed(self, unit, row: dict) -> Outcome:
        """A unit whose row is already on disk: the row comes back as it was, marked resumed."""
        row = dict(row)
        lineage = dict(row.get("lineage") or {})
        lineage["resumed"] = True
        row["lineage"] = lineage
        row["_key"] = list(unit.key)
        row["_ordinal"] = unit.ordinal
        row["_landed_s"] = 0.0
        self.resumed_rows.append(row)
        reward = row.get("reward")
        label = (1 if reward >= 0.5 else 0) if isinstance(reward, (int, float)) and not isinstance(reward, bool) \
            else row.get("behavior_signature")
        return Outcome(unit=unit, row=row, label=label, fault_parent=_fault_parent(row), resumed=True)

    def _land(self, res: dict) -> Outcome:
        row = res["row"]
        verdict = res.get("verdict")
        label = None
        if row is not None:
            if verdict is not None:
                apply_verdict(row, verdict, self.job["judge_name"], self.job["scoring_run_id"])
                if verdict.get("judge_meta"):
                    row["judge_meta"] = verdict["judge_meta"]
                if self.job.get("label_source"):
                    row["label_source"] = self.job["label_source"]
                r = verdict.get("reward") if verdict.get("judge_status") == "ok" else None
                label = None if r is None else (1 if r >= 0.5 else 0)
            if label is None:
                label = row.get("behavior_signature")
            self.rows.append(row)
            node = row.get("_node", "?")
            self.node_rows[node] = self.node_rows.get(node, 0) + 1
            if self.first_row_s is None:
                self.first_row_s = time.monotonic() - self.t0
            row["_landed_s"] = round(time.monotonic() - self.t0, 4)
            if self.sink is not None or self.stream is not None:
                self._pending_sink.append(row)
        elif res.get("error") and len(self.errors) < 5:
            self.errors.append(str(res["error"])[:300])
        return Outcome(unit=res["unit"], row=row, unusable=res.get("unusable"),
                       timed_out=res.get("timed_out", False), label=label,
                       fault_parent=bool(res.get("fault_parent")) and row is not None,
                       graded_failure=bool(verdict) and is_graded_failure(verdict),
                       failed_markers=tuple(failed_markers(verdict)) if verdict else ())

    def _result(self, actors) -> dict:
        p = self.planner
        with gc_paused():
            self.resumed_rows.extend(self.snapshots.deferred_rows(self._resume))
        rows = sorted(self.rows + self.resumed_rows, key=lambda r: r.get("_ordinal", 0))
        leftover = self._resume.leftover()
        return {
            "rows": rows, "leftover_rows": leftover,
            "resume": {**self._resume.summary(), **self.snapshots.summary()},
            "checkpoint_warnings": list(self.sink.warnings) if self.sink is not None else [],
            "stopped_because": self.stopped_because,
            "elapsed_s": time.monotonic() - self.t0, "first_row_s": self.first_row_s,
            "planner": planner_stats(p, self.stopped_because), "node_rows": dict(self.node_rows),
            "errors": self.errors, "chunks_reissued": self.chunks_reissued, "chunk_retry": self.retry.stats(),
            "abandoned": self.abandoned, "n_actors": len(actors),
            "actor_nodes": list(getattr(self, "actor_nodes", [])), "stuck_units": dict(self.stuck),
            "writer": p.writer.stats() if hasattr(p.writer, "stats") else None,
            "clock": self.clock.summary(self.job.get("started_at")) if getattr(self, "clock", None) else None,
        }
