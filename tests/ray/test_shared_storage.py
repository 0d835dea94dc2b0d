"""Shared storage on three nodes (ray.cluster_utils.Cluster, one shared temp folder): rollout actors
write their own rows, the Driver receives keys and outcomes only (at most 5% of the row bytes), the
rows are those of a run through the Driver, and a resume after a node loss is exact."""
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key
from whileai_ray.store.shards.storage import shards_of

FAST_HEALTH = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 1000,
               "health_check_failure_threshold": 3, "health_check_timeout_ms": 2000}
RAY = {"ray": {"rollout_actors": 3, "concurrency_per_actor": 16}}


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


def same(rows):
    """Rows as an uninterrupted run has them (a resumed row says so in its lineage)."""
    out = []
    for r in rows:
        r = dict(r)
        r["lineage"] = {k: v for k, v in (r.get("lineage") or {}).items() if k != "resumed"}
        out.append(r)
    return out


def stub_lines(ck):
    return [json.loads(x) for x in ck.read_text().splitlines() if x.strip()]


def test_the_driver_receives_at_most_five_percent_of_the_row_bytes_and_the_rows_are_the_same(cluster, tools,
                                                                                            tmp_path):
    agent = SlowAgent(tools, 0.002)
    ck = tmp_path / "shared" / "ck.jsonl"
    data = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=2, concurrency=48,
                        checkpoint=str(ck), advanced={**RAY, "shared_storage": True})
    plane = data.search["data_plane"]
    assert plane["rows"] == 300 and plane["row_bytes"] > 300 * 1000, plane
    assert plane["driver_bytes"] <= 0.05 * plane["row_bytes"], plane
    nodes = data.report()["placement"]["rows_by_node"]
    assert len(nodes) == 3 and all(n > 0 for n in nodes.values()), nodes
    # the checkpoint keeps one stub per row; the rows are in the shards, written by the actors
    assert len(stub_lines(ck)) == 300 and all("_shard" in s for s in stub_lines(ck))
    assert len(os.listdir(tmp_path / "shared" / "ck.shards" / "parquet")) >= 3
    through_driver = wai.simulate(agent, tools=tools, simulator=False, budget=300, seed=2, concurrency=48,
                                  checkpoint=str(tmp_path / "plain.jsonl"), advanced=RAY)
    assert "data_plane" not in through_driver.search
    assert data.rows() == through_driver.rows()
    # the checkpoint's stubs read back as the rows (in the order they landed)
    assert sorted(wai.load(str(ck)).rows(), key=row_key) == sorted(data.rows(), key=row_key)


def test_a_resume_after_a_node_loss_is_exact(cluster, tools, tmp_path):
    c, workers = cluster
    agent = SlowAgent(tools, 0.25)          # slow enough that the node goes while chunks are on it
    ck = tmp_path / "ck.jsonl"
    store = tmp_path / "store"          # as a URI: the actors write through pyarrow.fs
    kw = dict(tools=tools, simulator=False, budget=600, seed=3, concurrency=48,
              advanced={**RAY, "shared_storage": f"file://{store}", "progress_every_rows": 20})
    seen, box = {"rows": 0}, {}

    def run():
        box["data"] = wai.simulate(agent, checkpoint=str(ck), on_progress=lambda p: seen.update(rows=p["rows"]),
                                   **kw)

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
    assert len(data.rows()) == 600 and len({row_key(r) for r in data.rows()}) == 600
    assert data.report()["placement"]["chunks_reissued"] >= 1
    assert len(stub_lines(ck)) == 600 and len({row_key(s) for s in stub_lines(ck)}) == 600
    shards = Path(shards_of(ck)[len("file://"):])      # <store>/ck-<digest>.shards, named in ck's sidecar
    assert shards.parent == store and shards.name.startswith("ck-")
    written = sum(len((shards / "rows" / n).read_bytes().splitlines())
                  for n in os.listdir(shards / "rows") if n.endswith(".jsonl"))
    assert written >= 600
    # every landed row is in the Parquet too: the lost node's actor never wrote its last part, the Driver did
    # and only those, each once: the Parquet folder read whole (as DuckDB or ray.data would) is the run
    import pyarrow.parquet as pq

    from whileai_ray.store.schema import key_string
    assert sorted(pq.read_table(shards / "parquet").column("row_key").to_pylist()) == \
        sorted(key_string(row_key(r)) for r in data.rows())
    # resume: every shard read back through the stubs, nothing played, nothing lost or twice
    again = wai.simulate(agent, checkpoint=str(ck), **kw)
    assert again.search["data_plane"]["rows"] == 0
    rows = again.rows()
    assert len(rows) == 600 and all(r["lineage"].get("resumed") for r in rows)
    assert same(rows) == same(data.rows())
    uninterrupted = wai.simulate(SlowAgent(tools, 0.0), checkpoint=str(tmp_path / "u.jsonl"), **kw)
    assert same(rows) == same(uninterrupted.rows())
    # a shard the stubs point at is lost: the next resume stops before any work, naming it
    gone = shards / "rows" / stub_lines(ck)[300]["_shard"][0]
    gone.unlink()
    before = ck.read_bytes()
    with pytest.raises(ValueError, match=re.escape(gone.name) + ".* is missing"):
        wai.simulate(agent, checkpoint=str(ck), **{**kw, "budget": 700})
    assert ck.read_bytes() == before


def test_a_second_run_on_the_kept_actors_checks_the_folder_and_writes_its_shards(cluster, tools, tmp_path):
    """The rollout actors of the first run are renewed for the second; each still checks that it
    sees the shared folder the Driver opened for *this* run, then writes its shards there."""
    from whileai_ray.runtime.caller import warm_pools
    warm_pools.release_all()
    agent = SlowAgent(tools, 0.002)
    kw = dict(tools=tools, simulator=False, budget=120, seed=3, concurrency=48,
              advanced={**RAY, "shared_storage": True})
    first = wai.simulate(agent, checkpoint=str(tmp_path / "a" / "ck.jsonl"), **kw)
    second = wai.simulate(agent, checkpoint=str(tmp_path / "b" / "ck.jsonl"), **kw)
    warm = second.report()["placement"]["warm"]
    assert warm["rollouts"] == "reused" and warm["rollout_ids"] == first.report()["placement"]["warm"]["rollout_ids"]
    assert second.search["data_plane"]["rows"] == 120 and len(second.rows()) == 120
    assert all("_shard" in s for s in stub_lines(tmp_path / "b" / "ck.jsonl"))
    assert os.listdir(tmp_path / "b" / "ck.shards" / "parquet")
