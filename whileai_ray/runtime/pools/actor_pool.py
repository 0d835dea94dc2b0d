"""ActorPool: a pool (``pools/protocol.py``) whose lanes are Ray actors, spread over the cluster's nodes.

Rollout lanes are ``RolloutWorker`` actors (``play_chunk``), judge lanes ``JudgeWorker`` actors
(``judge_chunk``). Actor options come from ``advanced={"ray": {...}}`` (``num_cpus`` default 0,
``num_gpus``, ``resources``, ``max_restarts``, ``scheduling_strategy``). Rollout actors that ask
for no resources are placed by us, deterministically: each new actor goes to the node, among
those the ``PoolPlan`` names (the alive nodes that have CPUs), that holds the fewest of ours per
CPU. Ray's own SPREAD (and soft affinity) was measured to stack two of three actors on one node
of a 3-node cluster. A lane whose actor is gone gets a fresh actor, placed by the same rule among
the nodes still alive; ``pools/lane_death.py`` knows every way Ray says an actor is gone.

The actors are made when the pool is made (they start while the Driver reads its checkpoint),
or were made before it (``prebuilt``: by the caller, beside a kept Driver that needs a new pool,
or kept from an earlier run by the Driver host, ``driver/actor.py``); ``start()`` waits until one answers
``ping`` (the others are waited for while the run begins: ``lanes_up()``, and the Driver lends
their slots to the lanes up meanwhile, ``driver/lending.py``) and the run fails with a clear error
when the cluster cannot place them all. Rollout actors are
``ReusableRolloutWorker`` actors (``pools/warm_rollout.py``): a later run of the same process may renew them
(``renew()``: asked before the Driver opens its run, settled by ``start()``; a renewed lane is up).
"""
from __future__ import annotations

import asyncio
from typing import Callable

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ..messages import ROLLOUT_FAILED, UNSERIALIZABLE, WORKER_CRASHED, pack_units
from .judge_worker import JudgeWorker
from .lane_death import death_cause, lane_is_dead
from .slim_results import slim_lanes
from .warm_rollout import ReusableRolloutWorker

__all__ = ["start_rollout_actors", "ActorPool", "rollout_pool", "rollout_args", "judge_pool", "actor_options", "await_ref",
           "PLACEMENT_TIMEOUT_S", "lane_is_dead", "death_cause"]

PLACEMENT_TIMEOUT_S = 60.0
FLUSH_TIMEOUT_S = 30.0

async def await_ref(ref):
    """An ObjectRef as a coroutine (what asyncio.ensure_future and gather take)."""
    return await ref


def actor_options(ray_opts: dict) -> dict:
    """Ray options for our actors from ``advanced={"ray": {...}}``."""
    opts = {"num_cpus": ray_opts.get("num_cpus", 0), "max_concurrency": 1000,
            "max_restarts": ray_opts.get("max_restarts", 0)}
    if ray_opts.get("num_gpus"):
        opts["num_gpus"] = ray_opts["num_gpus"]
    if ray_opts.get("resources"):
        opts["resources"] = ray_opts["resources"]
    opts["scheduling_strategy"] = ray_opts.get("scheduling_strategy", "SPREAD")
    return opts


class ActorPool:
    where = "actors"
    lends = False               # rollout_pool says when a starting lane's slots may be lent (driver/lending.py)

    def __init__(self, make: Callable[[], tuple], lanes: int, slots: int, method: str, what: str,
                 options: dict, start_timeout_s: float = PLACEMENT_TIMEOUT_S, flush: bool = False,
                 prebuilt: list | None = None):
        self.make, self.method, self.what = make, method, what
        self.flush = flush                         # shared storage: actors write their last Parquet part on close
        self.flushed: set | None = None            # the shard writers (tokens) that did, once closed
        self.slots = max(1, int(slots))
        self.options = options
        self.start_timeout_s = start_timeout_s
        self._node_of: dict = {}                   # id(actor) -> the node it was placed on (None: Ray's choice)
        if prebuilt is not None:                   # [(actor or None, node)]: a None lane is made on start()
            self.actors = list(actor for actor, _ in prebuilt)
            self._node_of.update((id(actor), node) for actor, node in prebuilt if actor is not None)
        else:
            self.actors = [self._new() for _ in range(max(1, int(lanes)))]
        self._alone = self._spare = None           # the quarantine lane's actor, and the one readied after it
        self.nodes: list = []
        self._placing: asyncio.Future | None = None   # the lanes still starting after start() returned
        self._starting: dict = {}                     # lane -> its ping task, for the lanes start() pinged
        self._unplaced: RuntimeError | None = None    # set when they were not placed in time
        self._renewing: list | None = None            # kept lanes becoming this run's (``renew``)
        self.placer: _Placer | None = None            # rollout_pool's _Placer, when it places the actors
        self.replaced = 0                             # lanes whose actor died and was replaced (or will be)
        self.deaths: dict = {}                        # how they died: Ray's error class -> lanes

    @property
    def lanes(self) -> int:
        return len(self.actors)

    def _new(self):
        actor, node = self.make()
        self._node_of[id(actor)] = node
        return actor

    def placed(self) -> list:
        """``[(actor, node)]`` of the lanes (what ``prebuilt`` takes)."""
        return [(a, self._node_of.get(id(a)) if a is not None else None) for a in self.actors]

    def kill(self) -> None:
        """Stop every actor of the pool now (a Driver host letting go of a pool it will not reuse)."""
        for actor in (*self.actors, self._alone, self._spare):
            if actor is not None:
                try:
                    ray.kill(actor)
                except Exception:
                    pass
        self.actors = [None] * len(self.actors)
        self._alone = self._spare = None

    def trim(self) -> None:
        """After a run, before the pool waits for the next: the quarantine's actors go (a new run
        starts with no suspects)."""
        for actor in (self._alone, self._spare):
            if actor is not None:
                try:
                    ray.kill(actor)
                except Exception:
                    pass
        self._alone = self._spare = None

    def renew(self, args: tuple, kwargs: dict) -> None:
        """Ask the kept actors (``prebuilt``) to become this run's (``pools/warm_rollout.py``) and go on:
        the Driver opens its run and decides its first units while they do. ``start()`` settles
        the answers: a renewed lane is up (no ping), one that did not answer is made again."""
        self._renewing = [asyncio.ensure_future(await_ref(a.renew.remote(args, kwargs))) if a is not None else None
                          for a in self.actors]

    async def _settle_renewals(self) -> list:
        """The node of each lane the renewal brought up (None: made again by ``start()``)."""
        renewing, self._renewing = self._renewing or [], None
        await asyncio.gather(*(t for t in renewing if t is not None), return_exceptions=True)
        nodes = []
        for lane, task in enumerate(renewing):
            error = task.exception() if task is not None else None
            if error is not None and not lane_is_dead(error):
                raise error                      # what its ping would raise: the run cannot start
            node = None if task is None or error is not None else task.result()
            if node is None and self.actors[lane] is not None:     # gone since the last run
                self._forget(self.actors[lane])
                self.actors[lane] = None
            nodes.append(node)
        return nodes

    def _forget(self, actor) -> None:
        node = self._node_of.pop(id(actor), None)
        if self.placer is not None and self.placer.placed.get(node):
            self.placer.placed[node] -= 1            # its replacement is placed as if it never was

    async def start(self) -> None:
        """Return once one lane answers: the run may begin (the first row does not wait for the
        slowest actor to start: the Driver lends a starting lane's slots to the lanes up,
        ``lanes_up()``). The other lanes are waited for in the background; when they are not all
        placed within ``start_timeout_s``, ``lanes_up`` (and their chunks, through ``replace``)
        raises the placement error (the run stops, saying what the cluster lacks). Renewed lanes
        (``renew``) answered already, but on shared storage (``flush``) they are pinged too: the
        ping checks the folder's probe, which the Driver writes when it opens the run."""
        known = await self._settle_renewals() if self._renewing is not None else [None] * len(self.actors)
        if self.flush:          # shared storage: every lane's ping checks the probe the Driver wrote since
            known = [None] * len(self.actors)
        self.actors = [a if a is not None else self._new() for a in self.actors]
        # a lane not up yet is where we placed it (a lent pool's lanes are ours: a hard node
        # affinity); its ping says so when it answers, and a run may end before it does
        self.nodes = [node if node is not None else self._node_of.get(id(actor))
                      for node, actor in zip(known, self.actors)]
        if all(node is not None for node in known):
            return
        deadline = asyncio.get_running_loop().time() + self.start_timeout_s
        self._starting = {i: asyncio.ensure_future(self._ping(i, a)) for i, a in enumerate(self.actors)
                          if known[i] is None}
        pings = list(self._starting.values())
        done, pending = await asyncio.wait(pings, timeout=self.start_timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if not done:
            for task in pending:
                task.cancel()
            raise self._not_placed(len(self.actors))
        for task in done:
            task.result()                        # an actor whose constructor failed: raised here
        if pending:
            self._placing = asyncio.ensure_future(self._place_rest(pending, deadline))

    async def _ping(self, lane: int, actor) -> None:
        self.nodes[lane] = await actor.ping.remote()

    def lanes_up(self) -> list[bool]:
        """Which lanes answered their ping (or were renewed, or replaced since: a replacement's
        chunks wait at Ray while it starts). A lane whose constructor failed counts as up: its
        first chunk says why (``replace``). Raises the placement error once it is known."""
        if self._unplaced is not None:
            raise self._unplaced
        starting = self._starting
        return [lane not in starting or starting[lane].done() for lane in range(len(self.actors))]

    def starting(self) -> list:
        """The pings of the lanes still starting (the loop wakes when one answers)."""
        return [task for task in self._starting.values() if not task.done()]

    async def _place_rest(self, pending: set, deadline: float) -> None:
        done, late = await asyncio.wait(pending, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
        for task in done:
            task.exception()                     # a constructor that failed shows on the lane's first chunk
        if late:
            for task in late:
                task.cancel()
            self._unplaced = self._not_placed(len(late))

    def _not_placed(self, n: int) -> RuntimeError:
        opts = {k: v for k, v in self.options.items() if k != "scheduling_strategy"}
        return RuntimeError(
            f"{n} of the {len(self.actors)} {self.what} actor(s) could not be placed (or a class given as agent=, "
            f"execute= or grader= had not finished __init__) within {self.start_timeout_s:.0f}s; "
            f"each asks for {opts}. The cluster lacks those resources: lower advanced={{'ray': {{...}}}} "
            "(num_cpus, num_gpus, resources, rollout_actors) or add nodes that have them.")

    def submit(self, lane: int, payload: list, lent: bool = False):
        if self.actors[lane] is None:            # replaced only when there is work for it
            self.actors[lane] = self._new()
        return self._call(self.actors[lane], payload, lent)

    def submit_alone(self, payload: list):
        if self._alone is None:                  # the spare, started while the last one worked, takes over
            self._alone, self._spare = self._spare or self._new(), None
        return self._call(self._alone, payload)

    def alone_ok(self) -> None:
        """Start the quarantine's spare once its actor has proved it works (one start at a time:
        on a busy machine two starts at once take as long as two in a row)."""
        if self._spare is None and self._alone is not None:
            self._spare = self._new()

    async def _call(self, actor, payload: list, lent: bool = False):
        try:
            method = getattr(actor, self.method)
            if self.what != "rollout":
                ref = method.remote(payload)
            else:                                # (lent: played beyond the lane's slots, driver/lending.py)
                ref = method.remote(pack_units(payload), True) if lent else method.remote(pack_units(payload))
            placing = self._placing
            if placing is None or placing.done() and self._unplaced is None:
                return await ref
            call = asyncio.ensure_future(await_ref(ref))     # its lane may still be starting
            await asyncio.wait([call, placing], return_when=asyncio.FIRST_COMPLETED)
            if not call.done() and self._unplaced is not None:
                call.cancel()
                raise self._unplaced
            return await call
        except Exception as exc:
            setattr(exc, "whileai_actor", actor)  # which actor failed: replace() replaces it once
            raise

    def replace(self, lane: int, error: BaseException) -> str:
        if error is self._unplaced:              # no unit's fault, and no new actor would be placed either
            raise error
        if self.what == "judge":                 # a judge chunk is simply judged again, by a fresh judge
            self.actors[lane] = self._new()
            return ROLLOUT_FAILED
        actor = getattr(error, "whileai_actor", None)
        cause = self._cause(error, actor)
        if lane_is_dead(error):                  # the other chunks on it fail too: replace once,
            if lane < 0 and self._alone is actor:            # when work comes (its start competes with nothing)
                self._alone = None
                self._bury(actor, error)
            elif lane >= 0 and self.actors[lane] is actor:
                self.actors[lane] = None
                self._bury(actor, error)
        return cause

    def lane_figures(self) -> dict:
        """``search["poison"]``'s lane figures: lanes replaced, and how their actors died."""
        return {"lanes_replaced": self.replaced, "lane_deaths": dict(self.deaths)}

    def _bury(self, actor, error: BaseException) -> None:
        """A dead lane's actor is let go for good (one only unavailable would not come back to play)."""
        self.replaced += 1
        name = type(error).__name__
        self.deaths[name] = self.deaths.get(name, 0) + 1
        node = self._node_of.get(id(actor))          # kept: its other chunks' failures are named by it too
        if self.placer is not None and node is not None and self.placer.placed.get(node):
            self.placer.placed[node] -= 1            # its replacement is placed as if it never was
        try:
            ray.kill(actor, no_restart=True)
        except Exception:
            pass

    def _cause(self, error: BaseException, actor) -> str:
        """Why a chunk failed: its node died, its worker process died, or it raised."""
        if lane_is_dead(error):
            if getattr(error, "_actor_init_failed", False):   # no unit's fault: every new actor would fail
                raise RuntimeError(f"a {self.what} actor could not start: {error}"[:2000]) from None
            node = self._node_of.get(id(actor))
            alive = not node or node in {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
            return death_cause(error, alive) or WORKER_CRASHED
        text = f"{type(error).__name__}: {error}"
        if any(word in text for word in ("erializ", "ickl", "RecursionError", "ircular")):
            return UNSERIALIZABLE
        return ROLLOUT_FAILED

    async def close(self) -> None:
        """The actors belong to the Driver actor and end with it; on shared storage each first
        writes the Parquet rows it still buffers (a lane that died lost only those: its JSONL
        shards hold every row)."""
        if not self.flush:
            return
        live = [a for a in self.actors + [self._alone] if a is not None]
        done = asyncio.gather(*(await_ref(a.flush_shards.remote()) for a in live), return_exceptions=True)
        try:
            self.flushed = {t for t in await asyncio.wait_for(done, FLUSH_TIMEOUT_S) if isinstance(t, str)}
        except asyncio.TimeoutError:
            self.flushed = set()


class _Placer:
    """Where the next rollout actor goes: the candidate node holding the fewest of ours per CPU."""

    def __init__(self, nodes: dict[str, float]):
        self.cpus = dict(nodes)               # node id -> CPUs, from the PoolPlan
        self.placed: dict[str, int] = {}

    def strategy(self):
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        candidates = sorted(n for n in self.cpus if n in alive) or sorted(alive)
        if not candidates:
            return "SPREAD"
        node = min(candidates, key=lambda n: (self.placed.get(n, 0) / max(self.cpus.get(n, 1.0), 1e-9), n))
        self.placed[node] = self.placed.get(node, 0) + 1
        return NodeAffinitySchedulingStrategy(node_id=node, soft=False)


def rollout_args(spec, plan) -> tuple[tuple, dict]:
    """The constructor arguments of ``spec``'s rollout actors (``ReusableRolloutWorker.renew`` takes them too)."""
    return ((spec.agent, spec.meta, spec.execute, None, plan.per_actor, spec.timeout, spec.judge_timeout,
             spec.model), {"metrics": spec.metrics, "shards": spec.shards, "deadline_at": spec.deadline_at,
                           "slim": slim_lanes(spec, plan)})


def rollout_pool(spec, plan, prebuilt: list | None = None) -> ActorPool:
    """The rollout actors of ``spec`` (a JobSpec), as many and as wide as ``plan`` (a PoolPlan) says;
    ``prebuilt`` (``[(actor, node)]``): actors already made for it (new lanes are placed beside them)."""
    opts = actor_options(spec.actor_options)
    ours = opts["scheduling_strategy"] == "SPREAD" and not (opts.get("num_gpus") or opts.get("resources")
                                                            or opts.get("num_cpus"))
    placer = _Placer(dict(plan.nodes)) if ours else None
    if placer is not None:
        for actor, node in prebuilt or ():
            if actor is not None and node is not None:
                placer.placed[node] = placer.placed.get(node, 0) + 1
    cls = ray.remote(ReusableRolloutWorker)
    args, kwargs = rollout_args(spec, plan)

    def make():
        o = dict(opts)
        if placer is not None:
            o["scheduling_strategy"] = placer.strategy()
        actor = cls.options(**o).remote(*args, **kwargs)
        return actor, getattr(o["scheduling_strategy"], "node_id", None)
    pool = ActorPool(make, plan.actors, plan.per_actor, "play_chunk", "rollout", opts, spec.start_timeout_s,
                     flush=bool(spec.shards), prebuilt=prebuilt)
    pool.placer = placer
    # a lane's slots are ours to lend while another starts, unless they are a limit the run set for
    # the lane itself: concurrency_per_actor=, or actors that reserve CPUs, GPUs or resources (a
    # model loaded once per actor may hold only so many calls)
    pool.lends = ours and not spec.concurrency_per_actor
    return pool


def start_rollout_actors(spec, plan) -> list:
    """``[(actor, node)]``: the run's rollout actors, started now by the caller beside a kept
    Driver actor that needs a new pool (a new Driver starts its own once it is up: ``caller/run.py``).
    The pool that plays on them is built by the Driver (``driver/actor.py``, the one place a
    rollout pool is made), which adopts them (``prebuilt``)."""
    return rollout_pool(spec, plan).placed()


def judge_pool(spec) -> ActorPool | None:
    """The judge actors of ``spec`` (None when the run is not graded)."""
    if spec.grader is None:
        return None
    opts = {k: v for k, v in actor_options(spec.actor_options).items() if k not in ("num_gpus", "resources")}
    cls = ray.remote(JudgeWorker)

    def make():
        return cls.options(**opts).remote(spec.grader, spec.judge_concurrency, spec.judge_timeout or None,
                                          metrics=spec.metrics), None
    return ActorPool(make, max(1, int(spec.judge_actors)), spec.judge_concurrency, "judge_chunk", "judge", opts,
                     spec.start_timeout_s)
