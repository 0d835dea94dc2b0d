"""``wai.Judge``: a binary 0/1 LLM judge over any OpenAI-compatible endpoint.

    judge = wai.Judge(rubric="The agent looks the order up before answering.")
    verdict = judge(row)          # {"reward": 0 | 1, "reason": "<one sentence>", "judge_meta": {...}}
    verdicts = judge_rows(judge, rows, concurrency=16)    # many rows, concurrently

Where the model lives, in order: ``base_url=`` (with ``model=`` and ``api_key=``), a ``model=``
spec string or ``wai.OpenAI`` backend, ``wai.configure(judge=...)``, then the ``WHILEAI_JUDGE``
environment variable (see ``agents/backends.py``). With none of them, building a Judge raises
RuntimeError at once -- before any rollout or any budget is spent. A bare model name
(``model="Qwen/Qwen3-8B"``) picks that model on the configured endpoint.

The prompt and the reply parsing live in ``judges/prompt.py``. Each request asks for a
schema-constrained verdict (``{"reward": 0|1, "reason", "markers"}``) in the dialect the endpoint
speaks, learned on the first request (``agents/structured.py``); ``judge_meta["structured_output"]``
records it (``"none"``: the server constrains nothing and the reply is parsed from free text). Without a rubric the judge grades
the conduct floor only and says so. Every verdict carries ``judge_meta``:
``{"model", "payload_chars", "max_tokens", "rubric_sha", "trust"}`` (``trust`` is filled by the
grading paths). A reply with no 0/1 verdict, an HTTP error or a timeout leaves the row
unjudged (``judge_status`` invalid_result / error / timeout), never a 0.
"""
from __future__ import annotations

import asyncio
import threading

from ...agents.backends import OpenAI, make_client, make_sync_client, preflight, redact, resolve_role
from ...agents.response_cache import cache_spec, unit_tally
from ...agents.structured import VERDICT_SCHEMA, create_structured, create_structured_sync, endpoint_key
from ...core.defaults import JUDGE_MAX_TOKENS, JUDGE_PAYLOAD_CHARS
from .prompt import judge_messages, parse_judge_reply, rubric_sha
from .contract import normalize_judge_result

__all__ = ["Judge", "judge_rows", "judge_rows_async", "run_sync", "NO_JUDGE_MESSAGE", "build_judge", "make_run_judge"]

NO_JUDGE_MESSAGE = (
    "the LLM judge needs an OpenAI-compatible endpoint and none is configured: set WHILEAI_JUDGE "
    "(e.g. 'vllm:<model>@http://host:8000/v1' or 'openai:gpt-4.1-mini' with OPENAI_API_KEY), call "
    "wai.configure(judge=...), or pass base_url= (and model=) to the judge; to grade offline pass "
    "grader=<callable> or grade='conduct'")
_RETRIES = 2


def run_sync(coro):
    """Run a coroutine to completion from sync code, even when this thread runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(value=_capture(coro)), daemon=True)
    thread.start()
    thread.join()
    if "error" in box["value"]:
        raise box["value"]["error"]
    return box["value"]["ok"]


def _capture(coro) -> dict:
    try:
        return {"ok": asyncio.run(coro)}
    except BaseException as exc:  # re-raised in the caller's thread
        return {"error": exc}


def _resolve_backend(model, base_url, api_key) -> OpenAI:
    backend: OpenAI | None
    if base_url is not None:
        name = model.model if isinstance(model, OpenAI) else model
        backend = OpenAI(name or None, str(base_url), api_key)
    elif model is None or isinstance(model, OpenAI) or (isinstance(model, str) and ":" in model):
        backend = resolve_role("judge", model)
    elif isinstance(model, str) and model.strip():
        base = resolve_role("judge")
        if base is None:
            raise RuntimeError(f"Judge(model={model!r}) names a model but no endpoint: " + NO_JUDGE_MESSAGE)
        backend = OpenAI(model.strip(), base.base_url, key_env=base.key_env, provider=base.provider)
    else:
        raise TypeError(f"Judge(model=...) takes a spec string, a wai.OpenAI backend or a model name; "
                        f"got {model!r}")
    if backend is None:
        raise RuntimeError(NO_JUDGE_MESSAGE)
    if api_key:
        backend = OpenAI(backend.model, backend.base_url, api_key, key_env=backend.key_env,
                         provider=backend.provider)
    if not backend.api_key:
        raise RuntimeError(f"the judge endpoint {redact(backend.base_url)} needs an API key: set "
                           f"{backend.key_env} or pass api_key=")
    return backend


class Judge:
    """A 0/1 LLM judge; callable on one row (the judge contract), or run over many rows with
    :func:`judge_rows`. See the module docstring for where the model is found."""

    def __init__(self, rubric: str | None = None, *, model=None, base_url: str | None = None,
                 api_key: str | None = None, policy: str = "", tools=None, use_privileged: bool = False,
                 name: str | None = None, payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS,
                 timeout: float = 60.0, cache: str | None = None):
        if rubric is not None and not isinstance(rubric, str):
            raise TypeError(f"Judge(rubric=...) is the grading criterion as text; got {type(rubric).__name__}")
        if isinstance(payload_chars, bool) or not isinstance(payload_chars, int) or payload_chars < 200:
            raise ValueError(f"Judge(payload_chars=...) caps the evidence per row: an int >= 200; "
                             f"got {payload_chars!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 16:
            raise ValueError(f"Judge(max_tokens=...) caps the judge's reply: an int >= 16; got {max_tokens!r}")
        self.rubric = rubric.strip() if rubric and rubric.strip() else None
        self.backend = _resolve_backend(model, base_url, api_key)
        self.policy = policy or ""
        self.tools = list(tools or [])
        self.use_privileged = bool(use_privileged)
        self.payload_chars = payload_chars
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.rubric_sha = rubric_sha(self.rubric)
        self.name = name or "llm_judge"
        self.dialect: str | None = None     # structured-output dialect of the endpoint (agents/structured.py)
        # cache=: a response cache file (agents/response_cache.py): a verdict asked again is read from it
        self.response_cache = cache_spec(cache, label="Judge(cache=...)")
        self._client = None
        self._lock = threading.Lock()

    # -------------------------------------------------------------- identity
    @property
    def model(self) -> str:
        return self.backend.name

    @property
    def version(self) -> str:
        """``<model>@<rubric_sha>``: stamped on rows as ``lineage.judge_version``."""
        return f"{self.model}@{self.rubric_sha}"

    @property
    def spec(self) -> str:
        return f"{self.backend.model or '?'}@{redact(self.backend.base_url)}"

    def meta(self) -> dict:
        return {"model": self.model, "payload_chars": self.payload_chars, "max_tokens": self.max_tokens,
                "rubric_sha": self.rubric_sha, "structured_output": self.dialect, "trust": None}

    def __repr__(self) -> str:
        crit = "rubric" if self.rubric else "conduct floor"
        return f"Judge({crit}, model={self.model!r}, base_url={redact(repr(self.backend.base_url))})"

    def __getstate__(self):   # picklable (Ray ships graders to actors): no client, no lock
        state = dict(self.__dict__)
        state["_client"], state["_lock"] = None, None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -------------------------------------------------------------- checking
    async def acheck(self, timeout: float = 5.0) -> "Judge":
        """Ask the endpoint for ``/models`` (and pin the model when none was named); raises
        RuntimeError naming what to fix. Call before a run so no budget is spent on a dead judge."""
        self.backend = await preflight(self.backend, timeout=timeout)
        return self

    def check(self, timeout: float = 5.0) -> "Judge":
        return run_sync(self.acheck(timeout))

    # --------------------------------------------------------------- judging
    def messages(self, row: dict) -> list[dict]:
        return judge_messages(row, rubric=self.rubric, policy=self.policy, tools=self.tools,
                              use_privileged=self.use_privileged, payload_chars=self.payload_chars)

    def _request(self, row: dict) -> dict:
        return {"model": self.backend.model, "messages": self.messages(row), "temperature": 0,
                "max_tokens": self.max_tokens}

    def verdict_of(self, reply_text) -> dict:
        """The judge-contract result for one reply text (``reward`` None when unreadable)."""
        parsed = parse_judge_reply(reply_text)
        meta = self.meta()
        if parsed["unsure"]:
            meta["unsure"] = True
        if parsed["reward"] is None:
            shown = " ".join(str(reply_text or "").split())[:80]
            return {"reward": None, "reason": f"the judge's reply held no 0/1 verdict: {shown!r}",
                    "judge_status": "invalid_result", "markers": None, "failure_class": None,
                    "judge_meta": meta}
        reason = parsed["reason"] or ("conduct floor graded; no reason given." if not self.rubric
                                      else "no reason given.")
        return {"reward": parsed["reward"], "reason": reason, "judge_meta": meta}

    def __call__(self, row: dict) -> dict:
        """Judge one row synchronously (thread-safe; one shared client)."""
        import openai   # lazy: openai (~0.5 s), only when an LLM judge grades

        if self.backend.model is None:
            self.check()
        with self._lock:
            if self._client is None:
                self._client = make_sync_client(self.backend, timeout=self.timeout, max_retries=_RETRIES,
                                                cache=getattr(self, "response_cache", None), role="judge")
        try:
            with unit_tally() as looked:
                reply, self.dialect = create_structured_sync(self._client, self._request(row), VERDICT_SCHEMA,
                                                             "verdict", endpoint_key(self.backend), self.dialect)
        except openai.APITimeoutError as exc:
            raise TimeoutError(f"the judge at {redact(self.backend.base_url)} timed out after {self.timeout:g}s") from exc
        return self._noted(self.verdict_of(_reply_text(reply)), looked)

    def _noted(self, verdict: dict, looked: dict) -> dict:
        """With a response cache, ``judge_meta["cache"]`` says whether the verdict's reply was read
        from it ("hit") or asked of the model ("miss"); a run's report sums them."""
        if getattr(self, "response_cache", None) is not None and looked.get("judge"):
            verdict["judge_meta"]["cache"] = "miss" if looked["judge"]["misses"] else "hit"
        return verdict

    async def ajudge(self, row: dict, client=None) -> dict:
        """Judge one row on an ``openai.AsyncOpenAI`` client (one is made when none is given)."""
        if client is None:
            async with make_client(self.backend, timeout=self.timeout, cache=getattr(self, "response_cache", None),
                                   role="judge") as own:
                return await self.ajudge(row, own)
        import openai   # lazy: openai

        for attempt in range(_RETRIES + 1):
            try:
                with unit_tally() as looked:
                    reply, self.dialect = await create_structured(client, self._request(row), VERDICT_SCHEMA,
                                                                  "verdict", endpoint_key(self.backend), self.dialect)
                return self._noted(self.verdict_of(_reply_text(reply)), looked)
            except openai.APITimeoutError as exc:
                if attempt == _RETRIES:
                    raise TimeoutError(f"the judge at {redact(self.backend.base_url)} timed out") from exc
            except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError):
                if attempt == _RETRIES:
                    raise
            await asyncio.sleep(0.2 * (attempt + 1))
        raise RuntimeError("unreachable")  # pragma: no cover


def _reply_text(reply) -> str:
    try:
        return reply.choices[0].message.content or ""
    except (AttributeError, IndexError):
        return ""


def _finish(value, judge: Judge) -> dict:
    """A normalized verdict that keeps ``judge_meta`` (and an explicit invalid_result)."""
    if isinstance(value, dict) and value.get("judge_status") == "invalid_result":
        return dict(value)
    verdict = normalize_judge_result(value)
    meta = value.get("judge_meta") if isinstance(value, dict) else None
    verdict["judge_meta"] = meta if isinstance(meta, dict) else judge.meta()
    return verdict


async def judge_rows_async(judge: Judge, rows, concurrency: int = 16) -> list[dict]:
    """Verdicts for ``rows`` in order, at most ``concurrency`` requests in flight.

    Each verdict is ``normalize_judge_result``'s dict plus ``judge_meta``; a row whose request
    failed gets ``judge_status`` error/timeout and ``reward`` None (the others still land).
    """
    rows = list(rows)
    if judge.backend.model is None:
        await judge.acheck()
    limit = asyncio.Semaphore(max(1, int(concurrency)))
    async with make_client(judge.backend, timeout=judge.timeout, cache=getattr(judge, "response_cache", None),
                           role="judge") as client:
        async def one(row):
            async with limit:
                try:
                    return _finish(await judge.ajudge(row, client), judge)
                except Exception as exc:  # marked on the row, never a 0
                    return _finish(exc, judge)
        return list(await asyncio.gather(*(one(r) for r in rows)))


def judge_rows(judge: Judge, rows, concurrency: int = 16) -> list[dict]:
    """Sync :func:`judge_rows_async` (works inside a running event loop too)."""
    return run_sync(judge_rows_async(judge, rows, concurrency))


def build_judge(spec, base_url, model, api_key, rubric, policy, tools, use_privileged, payload_chars,
                 max_tokens) -> Judge:
    """A checked Judge from what a grading call was given (a ready ``wai.Judge`` gets the run's context)."""
    if isinstance(spec, Judge):   # a ready judge (e.g. data.grade(wai.Judge(...))): the run fills its context
        spec.policy = spec.policy or policy or ""
        spec.tools = spec.tools or list(tools or [])
        return spec.check()
    choice = model if base_url is not None else (spec if spec is not None else model)
    judge = Judge(rubric, model=choice, base_url=base_url, api_key=api_key, policy=policy or "",
                  tools=tools, use_privileged=use_privileged, payload_chars=payload_chars,
                  max_tokens=max_tokens)
    return judge.check()


def make_run_judge(rubric=None, *, policy: str = "", tools=None, use_privileged: bool = False,
                   payload_chars: int = JUDGE_PAYLOAD_CHARS, max_tokens: int = JUDGE_MAX_TOKENS, model=None) -> Judge:
    """The judge ``simulate(grade=True)`` uses, built and checked before any budget is spent
    (RuntimeError naming WHILEAI_JUDGE / configure(judge=) when no endpoint is configured)."""
    return build_judge(None, None, model, None, rubric, policy, tools, use_privileged,
                        payload_chars, max_tokens)
