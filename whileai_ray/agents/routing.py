"""Sticky routing of rollouts across several OpenAI-compatible servers (no Ray).

When one model is served by several replicas (``runtime.model_servers.ModelServers`` starts
them), every turn of a rollout, and the simulated user's turns, should go to the *same*
replica: a vLLM server keeps the conversation so far in its prefix cache, so the next turn
only pays for the new tokens. Round-robin per request would throw that cache away.

:class:`StickyRouter` picks a replica per unit with *jump consistent hashing* (Lamping and
Veach, 2014) over a sha256 of the unit's key: the same unit goes to the same server on any
actor, node or process, the load spreads evenly, and adding a replica moves only about 1/n
of the units. ``affinity="situation"`` routes by the situation instead (all repeats of one
prompt share a server, so their common prefix is cached once); the default ``"rollout"``
spreads better when a run has few situations and many repeats.

:class:`MultiEndpoint` is the backend object a caller passes as ``agent=``: it has the
attributes the run reads from a ``wai.OpenAI`` (``.model``, ``.name``, ``.api_key``,
``.base_url``) plus ``.for_unit(unit)``, the ``wai.OpenAI`` of the chosen replica.
:class:`EndpointClients` is what a rollout actor holds: one ``openai.AsyncOpenAI`` per
endpoint, built lazily, and ``.for_unit(unit) -> (client, user_client)``.
"""
from __future__ import annotations

import asyncio
import hashlib
import json

from .backends import OpenAI, make_client, preflight, redact

__all__ = ["StickyRouter", "MultiEndpoint", "EndpointClients", "jump_hash"]

_AFFINITIES = ("rollout", "situation")
_MASK = (1 << 64) - 1


def jump_hash(key: int, buckets: int) -> int:
    """Jump consistent hash: a 64-bit ``key`` -> bucket in ``range(buckets)``."""
    b, j = -1, 0
    while j < buckets:
        b = j
        key = (key * 2862933555777941757 + 1) & _MASK
        j = int((b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b


def _check_urls(base_urls, argument: str) -> tuple[str, ...]:
    if isinstance(base_urls, str):
        base_urls = [base_urls]
    try:
        urls = tuple(str(u).rstrip("/") for u in base_urls)
    except TypeError:
        raise TypeError(f"{argument} must be a list of base URLs like ['http://10.0.0.5:8000/v1']; "
                        f"got {type(base_urls).__name__}") from None
    if not urls:
        raise ValueError(f"{argument} is empty; pass at least one base URL like 'http://10.0.0.5:8000/v1'")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"{argument}: every URL must start with http:// or https://; got {redact(repr(url))}")
    if len(set(urls)) != len(urls):
        raise ValueError(f"{argument} lists a URL twice: {list(urls)}; each replica once")
    return urls


class StickyRouter:
    """Chooses one of ``base_urls`` per unit, the same one for every turn of that unit.

    ``model``/``api_key`` are only used by :meth:`backend_for`. ``affinity``: ``"rollout"``
    (hash of the unit's key minus the attempt: a re-roll returns to the same cache) or
    ``"situation"`` (hash of scenario, phrasing and prompt).
    """

    __slots__ = ("base_urls", "model", "api_key", "affinity", "_backends")

    def __init__(self, base_urls, model: str | None = None, api_key: str | None = None,
                 affinity: str = "rollout"):
        if affinity not in _AFFINITIES:
            raise ValueError(f"affinity must be one of {list(_AFFINITIES)}; got {affinity!r}")
        self.base_urls = _check_urls(base_urls, "base_urls")
        self.model = model
        self.api_key = api_key
        self.affinity = affinity
        self._backends: list[OpenAI] | None = None

    def route_key(self, unit) -> tuple:
        s = unit.situation
        if self.affinity == "situation":
            return (s.scenario_id, s.phrasing_index, s.prompt)
        return (unit.run_id, s.scenario_id, s.phrasing_index, unit.rollout_index, unit.eval_run)

    def index_for(self, unit) -> int:
        """The replica's position in ``base_urls`` (a few microseconds)."""
        if len(self.base_urls) == 1:
            return 0
        blob = json.dumps(self.route_key(unit), separators=(",", ":"), default=str).encode()
        key = int.from_bytes(hashlib.sha256(blob).digest()[:8], "big")
        return jump_hash(key, len(self.base_urls))

    def url_for(self, unit) -> str:
        return self.base_urls[self.index_for(unit)]

    def backends(self) -> list[OpenAI]:
        """One ``wai.OpenAI`` per replica, in ``base_urls`` order (built once)."""
        if self._backends is None:
            self._backends = [OpenAI(self.model, url, self.api_key, key_env="VLLM_API_KEY", provider="vllm")
                              for url in self.base_urls]
        return self._backends

    def backend_for(self, unit) -> OpenAI:
        return self.backends()[self.index_for(unit)]

    def __getstate__(self):
        return {"base_urls": self.base_urls, "model": self.model, "api_key": self.api_key,
                "affinity": self.affinity}

    def __setstate__(self, state):
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self._backends = None


class MultiEndpoint:
    """One model served by several OpenAI-compatible replicas: ``agent=MultiEndpoint(model, urls)``.

    ``model=None`` means "ask the servers" (filled by :meth:`preflight`). The key defaults to
    ``VLLM_API_KEY`` or ``"EMPTY"``, read when needed. ``.base_url`` is the first replica's URL
    (a representative for messages); the URL a unit uses is ``.for_unit(unit).base_url``.
    """

    def __init__(self, model: str | None, base_urls, api_key: str | None = None, *,
                 affinity: str = "rollout"):
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"MultiEndpoint(model=...) must be the served model name, e.g. "
                             f"'Qwen/Qwen2.5-0.5B-Instruct', or None to ask the servers; got {model!r}")
        self.router = StickyRouter(base_urls, model, api_key, affinity)
        self.model = model
        self.provider = "vllm"

    @property
    def base_urls(self) -> tuple[str, ...]:
        return self.router.base_urls

    @property
    def base_url(self) -> str:
        return self.router.base_urls[0]

    @property
    def endpoints(self) -> list[OpenAI]:
        return self.router.backends()

    @property
    def api_key(self) -> str | None:
        return self.endpoints[0].api_key

    @property
    def key_env(self) -> str:
        return self.endpoints[0].key_env

    @property
    def name(self) -> str:
        return self.model or self.base_url

    def for_unit(self, unit) -> OpenAI:
        """The replica that plays every turn of ``unit`` (and its simulated user)."""
        return self.router.backend_for(unit)

    async def preflight(self, timeout: float = 5.0) -> "MultiEndpoint":
        """Check every replica answers ``GET /models`` (concurrently); a resolved copy.

        Raises RuntimeError naming the replica that did not answer. ``model=None`` takes the
        first model the first replica lists.
        """
        checked = await asyncio.gather(*(preflight(b, timeout) for b in self.endpoints),
                                       return_exceptions=True)
        replicas: list[OpenAI] = []
        for i, result in enumerate(checked):
            if isinstance(result, BaseException):
                raise RuntimeError(redact(f"replica {i} of {len(checked)} ({self.base_urls[i]}): {result}")) from None
            replicas.append(result)
        model = self.model or replicas[0].model
        return MultiEndpoint(model, self.base_urls, replicas[0].api_key, affinity=self.router.affinity)

    def __repr__(self) -> str:
        return (f"MultiEndpoint(model={self.model!r}, base_urls={redact(list(self.base_urls))}, "
                f"affinity={self.router.affinity!r})")

    def __eq__(self, other) -> bool:
        return isinstance(other, MultiEndpoint) and (self.model, self.base_urls) == (other.model, other.base_urls)

    def __hash__(self) -> int:
        return hash((self.model, self.base_urls))


class EndpointClients:
    """A rollout actor's clients: one ``openai.AsyncOpenAI`` per endpoint, made on first use.

    ``backend``/``user_backend`` are ``wai.OpenAI`` or :class:`MultiEndpoint` (or None for the
    user). :meth:`for_unit` returns ``(client, user_client)``; when the user is played by the
    same MultiEndpoint, both come from the same replica (one client, one prefix cache).
    """

    def __init__(self, backend, user_backend=None, *, timeout: float = 300.0, user_timeout: float = 60.0,
                 cache=None):
        self.cache = cache             # a response_cache.CacheSpec, or None: every client goes through it
        self.backend = backend
        self.user_backend = user_backend
        self.timeout = timeout
        self.user_timeout = user_timeout
        self._clients: dict = {}

    def _client(self, endpoint: OpenAI, timeout: float):
        key = (endpoint.base_url, timeout)
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = make_client(endpoint, timeout=timeout, cache=self.cache)
        return client

    def warm(self) -> None:
        """Build the clients of every endpoint now (``import openai`` and the client objects cost
        about half a second of CPU, better spent before the first unit than during it)."""
        roles = [(self.backend, self.timeout)]
        if self.user_backend is not None and self.user_backend != self.backend:
            roles.append((self.user_backend, self.user_timeout))
        for backend, timeout in roles:
            endpoints = backend.endpoints if isinstance(backend, MultiEndpoint) else [backend]
            for endpoint in endpoints:
                self._client(endpoint, timeout)

    def _pick(self, backend, unit) -> OpenAI:
        return backend.for_unit(unit) if isinstance(backend, MultiEndpoint) else backend

    def for_unit(self, unit) -> tuple:
        agent_ep = self._pick(self.backend, unit)
        client = self._client(agent_ep, self.timeout)
        if self.user_backend is None:
            return client, None
        if self.user_backend == self.backend:
            return client, client
        return client, self._client(self._pick(self.user_backend, unit), self.user_timeout)

    @property
    def open_clients(self) -> int:
        return len(self._clients)
