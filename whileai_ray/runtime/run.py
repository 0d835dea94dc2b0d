"""The caller's side of a run: start or join Ray, start the Driver actor on this node,
relay its progress to the logger and ``on_progress``, and return what it produced."""
from __future__ import annotations

import uuid

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .cluster import NAMESPACE, ensure_ray, local_node_id
from .driver_actor import DriverWorker

POLL_S = 0.2


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:12]


def execute_job(job: dict, on_snapshot=None) -> dict:
    """Run one job to the end. ``on_snapshot(dict)`` is called with each progress snapshot."""
    ensure_ray()
    driver_cls = ray.remote(DriverWorker)
    driver = driver_cls.options(
        name=job["run_id"], namespace=NAMESPACE, num_cpus=0, max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=local_node_id(), soft=False),
    ).remote(job)
    try:
        done_ref = driver.run.remote()
        while True:
            ready, _ = ray.wait([done_ref], timeout=POLL_S)
            if on_snapshot is not None:
                try:
                    on_snapshot(ray.get(driver.poll.remote(), timeout=30))
                except ray.exceptions.GetTimeoutError:
                    pass
            if ready:
                try:
                    return ray.get(done_ref)
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, Exception):   # the driver's own error, without Ray's wrapping
                        raise cause from None
                    raise
    finally:
        try:
            ray.kill(driver)
        except Exception:
            pass


def attach(run_id: str):
    """The Driver actor of a running job, by run id (for a notebook that reattaches)."""
    ensure_ray()
    return ray.get_actor(run_id, namespace=NAMESPACE)
