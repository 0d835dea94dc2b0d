"""A lane plays a chunk lent by a lane still starting beyond its own slots (``driver/lending.py``),
for a sync agent (on threads of its own) and an async one (outside the lane's semaphore); its
own chunks still play at most ``concurrency`` at once."""
import asyncio
import threading
import time

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.testing.seeded_rows import TOOLS

from planned_units import planned_units
from tests.unit.runtime.pools.test_rollout_lines import META


class Counted:
    """The seeded agent behind a 30 ms wait, counting the calls in progress at once (its peak)."""

    def __init__(self):
        self.inner, self.lock, self.now, self.peak = seeded_agent(TOOLS, seed=3), threading.Lock(), 0, 0
        self.__name__ = "seeded_agent"

    def enter(self):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def leave(self):
        with self.lock:
            self.now -= 1


class SyncCounted(Counted):
    def __call__(self, message):
        self.enter()
        time.sleep(0.03)
        self.leave()
        return self.inner(message)


class AsyncCounted(Counted):
    async def __call__(self, message):
        self.enter()
        await asyncio.sleep(0.03)
        self.leave()
        return self.inner(message)


def _play(agent, lent_too: bool):
    units = planned_units(16)
    worker = RolloutWorker(agent, META, concurrency=2, node_id="n")

    async def main():
        if not lent_too:
            return [await worker.run_chunk(units[:8]), await worker.run_chunk(units[8:])]
        return await asyncio.gather(worker.run_chunk(units[:8]), worker.run_chunk(units[8:], lent=True))

    try:
        return asyncio.run(main())
    finally:
        worker.shutdown()


def test_a_lent_chunk_plays_beyond_the_lanes_slots_and_its_own_stay_within_them():
    for form in (SyncCounted, AsyncCounted):
        alone, both = form(), form()
        own, lent = _play(both, lent_too=True)
        _play(alone, lent_too=False)
        assert alone.peak == 2, form                  # its own chunks: two slots, two calls at once
        assert both.peak >= 6, (form, both.peak)     # two of its own and the lent chunk's, at once
        assert both.peak <= 2 + 8, form
        assert len(own) == len(lent) == 8 and all(r.row is not None for r in own + lent)
        assert [r.unit.key for r in lent] == [u.key for u in planned_units(16)[8:]]
