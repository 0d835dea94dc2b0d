"""Model backends: where an OpenAI-compatible model lives, and how a role finds its model.

A *role* (agent, situation writer = ``simulator``, simulated user = ``user_model``, judge) is
played by a backend object, :class:`OpenAI`, or by a spec string that :func:`parse_spec` turns
into one:

* ``"openai:<model>"``: api.openai.com (or ``OPENAI_BASE_URL``), key from ``OPENAI_API_KEY``.
* ``"vllm:<model>@<url>"``: a vLLM (or SGLang, llama.cpp) server; key ``VLLM_API_KEY`` or
  ``"EMPTY"``. ``<url>`` may omit the scheme (http assumed) and ``/v1`` (appended).
* ``"http(s)://host:port/v1"``: any OpenAI-compatible endpoint; the model is the first id that
  ``GET /models`` lists, filled in by :func:`preflight`. Key ``OPENAI_API_KEY`` or ``"EMPTY"``.

:func:`configure` sets process defaults per role; :func:`resolve_role` picks, in order, the
value the caller passed, the configured default, then the environment (``WHILEAI_SIMULATOR``,
``WHILEAI_JUDGE``, ``WHILEAI_USER_MODEL``). :func:`preflight` checks a backend before any budget
is spent. Keys never appear in a repr, an error message or a row: only the env variable's name,
and a key written into a URL (``http://user:sk-...@host/v1``, ``?api_key=...``) shows as ``***``
(:func:`redact`) wherever a URL or a spec is printed.
"""
from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["OpenAI", "parse_spec", "configure", "resolve_role", "preflight", "make_client", "make_sync_client",
           "reset_configuration", "redact", "ROLES"]

OPENAI_URL = "https://api.openai.com/v1"
ROLES = {"agent": None, "simulator": "WHILEAI_SIMULATOR", "judge": "WHILEAI_JUDGE",
         "user_model": "WHILEAI_USER_MODEL"}
_UNSET: Any = object()
_DEFAULTS: dict = {}
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s'\"@]*@")
_SECRET_PARAM = re.compile(r"(?i)([?&][^=&#\s'\"]*(?:key|token|secret|password|passwd|auth|sig)[^=&#\s'\"]*=)"
                           r"[^&#\s'\"]*")


def redact(text: Any) -> str:
    """``text`` with the userinfo of every URL in it (``user:key@``) and the values of key-like
    query parameters (``api_key=``, ``token=``...) replaced by ``***``: what an error message, a
    repr or a row may show of a URL (a key pasted into ``base_url`` is a key all the same)."""
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub(r"\1***@", str(text)))


class OpenAI:
    """An OpenAI-compatible chat model: ``OpenAI(model, base_url=None, api_key=None)``.

    ``base_url`` defaults to ``OPENAI_BASE_URL`` or api.openai.com. ``api_key`` defaults to the
    env variable named by ``key_env`` (``OPENAI_API_KEY``), read when the key is needed, so a
    backend built on a laptop and shipped to a worker reads that worker's environment unless
    :meth:`resolved` pinned it first. ``model=None`` means "ask the server" (see preflight).
    """

    __slots__ = ("model", "base_url", "_api_key", "key_env", "provider")

    def __init__(self, model: str | None, base_url: str | None = None, api_key: str | None = None, *,
                 key_env: str = "OPENAI_API_KEY", provider: str = "openai"):
        if model is not None and (not isinstance(model, str) or not model.strip()):
            raise ValueError(f"OpenAI(model=...) must be a model name like 'gpt-4.1-mini'; got {model!r}")
        if base_url is not None and not str(base_url).startswith(("http://", "https://")):
            raise ValueError("OpenAI(base_url=...) must start with http:// or https://; got "
                             f"{redact(repr(base_url))}")
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        self._api_key = api_key
        self.key_env = key_env
        self.provider = provider

    @property
    def needs_key(self) -> bool:
        """Only the hosted OpenAI API insists on a key; local servers get ``"EMPTY"``."""
        return "api.openai.com" in self.base_url

    @property
    def api_key(self) -> str | None:
        key = self._api_key or os.environ.get(self.key_env)
        if not key and not self.needs_key:
            return "EMPTY"
        return key or None

    @property
    def name(self) -> str:
        """The model tag rows carry (``model_version``, ``user_model``, ``judge_meta.model``)."""
        return self.model or redact(self.base_url)

    def resolved(self, model: str | None = None) -> "OpenAI":
        """A copy with the key read now (from the env) and ``model`` filled in."""
        return OpenAI(model or self.model, self.base_url, self.api_key, key_env=self.key_env,
                      provider=self.provider)

    def __repr__(self) -> str:
        key = "set" if (self._api_key or os.environ.get(self.key_env)) else "unset"
        return f"OpenAI(model={self.model!r}, base_url={redact(repr(self.base_url))}, api_key=<{key}>)"

    def __eq__(self, other) -> bool:
        return isinstance(other, OpenAI) and (self.model, self.base_url) == (other.model, other.base_url)

    def __hash__(self) -> int:
        return hash((self.model, self.base_url))

    def __getstate__(self):
        return {s: getattr(self, s) for s in self.__slots__}

    def __setstate__(self, state):
        for slot, value in state.items():
            object.__setattr__(self, slot, value)


def _vllm_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    path = url.partition("://")[2].partition("/")[2]
    return url.rstrip("/") if path.strip("/") else url.rstrip("/") + "/v1"


def parse_spec(spec: Any, *, argument: str = "agent") -> OpenAI:
    """A backend from a spec string or a backend object (returned as is).

    ``argument`` names the caller's keyword in error messages.
    """
    if isinstance(spec, OpenAI):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise TypeError(f"{argument}= must be a backend (wai.OpenAI(...)) or a spec string such as "
                        f"'openai:gpt-4.1-mini', 'vllm:<model>@<url>' or 'http://host:port/v1'; got "
                        f"{redact(repr(spec))}")
    spec = spec.strip()
    shown = redact(repr(spec))
    if spec.startswith(("http://", "https://")):
        return OpenAI(None, spec.rstrip("/"))
    provider, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ValueError(f"{argument}={shown} is not a backend spec; use 'openai:<model>', "
                         f"'vllm:<model>@<url>' or an http(s):// URL of an OpenAI-compatible server")
    if provider == "openai":
        return OpenAI(rest)
    if provider == "vllm":
        model, at, url = rest.partition("@")
        if not at or not model or not url:
            raise ValueError(f"{argument}={shown}: a vLLM spec is 'vllm:<model>@<url>', "
                             f"e.g. 'vllm:Qwen/Qwen3-8B@http://localhost:8000/v1'")
        return OpenAI(model, _vllm_url(url), key_env="VLLM_API_KEY", provider="vllm")
    raise ValueError(f"{argument}={shown}: provider {provider!r} is not supported; whileai_ray speaks to "
                     f"OpenAI-compatible endpoints: 'openai:<model>', 'vllm:<model>@<url>' or an http(s):// URL")


def configure(*, agent: Any = _UNSET, judge: Any = _UNSET, simulator: Any = _UNSET,
              user_model: Any = _UNSET, ray: Any = _UNSET) -> dict:
    """Set process-wide defaults per role (validated now); ``None`` clears a role.

    ``simulator=False`` pins the offline template writer. ``ray={...}`` sets the default Ray
    options of every run (the keys of ``advanced={"ray": {...}}``: ``rollout_actors``,
    ``concurrency_per_actor``, ``judge_actors``, ``num_cpus``, ``num_gpus``, ``resources``,
    ``scheduling_strategy``, ``edge_writing``: False keeps the writing of the planner's asks
    on the Driver); a run's own ``advanced["ray"]`` wins key by key. Returns the
    current defaults.
    """
    if ray is not _UNSET:
        if ray is None:
            _DEFAULTS.pop("ray", None)
        elif isinstance(ray, dict):
            unknown = sorted(set(ray) - RAY_OPTION_KEYS)
            if unknown:
                raise ValueError(f"configure(ray=...) has no option {unknown[0]!r}; options: {sorted(RAY_OPTION_KEYS)}")
            _DEFAULTS["ray"] = dict(ray)
        else:
            raise TypeError(f"configure(ray=...) takes a dict of Ray options; got {type(ray).__name__}")
    for role, value in (("agent", agent), ("judge", judge), ("simulator", simulator),
                        ("user_model", user_model)):
        if value is _UNSET:
            continue
        if value is None:
            _DEFAULTS.pop(role, None)
        elif value is False and role == "simulator":
            _DEFAULTS[role] = False
        else:
            _DEFAULTS[role] = parse_spec(value, argument=role)
    return dict(_DEFAULTS)


RAY_OPTION_KEYS = frozenset({"rollout_actors", "concurrency_per_actor", "judge_actors", "num_cpus", "num_gpus",
                             "resources", "scheduling_strategy", "max_restarts", "edge_writing"})


def configured_ray_options() -> dict:
    """The Ray options ``configure(ray=...)`` set (empty when none)."""
    return dict(_DEFAULTS.get("ray") or {})


def reset_configuration() -> None:
    """Forget every :func:`configure` default (tests use this)."""
    _DEFAULTS.clear()


def resolve_role(role: str, value: Any = None) -> OpenAI | None:
    """The backend for ``role``: ``value``, else configure()'s default, else the env; or None.

    ``value=False`` (and a configured ``simulator=False``) resolves to None: offline.
    ``value="hosted"`` (the docs' default written out) means the same as leaving it unset.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {sorted(ROLES)}; got {role!r}")
    if value == "hosted":
        value = None
    if value is False:
        return None
    if value is not None:
        return parse_spec(value, argument=role)
    if role in _DEFAULTS:
        return _DEFAULTS[role] or None
    env = ROLES[role]
    if env and os.environ.get(env, "").strip():
        return parse_spec(os.environ[env], argument=f"{role} (from ${env})")
    return None


async def preflight(backend: OpenAI, timeout: float = 5.0) -> OpenAI:
    """Check the key and the endpoint before any budget is spent; return a resolved backend.

    Raises RuntimeError naming the missing env variable, or the URL that did not answer
    ``GET /models``. When the backend has no model yet, the first listed model is taken.
    """
    import httpx   # lazy: httpx, only when an endpoint is probed

    key = backend.api_key
    shown = redact(backend.base_url)
    if not key:
        raise RuntimeError(f"no API key for {shown} (model {backend.model!r}): set "
                           f"{backend.key_env} or pass api_key= to wai.OpenAI(...)")
    url, shown_url = backend.base_url + "/models", shown + "/models"
    try:
        async with httpx.AsyncClient(timeout=timeout) as http:
            response = await http.get(url, headers={"Authorization": f"Bearer {key}"})
    except httpx.HTTPError as exc:
        raise RuntimeError(f"the model endpoint {shown_url} did not answer ({type(exc).__name__}); "
                           f"is the server running and the URL right?") from None
    if response.status_code in (401, 403):
        raise RuntimeError(f"{shown_url} refused the key (HTTP {response.status_code}); "
                           f"check {backend.key_env} or the api_key= you passed")
    if response.status_code != 200:
        raise RuntimeError(f"the model endpoint {shown_url} answered HTTP {response.status_code} to GET /models")
    model = backend.model
    if model is None:
        try:
            ids = [m["id"] for m in response.json().get("data", [])]
        except (ValueError, AttributeError, KeyError, TypeError):
            ids = []
        if not ids:
            raise RuntimeError(f"{shown_url} lists no models; name one: 'vllm:<model>@{shown}'")
        model = ids[0]
    return backend.resolved(model)


def make_client(backend: OpenAI, *, timeout: float = 300.0, cache=None, role: str = "agent"):
    """An ``openai.AsyncOpenAI`` for one actor (no SDK retries: play retries itself).

    Model play sends through it with ``agents.chat_call.chat_completion`` (a raw post, about
    0.9 ms of CPU a request here, against about 1.5 ms for the typed ``create``). A plain-http
    endpoint without a proxy (vLLM, llama.cpp) gets ``http_transport.KeepAliveTransport`` under
    httpx, whose pool does not re-check every idle connection on each request. ``cache`` (a
    ``response_cache.CacheSpec``) puts ``http_transport.CachingTransport`` above it, counting
    its requests as ``role``'s.
    """
    import openai   # lazy: openai (~0.5 s), only for a model-backed role

    from .http_transport import CachingTransport, KeepAliveTransport, use_keepalive_transport   # lazy: httpx
    http_client = None
    if use_keepalive_transport(backend.base_url) or cache is not None:
        import httpx   # lazy: httpx
        transport: httpx.AsyncBaseTransport = (KeepAliveTransport() if use_keepalive_transport(backend.base_url)
                                               else httpx.AsyncHTTPTransport())
        if cache is not None:
            transport = CachingTransport(transport, cache, role)
        http_client = httpx.AsyncClient(transport=transport, timeout=timeout)
    # openai takes an httpx (or httpx2) client at runtime (is_legacy_httpx_async_client); its annotation names httpx2 only
    return openai.AsyncOpenAI(base_url=backend.base_url, api_key=backend.api_key or "EMPTY",
                              timeout=timeout, max_retries=0, http_client=http_client)  # type: ignore[arg-type]


def make_sync_client(backend: OpenAI, *, timeout: float, max_retries: int, cache=None, role: str = "judge"):
    """An ``openai.OpenAI`` (sync; the judge's ``__call__``), through the response cache when
    ``cache`` is given."""
    import openai   # lazy: openai

    http_client = None
    if cache is not None:
        import httpx   # lazy: httpx

        from .http_transport import SyncCachingTransport
        http_client = httpx.Client(transport=SyncCachingTransport(httpx.HTTPTransport(), cache, role), timeout=timeout)
    # openai takes an httpx (or httpx2) client at runtime (is_legacy_httpx_sync_client); its annotation names httpx2 only
    return openai.OpenAI(base_url=backend.base_url, api_key=backend.api_key, timeout=timeout,
                         max_retries=max_retries, http_client=http_client)  # type: ignore[arg-type]
