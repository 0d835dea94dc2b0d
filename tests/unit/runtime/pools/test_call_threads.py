"""Issue 28 item 1, without Ray: a lane's sync agent calls that never return never take its threads.

A ``RolloutWorker`` (what a rollout actor and the caller's pool both run) with two slots plays
units whose agent call hangs on every third one. Before the fix its ``slots + 8`` threads were all
wedged after ten hung calls and every later unit timed out without its agent being called; now
each hung call is cut at ``timeout`` and every other unit is played. The lane's threads are
``pools/pull_threads.py`` (tested on their own in ``test_pull_threads.py``).
"""
import asyncio
import threading
import time

import pytest

from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS

from planned_units import planned_units

META = RunMeta(run_id="r", seed=3, tools=TOOLS, system_prompt=SYSTEM, model_version="hangs")
RELEASE = threading.Event()


def units(n):
    return planned_units(n)


def test_hung_calls_never_take_the_threads_of_the_calls_after_them():
    called = []

    def agent(message):
        n = len(called)
        called.append(message)
        if n % 3 == 0:
            RELEASE.wait(60)                       # "never" returns (let go at the end of the test)
        return {"steps": [], "final_text": "ok"}

    worker = RolloutWorker(agent, META, concurrency=2, timeout=0.05, node_id="n")
    chunk = units(30)
    try:
        t0 = time.monotonic()
        results = asyncio.run(worker.run_chunk(chunk))
        took = time.monotonic() - t0
    finally:
        RELEASE.set()
        worker.shutdown()
    assert len(called) == 30                       # every unit's agent was called
    timed_out = [r for r in results if r.timed_out]
    assert len(timed_out) == 10, [r.error for r in results]
    assert sum(1 for r in results if r.row is not None and not r.timed_out) == 20
    assert took < 5, took


def test_an_async_agent_that_swallows_its_cancellation_is_not_waited_for():
    async def stubborn(message):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:             # refuses the first cancellation (the run's end stops it)
            await asyncio.sleep(30)

    worker = RolloutWorker(stubborn, META, concurrency=2, timeout=0.05, node_id="n")

    async def main():
        return await asyncio.wait_for(worker.run_chunk(units(2)), 5)

    results = asyncio.run(main())
    assert [r.timed_out for r in results] == [True, True]



def test_a_cancelled_chunk_frees_its_slot_and_its_hung_calls_thread_leaves_the_lane():
    hang, calls = threading.Event(), []

    def agent(message):
        calls.append(threading.get_ident())
        if len(calls) == 1:
            hang.wait(30)                    # the first call hangs; the chunk holding it is cancelled
        return {"steps": [], "final_text": "ok"}

    worker = RolloutWorker(agent, META, concurrency=1, node_id="n")   # no timeout: only cancel cuts it
    chunk = units(4)

    async def main():
        stuck = asyncio.ensure_future(worker.run_chunk(chunk[:1]))
        while not calls:                     # the chunk starts; its call is on its thread
            await asyncio.sleep(0.005)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        return await asyncio.wait_for(worker.run_chunk(chunk[1:]), 5)     # the one slot is free again

    try:
        results = asyncio.run(asyncio.wait_for(main(), 20))
    finally:
        hang.set()
        worker.shutdown()
    assert [r.row["final_text"] for r in results] == ["ok"] * 3
    assert calls[0] not in calls[1:]         # the hung call's thread was never given another call
    assert len(set(calls[1:])) == 1 and worker.threads.threads == 2
