"""The rollout and judge workers play every callable form, without Ray: the same classes run as Ray
actors and in the caller's own pool, so what holds here holds in both places.

A class is built once per worker; an ``async def`` agent (or grader) is awaited on the worker's
event loop, every rollout on the one thread that runs the loop, each seeing its own
``current_rollout``; a call past ``timeout`` is cancelled and counted as timed out; a class whose
``__init__`` raises is said at ``ping`` (the start), naming the class.
"""
import asyncio
import threading

import pytest

import whileai_ray as wai
from whileai_ray.agents.forms import RoleBuildError, bind_class_form
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.pools.judge_worker import JudgeWorker
from whileai_ray.runtime.pools.rollout_worker import RolloutWorker
from whileai_ray.score.grading import call_grader, call_grader_async
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS

from planned_units import planned_units

META = RunMeta(run_id="r", seed=3, tools=TOOLS, system_prompt=SYSTEM, model_version="forms")


def units(n=24):
    return planned_units(n)


def play(worker, chunk):
    async def go():
        return await worker.run_chunk(chunk)
    return asyncio.run(go())


class Built:
    count = 0

    def __init__(self, reply):
        Built.count += 1
        self.reply = reply

    async def __call__(self, message):
        await asyncio.sleep(0.01)
        return {"steps": [], "final_text": f"{self.reply}: {wai.current_rollout.prompt == message}"}


def test_an_async_class_is_built_once_and_every_rollout_is_awaited_on_the_workers_loop():
    Built.count = 0
    where = set()

    class Where(Built):
        async def __call__(self, message):
            where.add((threading.get_ident(), id(asyncio.get_running_loop())))
            return await super().__call__(message)

    chunk = units()
    worker = RolloutWorker(bind_class_form(Where, ("ok",)), META, concurrency=len(chunk), node_id="n")
    assert worker.ping() == "n" and worker.is_async and Built.count == 1
    results = play(worker, chunk)
    assert Built.count == 1 and len(results) == len(chunk)
    assert {r.row["final_text"] for r in results} == {"ok: True"}   # each task saw its own rollout
    assert len(where) == 1                           # one thread, one loop: no thread or loop per rollout
    assert worker.threads.threads == 0               # and no thread was made for it


def test_an_async_agent_past_its_timeout_is_cancelled_and_counted_as_timed_out():
    cancelled = []

    async def stuck(message):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(message)
            raise

    chunk = units(4)
    results = play(RolloutWorker(stuck, META, concurrency=4, timeout=0.05, node_id="n"), chunk)
    assert [r.timed_out for r in results] == [True] * 4 and len(cancelled) == 4
    assert all("timeout=0.05s" in r.error for r in results)


def test_a_class_whose_init_raises_is_said_at_the_start_naming_it():
    class NoWeights:
        def __init__(self):
            raise FileNotFoundError("/models/missing.gguf")

        def __call__(self, message):
            return "never"

    worker = RolloutWorker(NoWeights, META, node_id="n")
    with pytest.raises(RoleBuildError, match=r"agent=.*NoWeights.*FileNotFoundError: /models/missing.gguf"):
        worker.ping()


def test_a_sync_agent_still_plays_in_the_workers_threads():
    names = set()

    def agent(message):
        names.add(threading.current_thread().name)
        return "ok"

    worker = RolloutWorker(agent, META, concurrency=3, node_id="n")
    assert not worker.is_async
    results = play(worker, units(12))
    assert len(results) == 12 and names and all(n.startswith("rollout") for n in names)
    worker.shutdown()


def test_graders_in_every_form_give_the_same_verdicts():
    row = {"prompt": "p", "final_text": "fine", "steps": []}

    async def async_grader(r):
        await asyncio.sleep(0)
        return {"reward": 1.0, "reason": "async"}

    class ClassGrader:
        def __init__(self, reward):
            self.reward = reward

        def __call__(self, r):
            return self.reward

    assert call_grader(async_grader, row)["reward"] == 1.0             # after a run: on a loop of its own
    assert asyncio.run(call_grader_async(async_grader, row))["reward"] == 1.0

    async def slow(r):
        await asyncio.sleep(5)

    late = asyncio.run(call_grader_async(slow, row, timeout=0.05))
    assert late["judge_status"] == "timeout" and "longer than 0.05s" in str(late)

    async def judge(grader):
        worker = JudgeWorker(grader, concurrency=4)
        assert worker.ping() is True
        return await worker.judge_chunk([row, row])

    assert [v["reward"] for v in asyncio.run(judge(async_grader))] == [1.0, 1.0]
    assert [v["reward"] for v in asyncio.run(judge(bind_class_form(ClassGrader, (0.25,))))] == [0.25, 0.25]


def test_a_users_tool_that_answers_in_log_form_makes_a_fault_parent():
    """execute= answers written as real logs write errors are world faults to mutate from."""
    from whileai_ray.world.faults import is_fault_parent as _fault_parent
    step = lambda result: {"steps": [{"tool": "lookup_order", "arguments": {}, "result": result}]}   # noqa: E731
    for bad in ("Error: order not found", {"error": "order not found"}, {"status": 404, "detail": "Not Found"},
                {"status": "invalid_arguments", "errors": []}, {"status": "timeout"}):
        assert _fault_parent(step(bad)), bad
    for fine in ({"order_id": "W1", "status": "shipped"}, {"name": "error handling guide"}, "Order W1 shipped.",
                 {"status": "ok"}):
        assert not _fault_parent(step(fine)), fine
