"""The response cache in a run (advanced={"cache": path}): a model-backed agent at temperature 0
replayed against the same cache makes no model call and lands the same rows, and rollout actors
sharing one cache file leave no torn entry. Model calls are counted by the project's scripted
OpenAI-compatible server (real HTTP on 127.0.0.1)."""
import sqlite3
import threading

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import reset_configuration
from whileai_ray.agents.response_cache import CacheStore
from whileai_ray.testing.server import start_server

SYSTEM = "You are the order desk. Look orders up before you answer. Never invent order details."
VOLATILE = ("run_id", "timestamp", "latency", "seconds", "started", "created", "elapsed")


@pytest.fixture(scope="module")
def scripted():
    host, port, stop = start_server(port=0, seed=0, ask_rate=0.5, model="scripted-7b")
    yield f"http://{host}:{port}/v1", stop.server
    stop()


def chat_calls(handler) -> int:
    """Chat-completion requests the scripted server answered (its /models checks left out)."""
    return sum(handler.seen.values())


def simulate_within(timeout: float, **kwargs):
    """simulate() in a thread joined with a timeout: a hang is a failure, never a stuck suite."""
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(data=wai.simulate(**kwargs)), daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), f"simulate() still running after {timeout} s"
    return box["data"]


def steady(row: dict) -> dict:
    """A row without what differs from run to run by design (ids, clocks)."""
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if not any(w in k for w in VOLATILE)}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value
    return clean(row)


def test_a_replay_at_temperature_0_makes_no_model_call_and_lands_the_same_rows(ray_local, tools, scripted, tmp_path):
    url, handler = scripted
    cache = str(tmp_path / "responses.sqlite")
    run = dict(agent=wai.OpenAI("scripted-7b", base_url=url, api_key="x"), tools=tools, system_prompt=SYSTEM,
               simulator=False, budget=12, seed=3, avg_turns=2, max_turns=3, patience="endless", temperature=0,
               advanced={"cache": cache})
    calls = chat_calls(handler)
    first = simulate_within(240, **run)
    first_calls = chat_calls(handler) - calls
    assert len(first.rows()) == 12 and first_calls > 12
    report = first.report()["cache"]
    assert report["path"] == cache and report["misses"] == first_calls     # every call was a miss, kept
    assert report["by_role"]["agent"]["misses"] > 0 and report["by_role"]["user"]["misses"] > 0

    second = simulate_within(240, **run)
    assert chat_calls(handler) - calls == first_calls          # the replay made no model call
    again = second.report()["cache"]
    assert again["misses"] == 0 and again["hits"] == report["hits"] + report["misses"]
    assert [steady(r) for r in second.rows()] == [steady(r) for r in first.rows()]


def test_every_model_role_is_replayed_from_the_cache(ray_local, tools, scripted, tmp_path):
    url, handler = scripted
    cache = str(tmp_path / "roles.sqlite")
    model = f"vllm:scripted-7b@{url}"
    wai.configure(judge=model)
    try:
        run = dict(agent=model, simulator=model, grade=True, tools=tools, system_prompt=SYSTEM, budget=10,
                   seed=11, avg_turns=2, max_turns=3, patience="endless", temperature=0, advanced={"cache": cache})
        calls = chat_calls(handler)
        first = simulate_within(240, **run)
        first_calls = chat_calls(handler) - calls
        second = simulate_within(240, **run)
    finally:
        reset_configuration()
    assert chat_calls(handler) - calls == first_calls        # writer, agent, user and judge: no call
    by_role = first.report()["cache"]["by_role"]
    assert set(by_role) == {"agent", "user", "judge", "writer"} and all(c["misses"] for c in by_role.values())
    again = second.report()["cache"]
    assert again["misses"] == 0 and set(again["by_role"]) == set(by_role)
    assert all(again["by_role"][r]["hits"] == by_role[r]["hits"] + by_role[r]["misses"] for r in by_role)
    assert {r["judge_meta"].pop("cache") for r in first.trajectories} == {"miss"}     # each verdict says
    assert {r["judge_meta"].pop("cache") for r in second.trajectories} == {"hit"}
    assert [steady(r) for r in second.rows()] == [steady(r) for r in first.rows()]


def test_four_rollout_actors_share_one_cache_with_no_torn_entry(ray_local, tools, scripted, tmp_path):
    url, handler = scripted
    cache = str(tmp_path / "shared.sqlite")
    data = simulate_within(300, agent=f"vllm:scripted-7b@{url}", tools=tools, system_prompt=SYSTEM,
                           simulator=False, budget=48, seed=5, avg_turns=2, max_turns=3, temperature=0,
                           concurrency=16, repeats=2, grader=wai.Judge("Report the status.", base_url=url),
                           advanced={
                               "cache": cache, "ray": {"rollout_actors": 4, "concurrency_per_actor": 4}})
    assert data.report()["placement"]["rollout_actors"] == 4
    assert len(data.rows()) == 48 and all("_cache" in r for r in data.trajectories)
    report = data.report()["cache"]
    assert report["misses"] > 0 and report["hits"] > 0       # repeats of one ask: the same first request
    assert report["by_role"]["judge"]["hits"] + report["by_role"]["judge"]["misses"] == 48   # grader= reads it too
    with sqlite3.connect(cache) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keys = [k for (k,) in conn.execute("SELECT key FROM responses")]
    assert 0 < len(keys) <= report["misses"]
    store = CacheStore(cache)
    assert all(isinstance(store.get(k), dict) and store.get(k)["choices"] for k in keys)
