"""ReusableRolloutWorker: a rollout actor that can serve the next run of the same process.

Starting a rollout actor costs a worker process and its imports (0.5-1 s of CPU each); a
notebook that runs many small simulations would pay it on every call. The Driver host
(``driver/actor.py``) keeps a finished run's rollout actors, and the next run with the same
pool fingerprint (``caller/warm_pools.py``) renews them instead of starting new ones.

``renew(args, kwargs)`` gives the actor the next run's constructor arguments and rebuilds *all*
of its per-run state from them, exactly as a fresh actor would be built: a fresh copy of the
agent and ``execute=`` (an agent that keeps state of its own starts clean), the run's meta (run
id, seed), timeout, metrics tags, semaphore, thread pool, model clients. Chunks of the last run
still playing here (units abandoned when it stopped) are cancelled first, so nothing of one run
lands in, or holds slots of, the next. Only the process stays: its imported modules and Ray's
connection, which is what the fingerprint guards (the same code, options and placement).
"""
from __future__ import annotations

import asyncio

from .collector import Collector
from ..messages import RolloutResult
from .rollout_worker import RolloutWorker

__all__ = ["ReusableRolloutWorker"]


class ReusableRolloutWorker(RolloutWorker):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chunks: set = set()            # run_chunk tasks in progress (cancelled by renew)
        self.collector = Collector()         # full collections while no chunk plays (pools/collector.py)

    async def run_chunk(self, units: list, lent: bool = False) -> list[RolloutResult] | bytes:
        task = asyncio.current_task()
        if not self._chunks:
            self.collector.busy()
        self._chunks.add(task)
        try:
            return await super().run_chunk(units, lent)
        finally:
            self._chunks.discard(task)
            if not self._chunks:
                self.collector.idle()

    async def renew(self, args: tuple, kwargs: dict) -> str:
        """Become the actor the next run would have started (see the module doc); returns the node,
        or raises, as a fresh actor's ``ping`` would, when a class agent's ``__init__`` failed (the
        pool does not ping it again). The shared folder's probe is not checked here: the Driver
        writes it when it opens the run, after this is asked (``ActorPool.start`` pings then)."""
        for task in list(self._chunks):
            task.cancel()                    # the agent's thread runs on (Python cannot stop it)
        old_threads, old_lent, old_clients = self.threads, self.lent_threads, self.clients
        RolloutWorker.__init__(self, *args, **{**kwargs, "node_id": self.node_id})
        old_threads.shutdown()
        old_lent.shutdown()
        if old_clients is not None:
            for client in list(getattr(old_clients, "_clients", {}).values()):
                try:
                    await client.close()
                except Exception:
                    pass
        if self.build_error is not None:
            raise self.build_error
        return self.node_id
