"""Joining or starting Ray.

``ensure_ray()`` is the only place whileai_ray calls ``ray.init``: it reuses a running
Ray (a notebook that already called ``ray.init``, a Ray Job's driver), honours
``RAY_ADDRESS`` (a cluster), and otherwise starts a small local Ray with the dashboard off.

A local Ray we start preloads the Driver's and rollout actors' modules into its worker processes
(``PRELOAD``, Ray's ``preload_python_modules``): the idle workers Ray starts beside it import
whileai_ray while nothing waits, so the first run's actors start without paying for it (about
half a second of CPU per actor, on the way to the first row), and Ray's serializers
(``serialization_warm.py``); once Ray is up, the caller's own serialization context is built
there too, not by the run's first call.

Locally Ray binds to the machine's outer address unless told otherwise; we bind it to a
loopback address (``WHILEAI_RAY_NODE_IP``, default ``127.0.0.2`` on Linux, where the whole
127/8 range is loopback and Ray rewrites plain 127.0.0.1) so a laptop run sends nothing
off the machine.
"""
from __future__ import annotations

import os
import sys

import ray

from .pools.sizing import ClusterView
from .serialization_warm import warm_serialization

NAMESPACE = "whileai_ray"
PRELOAD = ("whileai_ray.runtime.driver.actor",    # imports the rollout actor's modules too
           "whileai_ray.runtime.serialization_warm")
INLINE_REPLY_BYTES = 4 * 1024**2     # a call's answer up to this size crosses in its reply, not via plasma


def _local_node_ip() -> str | None:
    ip = os.environ.get("WHILEAI_RAY_NODE_IP")
    if ip:
        return ip
    return "127.0.0.2" if sys.platform.startswith("linux") else None


def ensure_ray(**overrides) -> None:
    """Start or join Ray once per process; when Ray is already up, only its serialization context
    is made sure of (``serialization_warm.py``)."""
    if ray.is_initialized():
        warm_serialization()                 # (a Ray the user started: the context, once)
        return
    kwargs: dict = {"namespace": NAMESPACE, "log_to_driver": True, "ignore_reinit_error": True}
    address = os.environ.get("RAY_ADDRESS")
    if address:
        kwargs["address"] = address
        if os.environ.get("WHILEAI_RAY_NODE_IP"):
            kwargs["_node_ip_address"] = os.environ["WHILEAI_RAY_NODE_IP"]
    else:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        kwargs["address"] = "local"          # a new Ray, not whatever `ray start` left on the machine
        kwargs["_system_config"] = {"preload_python_modules": list(PRELOAD),
                                    "max_direct_call_object_size": INLINE_REPLY_BYTES}
        kwargs["include_dashboard"] = False
        kwargs["object_store_memory"] = int(os.environ.get("WHILEAI_RAY_OBJECT_STORE", 512 * 1024**2))
        ip = _local_node_ip()
        if ip:
            kwargs["_node_ip_address"] = ip
    kwargs.update(overrides)
    ray.init(**kwargs)
    warm_serialization()


def local_node_id() -> str:
    return ray.get_runtime_context().get_node_id()


def _through_ray_client() -> bool:
    try:
        from ray.util.client import ray as client_ray
        return bool(client_ray.is_connected())
    except Exception:
        return False


def cluster_view() -> ClusterView:
    """The alive nodes and their CPUs, and whether this process sits on the only one (what
    ``pool_sizing.plan_pools`` needs)."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    nodes = {n["NodeID"]: float((n.get("Resources") or {}).get("CPU", 0.0)) for n in alive}
    gpus = sum(float((n.get("Resources") or {}).get("GPU", 0.0)) for n in alive)
    only = len(nodes) == 1 and not _through_ray_client() and local_node_id() in nodes
    return ClusterView(nodes=nodes, caller_on_only_node=only, gpus=gpus)


def gcs_address() -> str:
    """The address another process passes as ``RAY_ADDRESS`` to join this Ray."""
    return ray.get_runtime_context().gcs_address
