"""Callables as people write them, on a local (one-node) Ray: they stay in the caller's process.

The caller's own pool (runtime/pools/caller_pool.py, caller/player.py) plays every rollout in this
process, so a function closing over an ``openai.OpenAI`` client, an ``async def`` agent sharing
one ``AsyncOpenAI``, an ``execute=`` that appends to a list here and a grader that holds a lock
all run as written: nothing of theirs is pickled. Each of these failed before the caller's pool
(the callable could not be sent to an actor, or its side effects happened in another process).
"""
import asyncio
import threading

import openai
import pytest

import whileai_ray as wai
from whileai_ray.testing.server import start_server


@pytest.fixture(scope="module")
def scripted():
    host, port, stop = start_server(port=0, model="scripted-7b", seed=1, latency_ms=5)
    yield f"http://{host}:{port}/v1", stop.server
    stop()


def test_an_agent_closing_over_an_openai_client_lands_every_row(ray_local, tools, scripted):
    url, server = scripted
    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0)

    def agent(message):
        reply = client.chat.completions.create(model="scripted-7b", max_tokens=32,
                                               messages=[{"role": "user", "content": message}])
        return {"steps": [], "final_text": reply.choices[0].message.content or "(empty)"}

    before = server.requests
    data = wai.simulate(agent, tools=tools, simulator=False, budget=40, seed=1, concurrency=8)
    assert len(data.rows()) == 40 and data.stopped_because == "budget"
    assert server.requests - before == 40                       # one call per rollout, none lost
    assert data.report()["placement"]["pool"] == "caller"


def test_an_async_agent_sharing_one_async_client_lands_every_row(ray_local, tools, scripted):
    url, server = scripted
    client = openai.AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0)   # made here, captured below

    where = set()

    async def agent(message):
        reply = await client.chat.completions.create(model="scripted-7b", max_tokens=32,
                                                     messages=[{"role": "user", "content": message}])
        where.add((threading.get_ident(), id(asyncio.get_running_loop())))
        return {"steps": [], "final_text": reply.choices[0].message.content or "(empty)"}

    before = server.requests
    data = wai.simulate(agent, tools=tools, simulator=False, budget=40, seed=2, concurrency=10)
    assert len(data.rows()) == 40 and data.stopped_because == "budget"
    assert data.search["rollouts"]["rerolled"] == 0               # no call failed on a closed loop
    assert server.requests - before == 40
    assert len(where) == 1                    # every rollout awaited on one loop: no thread, no loop per rollout


def test_execute_appending_to_the_callers_list_sees_every_call(ray_local, tools):
    calls = []

    def execute(tool, arguments):
        calls.append((tool, dict(arguments)))
        return {"status": "ok", "data": {"order_id": arguments.get("order_id"), "state": "shipped"}}

    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=60, seed=3,
                        execute=execute, fault_rate=0)
    made = [(s["tool"], s["arguments"]) for r in data.rows() for s in r["steps"] if "tool" in s]
    assert made and len(calls) == len(made)
    assert sorted(map(repr, calls)) == sorted(map(repr, made))


def test_a_grader_holding_a_lock_grades_every_row_here(ray_local, tools):
    lock = threading.Lock()
    graded = []

    def grader(row):
        with lock:
            graded.append(row["prompt"])
        return 0.0 if row.get("seeded") else 1.0

    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=50, seed=4, grader=grader)
    assert len(data.rows()) == 50 and len(graded) == 50
    assert {r["judge_status"] for r in data.rows()} == {"ok"}
    assert sorted(graded) == sorted(r["prompt"] for r in data.rows())


def test_asking_for_actors_still_gets_actors_and_the_same_rows(ray_local, tools):
    seen, inner = [], wai.seeded_agent(tools)

    def agent(message):                        # holds the caller's list: it stays home by default
        seen.append(message)
        return inner(message)

    here = wai.simulate(agent, tools=tools, simulator=False, budget=80, seed=5)
    there = wai.simulate(agent, tools=tools, simulator=False, budget=80, seed=5,
                         advanced={"ray": {"rollout_actors": 2}})
    assert here.report()["placement"]["pool"] == "caller" and len(seen) == 80
    assert there.report()["placement"]["pool"] == "actors" and there.report()["placement"]["rollout_actors"] == 2
    assert here.rows() == there.rows()                          # where a rollout plays never changes it
