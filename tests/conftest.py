"""Shared fixtures. ``ray_local``: a local Ray for the test modules that ask for it (tests/ray,
tests/e2e), bound to 127.0.0.2, dashboard off, small object store, always a Ray of our own
(``address="local"``), never a cluster another test or person left running. Unit tests never
request it.

One Ray serves every module in turn while it is clean: after a module, the warm Driver hosts
and rollout actors this process keeps are released (``warm_pools.release_all``) and, if any
actor is still alive (a module that started its own and left it; Ray Data's own singletons
excepted), that Ray is shut down and the next module starts a fresh one. The modules that use
it run back to back, after the others (``pytest_collection_modifyitems``). A module that shut
Ray down itself, or started another (chaos clusters, Jobs heads), simply gets a fresh one.
Starting and stopping a Ray costs 3-5 s on this 2-core machine: 40 modules once each was over
two minutes of the suite."""
import os

import pytest

from whileai_ray.testing.seeded_rows import TOOLS

_RAY_ARGS = dict(address="local", _node_ip_address="127.0.0.2", include_dashboard=False, num_cpus=2,
                 object_store_memory=200 * 1024**2, namespace="whileai_ray", log_to_driver=False)
_ours: dict = {}                   # the gcs address of the Ray this fixture started, while it may be reused


def _ours_is_up(ray) -> bool:
    try:
        return ray.is_initialized() and ray.get_runtime_context().gcs_address == _ours.get("gcs")
    except Exception:
        return False


# Ray Data's own singletons (one per Ray, kept for its next read, holding no CPU): a module that
# read through Ray Data leaves them, as Ray does its other processes; any other actor is a leftover
RAY_DATA_ACTORS = frozenset({"_StatsActor", "_AutoscalingCoordinatorActor", "ActorLocationTracker"})


def _left_clean(ray, wait_s: float = 3.0) -> bool:
    """Release what this process keeps warm; True when no actor but Ray Data's own is left alive
    in that Ray. An actor killed, or owned by one killed (a Driver's Parquet writer), takes a
    moment to end: it is waited for up to ``wait_s``."""
    import time
    from ray._private import state
    from whileai_ray.runtime.caller.warm_pools import release_all
    release_all()
    until = time.monotonic() + wait_s
    while any(a.get("State") != "DEAD" and a.get("ActorClassName") not in RAY_DATA_ACTORS
              for a in state.actors().values()):
        if time.monotonic() > until:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def ray_local():
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if not _ours_is_up(ray):
        if ray.is_initialized():
            ray.shutdown()
        ray.init(**_RAY_ARGS)
        _ours["gcs"] = ray.get_runtime_context().gcs_address
    yield ray
    try:
        clean = _ours_is_up(ray) and _left_clean(ray)
    except Exception:
        clean = False
    if not clean:
        _ours.pop("gcs", None)
        ray.shutdown()


def pytest_collection_modifyitems(session, config, items):
    """The modules that ask for ``ray_local`` run last, back to back, each in its place among
    them; the others keep their order before them. A module without it between two with it shut
    the shared Ray down (``pytest_runtest_setup``), and the next one started another: ten such
    gaps, 3-5 s each. A sort by one flag is stable: nothing else moves."""
    uses: dict = {}
    for item in items:
        module = getattr(item, "module", None)
        uses[module] = uses.get(module, False) or "ray_local" in getattr(item, "fixturenames", ())
    items[:] = sorted(items, key=lambda item: uses.get(getattr(item, "module", None), False))


def pytest_runtest_setup(item):
    """A module that does not ask for ``ray_local`` never sees the last one's Ray: a unit test
    that reached Ray must still meet the refusal of ``tests/unit/conftest.py``, and a module
    that starts its own Ray (or calls ``simulate`` expecting to start one) starts it as before."""
    module = item.module
    if _ours.get("module") is module:
        return
    _ours["module"] = module
    if not _ours.get("gcs"):
        return
    if any("ray_local" in i.fixturenames for i in item.session.items if i.module is module):
        return
    import ray
    _ours.pop("gcs", None)
    if ray.is_initialized():
        ray.shutdown()


def pytest_sessionfinish(session, exitstatus):
    """The last module's Ray (when it was left up for a next one) ends with the session."""
    if _ours.get("gcs"):
        import ray
        if ray.is_initialized():
            ray.shutdown()


@pytest.fixture
def tools():
    return [dict(t) for t in TOOLS]
