"""The raw chat-completion call (agents/chat_call.py) against the scripted server: the same reply
as the SDK's typed ``create``, the same key handling, and bad bodies refused."""
import asyncio

import openai
import pytest

from whileai_ray.agents.chat_call import AgentReplyError, chat_completion
from whileai_ray.testing.seeded_rows import TOOLS

REQUEST = {"model": "scripted", "messages": [{"role": "user", "content": "Where is my order ORD-6206?"}],
           "tools": TOOLS, "temperature": 0.2, "max_tokens": 64}


def call(url, request=REQUEST, key="x", **client_kw):
    async def go():
        async with openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, **client_kw) as client:
            return await chat_completion(client, request, 10.0)
    return asyncio.run(go())


def test_same_reply_as_the_typed_call(server):
    url, _ = server(ask_rate=0.0)
    raw = call(url)

    async def typed():
        async with openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0) as client:
            return await client.chat.completions.create(**REQUEST)
    reply = asyncio.run(typed())
    message = raw["choices"][0]["message"]
    assert message["tool_calls"][0]["function"] == {"name": "lookup_order",
                                                    "arguments": '{"order_id": "ORD-6206"}'}
    assert message == reply.choices[0].message.model_dump(exclude_unset=True)
    assert raw["usage"]["prompt_tokens"] == reply.usage.prompt_tokens > 0


def test_the_key_goes_as_the_bearer_token_and_only_it(server):
    url, handler = server(require_key="right")
    assert call(url, key="right")["choices"]
    # an admin key on the client is not what a model endpoint gets
    assert call(url, key="right", admin_api_key="admin-key")["choices"]
    with pytest.raises(openai.AuthenticationError):
        call(url, key="wrong")
    assert handler.requests == 3


def test_http_errors_propagate_and_bad_bodies_are_refused(server):
    with pytest.raises(openai.InternalServerError):
        call(server(error_rate=1.0)[0])
    with pytest.raises(AgentReplyError, match="not JSON"):
        call(server(malformed_rate=1.0)[0])
    with pytest.raises(openai.APIConnectionError):
        call("http://127.0.0.1:9/v1")
