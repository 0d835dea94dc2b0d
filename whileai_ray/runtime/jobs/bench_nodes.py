"""Three simulated nodes on this machine (``ray.cluster_utils.Cluster``), for the nodes bench line.

``simulated_nodes()`` starts a head and two workers (one CPU each, 127.0.0.2, no dashboard),
connects this process to them and tears everything down on exit. What runs on them (and
what is measured) is ``bench/lines.py``'s business: this module holds only the Ray part.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

import ray
from ray.cluster_utils import Cluster

__all__ = ["simulated_nodes"]


@contextmanager
def simulated_nodes(workers: int = 2):
    """A local cluster of ``1 + workers`` one-CPU nodes, connected for the body of the ``with``."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={
        "node_ip_address": "127.0.0.2", "num_cpus": 1, "include_dashboard": False,
        "object_store_memory": 150 * 1024**2})
    for _ in range(workers):
        cluster.add_node(node_ip_address="127.0.0.2", num_cpus=1, object_store_memory=100 * 1024**2)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, _node_ip_address="127.0.0.2", namespace="whileai_ray", log_to_driver=False)
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
