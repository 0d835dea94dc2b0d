"""The rollout pool's fingerprint (runtime/pools/key.py): equal for the same agent and options
whatever the run's seed or id, different when the agent, its state, the actor options or the
pool's shape change; None when there is nothing to reuse."""
import dataclasses
import pickle
import threading

from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.job_spec import JobSpec
from whileai_ray.runtime.pools.key import holds_resources, pool_key
from whileai_ray.runtime.pools.sizing import PoolPlan
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS

PLAN = PoolPlan("actors", 2, 16, "actors", (("node-a", 2.0),))


def _spec(agent, seed=0, run_id="r1", **kw):
    meta = RunMeta(run_id=run_id, seed=seed, tools=TOOLS, system_prompt=SYSTEM, model_version="seeded_agent")
    return JobSpec(run_id=run_id, cap=100, planner=None, meta=meta, agent=agent, **kw)


def _key(spec, plan=PLAN):
    return pool_key(spec, plan, pickle.dumps)


def test_the_same_agent_and_options_give_the_same_key_whatever_the_run():
    a = _key(_spec(seeded_agent(TOOLS), seed=1, run_id="r1"))
    b = _key(_spec(seeded_agent(TOOLS), seed=2, run_id="r2", concurrency=32, timeout=5.0))
    assert a is not None and a == b          # seed, run id, per-run knobs: renewed, not restarted


def test_a_changed_agent_or_state_gives_another_key():
    base = _key(_spec(seeded_agent(TOOLS)))
    assert _key(_spec(seeded_agent(TOOLS, seed=9))) != base            # same class, other state
    assert _key(_spec(seeded_agent(TOOLS, rate=0.9))) != base
    assert _key(_spec(seeded_agent(TOOLS), execute=seeded_agent(TOOLS))) != base


def test_other_actor_options_or_pool_shape_give_another_key():
    base = _key(_spec(seeded_agent(TOOLS)))
    assert _key(_spec(seeded_agent(TOOLS), actor_options={"num_cpus": 1})) != base
    assert _key(_spec(seeded_agent(TOOLS)), dataclasses.replace(PLAN, actors=3)) != base
    assert _key(_spec(seeded_agent(TOOLS)), dataclasses.replace(PLAN, per_actor=8)) != base
    assert _key(_spec(seeded_agent(TOOLS)), dataclasses.replace(PLAN, nodes=(("node-b", 2.0),))) != base


def test_nothing_to_reuse_gives_no_key():
    assert _key(_spec(seeded_agent(TOOLS)), dataclasses.replace(PLAN, where="caller")) is None
    lock = threading.Lock()
    assert _key(_spec(lambda m: (lock, m))) is None                       # does not pickle here


def test_a_pool_that_reserves_resources_is_not_kept():
    assert not holds_resources(_spec(seeded_agent(TOOLS)))
    assert not holds_resources(_spec(seeded_agent(TOOLS), actor_options={"num_cpus": 0, "max_restarts": 2}))
    assert holds_resources(_spec(seeded_agent(TOOLS), actor_options={"num_cpus": 1}))
    assert holds_resources(_spec(seeded_agent(TOOLS), actor_options={"num_gpus": 0.5}))
    assert holds_resources(_spec(seeded_agent(TOOLS), actor_options={"resources": {"tpu": 1}}))
