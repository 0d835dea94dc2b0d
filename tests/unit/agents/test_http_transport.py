"""KeepAliveTransport (agents/http_transport.py) under the openai client, over real sockets: the same
replies as httpx's own transport, connections reused, chunked and close-delimited bodies, a server
that dropped an idle connection, and errors that keep the SDK's types."""
import asyncio

import httpx
import openai
import pytest

from whileai_ray.agents.backends import OpenAI, make_client
from whileai_ray.agents.chat_call import chat_completion
from whileai_ray.agents.http_transport import KeepAliveTransport, use_keepalive_transport

REQUEST = {"model": "scripted", "messages": [{"role": "user", "content": "Where is my order ORD-6206?"}],
           "max_tokens": 64}


@pytest.fixture
def scripted(server):
    return server(seed=3)[0]


def _client(url, transport=None, timeout=10.0):
    http = httpx.AsyncClient(transport=transport or KeepAliveTransport(), timeout=timeout)
    return openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0, http_client=http)


def test_make_client_uses_it_for_plain_http_only(monkeypatch):
    assert use_keepalive_transport("http://10.0.0.5:8000/v1")
    assert not use_keepalive_transport("https://api.openai.com/v1")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not use_keepalive_transport("http://10.0.0.5:8000/v1")


def test_same_replies_as_httpx_and_one_connection_reused(scripted):
    async def go():
        ours = KeepAliveTransport()
        mine = _client(scripted, ours)
        theirs = openai.AsyncOpenAI(base_url=scripted, api_key="k", max_retries=0)
        a = [await chat_completion(mine, REQUEST, 10.0) for _ in range(5)]
        b = [await chat_completion(theirs, REQUEST, 10.0) for _ in range(5)]
        idle = sum(len(d) for d in ours._idle.values())
        many = await asyncio.gather(*(chat_completion(mine, REQUEST, 10.0) for _ in range(20)))
        await mine.close()
        await theirs.close()
        return a, b, idle, many

    a, b, idle, many = asyncio.run(go())
    strip = lambda r: {k: v for k, v in r.items() if k not in ("id", "created")}   # noqa: E731
    assert [strip(r) for r in a] == [strip(r) for r in b]
    assert idle == 1                                         # five calls in a row, one connection
    assert all(r["choices"][0]["message"] for r in many)


async def _raw_server(answer: bytes):
    async def handle(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = [int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")]
                await reader.readexactly(length[0] if length else 0)
                writer.write(answer)
                await writer.drain()
                if b"Connection: close" in answer or b"Content-Length" not in answer and b"chunked" not in answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


BODY = b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}]}'


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    + b"".join(b"%x\r\n%s\r\n" % (len(BODY[i:i + 40]), BODY[i:i + 40]) for i in range(0, len(BODY), 40))
    + b"0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" + BODY,
    b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + BODY,
], ids=["chunked", "close-delimited", "http/1.0"])
def test_chunked_and_close_delimited_bodies(answer):
    async def go():
        server, url = await _raw_server(answer)
        client = _client(url)
        try:
            return [await chat_completion(client, REQUEST, 5.0) for _ in range(3)]
        finally:
            await client.close()
            server.close()

    for reply in asyncio.run(go()):
        assert reply["choices"][0]["message"]["content"] == "hi there"


def test_a_connection_the_server_dropped_after_answering_is_replaced():
    """The server closes each connection after one answer without saying so (an idle timeout):
    the pooled connection is stale, and the next call goes out on a fresh one."""
    async def go():
        async def one_answer(reader, writer):
            head = await reader.readuntil(b"\r\n\r\n")
            length = [int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")]
            await reader.readexactly(length[0])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
            await writer.drain()
            writer.close()
        server = await asyncio.start_server(one_answer, "127.0.0.1", 0)
        transport = KeepAliveTransport()
        client = _client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", transport)
        out = []
        for _ in range(5):
            out.append(await chat_completion(client, REQUEST, 5.0))
        await client.close()
        server.close()
        return out

    assert [r["choices"][0]["message"]["content"] for r in asyncio.run(go())] == ["hi there"] * 5


def test_refused_and_slow_endpoints_raise_the_sdk_errors():
    async def go():
        refused = _client("http://127.0.0.1:9/v1")
        with pytest.raises(openai.APIConnectionError):
            await chat_completion(refused, REQUEST, 2.0)
        await refused.close()

        async def silent(reader, writer):
            await asyncio.sleep(5)
        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        slow = _client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", timeout=0.3)
        with pytest.raises(openai.APITimeoutError):
            await chat_completion(slow, REQUEST, 0.3)
        await slow.close()
        server.close()

    asyncio.run(go())


def test_make_client_against_the_scripted_server(scripted):
    async def go():
        client = make_client(OpenAI("scripted", base_url=scripted, api_key="k"), timeout=10.0)
        reply = await chat_completion(client, REQUEST, 10.0)
        await client.close()
        return reply
    assert asyncio.run(go())["choices"][0]["message"]
