"""Unit tests are pure logic: they must never start Ray."""
import sys

import pytest


@pytest.fixture
def server():
    """Start the project's scripted OpenAI-compatible server on 127.0.0.1: ``server(**opts)`` ->
    ``(base_url, handler)``, where ``handler.requests`` counts the requests it answered. Every
    server started by a test is stopped after it."""
    from whileai_ray.testing.server import start_server
    stops = []

    def _start(**opts):
        host, port, stop = start_server(port=0, **opts)
        stops.append(stop)
        return f"http://{host}:{port}/v1", stop.server

    yield _start
    for stop in stops:
        stop()


@pytest.fixture(autouse=True, scope="session")
def _no_ray_in_unit_tests():
    yield
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized(), "a unit test started Ray; move it to tests/ray/"
