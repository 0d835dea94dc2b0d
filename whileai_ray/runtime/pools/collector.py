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

While busy, the youngest generation is collected every ``BUSY_GEN0`` allocations, not every 700
(Python's default): a run's Driver unpickles, lands and plans thousands of rows a second, and
each of their dicts and tuples lived through a collection or two before it was let go (~4% of
the Driver's CPU in the no-delay line, ~0.55 s of a 30,000-row run, down to ~0.15 s). A young
generation of ``BUSY_GEN0`` objects is a few milliseconds to scan; the run's cyclic garbage
waits that many allocations longer. The thresholds the actor had come back when it goes idle.
"""
from __future__ import annotations

import asyncio
import gc

__all__ = ["Collector", "IDLE_S", "BUSY_GEN0"]

IDLE_S = 1.0     # idle this long, the actor collects what its work left
BUSY_GEN0 = 20_000   # allocations between two collections of the youngest generation, while busy


class Collector:
    def __init__(self, idle_s: float = IDLE_S):
        self.idle_s = idle_s
        self._tidy: asyncio.Task | None = None
        self.collected: list[int] = []      # what each idle collection found (unreachable objects)
        self._idle_thresholds: tuple[int, ...] | None = None    # the thresholds to restore when idle

    def busy(self) -> None:
        """Work starts: freeze what exists now, collect the young generation less often
        (``BUSY_GEN0``); a collection scheduled by ``idle()`` is not needed yet."""
        if self._tidy is not None:
            self._tidy.cancel()
            self._tidy = None
        gc.freeze()
        if self._idle_thresholds is None:
            self._idle_thresholds = gc.get_threshold()
            gc.set_threshold(max(BUSY_GEN0, self._idle_thresholds[0]), *self._idle_thresholds[1:])

    def idle(self) -> None:
        """Work ended: unfreeze, the thresholds as they were, and collect once nothing has
        started for ``idle_s``."""
        gc.unfreeze()
        if self._idle_thresholds is not None:
            gc.set_threshold(*self._idle_thresholds)
            self._idle_thresholds = None
        if self._tidy is not None:
            self._tidy.cancel()
        self._tidy = asyncio.get_running_loop().create_task(self._collect_when_idle())

    async def _collect_when_idle(self) -> None:
        await asyncio.sleep(self.idle_s)
        self._tidy = None
        self.collected.append(gc.collect())
        gc.freeze()
