"""Unit tests are pure logic: they must never start Ray."""
import sys

import pytest


@pytest.fixture(autouse=True, scope="session")
def _no_ray_in_unit_tests():
    yield
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized(), "a unit test started Ray; move it to tests/ray/"
