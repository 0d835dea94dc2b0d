"""Warm starts: the next simulate() of a process reuses the last run's Driver and rollout actors
when the agent and options match, starts fresh rollout actors when they do not, and never carries
anything of one run into the next (runtime/warm_pools.py, driver_host.py, warm_rollout.py).

What a user sees is ``report()["placement"]["warm"]``: whether the Driver and the rollout actors
were started or reused, and the rollout actors' ids."""
import json
import threading

import pytest

import whileai_ray as wai
from whileai_ray.runtime import warm_pools


def _warm(data) -> dict:
    return data.report()["placement"]["warm"]


def _strip(rows):
    out = []
    for r in rows:
        r = dict(r)
        r["lineage"] = {k: v for k, v in (r.get("lineage") or {}).items() if k != "scoring_run_id"}
        out.append(r)
    return out


class CountingAgent:
    """An agent object with state of its own: it numbers its calls. Sent to actors (asked for),
    each run must start from a fresh copy, as in a fresh process."""

    def __init__(self, tools):
        self.inner = wai.seeded_agent(tools)
        self.__name__ = "counting_agent"
        self.calls = 0
        self.lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()

    def __call__(self, message):
        with self.lock:
            self.calls += 1
            n = self.calls
        out = self.inner(message)
        out["final_text"] = f"{out['final_text']} [call {n}]"
        return out


@pytest.fixture(autouse=True)
def _fresh():
    warm_pools.release_all()
    yield
    warm_pools.release_all()


def test_second_run_reuses_the_driver_and_rollout_actors(ray_local, tools):
    kw = dict(tools=tools, simulator=False, budget=60, concurrency=8)
    first = wai.simulate(wai.seeded_agent(tools), seed=1, **kw)
    second = wai.simulate(wai.seeded_agent(tools), seed=2, **kw)
    a, b = _warm(first), _warm(second)
    assert a["driver"] == "started" and a["rollouts"] == "started"
    assert b["driver"] == "reused" and b["rollouts"] == "reused"
    assert b["rollout_ids"] == a["rollout_ids"] and all(a["rollout_ids"])
    assert len(second.rows()) == 60 and second.stopped_because == "budget"


def test_a_changed_agent_or_pool_gets_fresh_rollout_actors(ray_local, tools):
    kw = dict(tools=tools, simulator=False, budget=40, seed=3)
    first = wai.simulate(wai.seeded_agent(tools), concurrency=8, **kw)
    other_agent = wai.seeded_agent(tools, seed=99, rate=0.9)
    changed = wai.simulate(other_agent, concurrency=8, **kw)
    wider = wai.simulate(other_agent, concurrency=8, advanced={"ray": {"rollout_actors": 3}}, **kw)
    ids = [_warm(d)["rollout_ids"] for d in (first, changed, wider)]
    assert _warm(changed)["rollouts"] == "started" and _warm(wider)["rollouts"] == "started"
    assert _warm(changed)["driver"] == "reused" and _warm(wider)["driver"] == "reused"
    assert not set(ids[0]) & set(ids[1]) and not set(ids[1]) & set(ids[2]) and len(ids[2]) == 3
    texts = [[r["final_text"] for r in d.rows()] for d in (first, changed, wai.simulate(other_agent, concurrency=8, **kw))]
    assert texts[1] == texts[2] and texts[1] != texts[0]   # the new agent's rows, not the old one's


def test_consecutive_runs_give_the_rows_of_a_fresh_start(ray_local, tools, tmp_path):
    """Different seeds and checkpoints one after the other on warm actors: the second run's rows
    and checkpoint are exactly those of the same call on freshly started actors."""
    kw = dict(tools=tools, simulator=False, budget=80, concurrency=16, mode="rl", repeats=2)
    wai.simulate(wai.seeded_agent(tools), seed=5, checkpoint=str(tmp_path / "a.jsonl"), **kw)
    warm = wai.simulate(wai.seeded_agent(tools), seed=6, checkpoint=str(tmp_path / "b.jsonl"), **kw)
    assert _warm(warm)["rollouts"] == "reused"
    warm_pools.release_all()
    fresh = wai.simulate(wai.seeded_agent(tools), seed=6, checkpoint=str(tmp_path / "c.jsonl"), **kw)
    assert _warm(fresh)["driver"] == "started" and _warm(fresh)["rollouts"] == "started"
    assert _strip(warm.rows()) == _strip(fresh.rows())
    on_disk = [sorted(json.dumps(r, sort_keys=True) for r in _strip(wai.load(str(tmp_path / name)).rows()))
               for name in ("b.jsonl", "c.jsonl")]         # in landing order on disk: compared as sets
    assert on_disk[0] == on_disk[1] and len(on_disk[0]) == 80


def test_an_agent_with_state_starts_each_run_from_a_fresh_copy(ray_local, tools):
    agent = CountingAgent(tools)
    kw = dict(tools=tools, simulator=False, budget=50, concurrency=4,
              advanced={"ray": {"rollout_actors": 1}})
    first = wai.simulate(agent, seed=7, **kw)
    second = wai.simulate(agent, seed=7, **kw)
    assert _warm(second)["rollouts"] == "reused"
    assert _warm(second)["rollout_ids"] == _warm(first)["rollout_ids"]
    for data in (first, second):                         # counted from 1 again, as a fresh actor would
        played = 50 + data.search["rollouts"]["rerolled"] + data.search["rollouts"]["lost"]
        calls = [int(r["final_text"].rsplit("[call ", 1)[1].rstrip("]")) for r in data.rows()]
        assert len(calls) == 50 and max(calls) <= played, (max(calls), played)   # a kept copy would count on
    assert agent.calls == 0                               # the caller's object was never played


def test_a_caller_pool_run_reuses_the_driver(ray_local, tools):
    seen = []

    def agent(message):                                  # closes over a list: stays in this process
        seen.append(message)
        return {"steps": [], "final_text": "ok"}

    kw = dict(tools=tools, simulator=False, budget=20, concurrency=4)
    first = wai.simulate(agent, seed=1, **kw)
    second = wai.simulate(agent, seed=1, **kw)
    assert first.report()["placement"]["pool"] == "caller"
    assert _warm(second)["driver"] == "reused" and _warm(second)["rollouts"] == "caller"
    assert len(seen) == 40 and len(second.rows()) == 20


def test_a_run_that_fails_hands_nothing_to_the_next(ray_local, tools, tmp_path):
    ck = str(tmp_path / "ck.jsonl")
    kw = dict(simulator=False, budget=10, checkpoint=ck, concurrency=4)
    first = wai.simulate(wai.seeded_agent(tools), tools=tools, **kw)
    other = [{"type": "function", "function": {"name": "cancel_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
    with pytest.raises(ValueError, match="different run"):          # refused by the Driver, mid-run
        wai.simulate(wai.seeded_agent(other), tools=other, **kw)
    after = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=10, concurrency=4)
    assert _warm(after)["driver"] == "started" and _warm(after)["rollouts"] == "started"
    assert not set(_warm(after)["rollout_ids"]) & set(_warm(first)["rollout_ids"])


def test_rollout_actors_that_reserve_cpus_are_not_kept_idle(ray_local, tools):
    kw = dict(tools=tools, simulator=False, budget=20, concurrency=4,
              advanced={"ray": {"rollout_actors": 1, "num_cpus": 1}})
    first = wai.simulate(wai.seeded_agent(tools), seed=1, **kw)
    second = wai.simulate(wai.seeded_agent(tools), seed=1, **kw)
    assert _warm(second)["driver"] == "reused" and _warm(second)["rollouts"] == "started"
    assert _warm(second)["rollout_ids"] != _warm(first)["rollout_ids"]
