"""Shared fixtures. ``ray_local``: one local Ray per test module (tests/ray, tests/e2e), bound to
127.0.0.2, dashboard off, small object store, always a fresh Ray of our own (``address="local"``),
never a cluster another test or person left running. Unit tests never request it."""
import os

import pytest

from whileai_ray.testing.seeded_rows import TOOLS


@pytest.fixture(scope="module")
def ray_local():
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", _node_ip_address="127.0.0.2", include_dashboard=False, num_cpus=2,
             object_store_memory=200 * 1024**2, namespace="whileai_ray", log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture
def tools():
    return [dict(t) for t in TOOLS]
