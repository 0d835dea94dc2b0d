"""The three forms of a callable (function, async function, class) on a real local Ray.

Counts that must not come from a mock (constructions, clients, threads and loops) are written by
the agents themselves to files under ``tmp_path``, one line per event, from the actor processes.
"""
import asyncio
import functools
import json
import os
import threading

import openai
import pytest

import whileai_ray as wai
from whileai_ray.testing.server import start_server


def _lines(path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _append(path, text: str) -> None:
    with open(path, "a") as fh:       # one short write per line: whole lines even across processes
        fh.write(text + "\n")


@pytest.fixture(scope="module")
def scripted():
    host, port, stop = start_server(port=0, model="scripted-7b", seed=1, latency_ms=20)
    yield f"http://{host}:{port}/v1", stop.server
    stop()


# ---------------------------------------------------------------------------------- classes
class CountedAgent:
    """Writes one line per construction; plays the seeded agent per rollout."""

    def __init__(self, log_path, tools, label="built"):
        _append(log_path, f"{label} {os.getpid()}")
        self.inner = wai.seeded_agent(tools)

    def __call__(self, message):
        return self.inner(message)


class CountedExecute:
    def __init__(self, log_path):
        _append(log_path, f"execute {os.getpid()}")
        self.calls = 0

    def __call__(self, tool, arguments):
        self.calls += 1
        return {"status": "ok", "data": {"from": "CountedExecute", "calls_here": self.calls}}


class CountedGrader:
    def __init__(self, log_path, reward):
        _append(log_path, f"grader {os.getpid()}")
        self.reward = reward

    def __call__(self, row):
        return self.reward


def test_a_class_agent_is_built_once_per_actor_not_per_rollout(ray_local, tools, tmp_path):
    log = tmp_path / "built.txt"
    data = wai.simulate(CountedAgent, tools=tools, simulator=False, budget=60, seed=1, concurrency=8,
                        advanced={"agent_args": (str(log),), "agent_kwargs": {"tools": tools},
                                  "ray": {"rollout_actors": 2, "concurrency_per_actor": 4}})
    assert len(data.rows()) == 60 and data.stopped_because == "budget"
    built = _lines(log)
    assert len(built) == 2 == data.report()["placement"]["rollout_actors"], built
    assert len({line.split()[1] for line in built}) == 2           # one per actor process
    assert all(r["model_version"] == "CountedAgent" for r in data.rows())


def test_partial_class_execute_and_grader_classes_are_built_once_per_actor(ray_local, tools, tmp_path):
    log = tmp_path / "built.txt"
    agent = functools.partial(CountedAgent, str(log), tools, label="agent")
    data = wai.simulate(agent, tools=tools, simulator=False, budget=40, seed=2, concurrency=4, fault_rate=0,
                        execute=CountedExecute, grader=CountedGrader,
                        advanced={"execute_args": [str(log)], "grader_kwargs": {"log_path": str(log), "reward": 0.75}})
    rows = data.rows()
    assert len(rows) == 40
    # the partial holds the caller's tools list, so the rollouts play in the caller's own pool (one
    # lane: one agent, one execute=); the grader class travels to the one judge actor
    assert data.report()["placement"]["pool"] == "caller"
    kinds = sorted(line.split()[0] for line in _lines(log))
    assert kinds == ["agent", "execute", "grader"], kinds
    results = [s["result"] for r in rows for s in r["steps"] if "tool" in s]
    assert results and all(res["data"]["from"] == "CountedExecute" for res in results)
    assert max(res["data"]["calls_here"] for res in results) == len(results)   # one instance saw them all
    assert {r["reward"] for r in rows} == {0.75}


class BrokenAgent:
    def __init__(self):
        raise FileNotFoundError("no weights at /models/missing.gguf")

    def __call__(self, message):
        return "never"


def test_a_class_whose_init_raises_fails_the_run_naming_it(ray_local, tools, tmp_path):
    with pytest.raises(RuntimeError) as err:
        wai.simulate(BrokenAgent, tools=tools, simulator=False, budget=5)
    text = str(err.value)
    assert "agent=BrokenAgent" in text and "FileNotFoundError: no weights at /models/missing.gguf" in text
    assert "__init__" in text and len(text.splitlines()) < 15, text


# ------------------------------------------------------------------------------ async agents
class AsyncChatAgent:
    """One ``openai.AsyncOpenAI`` per actor, built in ``__init__``; every rollout awaits it."""

    def __init__(self, base_url, log_path):
        self.client = openai.AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
        self.log_path = log_path

    async def __call__(self, message):
        reply = await self.client.chat.completions.create(
            model="scripted-7b", messages=[{"role": "user", "content": message}], max_tokens=32)
        loop = asyncio.get_running_loop()
        same = wai.current_rollout.prompt == message          # this task's rollout, after an await
        _append(self.log_path, json.dumps({"pid": os.getpid(), "thread": threading.get_ident(),
                                           "loop": id(loop), "client": id(self.client), "same": same}))
        return {"steps": [], "final_text": reply.choices[0].message.content or "(empty)"}


def test_an_async_class_agent_shares_one_async_client_on_the_actor_loop(ray_local, tools, tmp_path, scripted):
    url, server = scripted
    before = server.requests
    log = tmp_path / "calls.jsonl"
    data = wai.simulate(AsyncChatAgent, tools=tools, simulator=False, budget=80, seed=3, concurrency=40,
                        advanced={"agent_args": (url, str(log))})
    assert len(data.rows()) == 80 and data.stopped_because == "budget"
    assert server.requests - before == 80
    assert data.report()["placement"]["pool"] == "actors"     # a class travels, and is built there
    calls = [json.loads(line) for line in _lines(log)]
    assert len(calls) == 80
    assert all(c["same"] for c in calls)                    # current_rollout is per asyncio task
    per_pid = {}
    for c in calls:
        per_pid.setdefault(c["pid"], set()).add((c["thread"], c["loop"], c["client"]))
    # one thread, one loop, one client per actor: no thread and no new loop per rollout
    assert len(per_pid) == data.report()["placement"]["rollout_actors"] == 1
    assert all(len(v) == 1 for v in per_pid.values()), per_pid


_SHARED = {"client": None, "base_url": None, "log": None}


async def global_client_agent(message):
    """An ``async def`` function with a module-level client made lazily on its first call."""
    if _SHARED["client"] is None:
        _SHARED["client"] = openai.AsyncOpenAI(base_url=_SHARED["base_url"], api_key="EMPTY", max_retries=0)
        _append(_SHARED["log"], f"client {os.getpid()}")
    reply = await _SHARED["client"].chat.completions.create(
        model="scripted-7b", messages=[{"role": "user", "content": message}], max_tokens=16)
    return reply.choices[0].message.content or "(empty)"


def test_an_async_function_with_a_lazy_global_client_lands_every_row(ray_local, tools, tmp_path, scripted):
    url, server = scripted
    _SHARED.update(base_url=url, log=str(tmp_path / "clients.txt"))
    before = server.requests
    data = wai.simulate(global_client_agent, tools=tools, simulator=False, budget=60, seed=4, concurrency=30)
    assert len(data.rows()) == 60
    assert data.report()["placement"]["pool"] == "caller"      # it uses this module's _SHARED dict
    assert server.requests - before == 60
    assert len(_lines(tmp_path / "clients.txt")) == 1          # one client served all 60 rollouts


async def tool_calling_async_agent(message):
    """Awaits a while (longer for some rollouts), then asks the world through current_rollout."""
    ctx = wai.current_rollout
    prompt, index = ctx.prompt, ctx.rollout_index
    await asyncio.sleep(0.001 * (len(message) % 7))
    result = wai.current_rollout.call("lookup_order", {"order_id": "ORD-1"})
    ok = wai.current_rollout.prompt == prompt == message and wai.current_rollout.rollout_index == index
    return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"}, "result": result}],
            "final_text": "isolated" if ok else "MIXED UP"}


def test_concurrent_async_rollouts_each_see_their_own_context_and_world(ray_local, tools):
    data = wai.simulate(tool_calling_async_agent, tools=tools, simulator=False, budget=200, seed=5,
                        concurrency=100, fault_rate=0.5)
    rows = data.rows()
    assert len(rows) == 200
    assert {r["final_text"] for r in rows} == {"isolated"}
    statuses = {r["steps"][0]["result"].get("status") for r in rows}
    assert "ok" in statuses or "not_found" in statuses


async def slow_for_some(message):
    log = _SHARED["cancel_log"]
    try:
        await asyncio.sleep(30 if len(message) % 3 == 0 else 0.01)
    except asyncio.CancelledError:
        _append(log, "cancelled")
        raise
    return "done"


def test_an_async_agent_past_its_timeout_is_cancelled_and_counted(ray_local, tools, tmp_path):
    _SHARED["cancel_log"] = str(tmp_path / "cancelled.txt")
    data = wai.simulate(slow_for_some, tools=tools, simulator=False, budget=12, seed=6, concurrency=24,
                        timeout=0.5)
    timed_out = data.search["rollouts"]["timed_out"]
    assert timed_out >= 1
    assert len(_lines(tmp_path / "cancelled.txt")) == timed_out   # cut, not left running
    assert all(r["final_text"] == "done" for r in data.rows())


# ------------------------------------------------------------------------------- sync agents
def test_sync_agents_still_run_in_threads_sized_to_the_slots(ray_local, tools, tmp_path):
    log = tmp_path / "threads.txt"

    def sync_agent(message):
        import time
        time.sleep(0.01)
        _append(str(log), threading.current_thread().name)
        return "ok"

    data = wai.simulate(sync_agent, tools=tools, simulator=False, budget=120, seed=7, concurrency=6)
    assert len(data.rows()) == 120
    names = set(_lines(log))
    assert all(n.startswith("rollout") for n in names), names
    assert len(names) <= 6 + 8                                   # the pool is sized to the slots


_FLIGHT = {"now": 0, "log": None, "released": False}


async def counting_agent(message):
    """Notes how many rollouts this actor process has in flight when each one starts, and holds
    each one until over a thousand are in flight together (at most 20 s), so the figure does not
    depend on how fast the planner decides on a busy machine."""
    _FLIGHT["now"] += 1
    _append(_FLIGHT["log"], f"{os.getpid()} {_FLIGHT['now']}")
    try:
        for _ in range(200):
            if _FLIGHT["released"] or _FLIGHT["now"] > 1000:
                _FLIGHT["released"] = True
                break
            await asyncio.sleep(0.1)
    finally:
        _FLIGHT["now"] -= 1
    return "ok"


def test_one_actor_holds_over_a_thousand_async_rollouts_in_flight(ray_local, tools, tmp_path):
    _FLIGHT["log"] = str(tmp_path / "flight.txt")
    data = wai.simulate(counting_agent, tools=tools, simulator=False, budget=2000, seed=9, concurrency=1500,
                        reproducible=False, advanced={"ray": {"rollout_actors": 1}})   # an actor, not the caller
    assert len(data.rows()) == 2000
    assert data.report()["placement"]["rollout_actors"] == 1 and data.report()["placement"]["pool"] == "actors"
    seen = [line.split() for line in _lines(tmp_path / "flight.txt")]
    assert len({pid for pid, _ in seen}) == 1
    assert max(int(n) for _, n in seen) > 1000          # thousands in flight on one loop, no thread each
