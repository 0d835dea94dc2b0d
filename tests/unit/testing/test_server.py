"""The scripted OpenAI-compatible server, spoken to over real HTTP with the real openai client."""
import asyncio
import json
import subprocess
import sys

import httpx
import openai
import pytest

from whileai_ray.agents.user_sim import USER_MARKER
from whileai_ray.testing.server import start_server
from whileai_ray.testing.seeded_rows import TOOLS


def run(coro):
    return asyncio.run(coro)


async def _chat(url, key="x", **kw):
    async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0) as client:
        return await client.chat.completions.create(model="scripted", **kw)


def test_models_lists_the_configured_model(server):
    url, _ = server(model="fake-7b")

    async def go():
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            return [m.id async for m in client.models.list()]
    assert run(go()) == ["fake-7b"]


def test_user_ask_with_an_id_gets_a_tool_call_with_that_id(server):
    url, _ = server(ask_rate=0.0)
    r = run(_chat(url, messages=[{"role": "user", "content": "Where is my order ORD-6206?"}], tools=TOOLS))
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    call = choice.message.tool_calls[0]
    assert call.function.name == "lookup_order"
    assert json.loads(call.function.arguments) == {"order_id": "ORD-6206"}
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0


def test_bare_tool_schema_is_accepted(server):
    url, _ = server(ask_rate=0.0)
    bare = [TOOLS[0]["function"]]
    body = {"model": "m", "messages": [{"role": "user", "content": "check A12"}], "tools": bare}
    reply = httpx.post(url + "/chat/completions", json=body).json()
    call = reply["choices"][0]["message"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"order_id": "A12"}


def test_after_a_tool_result_the_reply_summarizes_it(server):
    url, _ = server(ask_rate=0.0)
    messages = [{"role": "user", "content": "Where is ORD-1?"}]
    first = run(_chat(url, messages=messages, tools=TOOLS)).choices[0].message
    call = first.tool_calls[0]
    messages += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": call.id, "type": "function",
                      "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
                 {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"status": "not_found"})}]
    second = run(_chat(url, messages=messages, tools=TOOLS)).choices[0]
    assert second.finish_reason == "stop"
    assert second.message.content == "lookup_order for ORD-1: not_found."


def test_replies_are_deterministic_and_questions_are_seeded(server):
    url, _ = server(seed=3, ask_rate=0.5)
    asks = [[{"role": "user", "content": f"please look up ORD-{i}"}] for i in range(40)]

    async def all_replies():
        return [await _chat(url, messages=m, tools=TOOLS) for m in asks]
    first, again = run(all_replies()), run(all_replies())
    assert [r.model_dump() for r in first] == [r.model_dump() for r in again]
    questions = [r for r in first if r.choices[0].message.tool_calls is None]
    assert 8 <= len(questions) <= 32        # about half, drawn per request
    assert all(r.choices[0].message.content.endswith("?") for r in questions)


def test_no_id_in_the_ask_gets_a_clarifying_question(server):
    url, _ = server(ask_rate=0.0)
    r = run(_chat(url, messages=[{"role": "user", "content": "where is my order"}], tools=TOOLS))
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].message.content.endswith("?")


def test_user_marker_makes_it_answer_in_character(server):
    url, _ = server()
    r = run(_chat(url, messages=[
        {"role": "system", "content": USER_MARKER + ". You opened with: my order ORD-77 never came."},
        {"role": "user", "content": "Which order do you mean?"}]))
    text = r.choices[0].message.content
    assert "ORD-77" in text and not text.endswith("?")


def test_logprobs_and_max_tokens(server):
    url, _ = server()
    msgs = [{"role": "user", "content": "tell me a long story about nothing at all please"}]
    r = run(_chat(url, messages=msgs, logprobs=True))
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens
    assert all(t.logprob <= 0 for t in content)
    short = run(_chat(url, messages=msgs, max_tokens=2)).choices[0]
    assert short.finish_reason == "length" and len(short.message.content.split()) == 2


def test_require_key_answers_401_without_it(server):
    url, _ = server(require_key="sekret")
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(openai.AuthenticationError):
        run(_chat(url, key="wrong", messages=msgs))
    assert run(_chat(url, key="sekret", messages=msgs)).choices[0].message.content


def test_error_and_malformed_rates(server):
    msgs = [{"role": "user", "content": "hi"}]
    url, _ = server(error_rate=1.0)
    with pytest.raises(openai.InternalServerError):
        run(_chat(url, messages=msgs))
    url, _ = server(malformed_rate=1.0)
    with pytest.raises(ValueError):
        run(_chat(url, messages=msgs))


def test_partial_error_rate_lets_a_retry_through(server):
    url, handler = server(error_rate=0.5, seed=1)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client() as http:
        codes = [http.post(url + "/chat/completions", json=body).status_code for _ in range(40)]
    assert set(codes) == {200, 500}
    assert handler.requests == 40


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="error_rate"):
        start_server(error_rate=1.5)


async def _raw_post(host, port, body: bytes):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    payload = await reader.readexactly(length)
    writer.close()
    return json.loads(payload)


def _spawn(*args):
    """The server as its own process (the CLI), the way a load test or a notebook runs it."""
    proc = subprocess.Popen([sys.executable, "-m", "whileai_ray.testing.server", "--port", "0", *args],
                            stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    return proc, line


def _end(proc):
    proc.terminate()
    proc.wait(10)
    proc.stdout.close()


def test_256_concurrent_requests_at_200ms_are_all_answered():
    proc, line = _spawn("--latency-ms", "200")
    try:
        host, port = line.split("http://")[1].split("/")[0].split(":")
        bodies = [json.dumps({"model": "m", "tools": TOOLS, "messages": [
            {"role": "user", "content": f"order ORD-{i}"}]}).encode() for i in range(256)]

        async def go():
            return await asyncio.gather(*[_raw_post(host, port, b) for b in bodies])
        replies = run(go())       # how long 256 take together: the bench's micro lines
        assert len(replies) == 256 and all(r["choices"][0]["finish_reason"] in ("tool_calls", "stop")
                                           for r in replies)
    finally:
        _end(proc)


def test_256_concurrent_requests_through_the_openai_client():
    """The same load through openai.AsyncOpenAI: every reply right, in request order."""
    proc, line = _spawn("--latency-ms", "200", "--ask-rate", "0")
    url = line.split(" on ")[1].split(" ")[0]

    async def go():
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            return await asyncio.gather(*[client.chat.completions.create(
                model="m", tools=TOOLS, messages=[{"role": "user", "content": f"order ORD-{i}"}])
                for i in range(256)])
    try:
        replies = run(go())
    finally:
        _end(proc)
    ids = [json.loads(r.choices[0].message.tool_calls[0].function.arguments)["order_id"] for r in replies]
    assert ids == [f"ORD-{i}" for i in range(256)]


def test_command_line_entry_point():
    proc, line = _spawn("--model", "cli-model")
    try:
        assert line.startswith("scripted OpenAI server on http://127.0.0.1:")
        url = line.split(" on ")[1].split(" ")[0]
        assert httpx.get(url + "/models").json()["data"][0]["id"] == "cli-model"
    finally:
        _end(proc)
