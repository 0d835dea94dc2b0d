"""Where a run's pools run and how many actors they get, from the cluster alone (no Ray)."""
from whileai_ray.core.unit import RunMeta
from whileai_ray.runtime.job_spec import JobSpec
from whileai_ray.runtime.pools.sizing import ClusterView, plan_pools


def spec(**kw):
    return JobSpec(run_id="r", cap=100, planner=None, meta=RunMeta(run_id="r"), **{"agent": len, **kw})


LAPTOP = ClusterView({"n1": 2.0}, caller_on_only_node=True)
HOME = frozenset({"agent", "execute", "grader"})
THREE = ClusterView({"a": 1.0, "b": 1.0, "c": 1.0})
BIG = ClusterView({"head": 0.0, "w1": 16.0, "w2": 16.0})


def test_on_one_node_callables_that_must_stay_home_play_in_the_callers_process():
    plan = plan_pools(spec(grader=len, grader_is_callers=True), LAPTOP, HOME)
    assert (plan.where, plan.actors, plan.per_actor, plan.judges_where) == ("caller", 1, 32, "caller")
    only_execute = plan_pools(spec(agent=None, model=object(), agent_form="model", execute=len), LAPTOP,
                              frozenset({"execute"}))
    assert only_execute.where == "caller"                  # execute= plays inside the rollout
    only_grader = plan_pools(spec(grader=len, grader_is_callers=True), LAPTOP, frozenset({"grader"}))
    assert (only_grader.where, only_grader.judges_where) == ("actors", "caller")


def test_callables_that_travel_unchanged_play_on_actors_even_on_one_node():
    plan = plan_pools(spec(grader=len, grader_is_callers=True), LAPTOP)          # nothing kept home
    assert (plan.where, plan.actors, plan.judges_where) == ("actors", 2, "actors")
    assert plan_pools(spec(agent=None, model=object(), agent_form="model"), LAPTOP).actors == 1


def test_on_a_cluster_everything_travels():
    plan = plan_pools(spec(grader=len, grader_is_callers=True), THREE, HOME)
    assert (plan.where, plan.judges_where) == ("actors", "actors")


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


def test_actors_that_ask_for_gpus_or_cpus_are_no_more_than_the_cluster_holds():
    gpu_box = ClusterView({"n1": 16.0}, gpus=2.0)
    assert plan_pools(spec(actor_options={"num_gpus": 1}, concurrency=64), gpu_box).actors == 2
    assert plan_pools(spec(actor_options={"num_gpus": 0.5}, concurrency=64), gpu_box).actors == 4
    assert plan_pools(spec(actor_options={"num_gpus": 1}), ClusterView({"n1": 16.0})).actors == 1   # none yet: one
    assert plan_pools(spec(actor_options={"num_cpus": 4}, concurrency=64), BIG).actors == 8
    assert plan_pools(spec(actor_options={"num_gpus": 1}, rollout_actors=3), gpu_box).actors == 3    # asked: as asked


def test_advanced_ray_settings_still_decide():
    plan = plan_pools(spec(rollout_actors=3, concurrency_per_actor=16, concurrency=48), LAPTOP, HOME)
    assert (plan.where, plan.actors, plan.per_actor) == ("actors", 3, 16)
    assert plan_pools(spec(concurrency_per_actor=8), THREE).actors == 4
    assert plan_pools(spec(rollout_actors=5), THREE).per_actor == 7
