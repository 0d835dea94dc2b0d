"""The caller's side of a run: start or join Ray, start the Driver actor on this node,
relay its progress to the logger and ``on_progress``, and return what it produced."""
from __future__ import annotations

import uuid

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from .cluster import NAMESPACE, ensure_ray, local_node_id
from .driver_actor import DriverWorker
from .travel_check import check_callables_travel

POLL_S = 0.2


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex[:12]


def _ship_user_code_by_value(*objs) -> None:
    """Agents, graders and execute= functions often live in a script, a notebook or a test
    module that Ray's workers cannot import; pickle such modules by value so the workers get
    the code itself. Installed packages (site-packages) and whileai_ray stay by reference."""
    import inspect
    import sys
    from functools import partial

    from ray import cloudpickle
    for obj in objs:
        while isinstance(obj, partial):      # functools.partial(MyAgent, ...): ship MyAgent's module
            obj = obj.func
        if obj is None:
            continue
        for name in {getattr(obj, "__module__", None), getattr(type(obj), "__module__", None)}:
            mod = sys.modules.get(name) if name else None
            path = getattr(mod, "__file__", None) or ""
            if (mod is None or name == "__main__" or name.startswith(("whileai_ray", "ray"))
                    or "site-packages" in path or "dist-packages" in path or not path
                    or inspect.getmodule(obj) is None and not path):
                continue
            try:
                cloudpickle.register_pickle_by_value(mod)
            except Exception:
                pass


def execute_job(job: dict, on_snapshot=None) -> dict:
    """Run one job to the end. ``on_snapshot(dict)`` is called with each progress snapshot."""
    ensure_ray()
    _ship_user_code_by_value(job.get("agent"), job.get("grader"), job.get("execute"))
    check_callables_travel(job)       # a callable that cannot be pickled fails here, in a few lines
    import time
    driver_started = time.monotonic()
    driver = _start_driver(job)
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
                    result = ray.get(done_ref)
                    result["driver_started_at"] = driver_started
                    return result
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    while isinstance(cause, ray.exceptions.RayTaskError) and isinstance(
                            getattr(cause, "cause", None), Exception):
                        cause = cause.cause              # an actor's error the driver passed on
                    if isinstance(cause, Exception):   # the driver's own error, without Ray's wrapping
                        raise cause from None
                    raise
    finally:
        try:
            ray.kill(driver)
        except Exception:
            pass


def _start_driver(job: dict, wait_s: float = 60.0):
    """The Driver actor, named by the run id so a notebook can reattach to it. A name still
    held by a run that just died (its job was stopped) frees within seconds; a live run with
    the same id is an error, since two runs would share one checkpoint."""
    import time
    driver_cls = ray.remote(DriverWorker)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return driver_cls.options(
                name=job["run_id"], namespace=NAMESPACE, num_cpus=0, max_concurrency=1000,
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=local_node_id(), soft=False),
            ).remote(job)
        except ValueError as exc:
            if "already" not in str(exc) or time.monotonic() > deadline:
                raise RuntimeError(f"a run named {job['run_id']!r} is already running in this Ray cluster; "
                                   "wait for it to finish or pass another advanced={'run_id': ...}") from None
            time.sleep(0.5)


def attach(run_id: str):
    """The Driver actor of a running job, by run id (for a notebook that reattaches)."""
    ensure_ray()
    return ray.get_actor(run_id, namespace=NAMESPACE)
