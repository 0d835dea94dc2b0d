"""Several nodes on one machine (ray.cluster_utils.Cluster): rows come from every node, and a
node removed mid-run loses nothing: its in-flight chunks are re-issued, every key lands once."""
import os
import threading
import time

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key

FAST_HEALTH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000,
               "health_check_failure_threshold": 3, "health_check_timeout_ms": 2000}


@pytest.fixture(scope="module")
def cluster():
    import ray
    from ray.cluster_utils import Cluster
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    c = Cluster(initialize_head=True, head_node_args={
        "node_ip_address": "127.0.0.2", "num_cpus": 1, "include_dashboard": False,
        "object_store_memory": 150 * 1024**2, "_system_config": FAST_HEALTH})
    workers = [c.add_node(node_ip_address="127.0.0.2", num_cpus=1, object_store_memory=100 * 1024**2)
               for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, _node_ip_address="127.0.0.2", namespace="whileai_ray", log_to_driver=False)
    yield c, workers
    ray.shutdown()
    c.shutdown()


class SlowAgent:
    def __init__(self, tools, delay):
        self.inner = wai.seeded_agent(tools)
        self.delay = delay
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        time.sleep(self.delay)
        return self.inner(message)


def test_rows_come_from_every_node_and_match_a_single_node_run(cluster, tools):
    agent = SlowAgent(tools, 0.002)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=2, concurrency=48,
                        advanced={"ray": {"rollout_actors": 3, "concurrency_per_actor": 16}})
    nodes = data.report()["placement"]["rows_by_node"]
    assert len(nodes) == 3 and all(n > 0 for n in nodes.values()), data.report()["placement"]
    one = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=2, concurrency=16,
                       advanced={"ray": {"rollout_actors": 1}})
    assert data.rows() == one.rows()                     # placement does not change the draw


def test_a_default_run_places_rollout_actors_on_every_node_with_cpus(cluster, tools):
    agent = SlowAgent(tools, 0.005)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=240, seed=4)     # no advanced={"ray": ...}
    placement = data.report()["placement"]
    assert placement["rollout_actors"] == 3 and len(set(placement["actor_nodes"])) == 3, placement
    # a run this short may end before the last actor is up: its slots were lent to the lanes up
    # (driver/lending.py), so its node may have played nothing; every row comes from one of ours
    assert sum(placement["rows_by_node"].values()) == 240, placement
    assert set(placement["rows_by_node"]) <= set(placement["actor_nodes"]), placement
    assert placement["pool"] == "actors"


def test_an_agent_closing_over_an_openai_client_fails_before_any_rollout_in_a_few_lines(cluster, tools, tmp_path):
    import openai

    from whileai_ray.testing.server import start_server
    host, port, stop = start_server(port=0, model="scripted-7b")
    try:
        client = openai.OpenAI(base_url=f"http://{host}:{port}/v1", api_key="EMPTY")

        def agent(message):
            reply = client.chat.completions.create(model="scripted-7b",
                                                   messages=[{"role": "user", "content": message}])
            return reply.choices[0].message.content

        ck = tmp_path / "ck.jsonl"
        with pytest.raises(TypeError) as err:
            wai.simulate(agent, tools=tools, simulator=False, budget=20, checkpoint=str(ck))
        requests = stop.server.requests
    finally:
        stop()
    text = str(err.value)
    assert len(text.splitlines()) < 15, text
    assert f"this Ray cluster has {_alive_nodes()} nodes" in text
    assert "agent (function" in text and "closure 'client' (OpenAI)" in text and "(RLock)" in text
    assert "build the client inside" in text and "pass a class" in text and "agent_args" in text
    assert requests == 0 and not ck.exists()                       # nothing played, nothing written


class ClientInInit:
    """The second fix: the client is opened in __init__, once per rollout actor, on its node."""

    def __init__(self, base_url):
        import openai
        self.client = openai.OpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)

    def __call__(self, message):
        reply = self.client.chat.completions.create(model="scripted-7b",
                                                    messages=[{"role": "user", "content": message}])
        return reply.choices[0].message.content or "(empty)"


def test_the_same_client_in_a_class_plays_on_every_node(cluster, tools):
    from whileai_ray.testing.server import start_server
    host, port, stop = start_server(port=0, model="scripted-7b")
    try:
        nodes = _alive_nodes()
        data = wai.simulate(ClientInInit, tools=tools, simulator=False, budget=60, seed=4, concurrency=12,
                            advanced={"agent_args": (f"http://{host}:{port}/v1",)})   # default placement
        assert stop.server.requests == 60
    finally:
        stop()
    assert len(data.rows()) == 60
    placement = data.report()["placement"]
    # built on every node (a lane answers once its class is built); a run this short may end before
    # the last lane is up, its slots lent to the lanes up (driver/lending.py)
    assert len(set(placement["actor_nodes"])) == nodes, placement
    assert set(placement["rows_by_node"]) <= set(placement["actor_nodes"]), placement


def _alive_nodes() -> int:
    import ray
    return sum(1 for n in ray.nodes() if n.get("Alive"))


def test_a_node_removed_mid_run_loses_nothing_and_duplicates_nothing(cluster, tools, tmp_path):
    c, workers = cluster
    # slow enough (48 slots / 0.25 s = ~190 rows/s) that the node goes while chunks are on it: at
    # 0.02 s a unit the 450 rows after the cut could land before remove_node returned
    agent = SlowAgent(tools, 0.25)
    ck = tmp_path / "ck.jsonl"
    seen = {"rows": 0}
    box = {}

    def run():
        box["data"] = wai.simulate(agent, tools=tools, simulator=False, budget=600, seed=3, concurrency=48,
                                   checkpoint=str(ck), on_progress=lambda p: seen.update(rows=p["rows"]),
                                   advanced={"ray": {"rollout_actors": 3, "concurrency_per_actor": 16},
                                             "progress_every_rows": 20})

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 60
    while seen["rows"] < 150 and time.monotonic() < deadline and t.is_alive():
        time.sleep(0.05)
    assert seen["rows"] >= 150, "the run did not get going"
    c.remove_node(workers[-1])
    t.join(timeout=180)
    assert not t.is_alive()
    data = box["data"]
    rows = data.rows()
    assert len(rows) == 600 and data.stopped_because == "budget"
    assert len({row_key(r) for r in rows}) == 600
    assert data.report()["placement"]["chunks_reissued"] >= 1
    lines = [x for x in ck.read_text().splitlines() if x.strip() and "_whileai_ray_checkpoint" not in x]
    assert len(lines) == 600

