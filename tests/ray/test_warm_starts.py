"""Warm starts: the next simulate() of a process reuses the last run's Driver and rollout actors
when the agent and options match, starts fresh rollout actors when they do not, and never carries
anything of one run into the next (runtime/caller/warm_pools.py, driver/actor.py, pools/warm_rollout.py).

What a user sees is ``report()["placement"]["warm"]``: whether the Driver and the rollout actors
were started or reused, and the rollout actors' ids.

Cold start (the tests at the end): the first run of a process starts its Driver actor alone, and
the Driver starts the run's rollout actors once it is up, while it opens the run and decides its
first rounds (runtime/caller/run.py ``_start_host``, driver/actor.py); a kept Driver that needs a
new pool still gets it from the caller. ``rollouts_started_by`` ("driver" or "caller") says which,
and who started the actors never changes a row. No timing is asserted (speed lives in
``python -m whileai_ray.bench.warm``)."""
import json
import os
import signal
import threading
import time

import pytest

import whileai_ray as wai
from whileai_ray.bench.sleepy import SleepyAgent
from whileai_ray.runtime.caller import warm_pools
from whileai_ray.testing.seeded_rows import TOOLS as TOOLS_FOR_INIT


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


class PidLane:
    """A class agent (built once in each rollout actor, and again when a kept one is renewed)
    that names its process in ``folder`` when it is built."""

    def __init__(self, folder):
        self.inner = wai.seeded_agent(TOOLS_FOR_INIT)
        open(os.path.join(folder, str(os.getpid())), "a").close()

    def __call__(self, message):
        return self.inner(message)


def test_a_kept_actor_that_died_between_runs_is_made_again(ray_local, tools, tmp_path):
    """One of the two kept rollout actors is killed after the first run: the next run renews
    the other, starts a new one in its place, and plays its whole budget."""
    kw = dict(tools=tools, simulator=False, budget=40, concurrency=8, seed=4,
              advanced={"agent_args": [str(tmp_path)], "ray": {"rollout_actors": 2}})
    first = wai.simulate(PidLane, **kw)
    # a 40-row cold run may end before its second actor is up (its slots were lent: driver/lending.py);
    # kept, that actor is built all the same
    for _ in range(600):
        pids = sorted(int(name) for name in os.listdir(tmp_path))
        if len(pids) == 2:
            break
        time.sleep(0.05)
    assert len(pids) == 2 and _warm(first)["rollouts"] == "started"
    os.kill(pids[0], signal.SIGKILL)
    for _ in range(200):                                 # gone before the next run asks it to renew
        try:
            os.kill(pids[0], 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    second = wai.simulate(PidLane, **kw)
    a, b = _warm(first)["rollout_ids"], _warm(second)["rollout_ids"]
    assert _warm(second)["rollouts"] == "reused" and len(b) == 2
    assert len(set(a) & set(b)) == 1                     # the survivor renewed, the dead one replaced
    assert len(second.rows()) == 40 and second.stopped_because == "budget"
    assert second.search["rollouts"]["lost"] == 0
    assert len(os.listdir(tmp_path)) == 3                # a third process played part of the second run


class InitOnce:
    """A class agent whose ``__init__`` fails once ``flag`` exists (weights deleted between runs)."""

    def __init__(self, flag):
        if os.path.exists(flag):
            raise FileNotFoundError(f"no weights: {flag} says they were removed")
        self.inner = wai.seeded_agent(TOOLS_FOR_INIT)

    def __call__(self, message):
        return self.inner(message)


def test_a_kept_class_agent_whose_init_now_fails_stops_the_run_naming_it(ray_local, tools, tmp_path):
    """Renewing a kept actor builds the class again; when that fails, the run stops before any
    rollout, with the same message a fresh actor gives."""
    flag = str(tmp_path / "removed")
    kw = dict(tools=TOOLS_FOR_INIT, simulator=False, budget=10, concurrency=4, advanced={"agent_args": [flag]})
    first = wai.simulate(InitOnce, **kw)
    assert len(first.rows()) == 10
    open(flag, "w").close()
    with pytest.raises(RuntimeError) as err:
        wai.simulate(InitOnce, **kw)
    text = str(err.value)
    assert "agent=partial(InitOnce)" in text and "FileNotFoundError: no weights" in text and "__init__" in text, text


# ------------------------------------------------------------------ cold start
def _cold_run(agent, tools, **extra):
    return wai.simulate(agent, tools=tools, simulator=False, budget=120, concurrency=8, seed=11, **extra)


def test_a_new_driver_starts_its_rollout_actors_and_the_rows_are_those_of_warm_actors(ray_local, tools):
    agent = SleepyAgent(tools, 0.02)           # whileai_ray's own object: it travels to actors
    cold = _cold_run(agent, tools)
    warm = _cold_run(agent, tools)
    c, w = cold.report()["placement"]["warm"], warm.report()["placement"]["warm"]
    assert c["driver"] == "started" and c["rollouts"] == "started" and c["rollouts_started_by"] == "driver"
    assert len(c["rollout_ids"]) == 2 and all(c["rollout_ids"])
    assert w["driver"] == "reused" and w["rollouts"] == "reused" and w["rollout_ids"] == c["rollout_ids"]
    assert "rollouts_started_by" not in w
    assert len(cold.rows()) == 120 and _strip(cold.rows()) == _strip(warm.rows())


def test_a_kept_driver_gets_a_new_pool_from_the_caller_and_the_same_rows(ray_local, tools):
    first = _cold_run(SleepyAgent(tools, 0.02), tools)
    other = _cold_run(SleepyAgent(tools, 0.03), tools)      # another agent object: a new pool on the kept Driver
    a, b = first.report()["placement"]["warm"], other.report()["placement"]["warm"]
    assert a["rollouts_started_by"] == "driver"
    assert b["driver"] == "reused" and b["rollouts"] == "started" and b["rollouts_started_by"] == "caller"
    assert set(b["rollout_ids"]).isdisjoint(a["rollout_ids"])
    assert _strip(first.rows()) == _strip(other.rows())


class SlowSecondLane:
    """A class agent (built once per rollout lane) whose second lane takes 1 s to build, as a
    lane whose actor waits for a process of its own does; each call's start and end go to a file
    of its process."""

    def __init__(self, folder):
        self.folder, self.inner = folder, wai.seeded_agent(TOOLS_FOR_INIT)
        try:
            os.close(os.open(os.path.join(folder, "first"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            time.sleep(1.0)

    def __call__(self, message):
        t0 = time.time()
        time.sleep(0.05)
        with open(os.path.join(self.folder, f"calls.{os.getpid()}"), "a") as f:
            f.write(f"{t0} {time.time()}\n")
        return self.inner(message)


def _most_at_once(spans, before=float("inf")):
    """The most calls in progress at once among ``spans`` ((start, end) pairs), counting starts before ``before``."""
    edges = sorted([(s, 1) for s, e in spans if s < before] + [(e, -1) for s, e in spans if s < before])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def test_a_lane_still_starting_lends_its_slots_and_no_more_than_concurrency_calls_run(ray_local, tmp_path):
    """While the second lane is built, the first plays its own slots and the second's (lent), never
    more calls at once than ``concurrency``; once up, the second lane plays too, and the rows are
    those of the same run on lanes that were up from the start (the kept ones)."""
    kw = dict(tools=TOOLS_FOR_INIT, simulator=False, budget=400, concurrency=8, seed=5,
              advanced={"agent_args": [str(tmp_path)], "ray": {"rollout_actors": 2}})
    cold = wai.simulate(SlowSecondLane, **kw)
    calls = {name: [tuple(map(float, line.split())) for line in (tmp_path / name).read_text().splitlines()]
             for name in os.listdir(tmp_path) if name.startswith("calls.")}
    for name in calls:
        (tmp_path / name).unlink()
    warm = wai.simulate(SlowSecondLane, **kw)              # the kept lanes, renewed: both up at once
    assert _warm(cold)["units_lent"] > 0 and _warm(warm)["units_lent"] == 0
    assert len(calls) == 2 and sum(map(len, calls.values())) == 400
    late = min(calls.values(), key=lambda spans: -min(s for s, _ in spans))     # the lane built last
    early = next(spans for spans in calls.values() if spans is not late)
    second_up = min(s for s, _ in late)
    assert _most_at_once(early, before=second_up) > 4        # its 4 slots and some of the other's
    assert _most_at_once([span for spans in calls.values() for span in spans]) <= 8
    assert _strip(cold.rows()) == _strip(warm.rows())


def test_a_lane_whose_slots_the_run_set_never_plays_more_than_them(ray_local, tmp_path):
    """``concurrency_per_actor=`` is a limit of each actor (a model loaded once per actor may hold
    only so many calls): while the second lane is built, the first plays its own slots, no more."""
    kw = dict(tools=TOOLS_FOR_INIT, simulator=False, budget=200, concurrency=8, seed=5,
              advanced={"agent_args": [str(tmp_path)], "ray": {"rollout_actors": 2, "concurrency_per_actor": 4}})
    data = wai.simulate(SlowSecondLane, **kw)
    calls = [[tuple(map(float, line.split())) for line in (tmp_path / name).read_text().splitlines()]
             for name in os.listdir(tmp_path) if name.startswith("calls.")]
    assert _warm(data)["units_lent"] == 0 and len(data.rows()) == 200
    assert max(_most_at_once(spans) for spans in calls) <= 4
