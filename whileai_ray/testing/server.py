"""A scripted OpenAI-compatible HTTP server for tests, demos and load checks (no dependencies).

Speaks enough of the OpenAI wire format for the ``openai`` client: ``GET /v1/models`` and
non-streaming ``POST /v1/chat/completions`` (tools, tool_calls, usage, logprobs). Replies come
from :func:`whileai_ray.testing.scripted_replies.scripted_completion`, so they are a function
of ``--seed`` and the request content. It is a small HTTP/1.1 server on asyncio streams with
keep-alive: hundreds of concurrent requests each waiting ``--latency-ms`` cost one task each.

Command line (binds 127.0.0.1 only)::

    python -m whileai_ray.testing.server --port 8011 --latency-ms 200 --seed 0

Options: ``--latency-ms`` (delay before each reply), ``--error-rate`` (share of HTTP 500s),
``--malformed-rate`` (share of 200s whose body is not JSON), ``--require-key KEY`` (401 unless
``Authorization: Bearer KEY``), ``--model NAME``, ``--ask-rate`` (share of clarifying questions),
``--dialect`` (which ``response_format`` it takes: ``any``, ``json_schema``, ``llama_cpp``,
``none``; see ``DIALECTS``).
Failure draws are keyed by the request content and how many times that content was seen, so a
retry of a failed request is a fresh draw and a run of the same requests fails the same way.

From Python, :func:`start_server` runs it in a background thread and returns
``(host, port, stop)``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import threading
from collections import Counter, deque
from dataclasses import dataclass

from ..core.rng import draw, short_hash
from .scripted_replies import scripted_completion

__all__ = ["ServerOptions", "ScriptedServer", "start_server", "main"]

HOST = "127.0.0.1"
# How a server answers ``response_format`` (agents/structured.py), per --dialect:
#   any        ignores it (the old behaviour: replies as if it were absent)
#   json_schema  OpenAI / vLLM: takes {"type": "json_schema", ...}; 400 to json_object with a schema
#   llama_cpp  llama-cpp-python: HTTP 500 to json_schema; takes {"type": "json_object", "schema": ...}
#   none       400 to any response_format other than {"type": "text"}
DIALECTS = ("any", "json_schema", "llama_cpp", "none")
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 500: "Internal Server Error"}


@dataclass
class ServerOptions:
    seed: int = 0
    latency_ms: float = 0.0
    error_rate: float = 0.0
    malformed_rate: float = 0.0
    require_key: str | None = None
    model: str = "scripted"
    ask_rate: float = 0.25
    user_think: bool = False          # the simulated person's replies open with <think>...</think>
    dialect: str = "any"              # structured output it speaks: any / json_schema / llama_cpp / none
    cost_per_token: float = 0.0        # > 0: usage carries "cost", as OpenRouter-style endpoints report it

    def __post_init__(self):
        for name in ("error_rate", "malformed_rate", "ask_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1; got {value!r}")
        if self.latency_ms < 0:
            raise ValueError(f"latency_ms must be >= 0; got {self.latency_ms!r}")
        if self.dialect not in DIALECTS:
            raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {self.dialect!r}")


def _refuse_format(dialect: str, fmt) -> tuple[int, str] | None:
    """(status, message) when this dialect refuses the request's ``response_format``, else None."""
    if not fmt or dialect == "any":
        return None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "text":
        return None
    if dialect == "none":
        return 400, f"response_format {kind!r} is not supported by this server"
    if dialect == "json_schema":
        if kind == "json_schema" and isinstance((fmt.get("json_schema") or {}).get("schema"), dict):
            return None
        if kind == "json_object" and "schema" not in fmt:
            return None
        return 400, "Unrecognized request argument supplied: response_format.schema"
    if kind == "json_object":                        # llama_cpp
        return None
    return 500, ("1 validation error: body.response_format.type: Input should be 'text' or 'json_object' "
                 f"(input: {kind!r})")


def _error(message: str, kind: str, code: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class ScriptedServer:
    """The request handler: routes, auth, injected failures, and the scripted replies."""

    def __init__(self, options: ServerOptions):
        self.options = options
        self.seen: Counter = Counter()   # request fingerprint -> times seen (failure draws)
        self.requests = 0
        self.recent: deque = deque(maxlen=512)   # the last chat request bodies (parsed), for tests

    def respond(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, bytes]:
        """(status, body bytes) for one request; pure apart from the seen-counter."""
        self.requests += 1
        opts = self.options
        path = path.split("?", 1)[0].rstrip("/")
        if opts.require_key is not None and headers.get("authorization") != f"Bearer {opts.require_key}":
            return 401, json.dumps(_error("Incorrect API key provided.", "invalid_request_error",
                                          "invalid_api_key")).encode()
        if method == "GET" and path in ("/v1/models", "/models"):
            listing = {"object": "list", "data": [
                {"id": opts.model, "object": "model", "created": 0, "owned_by": "whileai-ray"}]}
            return 200, json.dumps(listing).encode()
        if method != "POST" or path not in ("/v1/chat/completions", "/chat/completions"):
            return 404, json.dumps(_error(f"no route {method} {path}", "not_found")).encode()
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
                raise ValueError("messages must be a list")
        except ValueError as exc:
            return 400, json.dumps(_error(f"invalid request body: {exc}", "invalid_request_error")).encode()
        self.recent.append(request)
        refused = _refuse_format(opts.dialect, request.get("response_format"))
        if refused:
            return refused[0], json.dumps(_error(refused[1], "invalid_request_error")).encode()
        fingerprint = short_hash(body.decode("utf-8", "replace"), n=16)
        self.seen[fingerprint] += 1
        nth = self.seen[fingerprint]
        if opts.error_rate and draw(opts.seed, "http500", fingerprint, nth) < opts.error_rate:
            return 500, json.dumps(_error("scripted server error", "server_error")).encode()
        if opts.malformed_rate and draw(opts.seed, "malformed", fingerprint, nth) < opts.malformed_rate:
            return 200, b'{"id": "chatcmpl-broken", "choices": [ {"message": '
        constrained = opts.dialect in ("json_schema", "llama_cpp") and bool(request.get("response_format"))
        reply = scripted_completion(request, seed=opts.seed, model=opts.model, ask_rate=opts.ask_rate,
                                    user_think=opts.user_think, constrained=constrained)
        if opts.cost_per_token:
            reply["usage"]["cost"] = round(reply["usage"]["total_tokens"] * opts.cost_per_token, 9)
        return 200, json.dumps(reply).encode()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve one keep-alive connection until the client closes it."""
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, version = (lines[0].split(" ") + ["", "", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length") or 0)
                body = await reader.readexactly(length) if length else b""
                if self.options.latency_ms:
                    await asyncio.sleep(self.options.latency_ms / 1000.0)
                status, payload = self.respond(method, target, headers, body)
                close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
                writer.write(
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                    f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n".encode() + payload)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        except asyncio.CancelledError:   # server shutting down: end quietly (asyncio would log it)
            pass
        finally:
            writer.close()


async def serve(options: ServerOptions, port: int = 0, ready=None) -> None:
    """Run until cancelled; ``ready(port)`` is called once the socket listens."""
    handler = ScriptedServer(options)
    server = await asyncio.start_server(handler.handle, HOST, port, backlog=2048, limit=1 << 24)
    if ready is not None:
        ready(server.sockets[0].getsockname()[1], handler)
    async with server:
        await server.serve_forever()


def start_server(port: int = 0, **opts):
    """Start the scripted server in a daemon thread; return ``(host, port, stop)``.

    ``opts`` are :class:`ServerOptions` fields (seed, latency_ms, error_rate, malformed_rate,
    require_key, model, ask_rate, cost_per_token). ``stop()`` shuts it down and joins the thread.
    The handler (with its request count) is available as ``stop.server``.
    """
    options = ServerOptions(**opts)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    box: dict = {}

    def ready(bound: int, handler: ScriptedServer) -> None:
        box["port"], box["handler"] = bound, handler
        started.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        box["task"] = loop.create_task(serve(options, port, ready))
        try:
            loop.run_until_complete(box["task"])
        except (asyncio.CancelledError, Exception) as exc:  # surfaced through box for start errors
            box.setdefault("error", exc)
            started.set()
        finally:
            pending = asyncio.all_tasks(loop)    # open keep-alive connections
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=run, name="whileai-scripted-server", daemon=True)
    thread.start()
    started.wait(10)
    if "port" not in box:
        raise RuntimeError(f"scripted server did not start on {HOST}:{port}: {box.get('error')!r}")

    return HOST, box["port"], _Stop(loop, thread, box)


class _Stop:
    """``stop()`` shuts the server down and joins its thread; ``stop.server``: the handler."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, box: dict):
        self._loop, self._thread, self._box = loop, thread, box
        self.server: ScriptedServer = box["handler"]

    def __call__(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._box["task"].cancel)
            self._thread.join(10)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m whileai_ray.testing.server",
                                     description="Scripted OpenAI-compatible server (127.0.0.1 only).")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--malformed-rate", type=float, default=0.0)
    parser.add_argument("--require-key", default=None)
    parser.add_argument("--model", default="scripted")
    parser.add_argument("--ask-rate", type=float, default=0.25)
    parser.add_argument("--dialect", default="any", choices=DIALECTS)
    args = parser.parse_args(argv)
    try:
        options = ServerOptions(seed=args.seed, latency_ms=args.latency_ms, error_rate=args.error_rate,
                                malformed_rate=args.malformed_rate, require_key=args.require_key,
                                model=args.model, ask_rate=args.ask_rate, dialect=args.dialect)
    except ValueError as exc:
        parser.error(str(exc))

    def ready(bound: int, _handler) -> None:
        print(f"scripted OpenAI server on http://{HOST}:{bound}/v1 (model {args.model})", flush=True)

    try:
        asyncio.run(serve(options, args.port, ready))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
