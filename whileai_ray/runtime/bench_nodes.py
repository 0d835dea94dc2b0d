"""Latency-bound throughput on 1 vs 3 simulated nodes (``ray.cluster_utils.Cluster`` on this
machine), with a fixed concurrency per node: the engine should scale with the nodes it gets."""
from __future__ import annotations

import os
import time


def bench_nodes(per_node: int = 16, latency_s: float = 0.1, seconds_per_run: float = 4.0) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from ..bench.lines import TOOLS, SleepyAgent, _steady_rate
    from ..simulation import simulate

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "node_ip_address": "127.0.0.2", "num_cpus": 1, "include_dashboard": False,
        "object_store_memory": 150 * 1024**2})
    for _ in range(2):
        cluster.add_node(node_ip_address="127.0.0.2", num_cpus=1, object_store_memory=100 * 1024**2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, _node_ip_address="127.0.0.2", namespace="whileai_ray", log_to_driver=False)
    out = {}
    try:
        agent = SleepyAgent(TOOLS, latency_s)
        for nodes in (1, 3):
            rows = int(per_node * nodes / latency_s * seconds_per_run)
            data = simulate(agent, tools=TOOLS, simulator=False, budget=rows, concurrency=per_node * nodes,
                            seed=0, advanced={"ray": {"rollout_actors": nodes, "concurrency_per_actor": per_node},
                                              "progress_every_s": 3600.0, "progress_every_rows": 10**6})
            out[nodes] = {"rows": len(data), "steady_rows_s": _steady_rate(data),
                          "nodes_used": len(data.report()["placement"]["rows_by_node"])}
    finally:
        ray.shutdown()
        cluster.shutdown()
    out["speedup"] = out[3]["steady_rows_s"] / out[1]["steady_rows_s"]
    out["ideal_per_node"] = per_node / latency_s
    return out
