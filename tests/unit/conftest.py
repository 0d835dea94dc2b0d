"""Unit tests are pure logic: they must never start Ray.

As in Ray Data's own ``tests/unit/conftest.py``, ``ray.init`` is replaced for every unit test by
a function that raises, so a test that reaches Ray (directly, through ``ensure_ray()``, or by
Ray's auto-init on the first ``.remote()``) fails at once and says where it belongs.
"""
import pytest


class RayInitInUnitTest(RuntimeError):
    """A unit test reached ray.init()."""


@pytest.fixture(autouse=True)
def _ray_init_raises(monkeypatch):
    import ray

    def refuse(*args, **kwargs):
        raise RayInitInUnitTest("a unit test called ray.init(): unit tests are pure logic and never start Ray; "
                                "move this test to tests/ray/ (the ray_local fixture)")

    monkeypatch.setattr(ray, "init", refuse)


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


@pytest.fixture
def clean_model_env(monkeypatch):
    """No judge, key or URL from the environment, and no ``wai.configure`` left by another test."""
    from whileai_ray.agents.backends import reset_configuration
    for name in ("WHILEAI_JUDGE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    reset_configuration()
    yield
    reset_configuration()
