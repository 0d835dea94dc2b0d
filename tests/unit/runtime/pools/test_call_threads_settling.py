"""Issue 32, without Ray: how CallThreads hands finished calls back to the lane's event loop.

Each sync agent call of a rollout lane runs on a pool thread; the loop hears of its result through
``call_soon_threadsafe`` (a write to the loop's self-pipe and a wake-up). At no-delay speeds that
was most of a rollout actor's CPU beside the agent itself, one wake-up per call. Now calls that
finish while the loop is busy are settled by one wake-up, in the order they finished; timeouts,
cancellation, errors and reuse of threads behave as before. The loop here counts the wake-ups
asked of it (``call_soon_threadsafe``); everything else is the real pool.
"""
import asyncio
import threading
import time

import pytest

from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.pools.call_threads import CallThreads, CallTimedOut
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS

from planned_units import planned_units

META = RunMeta(run_id="r", seed=3, tools=TOOLS, system_prompt=SYSTEM, model_version="settling")


class CountingLoop(asyncio.SelectorEventLoop):
    """A real selector loop that counts the wake-ups other threads ask of it."""

    wakeups = 0

    def call_soon_threadsafe(self, callback, *args, context=None):
        self.wakeups += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def run(main, limit=20.0):
    loop = CountingLoop()
    try:
        return loop.run_until_complete(asyncio.wait_for(main(loop), limit))
    finally:
        loop.close()


def wait_until(test, limit=10.0):
    deadline = time.monotonic() + limit
    while not test():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.001)


def test_calls_that_finish_while_the_loop_is_busy_are_settled_by_one_wake_up_in_the_order_they_finished():
    threads, n = CallThreads("t"), 16
    gates = [threading.Event() for _ in range(n)]
    finished: list = []                      # the order the calls returned on their threads
    order = [5, 0, 15, 9, 3, 12, 1, 14, 7, 2, 11, 8, 4, 13, 10, 6]

    def fn(i):
        gates[i].wait(10)
        finished.append(i)
        if i == 9:
            raise ValueError("nine")         # an error travels in the same batch, as it was raised
        return i * 10

    async def main(loop):
        resumed = []

        async def one(i):
            try:
                return await threads.call(fn, i, timeout=30)
            finally:
                resumed.append(i)

        tasks = [asyncio.ensure_future(one(i)) for i in range(n)]
        await asyncio.sleep(0.05)            # every call is on its own thread now
        before = loop.wakeups
        for k, i in enumerate(order):        # the loop is busy (blocked here): every result waits for it
            gates[i].set()
            wait_until(lambda: len(finished) == k + 1)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return results, resumed, loop.wakeups - before

    try:
        results, resumed, wakeups = run(main)
    finally:
        for gate in gates:
            gate.set()
        threads.shutdown()
    assert finished == order and resumed == order        # settled in the order they finished
    assert [r if not isinstance(r, ValueError) else str(r) for r in results] == \
        [i * 10 if i != 9 else "nine" for i in range(n)]
    assert wakeups == 1, wakeups                         # was one per call (16)
    assert threads.threads == n and threads.abandoned == 0


def test_a_call_past_its_timeout_is_cut_while_the_calls_around_it_are_settled():
    threads, hang = CallThreads("t"), threading.Event()

    def fn(i):
        if i == 3:
            hang.wait(30)                    # "never" returns
            return "late"
        return i

    async def main(loop):
        async def one(i):
            try:
                return await threads.call(fn, i, timeout=0.2)
            except CallTimedOut as exc:
                return str(exc)
        t0 = time.monotonic()
        out = await asyncio.gather(*(one(i) for i in range(8)))
        took = time.monotonic() - t0
        hang.set()                           # the late result comes back: nobody waits, nothing breaks
        after = await threads.call(fn, 9, timeout=1)
        return out, took, after

    try:
        out, took, after = run(main)
    finally:
        hang.set()
        threads.shutdown()
    assert out == [0, 1, 2, "took longer than 0.2s", 4, 5, 6, 7]
    assert 0.2 <= took < 5, took
    assert after == 9 and threads.abandoned == 1


def test_a_cancelled_call_frees_its_slot_and_its_thread_leaves_the_pool():
    hang, calls = threading.Event(), []

    def agent(message):
        calls.append(threading.get_ident())
        if len(calls) == 1:
            hang.wait(30)                    # the first call hangs; the chunk holding it is cancelled
        return {"steps": [], "final_text": "ok"}

    worker = RolloutWorker(agent, META, concurrency=1, node_id="n")   # no timeout: only cancel cuts it
    units = planned_units(4)

    async def main(loop):
        stuck = asyncio.ensure_future(worker.run_chunk(units[:1]))
        while not calls:                     # the chunk starts; its call is on its thread
            await asyncio.sleep(0.005)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        return await asyncio.wait_for(worker.run_chunk(units[1:]), 5)     # the one slot is free again

    try:
        results = run(main)
    finally:
        hang.set()
        worker.shutdown()
    assert [r.row["final_text"] for r in results] == ["ok"] * 3
    assert calls[0] not in calls[1:]         # the hung call's thread was never given another call
    assert len(set(calls[1:])) == 1 and worker.threads.threads == 2


def test_one_pool_serves_one_event_loop_after_another():
    threads = CallThreads("t")

    async def main(loop):
        return [await threads.call(threading.get_ident, timeout=5) for _ in range(3)]

    try:
        first, second = run(main), asyncio.run(main(None))
    finally:
        threads.shutdown()
    assert len(set(first + second)) == 1 and threads.threads == 1
