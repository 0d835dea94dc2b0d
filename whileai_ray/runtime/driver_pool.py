"""The driver's actor pool: how rollout and judge actors are made, placed and waited for.

A mixin of ``DriverWorker`` (it reads ``self.job``): actor options from ``advanced={"ray":
{...}}``, a deterministic SPREAD over the alive nodes, and start-up that fails with a clear
error when the cluster cannot place the actors. Kept apart from the loop, which only asks the
pool for actors and sends them work.
"""
from __future__ import annotations

import asyncio

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .judge_actor import JudgeWorker
from .rollout_actor import RolloutWorker

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
        return cls.options(**opts).remote(
            job["agent"], job["meta"], job.get("execute"), None,
            job["per_actor_concurrency"], job.get("timeout"), job.get("judge_timeout"), job.get("model"))

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
            job["grader"], job.get("judge_concurrency", 32), job.get("judge_timeout") or None)

    async def _start_judges(self) -> list:
        if self.job.get("grader") is None:
            return []
        judges = [self._new_judge() for _ in range(max(1, int(self.job.get("judge_actors", 1))))]
        await asyncio.wait_for(asyncio.gather(*(await_ref(j.ping.remote()) for j in judges)), PLACEMENT_TIMEOUT_S)
        return judges
