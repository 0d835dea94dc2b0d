"""Cold start: the first run of a process (no kept Driver or rollout actors) starts its Driver
actor alone, and the Driver starts the run's rollout actors once it is up, while it opens the run
and decides its first rounds (runtime/caller/run.py ``_start_host``, driver/actor.py). A kept
Driver that needs a new pool still gets it from the caller, beside it. Who started the actors
never changes a row.

What a user sees: ``report()["placement"]["warm"]["rollouts_started_by"]`` ("driver" or
"caller", when the run started its rollout actors), and the same rows either way. No timing is
asserted here (speed lives in ``python -m whileai_ray.bench.warm``)."""
import pytest

import whileai_ray as wai
from whileai_ray.bench.sleepy import SleepyAgent
from whileai_ray.runtime.caller import warm_pools


def _strip(rows):
    out = []
    for r in rows:
        r = dict(r)
        r["lineage"] = {k: v for k, v in (r.get("lineage") or {}).items() if k != "scoring_run_id"}
        out.append(r)
    return out


@pytest.fixture(autouse=True)
def _fresh():
    warm_pools.release_all()
    yield
    warm_pools.release_all()


def _run(agent, tools, **extra):
    return wai.simulate(agent, tools=tools, simulator=False, budget=120, concurrency=8, seed=11, **extra)


def test_a_new_driver_starts_its_rollout_actors_and_the_rows_are_those_of_warm_actors(ray_local, tools):
    agent = SleepyAgent(tools, 0.02)           # whileai_ray's own object: it travels to actors
    cold = _run(agent, tools)
    warm = _run(agent, tools)
    c, w = cold.report()["placement"]["warm"], warm.report()["placement"]["warm"]
    assert c["driver"] == "started" and c["rollouts"] == "started" and c["rollouts_started_by"] == "driver"
    assert len(c["rollout_ids"]) == 2 and all(c["rollout_ids"])
    assert w["driver"] == "reused" and w["rollouts"] == "reused" and w["rollout_ids"] == c["rollout_ids"]
    assert "rollouts_started_by" not in w
    assert len(cold.rows()) == 120 and _strip(cold.rows()) == _strip(warm.rows())


def test_a_kept_driver_gets_a_new_pool_from_the_caller_and_the_same_rows(ray_local, tools):
    first = _run(SleepyAgent(tools, 0.02), tools)
    other = _run(SleepyAgent(tools, 0.03), tools)      # another agent object: a new pool on the kept Driver
    a, b = first.report()["placement"]["warm"], other.report()["placement"]["warm"]
    assert a["rollouts_started_by"] == "driver"
    assert b["driver"] == "reused" and b["rollouts"] == "started" and b["rollouts_started_by"] == "caller"
    assert set(b["rollout_ids"]).isdisjoint(a["rollout_ids"])
    assert _strip(first.rows()) == _strip(other.rows())
