"""Collector: a long-lived actor's garbage collector, kept out of the work it does.

The Driver host (``driver/actor.py``) and the rollout actors (``pools/warm_rollout.py``) live for many
runs. Their heaps hold Ray's, pyarrow's and our modules, a few hundred thousand objects that every
full collection scans again: 25-40 ms, and one came about every third 1,000-row run of a
notebook's loop, stopping the Driver's loop or sixteen rollouts in the middle of the run. So an
actor freezes (``gc.freeze``) what exists when it gets ``busy()``, and collections while it works
scan only what the work made. When it goes ``idle()`` everything is unfrozen (what a resume froze,
its rows, goes with the run); what the work left as cyclic garbage is collected once the actor has
been idle for ``idle_s`` (then frozen again), not when the next work starts: runs called back to
back each start at once, and their leftovers wait for the first pause.
"""
from __future__ import annotations

import asyncio
import gc

__all__ = ["Collector", "IDLE_S"]

IDLE_S = 1.0     # idle this long, the actor collects what its work left


class Collector:
    def __init__(self, idle_s: float = IDLE_S):
        self.idle_s = idle_s
        self._tidy: asyncio.Task | None = None
        self.collected: list[int] = []      # what each idle collection found (unreachable objects)

    def busy(self) -> None:
        """Work starts: freeze what exists now; a collection scheduled by ``idle()`` is not needed yet."""
        if self._tidy is not None:
            self._tidy.cancel()
            self._tidy = None
        gc.freeze()

    def idle(self) -> None:
        """Work ended: unfreeze, and collect once nothing has started for ``idle_s``."""
        gc.unfreeze()
        if self._tidy is not None:
            self._tidy.cancel()
        self._tidy = asyncio.get_running_loop().create_task(self._collect_when_idle())

    async def _collect_when_idle(self) -> None:
        await asyncio.sleep(self.idle_s)
        self._tidy = None
        self.collected.append(gc.collect())
        gc.freeze()
