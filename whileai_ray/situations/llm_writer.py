"""The LLM situation writer (``simulator="hosted"``, a spec string or a backend): a model words the asks.

The world of a situation still comes from the :class:`TemplateWriter` (same ``scenario_id``
scheme, ids, world state, reference, ask family and drawn style tags), so ``tasks=`` replay,
``dimensions=`` and ``hard_share`` work exactly as offline. The model is then asked for the
opening message itself: the request lists the tool schemas, the policy, the cell's axis values
with what each asks of the message, the ask family, the reference ids the world knows and the
style tags to realize (see ``writer_prompt.py``). The row gets ``arm="llm_guided"`` and
``writer_model=<model>``.

What the writer guarantees on top of the model:

* a reply that is empty, junk, cut off (``finish_reason="length"``) or an HTTP failure falls back
  to the template situation for that cell (``writer_model="template"``, ``extra["writer_fallback"]``
  says why) and is counted in :attr:`LLMWriter.writer_errors`; :meth:`LLMWriter.warning` words it;
* every reference id is in the text (a missing one is appended as a short sentence), and the
  texture tag is applied to the text; length and ask tags are re-measured on the text.

``write_many`` is the async batch call; ``write`` / ``write_batch`` / ``amplify`` are sync wrappers
for the planner's thread that run on a private event loop in a daemon thread. Seed amplification
lives in ``seed_amplifier.py``.
"""
from __future__ import annotations

import asyncio
import threading

from ..agents.backends import OpenAI, configure, make_client, parse_spec, preflight, resolve_role
from ..core.rng import unit_rng
from .grid import cell_key
from .phrasing import apply_texture
from .seed_amplifier import SeedAmplifier
from .situation import Situation
from .template_writer import TemplateWriter
from .tool_intent import ToolIntent, intents_for, plural
from ..agents.response_cache import CacheSpec, unit_tally
from ..agents.structured import ASK_SCHEMA, create_structured, endpoint_key
from .writer_prompt import (WRITER_MARKER, ask_goal, ask_request, cell_lines, parse_message, system_message,
                            tools_block)

__all__ = ["LLMWriter", "WRITER_MARKER", "resolve_writer", "fallback_note"]

_CACHE_CAP = 100_000


def resolve_writer(simulator=None, agent=None) -> OpenAI | None:
    """The writer's backend for ``simulate(simulator=..., agent=...)``, or None for offline.

    ``False`` (passed or configured) is the template writer. Unset / ``"hosted"``: the configured
    or ``$WHILEAI_SIMULATOR`` writer, else the agent's model when the agent is a backend or spec
    string. Nothing found: RuntimeError (raise it before any budget is spent).
    """
    if simulator is False or (simulator in (None, "hosted") and configure().get("simulator") is False):
        return None
    backend = resolve_role("simulator", simulator)
    if backend is None and agent is not None and (isinstance(agent, OpenAI) or isinstance(agent, str)):
        backend = parse_spec(agent, argument="agent")
    if backend is None:
        raise RuntimeError(
            "simulator='hosted' (the default) needs a situation-writer endpoint and none is configured: "
            "pass simulator='vllm:<model>@<url>', 'openai:<model>', an http(s):// URL or wai.OpenAI(...), "
            "or set wai.configure(simulator=...) or $WHILEAI_SIMULATOR; or pass simulator=False for the "
            "offline template writer (no key needed)")
    return backend


class LLMWriter:
    """Writes grid situations with a model; probes, seeds and mutations go to the fallback.

    ``backend``: a backend or spec string. ``fallback``: the TemplateWriter class (built here with
    the same tools, policy and seed) or a ready writer instance.
    """

    def __init__(self, backend, tools, system_prompt: str = "", seed: int = 0, temperature: float = 0.9,
                 completions_per_request: int = 1, fallback=TemplateWriter, *, concurrency: int = 16,
                 max_tokens: int = 400, timeout: float = 120.0, scaffold: str | None = None):
        self.backend = parse_spec(backend, argument="simulator")
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 <= temperature <= 2:
            raise ValueError(f"temperature must be a number in [0, 2]; got {temperature!r}")
        for name, value in (("completions_per_request", completions_per_request),
                            ("concurrency", concurrency), ("max_tokens", max_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number >= 1; got {value!r}")
        self.tools, self.system_prompt, self.seed = list(tools or []), system_prompt or "", int(seed)
        self.temperature, self.completions_per_request = float(temperature), completions_per_request
        self.concurrency, self.max_tokens, self.timeout = concurrency, max_tokens, float(timeout)
        self.scaffold = (scaffold or "").strip()    # simulate(scaffold=): appended to the writer's system message
        self.fallback = fallback(self.tools, self.system_prompt, self.seed) if isinstance(fallback, type) else fallback
        intents = getattr(self.fallback, "intents", None) or intents_for(self.tools)
        self._intents = {i.name: i for i in intents}
        self._first_intent = intents[0] if intents else None
        self._tools_text = tools_block(self.tools)
        self._cells: dict[str, tuple[str, ToolIntent | None, str]] = {}     # cell key -> (text, intent, kind)
        self._cache: dict[tuple[str, int, int], Situation] = {}             # (cell key, instance, phrasing)
        self.errors_by: dict[str, int] = {}                                 # writer error reason -> count
        self.prefetched = 0              # asks written ahead by ``prefetch``
        self.dialect = None              # structured-output dialect of the endpoint, learned on first use
        self.written = self.writer_errors = self.requests = 0
        self.amplifier = SeedAmplifier(self)
        self.response_cache: CacheSpec | None = None       # a response_cache.CacheSpec when advanced["cache"] is on (config/roles.py)
        self.cache_counts = {"hits": 0, "misses": 0}
        self._setup_runtime()

    def _setup_runtime(self) -> None:
        self._lock = threading.Lock()
        self._loop = self._thread = self._client = self._client_loop = None

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_lock", "_loop", "_thread", "_client", "_client_loop")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._setup_runtime()

    # ---- identity and accounting -----------------------------------------------------
    @property
    def name(self) -> str:
        """The model tag rows carry as ``writer_model``."""
        return self.backend.name

    def count_error(self, reason: str, n: int = 1) -> None:
        self.writer_errors += n
        self.errors_by[reason] = self.errors_by.get(reason, 0) + n

    def warning(self) -> str | None:
        """A plain-words note when some asks fell back to the template writer, else None."""
        return fallback_note(self.name, self.written, self.writer_errors, self.errors_by)

    def stats(self) -> dict:
        """What this writer did (the driver's copy reports it back with the run's result)."""
        out = {"written": self.written, "errors": self.writer_errors, "by": dict(self.errors_by),
               "prefetched": self.prefetched, "requests": self.requests, "structured_output": self.dialect}
        if getattr(self, "response_cache", None) is not None:
            out["cache"] = dict(self.cache_counts)
        return out

    # ---- model calls ---------------------------------------------------------------------
    async def _ready(self):
        if self.backend.model is None:
            self.backend = await preflight(self.backend)
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client, self._client_loop = make_client(self.backend, timeout=self.timeout, role="writer",
                                                          cache=getattr(self, "response_cache", None)), loop
        return self._client

    async def complete(self, system: str, user: str, sem=None, schema: dict | None = None,
                       name: str = "ask") -> tuple[list, str | None]:
        """``([(content, finish_reason), ...], error_reason)`` for one chat request; with ``schema``
        the reply is constrained to it in the endpoint's dialect (``agents/structured.py``)."""
        import openai   # lazy: openai (~0.5 s), only for the LLM writer

        if sem is not None:
            async with sem:
                return await self.complete(system, user, schema=schema, name=name)
        client = await self._ready()
        if self.scaffold:
            system = f"{system}\n\nGuidance for this run:\n{self.scaffold}"
        kw = {"n": self.completions_per_request} if self.completions_per_request > 1 else {}
        self.requests += 1
        request = {"model": self.backend.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                   "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}], **kw}
        with unit_tally() as looked:       # the response cache's lookups, for stats()["cache"]
            try:
                if schema is None:
                    resp = await client.chat.completions.create(**request)
                else:
                    resp, self.dialect = await create_structured(client, request, schema, name,
                                                                 endpoint_key(self.backend), self.dialect)
                return [(c.message.content if c.message else None, c.finish_reason) for c in resp.choices or ()], None
            except (openai.APIError, ValueError, TypeError, AttributeError, asyncio.TimeoutError):
                return [], "http_error"
            finally:
                for key in ("hits", "misses"):
                    self.cache_counts[key] += (looked.get("writer") or {}).get(key, 0)

    # ---- grid situations -----------------------------------------------------------------
    def _cell_text(self, cell: dict) -> tuple[str, ToolIntent | None, str]:
        ck = cell_key(cell)
        got = self._cells.get(ck)
        if got is None:
            tool = cell.get("tool")
            kind = "unrelated" if tool == "unrelated" or self._first_intent is None else (
                "multi" if tool == "multi_tool" else "tool")
            intent = None if kind == "unrelated" else self._intents.get(tool, self._first_intent)
            got = self._cells[ck] = ("\n".join(cell_lines(cell, intent)), intent, kind)
        return got

    def _family_text(self, base: Situation, intent, kind: str) -> str:
        if kind == "unrelated" or intent is None:
            return "an off-topic request that the agent's tools do not cover"
        ids = base.ref_ids
        target = f"the {intent.noun} {ids[0]}" if ids else f"{intent.article} {intent.noun}"
        if kind == "multi":
            second = f"the record {ids[1]}" if len(ids) > 1 else "a second record"
            return f"two steps in one message: {intent.verb} {target}, then a second action on {second}"
        if base.ask_family == "general":
            return f"a general question about {plural(intent.noun)}, not an action on one record"
        if base.ask_family == "vague":
            return f"the user mentions {target} but does not say what they want done with it"
        return f"the user wants the agent to {intent.verb} {target}"

    async def write_many(self, requests) -> list[Situation]:
        """One Situation per ``(cell, instance, phrasing)``, in order (``llm_guided`` when the model wrote it)."""
        reqs = [tuple(r) for r in requests]
        for r in reqs:
            if len(r) != 3 or not isinstance(r[0], dict):
                raise TypeError(f"write_many takes (cell dict, instance, phrasing) tuples; got {r!r}")
        await self._ready()
        sem = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*(self._write_one(c, int(i), int(p), sem) for c, i, p in reqs)))

    async def _write_one(self, cell: dict, instance: int, phrasing: int, sem) -> Situation:
        key = (cell_key(cell), instance, phrasing)
        hit = self._cache.get(key)
        if hit is not None:
            return _copy(hit)
        base = self.fallback.write(cell, instance, phrasing)
        cell_text, intent, kind = self._cell_text(cell)
        user = ask_request(self._tools_text, self.system_prompt, cell_text,
                           self._family_text(base, intent, kind), base.ref_ids, base.tags)
        choices, reason = await self.complete(system_message(), user, sem, ASK_SCHEMA, "ask")
        text = goal = None
        for content, finish in choices:
            if finish == "length":
                reason = reason or "truncated"
                continue
            text = parse_message(content)
            if text is not None:
                goal = ask_goal(content)
                break
            reason = "empty" if not (content or "").strip() else "junk"
        if text is None:
            self.count_error(reason or "empty")
            base.extra["writer_fallback"] = reason or "empty"
            sit = base
        else:
            self.written += 1
            sit = self._realize(base, text)
            if goal:
                sit.extra["writer_goal"] = goal      # a hidden field: what the person wants, never shown
        if len(self._cache) >= _CACHE_CAP:
            self._cache.clear()
        self._cache[key] = sit
        return _copy(sit)

    def _realize(self, base: Situation, text: str) -> Situation:
        """The model's text as the situation's prompt, with ids present and tags made true."""
        tags, extra = dict(base.tags), dict(base.extra)
        missing = [i for i in base.ref_ids if i.lower() not in text.lower()]
        if missing:
            text = text.rstrip() + f" It's about {' and '.join(missing)}."
            extra["ids_appended"] = missing
        texture = tags.get("texture", "standard")
        if texture != "standard":
            rnd = unit_rng(self.seed, "llm-texture", base.scenario_id, base.phrasing_index).random
            text, notes = apply_texture([text], texture, rnd)
            if notes.pop("texture", None) == "standard":
                tags["texture"] = "standard"
            extra.update(notes)
        if "length" in tags:
            words = len(text.split())
            tags["length"] = "short prompt" if words <= 20 else "medium prompt" if words <= 60 else "long prompt"
        ask, q = tags.get("ask"), text.count("?")
        if ask == "question" and not q or ask == "ask" and q or ask == "several asks" and q < 2:
            del tags["ask"]
        return Situation(base.scenario_id, text, base.phrasing_index, dict(base.dims), base.tier, tags,
                         base.ask_family, base.world_state, base.reference, list(base.ref_ids),
                         "llm_guided", self.name, "", None, extra)

    # ---- sync wrappers (the planner's thread) -------------------------------------------
    def _run(self, coro):
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                                name="whileai-llm-writer")
                self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def check(self) -> "LLMWriter":
        """Preflight the endpoint now (RuntimeError naming the key or URL); fills in the model."""
        self.backend = self._run(preflight(self.backend))
        return self

    def write(self, cell: dict, instance: int, phrasing: int = 0) -> Situation:
        hit = self._cache.get((cell_key(cell), int(instance), int(phrasing)))
        return _copy(hit) if hit is not None else self._run(self.write_many([(cell, instance, phrasing)]))[0]

    def write_batch(self, requests) -> list[Situation]:
        return self._run(self.write_many(requests))

    def has(self, cell: dict, instance: int, phrasing: int = 0) -> bool:
        """True when ``write(cell, instance, phrasing)`` will answer from the cache."""
        return (cell_key(cell), int(instance), int(phrasing)) in self._cache

    def prefetch(self, requests) -> int:
        """Write the not-yet-cached ``(cell, instance, phrasing)`` asks, ``concurrency`` at a time,
        into the cache that ``write`` reads (the planner calls this once a round); returns how
        many were written."""
        todo = list(dict.fromkeys((cell_key(c), int(i), int(p)) for c, i, p in requests))
        cells = {cell_key(c): c for c, _, _ in requests}
        todo = [(cells[k], i, p) for k, i, p in todo if (k, i, p) not in self._cache]
        if todo:
            self._run(self.write_many(todo))
            self.prefetched += len(todo)
        return len(todo)

    async def amplify_seed(self, seed_text: str, n: int) -> list[str]:
        """``n`` distinct rewordings of a seed that keep its ids (template mutations fill a shortfall)."""
        return [text for text, _ in await self.amplifier.variations(seed_text, n)]

    async def amplified_situations(self, seed_text: str, seed_index: int, n: int) -> list[Situation]:
        return await self.amplifier.situations(seed_text, seed_index, n)

    def amplify(self, seed_text: str, seed_index: int, n: int) -> list[Situation]:
        return self._run(self.amplifier.situations(seed_text, seed_index, n))

    # ---- cell-less situations: the fallback writes them ---------------------------------
    def probe(self, index: int) -> Situation:
        return self.fallback.probe(index)

    def seed_situation(self, text: str, index: int) -> Situation:
        return self.fallback.seed_situation(text, index)

    def mutate(self, parent: Situation, index: int) -> Situation:
        return self.fallback.mutate(parent, index)

    def close(self) -> None:
        """Stop the private loop (sync callers); safe to call twice."""
        loop, thread = self._loop, self._thread
        if loop is not None:
            if self._client is not None and self._client_loop is loop:
                try:
                    asyncio.run_coroutine_threadsafe(self._client.close(), loop).result(10)
                except Exception:   # closing is best effort
                    pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
        self._setup_runtime()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def fallback_note(name: str, written: int, errors: int, by: dict) -> str | None:
    """The warning for asks that fell back to the template writer (None when none did)."""
    if not errors:
        return None
    why = ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
    return (f"the situation writer {name} failed on {errors} of {written + errors} asks ({why}); those "
            f"came from the template writer (writer_model='template'). Check the simulator= endpoint, or "
            f"pass simulator=False.")


def _copy(s: Situation) -> Situation:
    return Situation(s.scenario_id, s.prompt, s.phrasing_index, dict(s.dims), s.tier, dict(s.tags),
                     s.ask_family, s.world_state, s.reference, list(s.ref_ids), s.arm, s.writer_model,
                     s.selection_reason, s.parent_failure_id, dict(s.extra))
