"""The long-lived actors' collector (runtime/pools/collector.py): frozen while busy, so a collection
mid-run scans only what the run made; what the run left is collected once idle, not before."""
import asyncio
import gc
import weakref

from whileai_ray.runtime.pools.collector import BUSY_GEN0, Collector


class Node:
    pass


def _cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_busy_freezes_what_exists_and_idle_collects_what_the_work_left():
    async def main():
        c = Collector(idle_s=0.05)
        old = _cycle()                                  # garbage made before the work started
        c.busy()
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert old() is not None                        # frozen: a collection while busy does not scan it
        left = _cycle()                                 # garbage the work made
        c.idle()
        assert gc.get_freeze_count() == 0
        await asyncio.sleep(0.2)
        assert old() is None and left() is None         # collected once idle
        assert c.collected and c.collected[-1] >= 4
        assert gc.get_freeze_count() > 0                # and frozen again for the next work
        gc.unfreeze()
    gc.disable()                                        # only the collector under test collects
    try:
        asyncio.run(main())
    finally:
        gc.enable()
        gc.unfreeze()


def test_work_that_starts_again_before_idle_s_puts_the_collection_off():
    async def main():
        c = Collector(idle_s=0.1)
        c.busy()
        left = _cycle()
        c.idle()
        await asyncio.sleep(0.02)
        c.busy()                                        # the next run came at once
        await asyncio.sleep(0.2)
        assert c.collected == [] and left() is not None
        c.idle()
        await asyncio.sleep(0.3)
        assert len(c.collected) == 1 and left() is None
        gc.unfreeze()
    gc.disable()
    try:
        asyncio.run(main())
    finally:
        gc.enable()
        gc.unfreeze()


def test_busy_collects_the_young_generation_less_often_and_idle_gives_the_thresholds_back():
    async def main():
        before = gc.get_threshold()
        c = Collector(idle_s=0.05)
        c.busy()
        assert gc.get_threshold() == (max(BUSY_GEN0, before[0]), *before[1:])
        c.busy()                                        # (a lane's next chunk: still busy)
        c.idle()
        assert gc.get_threshold() == before
        await asyncio.sleep(0.1)
        assert gc.get_threshold() == before
        gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        asyncio.run(main())
    finally:
        gc.set_threshold(700, 10, 10)
        gc.unfreeze()
