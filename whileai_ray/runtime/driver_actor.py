"""The Driver actor: owns the planner, the budget, the rollout pool and the sinks.

It runs on the caller's node (files it writes are the caller's files). Its loop:
decide rounds (``Planner.decide``) as the ``RoundBook`` allows, cut them into chunks,
keep every rollout actor's slots full plus one chunk of prefetch, land each returned row
at once (result list + checkpoint), hand outcomes to the planner (in round order when
reproducible, as they arrive otherwise), and stop when the planner or the clock says so.
The caller polls ``poll()`` for progress and gets everything from ``run()`` at the end.
"""
from __future__ import annotations

import asyncio
import math
import time
from collections import deque

import ray

from ..score.judging import apply_verdict, failed_markers, is_graded_failure
from ..search.planner import Outcome, Planner
from ..search.rounds import RoundBook
from ..store.plan_snapshots import PlanSnapshots
from ..store.resume import ResumeIndex
from .rollout_actor import RolloutWorker

PLACEMENT_TIMEOUT_S = 60.0
STUCK_GRACE_S = 30.0


class DriverWorker:
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

    # ------------------------------------------------------------------ polling
    def poll(self) -> dict:
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
            from ..store.sink import StreamSink
            self.stream = StreamSink(job["stream_path"])
        if loaded:
            import gc
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
        tasks: dict = {}                        # asyncio task -> (actor index, items)
        load = [0] * len(actors)
        deadline = self.t0 + job["time_budget"] if job.get("time_budget") else None
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
                tasks[asyncio.ensure_future(_await(ref))] = ("judge", j, part)
                judge_load[j] += len(part)
                self.judging += len(part)

        pump()
        while True:
            reason = planner.stop_reason()
            if deadline is not None and time.monotonic() >= deadline:
                reason = "time_budget"
            if reason is not None and ((self.inflight_units == 0 and self.judging == 0) or reason != "budget"):
                self.stopped_because = reason
                break
            # dispatch: fill every actor up to its slots plus one chunk of prefetch
            while queue:
                a = min(range(len(actors)), key=load.__getitem__)
                if load[a] >= per_actor + chunk:
                    break
                items = [queue.popleft() for _ in range(min(chunk, len(queue)))]
                ref = actors[a].run_chunk.remote([u for _, _, u in items])
                t = asyncio.ensure_future(_await(ref))
                tasks[t] = ("roll", a, items)
                self._sent_at[t] = time.monotonic()
                load[a] += len(items)
                self.inflight_units += len(items)
            if not tasks:
                pump()
                if queue:
                    continue
                self.stopped_because = planner.stop_reason() or "writer_exhausted"
                break
            wait_s = 0.5 if deadline is None else max(0.0, min(0.5, deadline - time.monotonic()))
            done, _ = await asyncio.wait(list(tasks), timeout=wait_s, return_when=asyncio.FIRST_COMPLETED)
            self._watchdog(tasks)
            for t in done:
                self._sent_at.pop(t, None)
                kind, a, items = tasks.pop(t)
                if kind == "roll":
                    load[a] -= len(items)
                    self.inflight_units -= len(items)
                else:
                    judge_load[a] -= len(items)
                    self.judging -= len(items)
                try:
                    results = t.result()
                except Exception as exc:  # the actor died: re-issue its work (keys make it exactly-once)
                    self.errors.append(f"{type(exc).__name__}: {exc}"[:300])
                    self.chunks_reissued += 1
                    if kind == "roll":
                        actors[a] = self._new_actor()
                        queue.extendleft(reversed(items))
                    else:
                        judges[a] = self._new_judge()
                        send_to_judges(items)
                    continue
                landed, to_judge = [], []
                for item, res in zip(items, results):
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
                for r, i, res in landed:
                    o = self._land(res)
                    if reproducible:
                        book.record(r, i, o)
                    else:
                        batch.append(o)
                if self._pending_sink:
                    if self.sink is not None:
                        self.sink.append(self._pending_sink)
                    if self.stream is not None:
                        self.stream.append(self._pending_sink)
                    self._pending_sink = []
                if not reproducible and batch:
                    observe(batch)
            pump()
        # stop: abandon what is still in flight
        for t in tasks:
            t.cancel()
            self.abandoned += len(tasks[t][2])
        self.inflight_units = 0
        self.done = True
        await self.snapshots.flush()
        if self.sink is not None:
            await asyncio.to_thread(self.sink.close)
        if self.stream is not None:
            self.stream.close()
        self.rows.sort(key=lambda r: r.get("_ordinal", 0))
        return self._result(actors)

    def _watchdog(self, tasks: dict) -> None:
        """Report units whose chunk has been in flight past the agent deadline plus a grace: a hung
        actor or a node that died without Ray noticing yet. They stay in flight (re-issuing a unit
        that may still land would break exactly-once); the report names them."""
        limit = (self.job.get("timeout") or 300.0) + STUCK_GRACE_S
        now = time.monotonic()
        for t, sent in self._sent_at.items():
            if now - sent > limit and t in tasks:
                for _r, _i, u in tasks[t][2]:
                    key = "|".join(map(str, u.key))
                    if key not in self.stuck:
                        print(f"whileai_ray watchdog: unit {key} in flight for {now - sent:.0f}s "
                              f"(deadline {limit:.0f}s)", flush=True)
                    self.stuck[key] = round(now - sent, 1)

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
        from .rollout_actor import _fault_parent
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

    # --------------------------------------------------------------- the pool
    def _actor_options(self) -> dict:
        ray_opts = self.job.get("ray", {})
        opts = {"num_cpus": ray_opts.get("num_cpus", 0), "max_concurrency": 1000,
                "max_restarts": ray_opts.get("max_restarts", 0)}
        if ray_opts.get("num_gpus"):
            opts["num_gpus"] = ray_opts["num_gpus"]
        if ray_opts.get("resources"):
            opts["resources"] = ray_opts["resources"]
        opts["scheduling_strategy"] = ray_opts.get("scheduling_strategy", "SPREAD")
        return opts

    def _spread_strategy(self):
        """SPREAD, made deterministic: each new actor goes to the alive node that holds the fewest
        of ours. Ray's own SPREAD (and soft affinity) was measured to stack two of three actors on
        one node of a 3-node cluster; these actors ask for no resources, so any node can host them."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        alive = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
        if not alive:
            return "SPREAD"
        counts = self.__dict__.setdefault("_placed", {})
        node = min(alive, key=lambda n: (counts.get(n, 0), n))
        counts[node] = counts.get(node, 0) + 1
        return NodeAffinitySchedulingStrategy(node_id=node, soft=False)

    def _new_actor(self):
        job = self.job
        cls = ray.remote(RolloutWorker)
        opts = self._actor_options()
        if opts.get("scheduling_strategy") == "SPREAD" and not opts.get("num_gpus") and not opts.get("resources") \
                and not opts.get("num_cpus"):
            opts["scheduling_strategy"] = self._spread_strategy()
        return cls.options(**opts).remote(
            job["agent"], job["meta"], job.get("execute"), None,
            job["per_actor_concurrency"], job.get("timeout"), job.get("judge_timeout"), job.get("model"))

    async def _start_actors(self, actors: list) -> list:
        pings = [_await(a.ping.remote()) for a in actors]
        limit = self.job.get("start_timeout_s", PLACEMENT_TIMEOUT_S)   # longer when a class loads a model
        try:
            self.actor_nodes = list(await asyncio.wait_for(asyncio.gather(*pings), limit))
        except asyncio.TimeoutError:
            opts = {k: v for k, v in self._actor_options().items() if k != "scheduling_strategy"}
            raise RuntimeError(
                f"the {len(actors)} rollout actor(s) could not be placed (or a class given as agent= "
                f"had not finished __init__) within {limit:.0f}s; "
                f"each asks for {opts}. The cluster lacks those resources: lower advanced={{'ray': {{...}}}} "
                "(num_cpus, num_gpus, resources, rollout_actors) or add nodes that have them.") from None
        return actors

    def _new_judge(self):
        from .judge_actor import JudgeWorker
        job = self.job
        opts = {k: v for k, v in self._actor_options().items() if k not in ("num_gpus", "resources")}
        return ray.remote(JudgeWorker).options(**opts).remote(
            job["grader"], job.get("judge_concurrency", 32), job.get("judge_timeout") or None)

    async def _start_judges(self) -> list:
        if self.job.get("grader") is None:
            return []
        judges = [self._new_judge() for _ in range(max(1, int(self.job.get("judge_actors", 1))))]
        await asyncio.wait_for(asyncio.gather(*(_await(j.ping.remote()) for j in judges)),
                               self.job.get("start_timeout_s", PLACEMENT_TIMEOUT_S))
        return judges

    def _result(self, actors) -> dict:
        p = self.planner
        from ..store.jsonl import gc_paused
        with gc_paused():
            self.resumed_rows.extend(self.snapshots.deferred_rows(self._resume))
        rows = sorted(self.rows + self.resumed_rows, key=lambda r: r.get("_ordinal", 0))
        leftover = self._resume.leftover()
        return {
            "rows": rows, "leftover_rows": leftover,
            "resume": {**self._resume.summary(), **self.snapshots.summary()},
            "stopped_because": self.stopped_because,
            "elapsed_s": time.monotonic() - self.t0, "first_row_s": self.first_row_s,
            "planner": _planner_stats(p, self.stopped_because), "node_rows": dict(self.node_rows),
            "errors": self.errors, "chunks_reissued": self.chunks_reissued,
            "abandoned": self.abandoned, "n_actors": len(actors),
            "actor_nodes": list(getattr(self, "actor_nodes", [])), "stuck_units": dict(self.stuck),
            "writer": p.writer.stats() if hasattr(p.writer, "stats") else None,
        }


async def _await(ref):
    return await ref


def _planner_stats(p: Planner, stopped_because=None) -> dict:
    return {
        "coverage_keys": p.tracker.report_keys(), "coverage_curve": p.tracker.finish(stopped_because,
                                                                                     p.bandit.weights()),
        "arm_weights": p.bandit.weights(), "arm_initial": dict(p.bandit.initial), "arms": p.bandit.stats(),
        "uncovered_shapes": p.shapes.uncovered() if p.shapes else [], "family_cap": p.family.stats(),
        "copy_deficit": p.tracker.copy_deficit(), "failure_criteria": dict(p.failure_criteria),
        "landed": p.landed, "scheduled": p.scheduled, "rerolled_by": dict(p.rerolled_by),
        "lost_by": dict(p.lost_by), "timed_out": p.timed_out, "agent_errors": p.agent_errors,
        "situations": p.situations_opened, "groups": p.book.stats(),
        "group_cut": [list(g) for g in p.book.groups if p.book.cut(g)] if p.book.adaptive or p.book.k > 1 else [],
        "allocator": dict(p.allocator), "mutation_aims": p.mutation_aims, "arm_counts": dict(p.arm_counts),
        "hard_picks": p.picker.hard_picks if p.picker else 0, "picks": p.picker.picks if p.picker else 0,
        "faulted_situations": p.faulted_situations, "seeds_left": list(p.seeds_left),
        "cell_opened": list(p.picker.opened) if p.picker else [],
    }
