"""The driver's actor pool: how rollout and judge actors are made, placed and waited for.

A mixin of ``DriverWorker`` (it reads ``self.job``): actor options from ``advanced={"ray":
{...}}``, a deterministic SPREAD over the alive nodes, and start-up that fails with a clear
error when the cluster cannot place the actors. Kept apart from the loop, which only asks the
pool for actors and sends them work. It also names why a chunk failed (its node died, its
worker died, or it raised) and runs the quarantine lane where suspects of a poison rollout are
tried one at a time (``chunk_retry.py``).
"""
from __future__ import annotations

import asyncio
import time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .chunk_retry import NODE_LOST, ROLLOUT_FAILED, UNSERIALIZABLE, WORKER_CRASHED
from .judge_actor import JudgeWorker
from .rollout_actor import RolloutWorker

STUCK_GRACE_S = 30.0          # past the agent timeout by this much, an in-flight unit is reported stuck

__all__ = ["DriverPool", "PLACEMENT_TIMEOUT_S", "await_ref"]

PLACEMENT_TIMEOUT_S = 60.0


async def await_ref(ref):
    """An ObjectRef as a coroutine (what asyncio.ensure_future and gather take)."""
    return await ref


class DriverPool:
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
        actor = cls.options(**opts).remote(
            job["agent"], job["meta"], job.get("execute"), None,
            job["per_actor_concurrency"], job.get("timeout"), job.get("judge_timeout"), job.get("model"),
            metrics=job.get("metrics"))
        self.__dict__.setdefault("_node_of", {})[id(actor)] = (actor, getattr(opts["scheduling_strategy"],
                                                                             "node_id", None))
        return actor

    # ---------------------------------------------------------- failed chunks
    @staticmethod
    def _actor_died(exc) -> bool:
        return isinstance(exc, ray.exceptions.RayActorError)

    def _failure_cause(self, exc, actor) -> str:
        """Name why a chunk failed: its node died, its worker process died, or it raised."""
        if isinstance(exc, ray.exceptions.RayActorError):
            if getattr(exc, "_actor_init_failed", False):   # no unit's fault: every new actor would fail
                raise RuntimeError(f"a rollout actor could not start: {exc}"[:2000]) from None
            node = self.__dict__.get("_node_of", {}).get(id(actor), (None, None))[1]
            if "node has died" in str(exc) or (node and node not in {
                    n["NodeID"] for n in ray.nodes() if n.get("Alive")}):
                return NODE_LOST
            return WORKER_CRASHED
        text = f"{type(exc).__name__}: {exc}"
        if any(word in text for word in ("erializ", "ickl", "RecursionError", "ircular")):
            return UNSERIALIZABLE
        return ROLLOUT_FAILED

    def _ready_spare(self) -> None:
        """Start the quarantine's spare once its actor has proved it works (one start at a time:
        on a busy machine two starts at once take as long as two in a row)."""
        if self._solo["spare"] is None and self._solo["actor"] is not None:
            self._solo["spare"] = self._new_actor()

    def _dispatch_suspect(self, tasks: dict, sent_on: dict) -> None:
        """The quarantine lane: one suspect unit at a time, on an actor that plays nothing else,
        so a crash there names its unit (``chunk_retry.py``)."""
        if self._solo["task"] is not None or not self.retry.pending():
            return
        item = self.retry.next_suspect()
        if self._solo["actor"] is None:         # the spare, started while the last one worked, takes over at once
            self._solo["actor"], self._solo["spare"] = self._solo["spare"] or self._new_actor(), None
        actor = self._solo["actor"]
        t = asyncio.ensure_future(await_ref(actor.run_chunk.remote([item[2]])))
        tasks[t] = ("solo", -1, [item])
        self._sent_at[t] = time.monotonic()
        sent_on[t] = actor
        self._solo["task"] = t
        self.inflight_units += 1

    async def _start_actors(self, actors: list) -> list:
        pings = [await_ref(a.ping.remote()) for a in actors]
        try:
            self.actor_nodes = list(await asyncio.wait_for(asyncio.gather(*pings), PLACEMENT_TIMEOUT_S))
        except asyncio.TimeoutError:
            opts = {k: v for k, v in self._actor_options().items() if k != "scheduling_strategy"}
            raise RuntimeError(
                f"the {len(actors)} rollout actor(s) could not be placed within {PLACEMENT_TIMEOUT_S:.0f}s; "
                f"each asks for {opts}. The cluster lacks those resources: lower advanced={{'ray': {{...}}}} "
                "(num_cpus, num_gpus, resources, rollout_actors) or add nodes that have them.") from None
        return actors

    def _new_judge(self):
        job = self.job
        opts = {k: v for k, v in self._actor_options().items() if k not in ("num_gpus", "resources")}
        return ray.remote(JudgeWorker).options(**opts).remote(
            job["grader"], job.get("judge_concurrency", 32), job.get("judge_timeout") or None,
            metrics=job.get("metrics"))

    async def _start_judges(self) -> list:
        if self.job.get("grader") is None:
            return []
        judges = [self._new_judge() for _ in range(max(1, int(self.job.get("judge_actors", 1))))]
        await asyncio.wait_for(asyncio.gather(*(await_ref(j.ping.remote()) for j in judges)), PLACEMENT_TIMEOUT_S)
        return judges

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
