"""How big the run's pools are, and where they run: a plain function of the run and the cluster.

``plan_pools(spec, cluster, home)`` is decided on the caller's side once Ray is up (the cluster
is known then), before the Driver starts; the answer is a ``PoolPlan``.

**Where.** ``home`` names the caller's callables (``agent``, ``execute``, ``grader``) that must
stay in the caller's process because a pickled copy would not be the same thing
(``caller/stay_home.py``: it does not pickle, or it holds the caller's data). On a one-node Ray that the
caller's process is part of (a laptop, a notebook, one machine), their pool runs in the caller
(``where="caller"``, ``pools/caller_pool.py``): closures over clients with locks or sockets, notebook
globals and side effects on the caller's objects all work as written. Everything else plays on
Ray actors (``where="actors"``), which also keep a crashing agent from taking the caller down.
On a cluster of several nodes (or through Ray Client) every callable travels to actors spread
over the nodes (``simulate()`` refuses, in a few lines, one that cannot). Asking for actors
(``advanced={"ray": {"rollout_actors": N}}`` or ``concurrency_per_actor``) always gets actors.

**How many.** ``advanced={"ray": {"rollout_actors": N, "concurrency_per_actor": M}}`` decide
when given. Otherwise the pool fits the cluster, up to ``concurrency`` actors in all:

* a Python function (``agent_form="sync"``) may be CPU-bound: one actor per CPU of the nodes that
  have CPUs, so it uses every core it has;
* a model backend or an ``async def`` agent waits on I/O: few actors with many slots (one per
  node that has CPUs, more only past 64 slots an actor for a model, 2048 for an async agent).

Every node that has CPUs gets at least one actor (while ``concurrency`` allows), and the slots
(``concurrency``) are shared out evenly. An actor that asks for resources of its own
(``advanced={"ray": {"num_gpus": 1}}`` for a class that loads weights in ``__init__``, or
``num_cpus``) gets no more actors than the cluster holds of them (at least one). No Ray here:
``caller/run.py`` reads the cluster.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["PoolPlan", "ClusterView", "plan_pools", "SLOTS_PER_ACTOR"]

SLOTS_PER_ACTOR = {"sync": 64, "model": 64, "async": 2048}   # rollouts one actor holds at most by default


@dataclass(frozen=True)
class ClusterView:
    """What sizing needs to know of the cluster: each alive node's CPUs, and whether the caller's
    process is on the only node (a local Ray, or one machine)."""
    nodes: dict = field(default_factory=dict)   # node id -> CPUs (alive nodes only)
    caller_on_only_node: bool = False
    gpus: float = 0.0                           # GPUs of the alive nodes, all together


@dataclass(frozen=True)
class PoolPlan:
    where: str                 # "caller" or "actors": where rollouts run
    actors: int                # rollout lanes (1 for the caller's pool)
    per_actor: int             # rollouts in flight per lane
    judges_where: str          # "caller" or "actors": where grading runs
    nodes: tuple = ()          # (node id, CPUs) of the nodes actors may go to
    graded: bool = False       # the run has a grader (judge lanes)


def plan_pools(spec, cluster: ClusterView, home: frozenset = frozenset()) -> PoolPlan:
    """The pools of ``spec`` (a JobSpec) on ``cluster``; ``home``: the roles whose callable must
    stay in the caller's process (see the module doc)."""
    cpu_nodes = tuple(sorted((n, float(c)) for n, c in cluster.nodes.items() if c and c > 0))
    asked_actors = bool(spec.rollout_actors or spec.concurrency_per_actor)
    at_home = cluster.caller_on_only_node and not asked_actors
    graded = spec.grader is not None
    judges_where = "caller" if at_home and graded and spec.grader_is_callers and "grader" in home else "actors"
    if at_home and home & {"agent", "execute"}:
        return PoolPlan("caller", 1, max(1, spec.concurrency), judges_where, cpu_nodes, graded)
    n, per = _sizes(spec, cpu_nodes, cluster.gpus)
    return PoolPlan("actors", n, per, judges_where, cpu_nodes, graded)


def _sizes(spec, cpu_nodes: tuple, gpus: float = 0.0) -> tuple[int, int]:
    concurrency = max(1, int(spec.concurrency))
    n, per = int(spec.rollout_actors or 0), int(spec.concurrency_per_actor or 0)
    if not n:
        if per:
            n = math.ceil(concurrency / per)
        else:
            slots = SLOTS_PER_ACTOR[spec.agent_form]
            n = max(math.ceil(concurrency / slots), len(cpu_nodes))
            if spec.agent_form == "sync":
                n = max(n, int(sum(c for _, c in cpu_nodes)))
            n = min(n, concurrency, _fit(spec.actor_options, sum(c for _, c in cpu_nodes), gpus))
    n = max(1, n)
    if not per:
        per = max(1, math.ceil(concurrency / n))
    return n, per


def _fit(options: dict, cpus: float, gpus: float) -> int:
    """How many actors the cluster holds when each asks ``options`` (num_cpus, num_gpus); at least 1."""
    fits = []
    for asked, have in ((options.get("num_cpus"), cpus), (options.get("num_gpus"), gpus)):
        if asked and float(asked) > 0:
            fits.append(max(1, int(have // float(asked))))
    return min(fits) if fits else 10**9
