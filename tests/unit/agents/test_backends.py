"""Backends: spec strings, configure()/env resolution, preflight, and keys kept out of sight."""
import asyncio
import pickle

import pytest

from whileai_ray.agents import backends as B
from whileai_ray.agents.backends import OpenAI, configure, parse_spec, preflight, resolve_role
from whileai_ray.testing.server import start_server

ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "VLLM_API_KEY", "WHILEAI_SIMULATOR", "WHILEAI_JUDGE",
       "WHILEAI_USER_MODEL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    B.reset_configuration()
    yield
    B.reset_configuration()


def test_openai_spec_uses_openai_url_and_env_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    b = parse_spec("openai:gpt-4.1-mini")
    assert (b.model, b.base_url, b.api_key) == ("gpt-4.1-mini", "https://api.openai.com/v1", "sk-secret-123")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy:9000/v1/")
    assert parse_spec("openai:m").base_url == "http://proxy:9000/v1"


def test_vllm_spec_normalizes_the_url_and_key(monkeypatch):
    b = parse_spec("vllm:Qwen/Qwen3-8B@localhost:8000")
    assert (b.model, b.base_url, b.api_key) == ("Qwen/Qwen3-8B", "http://localhost:8000/v1", "EMPTY")
    monkeypatch.setenv("VLLM_API_KEY", "vk")
    b = parse_spec("vllm:m@https://gpu.example/v1/")
    assert (b.base_url, b.api_key) == ("https://gpu.example/v1", "vk")


def test_url_spec_has_no_model_until_preflight():
    b = parse_spec("http://127.0.0.1:8000/v1")
    assert b.model is None and b.base_url == "http://127.0.0.1:8000/v1" and b.api_key == "EMPTY"


@pytest.mark.parametrize("spec, exc, words", [
    ("gpt-4", ValueError, "not a backend spec"),
    ("anthropic:claude", ValueError, "not supported"),
    ("vllm:model-without-url", ValueError, "vllm:<model>@<url>"),
    (42, TypeError, "agent="),
])
def test_bad_specs_name_the_argument_and_the_fix(spec, exc, words):
    with pytest.raises(exc) as info:
        parse_spec(spec)
    assert words in str(info.value)


def test_key_never_in_repr_and_openai_api_needs_one(monkeypatch):
    b = OpenAI("gpt-4.1-mini", api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(b) and "api_key=<set>" in repr(b)
    assert "unset" in repr(OpenAI("gpt-4.1-mini"))
    assert OpenAI("gpt-4.1-mini").api_key is None
    assert OpenAI("m", base_url="http://localhost:1/v1").api_key == "EMPTY"
    copy = pickle.loads(pickle.dumps(b))
    assert copy == b and copy.api_key == "sk-very-secret"
    with pytest.raises(ValueError, match="base_url"):
        OpenAI("m", base_url="localhost:8000")


def test_configure_then_env_then_none(monkeypatch):
    assert resolve_role("judge") is None
    monkeypatch.setenv("WHILEAI_JUDGE", "vllm:judge@http://h:1/v1")
    assert resolve_role("judge").model == "judge"
    configure(judge="openai:gpt-4.1")
    assert resolve_role("judge").model == "gpt-4.1"
    assert resolve_role("judge", "hosted").model == "gpt-4.1"
    assert resolve_role("judge", "vllm:explicit@h:2").model == "explicit"
    configure(judge=None)
    assert resolve_role("judge").model == "judge"
    configure(simulator=False)
    monkeypatch.setenv("WHILEAI_SIMULATOR", "openai:writer")
    assert resolve_role("simulator") is None
    monkeypatch.setenv("WHILEAI_USER_MODEL", "openai:person")
    assert resolve_role("user_model").model == "person"
    with pytest.raises(ValueError, match="role must be one of"):
        resolve_role("writer")
    with pytest.raises(ValueError, match="simulator"):
        configure(simulator="nonsense")


def test_bad_env_spec_names_the_variable(monkeypatch):
    monkeypatch.setenv("WHILEAI_USER_MODEL", "bogus")
    with pytest.raises(ValueError, match=r"\$WHILEAI_USER_MODEL"):
        resolve_role("user_model")


def test_preflight_fills_the_model_from_the_server():
    host, port, stop = start_server(model="served-model")
    try:
        b = asyncio.run(preflight(parse_spec(f"http://{host}:{port}/v1")))
        assert b.model == "served-model"
        named = asyncio.run(preflight(parse_spec(f"vllm:mine@{host}:{port}")))
        assert named.model == "mine"
    finally:
        stop()


def test_preflight_names_the_missing_env_variable():
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        asyncio.run(preflight(parse_spec("openai:gpt-4.1-mini")))


def test_preflight_names_a_dead_url():
    host, port, stop = start_server()
    stop()      # nothing listens on this port any more
    with pytest.raises(RuntimeError, match=f"http://{host}:{port}/v1/models"):
        asyncio.run(preflight(parse_spec(f"http://{host}:{port}/v1"), timeout=2))


def test_preflight_rejected_key_names_the_variable_not_the_key(monkeypatch):
    host, port, stop = start_server(require_key="right")
    monkeypatch.setenv("VLLM_API_KEY", "wrong-key-value")
    try:
        with pytest.raises(RuntimeError, match="VLLM_API_KEY") as info:
            asyncio.run(preflight(parse_spec(f"vllm:m@{host}:{port}")))
        assert "wrong-key-value" not in str(info.value)
        monkeypatch.setenv("VLLM_API_KEY", "right")
        assert asyncio.run(preflight(parse_spec(f"vllm:m@{host}:{port}"))).api_key == "right"
    finally:
        stop()
