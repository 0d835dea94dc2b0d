"""Schema-constrained replies: ask an OpenAI-compatible server for JSON that fits a schema, in the
dialect it speaks, learned once per endpoint.

A judge's verdict (reward, reason, markers) and the LLM writer's ask are JSON objects. Many
servers can constrain decoding to a JSON schema, which is what makes a small open model
(SmolLM2-135M) answer in a form that parses at all. They disagree on how to ask:

==========================  =================================================================
dialect                     request field
==========================  =================================================================
``json_schema``             ``response_format={"type": "json_schema", "json_schema": {"name",
                            "schema", "strict": True}}`` -- OpenAI, vLLM, SGLang
``json_object_schema``      ``response_format={"type": "json_object", "schema": {...}}`` --
                            llama-cpp-python's server, which answers HTTP 500 to ``json_schema``
``none``                    no ``response_format``: free text, parsed leniently as before
==========================  =================================================================

:func:`create_structured` sends a chat request with the endpoint's dialect. The first request
to an endpoint (``base_url`` + model) negotiates: ``json_schema`` first, then
``json_object_schema`` when the server refuses it (HTTP 400/404/422, or a 500 that a second try
repeats), then ``none``. The answer is kept in :data:`DIALECTS` for the process (and on the
caller's object, which travels to Ray actors), so an endpoint is probed once, not per request;
:func:`dialect_note` words a ``none`` for ``search`` / the judge report.
"""
from __future__ import annotations

import asyncio
import threading

from .backends import redact

__all__ = ["DIALECT_ORDER", "DIALECTS", "response_format", "create_structured", "create_structured_sync",
           "endpoint_key", "dialect_note", "VERDICT_SCHEMA", "ASK_SCHEMA", "VARIATIONS_SCHEMA"]

DIALECT_ORDER = ("json_schema", "json_object_schema")
_REFUSED = (400, 404, 415, 422)

VERDICT_SCHEMA = {   # reward first: a reply cut at max_tokens still carries it
    "type": "object",
    "properties": {"reward": {"type": "integer", "enum": [0, 1]},
                   "reason": {"type": "string", "maxLength": 240},
                   "markers": {"type": "object", "additionalProperties": {"type": "number"}}},
    "required": ["reward", "reason"],
}
ASK_SCHEMA = {       # the ask, and what the person wants but never says (kept on the situation)
    "type": "object",
    "properties": {"message": {"type": "string", "minLength": 8, "maxLength": 700},
                   "goal": {"type": "string", "maxLength": 160}},
    "required": ["message"],
}
VARIATIONS_SCHEMA = {
    "type": "object",
    "properties": {"messages": {"type": "array", "items": {"type": "string", "maxLength": 700}}},
    "required": ["messages"],
}


class _Book:
    """Dialect per endpoint, process-wide; one negotiation at a time per endpoint."""

    def __init__(self):
        self.known: dict = {}
        self._guard = threading.Lock()
        self._locks: dict = {}

    def get(self, key):
        return self.known.get(key)

    def learn(self, key, dialect: str) -> None:
        self.known[key] = dialect

    def thread_lock(self, key) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(("t", key), threading.Lock())

    def async_lock(self, key) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        with self._guard:
            return self._locks.setdefault(("a", id(loop), key), asyncio.Lock())

    def clear(self) -> None:
        self.known.clear()


DIALECTS = _Book()


def endpoint_key(backend) -> tuple:
    return (str(getattr(backend, "base_url", "")), str(getattr(backend, "model", "")))


def response_format(dialect: str, name: str, schema: dict) -> dict | None:
    if dialect == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
    if dialect == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    return None


def _status(exc) -> int | None:
    return getattr(exc, "status_code", None) or getattr(getattr(exc, "response", None), "status_code", None)


def _refusal(exc, tries: int) -> bool:
    """Whether an error says "not this dialect": a 4xx refusal, or a 500 seen twice in a row."""
    import openai
    if not isinstance(exc, openai.APIStatusError):
        return False
    status = _status(exc)
    return status in _REFUSED or (status is not None and status >= 500 and tries >= 2)


def _with(request: dict, dialect: str, name: str, schema: dict) -> dict:
    fmt = response_format(dialect, name, schema)
    return {**request, "response_format": fmt} if fmt else dict(request)


async def create_structured(client, request: dict, schema: dict, name: str, key, known: str | None = None):
    """``(reply, dialect)`` for one chat request on an ``openai.AsyncOpenAI`` client, constrained to
    ``schema`` in the endpoint's dialect (negotiated on first use; see the module docstring)."""
    dialect = known or DIALECTS.get(key)
    if dialect is not None:
        return await client.chat.completions.create(**_with(request, dialect, name, schema)), dialect
    async with DIALECTS.async_lock(key):
        dialect = DIALECTS.get(key)
        if dialect is not None:
            return await client.chat.completions.create(**_with(request, dialect, name, schema)), dialect
        for candidate in DIALECT_ORDER:
            for tries in (1, 2):
                try:
                    reply = await client.chat.completions.create(**_with(request, candidate, name, schema))
                except Exception as exc:
                    if _refusal(exc, tries):
                        break
                    status = _status(exc)
                    if status is not None and status >= 500:
                        continue          # one more try before calling a 500 a refusal
                    raise
                DIALECTS.learn(key, candidate)
                return reply, candidate
        DIALECTS.learn(key, "none")
    return await client.chat.completions.create(**request), "none"


def create_structured_sync(client, request: dict, schema: dict, name: str, key, known: str | None = None):
    """:func:`create_structured` for a sync ``openai.OpenAI`` client (thread-safe)."""
    dialect = known or DIALECTS.get(key)
    if dialect is not None:
        return client.chat.completions.create(**_with(request, dialect, name, schema)), dialect
    with DIALECTS.thread_lock(key):
        dialect = DIALECTS.get(key)
        if dialect is not None:
            return client.chat.completions.create(**_with(request, dialect, name, schema)), dialect
        for candidate in DIALECT_ORDER:
            for tries in (1, 2):
                try:
                    reply = client.chat.completions.create(**_with(request, candidate, name, schema))
                except Exception as exc:
                    if _refusal(exc, tries):
                        break
                    status = _status(exc)
                    if status is not None and status >= 500:
                        continue
                    raise
                DIALECTS.learn(key, candidate)
                return reply, candidate
        DIALECTS.learn(key, "none")
    return client.chat.completions.create(**request), "none"


def dialect_note(role: str, url: str, dialect: str | None) -> str | None:
    """A plain-words note when an endpoint constrains nothing (replies parsed from free text)."""
    if dialect != "none":
        return None
    return (f"the {role} endpoint {redact(url)} accepts no schema-constrained output (neither response_format "
            "json_schema nor json_object with a schema): its replies were parsed from free text, which "
            "small models often get wrong; serve it with vLLM, SGLang or llama.cpp's server to constrain them")
