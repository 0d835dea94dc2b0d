"""Where a run's pools run and how many actors they get, from the cluster alone (no Ray)."""
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.job_spec import JobSpec
from whileai_ray.runtime.pool_sizing import ClusterView, plan_pools


def spec(**kw):
    return JobSpec(run_id="r", cap=100, make_planner=dict, meta=RunMeta(run_id="r"), **{"agent": len, **kw})


LAPTOP = ClusterView({"n1": 2.0}, caller_on_only_node=True)
THREE = ClusterView({"a": 1.0, "b": 1.0, "c": 1.0})
BIG = ClusterView({"head": 0.0, "w1": 16.0, "w2": 16.0})


def test_on_one_node_the_callers_callables_play_in_the_callers_process():
    plan = plan_pools(spec(grader=len, grader_is_callers=True), LAPTOP)
    assert (plan.where, plan.actors, plan.per_actor, plan.judges_where) == ("caller", 1, 32, "caller")


def test_a_model_backend_without_execute_plays_on_actors_even_on_one_node():
    plan = plan_pools(spec(agent=None, model=object(), agent_form="model"), LAPTOP)
    assert (plan.where, plan.actors) == ("actors", 1)
    with_execute = plan_pools(spec(agent=None, model=object(), agent_form="model", execute=len), LAPTOP)
    assert with_execute.where == "caller"                  # execute= is the caller's code


def test_our_own_graders_travel_and_the_callers_stay_home():
    assert plan_pools(spec(grader=len, grader_is_callers=False), LAPTOP).judges_where == "actors"
    assert plan_pools(spec(grader=len, grader_is_callers=True), THREE).judges_where == "actors"


def test_every_node_with_cpus_gets_rollout_actors_by_default():
    plan = plan_pools(spec(), THREE)
    assert (plan.where, plan.actors, plan.per_actor) == ("actors", 3, 11)
    assert [n for n, _ in plan.nodes] == ["a", "b", "c"]
    big = plan_pools(spec(concurrency=256), BIG)
    assert big.actors == 32 and [n for n, _ in big.nodes] == ["w1", "w2"]    # one per core; the head has none


def test_a_cpu_bound_function_gets_an_actor_per_core_and_io_bound_agents_few():
    two_cores = ClusterView({"n1": 2.0})                           # e.g. through Ray Client: actors
    assert plan_pools(spec(), two_cores).actors == 2
    assert plan_pools(spec(agent=None, model=object(), agent_form="model"), two_cores).actors == 1
    assert plan_pools(spec(agent_form="async", concurrency=1000), BIG).actors == 2   # one per node with CPUs
    assert plan_pools(spec(agent=None, model=object(), agent_form="model", concurrency=256), two_cores).actors == 4


def test_no_more_actors_than_rollouts_in_flight():
    assert plan_pools(spec(concurrency=2), BIG).actors == 2
    assert plan_pools(spec(concurrency=1), THREE).actors == 1


def test_advanced_ray_settings_still_decide():
    plan = plan_pools(spec(rollout_actors=3, concurrency_per_actor=16, concurrency=48), LAPTOP)
    assert (plan.where, plan.actors, plan.per_actor) == ("actors", 3, 16)
    assert plan_pools(spec(concurrency_per_actor=8), THREE).actors == 4
    assert plan_pools(spec(rollout_actors=5), THREE).per_actor == 7
