"""HandoffPool: a cold run's rollout lanes, played by the caller's process until their actors are up.

The first ``simulate()`` of a process has no warm actors (``caller/warm_pools.py``): its Driver
actor and its rollout actors are new worker processes, 0.3-0.5 s of CPU each, and on a 2-core
laptop three that start at once slow one another (the Driver came up 0.7 s after the call; a
1,000-row run of a 50 ms agent reached 60% of C/L, the warm runs after it 90%). The caller's
process is up already, with the agent in hand. So, on a one-node Ray where the agent could
play at home (``caller_may_help``), the caller starts the Driver alone, the Driver starts the
rollout actors once it is up and opens the run, and while each lane's actor starts, that lane's
chunks are played by the caller (``caller/player.py``, the very ``RolloutWorker`` an actor runs,
on a pickled copy of the agent, as an actor gets it). Once a lane's actor answers, the lane's
next chunks go to it; what the caller holds finishes there. After that the run plays on the
actors alone, as before.

Who plays a unit never changes its row: the unit (its key, seed and inputs) is decided by the
Driver's planner, and the row is a function of the unit alone. The loop sees one pool of the
actors' lanes and slots (``pools/protocol.py``); only *where* a chunk goes differs. How many
units the caller played is reported as ``report()["placement"]["warm"]["caller_units"]``.

No Ray here (the actors' pool is ``pools/actor_pool.py``).
"""
from __future__ import annotations

import asyncio

from ..messages import ROLLOUT_FAILED
from .caller_pool import CallerPool
from .protocol import LaneFailed

__all__ = ["HandoffPool", "caller_may_help", "START_AFTER_S"]

START_AFTER_S = 0.3     # the rollout actors are made once the caller's first chunk is back, or after this long


def caller_may_help(spec, plan, caller_on_only_node: bool, new_actors: bool, is_class) -> bool:
    """Whether the caller's process may play a cold run's first chunks (see the module doc).

    Only where it changes nothing but time: new rollout actors are to start (``new_actors``), the
    caller shares the only node with them, nobody asked for actors by number or resources (an
    agent that needs a GPU, or a count of its own), the agent and ``execute=`` are plain callables
    or instances (a class may load weights in ``__init__``: that stays on the actors), no model
    backend, no shared storage, and grading (if any) on actors."""
    opts = spec.actor_options or {}
    return bool(
        new_actors and caller_on_only_node and plan.where == "actors"
        and plan.judges_where != "caller" and spec.model is None and not spec.shards
        and not (spec.rollout_actors or spec.concurrency_per_actor)
        and not (opts.get("num_cpus") or opts.get("num_gpus") or opts.get("resources")
                 or opts.get("scheduling_strategy"))
        and spec.agent is not None and not is_class(spec.agent)
        and (spec.execute is None or not is_class(spec.execute)))


class HandoffPool:
    where = "actors"

    def __init__(self, inner, caller: CallerPool):
        self.inner, self.caller = inner, caller     # the actors' pool; the caller's lane
        self.slots = inner.slots
        self.caller_units = 0                       # units the caller played
        self._starting: asyncio.Future | None = None
        self._closed = False

    @property
    def lanes(self) -> int:
        return self.inner.lanes

    @property
    def nodes(self) -> list:
        return self.inner.nodes

    @property
    def actors(self) -> list:
        """The lanes' actors (``driver/edge_writing.py`` asks them for asks, as it would the plain pool)."""
        return self.inner.actors

    async def start(self) -> None:
        """Nothing to wait for: the caller plays while the actors start (a lane's chunks go to its
        actor once it answers). The actors are made once the caller's first chunk is back (or
        ``START_AFTER_S`` at most): on a 2-core laptop a worker process starting beside the Driver's
        first steps and the caller's first chunk delayed both (the first row came 0.3-0.5 s later).
        An actor pool that cannot start fails the next chunk, and ``replace`` raises its error:
        the run stops, saying what the cluster lacks."""
        asyncio.get_running_loop().call_later(START_AFTER_S, self._start_actors)

    def _start_actors(self, _=None) -> None:
        if self._starting is None and not self._closed:
            self._starting = asyncio.ensure_future(self.inner.start())

    def _start_error(self) -> BaseException | None:
        s = self._starting
        if s is None or not s.done():
            return None
        return asyncio.CancelledError() if s.cancelled() else s.exception()

    def _up(self, lane: int) -> bool:
        s = self._starting
        return (s is not None and s.done() and self._start_error() is None
                and lane < len(self.inner.nodes) and self.inner.nodes[lane] is not None)

    def submit(self, lane: int, payload: list):
        error = self._start_error()
        if error is not None:
            return _raise(error)
        if self._up(lane):
            return self.inner.submit(lane, payload)
        self.caller_units += len(payload)
        future = self.caller.submit(lane, payload)
        if self._starting is None:
            future.add_done_callback(self._start_actors)
        return future

    def replace(self, lane: int, error: BaseException) -> str:
        if error is self._start_error():
            raise error                              # no unit's fault: the run stops with it
        if isinstance(error, LaneFailed):            # the caller's chunk: our own code raised on it
            return ROLLOUT_FAILED
        return self.inner.replace(lane, error)

    def submit_alone(self, payload: list):
        return self.inner.submit_alone(payload)

    def alone_ok(self) -> None:
        self.inner.alone_ok()

    def lane_figures(self) -> dict:
        return self.inner.lane_figures()

    async def close(self) -> None:
        self._closed = True
        await self.caller.close()                    # the caller's player ends (its next pull says so)
        s = self._starting
        if s is not None and not s.done():
            s.cancel()
        await self.inner.close()


async def _raise(error: BaseException):
    raise error
