"""KeepAliveTransport: a small HTTP/1.1 transport for plain-http model endpoints (vLLM, llama.cpp).

The ``openai`` client still makes every call (``make_client`` passes it an ``httpx.AsyncClient``
built on this transport); only the connection layer under httpx is replaced. Why: httpx's pool
(httpcore) checks every idle connection with a ``poll()`` and a ``getpeername()`` on each request,
so with the 64 connections a rollout actor keeps open it spent about a third of the client's CPU
there, and on a 2-core machine at concurrency 256 that CPU is the bottleneck. Here an idle
connection is popped from a per-host stack in O(1).

What it does: one request per connection at a time, keep-alive reuse, ``Content-Length`` or
chunked bodies (or read-to-close), ``Accept-Encoding: identity`` (bodies arrive as sent).
Errors keep httpx's types, so the openai client maps them as usual (``APIConnectionError``,
``APITimeoutError``): refused/unreachable -> ``httpx.ConnectError``, a connect or read past the
request's timeout -> ``httpx.ConnectTimeout`` / ``httpx.ReadTimeout``, a connection dropped
mid-answer -> ``httpx.RemoteProtocolError``. A reused connection the server had already closed
(no byte of an answer came back) is retried once on a fresh one, as httpcore does.

Used only for ``http://`` base URLs when no proxy is configured in the environment; ``https://``
(the OpenAI API) and proxied setups keep httpx's own transport.

:class:`CachingTransport` (and :class:`SyncCachingTransport`, for the sync judge) sits above
either when ``advanced={"cache": path}`` is on: every chat-completions POST of every role goes
through here, typed ``create`` and raw ``post`` alike, so this is the one place a request body
is looked up in the response cache (``response_cache.py``) and a fresh reply is kept.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections import deque

import httpx

from . import response_cache as rc

__all__ = ["KeepAliveTransport", "use_keepalive_transport", "CachingTransport", "SyncCachingTransport"]

_PROXY_VARS = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def use_keepalive_transport(base_url: str | None) -> bool:
    """True for a plain-http endpoint reached without a proxy."""
    return bool(base_url) and str(base_url).startswith("http://") and not any(os.environ.get(v) for v in _PROXY_VARS)


class _Stale(Exception):
    """A reused connection was closed by the server before any byte of the answer."""


class KeepAliveTransport(httpx.AsyncBaseTransport):
    def __init__(self, max_idle_per_host: int = 1024):
        self.max_idle = max_idle_per_host
        self._idle: dict[tuple[str, int], deque] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"KeepAliveTransport serves http:// only, got {url.scheme}://")
        host, port = url.host, url.port or 80
        timeouts = request.extensions.get("timeout") or {}
        body = await request.aread()
        head = self._head(request, len(body))
        for attempt in (0, 1):
            conn, reused = await self._acquire(host, port, timeouts.get("connect"))
            try:
                status, headers, content, keep = await self._exchange(conn, head + body, timeouts.get("read"), reused)
            except _Stale:
                self._close(conn)
                if attempt == 0:
                    continue
                raise httpx.RemoteProtocolError("server closed the connection without answering",
                                                request=request) from None
            except asyncio.TimeoutError:
                self._close(conn)
                raise httpx.ReadTimeout(f"no answer from {host}:{port} within the timeout", request=request) from None
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                self._close(conn)
                raise httpx.RemoteProtocolError(f"connection to {host}:{port} broke mid-answer: {exc!r}",
                                                request=request) from None
            except BaseException:              # cancelled mid-exchange: the connection is in an unknown state
                self._close(conn)
                raise
            if keep:
                self._release(host, port, conn)
            else:
                self._close(conn)
            return httpx.Response(status, headers=headers, content=content, request=request,
                                  extensions={"http_version": b"HTTP/1.1"})
        raise AssertionError("unreachable")

    # ---- the wire --------------------------------------------------------------------------
    @staticmethod
    def _head(request: httpx.Request, length: int) -> bytes:
        target = request.url.raw_path
        lines = [request.method.encode() + b" " + target + b" HTTP/1.1"]
        for name, value in request.headers.raw:
            lower = name.lower()
            if lower in (b"accept-encoding", b"content-length", b"transfer-encoding", b"connection"):
                continue
            lines.append(name + b": " + value)
        lines.append(b"Accept-Encoding: identity")
        lines.append(b"Content-Length: " + str(length).encode())
        return b"\r\n".join(lines) + b"\r\n\r\n"

    async def _exchange(self, conn, payload: bytes, read_timeout, reused: bool):
        reader, writer = conn
        writer.write(payload)
        try:
            await writer.drain()
            first = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), read_timeout)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            partial = getattr(exc, "partial", b"")
            if reused and not partial:
                raise _Stale() from None
            raise
        lines = first[:-4].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
        status = int(parts[1])
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers.append((name.strip(), value.strip()))
        fields = {n.lower(): v for n, v in headers}
        keep = parts[0] == b"HTTP/1.1" and fields.get(b"connection", b"").lower() != b"close"
        if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            content = await asyncio.wait_for(self._chunked(reader), read_timeout)
            headers = [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"]
        elif b"content-length" in fields:
            content = await asyncio.wait_for(reader.readexactly(int(fields[b"content-length"])), read_timeout)
        elif status in (204, 304) or 100 <= status < 200:
            content = b""
        else:
            content, keep = await asyncio.wait_for(reader.read(), read_timeout), False
        return status, headers, content, keep

    @staticmethod
    async def _chunked(reader) -> bytes:
        out: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":   # trailers
                    pass
                return b"".join(out)
            out.append(await reader.readexactly(size))
            await reader.readexactly(2)

    # ---- the pool ----------------------------------------------------------------------------
    async def _acquire(self, host: str, port: int, connect_timeout):
        idle = self._idle.get((host, port))
        while idle:
            reader, writer = idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                return (reader, writer), True
            writer.close()
        try:
            conn = await asyncio.wait_for(asyncio.open_connection(host, port), connect_timeout)
        except asyncio.TimeoutError:
            raise httpx.ConnectTimeout(f"could not connect to {host}:{port} within the timeout") from None
        except OSError as exc:
            raise httpx.ConnectError(f"could not connect to {host}:{port}: {exc}") from None
        return conn, False

    def _release(self, host: str, port: int, conn) -> None:
        idle = self._idle.setdefault((host, port), deque())
        if len(idle) < self.max_idle:
            idle.append(conn)
        else:
            self._close(conn)

    @staticmethod
    def _close(conn) -> None:
        try:
            conn[1].close()
        except Exception:   # closing is best effort
            pass

    async def aclose(self) -> None:
        for idle in self._idle.values():
            while idle:
                self._close(idle.pop())
        self._idle.clear()


# ---- the response cache --------------------------------------------------------------------------
class _CacheLookup:
    """What both caching transports share: the key of a request, a hit, and keeping a reply."""

    def __init__(self, spec: "rc.CacheSpec", role: str):
        self.spec, self.role = spec, role

    def lookup(self, request: httpx.Request, content: bytes):
        """``(key, role, hit_response)``; key None when this request is not one to cache."""
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return None, None, None
        try:
            body = json.loads(content)
        except ValueError:
            return None, None, None
        role = rc.current_role(self.role)
        if not rc.cacheable(role, body, self.spec.agent_sampled):
            return None, None, None
        key = rc.request_key(str(request.url), body)
        reply = rc.store_for(self.spec.path).get(key)
        rc.count(self.spec.path, role, reply is not None)
        if reply is None:
            return key, role, None
        return key, role, httpx.Response(200, json=reply, request=request,
                                         headers={"x-whileai-cache": "hit"})

    def keep(self, key: str, response: httpx.Response) -> None:
        """A fresh answer that is a chat completion (HTTP 200, a JSON object whose every choice has
        a message object) is kept; anything else (an error, a malformed body) is never replayed."""
        if response.status_code != 200:
            return
        try:
            reply = json.loads(response.content)
        except ValueError:
            return
        choices = reply.get("choices") if isinstance(reply, dict) else None
        if isinstance(choices, list) and choices and all(
                isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices):
            rc.store_for(self.spec.path).put(key, reply)


class CachingTransport(httpx.AsyncBaseTransport):
    """Answers a chat-completions request from the response cache, or sends it through ``inner``
    and keeps the reply. ``role`` is the default role of its requests (``cache_role`` overrides)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, spec: "rc.CacheSpec", role: str = "agent"):
        self.inner, self.cache = inner, _CacheLookup(spec, role)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        key, _role, hit = self.cache.lookup(request, await request.aread())
        if hit is not None:
            return hit
        response = await self.inner.handle_async_request(request)
        if key is not None:
            await response.aread()
            await asyncio.to_thread(self.cache.keep, key, response)   # a write may wait on another process's
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class SyncCachingTransport(httpx.BaseTransport):
    """:class:`CachingTransport` for a sync ``httpx.Client`` (the judge's ``__call__``)."""

    def __init__(self, inner: httpx.BaseTransport, spec: "rc.CacheSpec", role: str = "judge"):
        self.inner, self.cache = inner, _CacheLookup(spec, role)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        key, _role, hit = self.cache.lookup(request, request.read())
        if hit is not None:
            return hit
        response = self.inner.handle_request(request)
        if key is not None:
            response.read()
            self.cache.keep(key, response)
        return response

    def close(self) -> None:
        self.inner.close()
