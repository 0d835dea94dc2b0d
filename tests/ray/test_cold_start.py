"""Cold start: the first run of a process (no warm Driver or rollout actors) plays its first chunks
in the caller's process while its rollout actors start, then hands each lane to its actor
(runtime/pools/handoff_pool.py). Who plays a unit never changes its row.

What a user sees: ``report()["placement"]["warm"]["caller_units"]`` (units the caller played while
the actors started), and rows identical to those of the same call on warm actors. No timing is
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


def _agent(tools):
    """The seeded agent behind a 20 ms sleep (a model's latency): whileai_ray's own object, so it
    travels to actors on a one-node Ray (caller/stay_home.py)."""
    return SleepyAgent(tools, 0.02)


@pytest.fixture(autouse=True)
def _fresh():
    warm_pools.release_all()
    yield
    warm_pools.release_all()


def _run(agent, tools, **extra):
    return wai.simulate(agent, tools=tools, simulator=False, budget=120, concurrency=8, seed=11, **extra)


def test_a_cold_run_is_played_by_the_caller_until_its_actors_are_up_and_gives_the_warm_rows(ray_local, tools):
    agent = _agent(tools)
    cold = _run(agent, tools)
    warm = _run(agent, tools)
    c, w = cold.report()["placement"]["warm"], warm.report()["placement"]["warm"]
    assert c["driver"] == "started" and c["rollouts"] == "started"
    assert c["caller_units"] > 0                       # the caller played while the actors started
    assert w["rollouts"] == "reused" and "caller_units" not in w     # warm: the actors play it all
    assert cold.report()["placement"]["pool"] == "actors"
    assert len(cold.rows()) == 120 and _strip(cold.rows()) == _strip(warm.rows())


def test_rows_are_the_same_whoever_plays_them(ray_local, tools):
    """The cold run (caller first, then two actors) gives the rows of one actor asked for by number
    (never helped by the caller: a count of actors asked for is kept)."""
    cold = _run(_agent(tools), tools)
    assert cold.report()["placement"]["warm"]["caller_units"] > 0
    warm_pools.release_all()
    asked = _run(_agent(tools), tools, advanced={"ray": {"rollout_actors": 1}})
    assert "caller_units" not in asked.report()["placement"]["warm"]
    assert _strip(cold.rows()) == _strip(asked.rows())
