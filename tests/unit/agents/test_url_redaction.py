"""Issue 28 item 14: a key written into a ``base_url`` (``http://user:sk-...@host/v1``) never shows
in an error message, a repr or the model tag rows carry. Each case below printed the key before."""
import socket

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import OpenAI, parse_spec, redact

SECRET = "sk-secret-4242"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _said(excinfo) -> str:
    return str(excinfo.value)


def test_redact_hides_userinfo_and_key_parameters_only():
    assert redact(f"http://user:{SECRET}@127.0.0.1:1234/v1") == "http://***@127.0.0.1:1234/v1"
    assert redact(f"vllm:Qwen/Qwen3-8B@https://{SECRET}@h.example/v1?api_key={SECRET}&x=1") == \
        "vllm:Qwen/Qwen3-8B@https://***@h.example/v1?api_key=***&x=1"
    assert redact("http://127.0.0.1:8000/v1 and vllm:m@host:8000") == "http://127.0.0.1:8000/v1 and vllm:m@host:8000"


def test_unreachable_endpoint_error_names_the_host_not_the_key():
    url = f"http://user:{SECRET}@127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(RuntimeError) as info:
        wai.simulate(url, tools=[], budget=1, simulator=False)
    assert SECRET not in _said(info) and "127.0.0.1" in _said(info), _said(info)


def test_refused_key_and_empty_model_list_errors_hide_the_url_key(server):
    base, _ = server(require_key="right-key")
    host = base.split("://", 1)[1]
    with pytest.raises(RuntimeError) as info:
        wai.simulate(OpenAI("m", f"http://user:{SECRET}@{host}", api_key="wrong-key"), tools=[], budget=1,
                     simulator=False)
    assert "refused the key" in _said(info) and SECRET not in _said(info), _said(info)


def test_spec_errors_reprs_and_model_tags_hide_the_key():
    for bad in (f"ftp:m@http://u:{SECRET}@h/v1", f"vllm:@http://u:{SECRET}@h/v1"):
        with pytest.raises(ValueError) as info:
            parse_spec(bad)
        assert SECRET not in _said(info), _said(info)
    with pytest.raises(ValueError) as info:
        OpenAI("m", f"ftp://u:{SECRET}@h/v1")
    assert SECRET not in _said(info), _said(info)
    backend = parse_spec(f"vllm:m@http://u:{SECRET}@127.0.0.1:8000/v1")
    assert backend.base_url == f"http://u:{SECRET}@127.0.0.1:8000/v1"     # still the URL it connects to
    assert SECRET not in repr(backend) and "127.0.0.1:8000" in repr(backend)
    assert SECRET not in OpenAI(None, f"http://u:{SECRET}@127.0.0.1:8000/v1").name
    with pytest.raises(RuntimeError) as info:
        wai.Judge(base_url=f"https://u:{SECRET}@api.openai.com/v1", model="gpt-4.1-mini")
    assert SECRET not in _said(info), _said(info)


def test_judge_replicas_and_dialect_notes_hide_the_key():
    from whileai_ray.agents.routing import MultiEndpoint
    from whileai_ray.agents.structured import dialect_note
    judge = wai.Judge(base_url=f"http://u:{SECRET}@127.0.0.1:8000/v1", model="m", api_key="k")
    assert SECRET not in repr(judge) and SECRET not in judge.spec and "127.0.0.1:8000" in judge.spec
    many = MultiEndpoint("m", [f"http://u:{SECRET}@127.0.0.1:{_closed_port()}/v1"])
    assert SECRET not in repr(many)
    with pytest.raises(RuntimeError) as info:
        wai.simulate(many, tools=[], budget=1, simulator=False)
    assert SECRET not in _said(info) and "127.0.0.1" in _said(info), _said(info)
    with pytest.raises(ValueError) as info:
        MultiEndpoint("m", [f"ftp://u:{SECRET}@h/v1"])
    assert SECRET not in _said(info), _said(info)
    assert SECRET not in dialect_note("judge", f"http://u:{SECRET}@h/v1", "none")
