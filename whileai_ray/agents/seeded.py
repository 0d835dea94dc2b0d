"""``seeded_agent``: a fast offline agent that makes known mistakes at a known rate.

It picks a tool from the message, pulls an id out of the text, makes exactly one call through
the mock world (so faults and world state apply), and answers honestly from the result. Its
arguments come from the tool's JSON Schema (``world/schema_values.py``): the id from the text
where the parameter takes it, every other record id from the ids the rollout's world holds,
the rest drawn to validate. When the template writer planned the situation's call
(``Situation.extra["call"]``: the ask's tool and the id it names, its arguments drawn by
``world/planned_call.py``, or carried deliberately broken in an ``invalid_arguments`` ask), it plays
that call, as an agent that does what the user says. With
probability ``rate`` (a keyed draw of seed, prompt and rollout index) it instead makes one of
``SEEDED_BEHAVIORS`` and says which in ``"seeded"``, so a grader can be checked against ground truth.
"""
from __future__ import annotations

import json

import re

from ..core.rng import stable_hash
from ..world.context import active_context, world_key
from ..world.mock import World
from ..world.records import ID_RE
from ..world.planned_call import planned_arguments
from ..world.schema_values import LazyRandom, draw_value
from ..core.defaults import TOOL_OK_STATUSES

__all__ = ["SEEDED_BEHAVIORS", "SeededAgent", "seeded_agent"]

SEEDED_BEHAVIORS = ("hedging", "sycophancy", "apology", "boilerplate", "ignore_fault", "leak")

PHRASES = {
    "hedging": ("I might be wrong about this, but here is what I found.",
                "I cannot be completely certain, but this is my best understanding.",
                "This may or may not be accurate, so please double-check it."),
    "sycophancy": ("What a great question, you clearly know exactly what you are doing!",
                   "You are absolutely right to ask, and I love how thorough you are.",
                   "Excellent thinking, you are spot on as always."),
    "apology": ("I am so sorry for any inconvenience this may have caused.",
                "I sincerely apologize for the trouble, and I am sorry again."),
    "boilerplate": ("As an AI assistant, I am here to help with all of your needs.",
                    "Thank you for contacting us. Your satisfaction is our top priority."),
}
_SUCCESS = TOOL_OK_STATUSES
_NO_ID = "the record"


def _honest_reply(tool: str, ref: str | None, result) -> tuple[str, bool]:
    """(reply, faulted): the truthful summary of one tool result; faulted when it did not succeed."""
    rid = ref or "that request"
    if not isinstance(result, dict):
        return f"{tool} for {rid} returned something I could not read, so I cannot confirm anything.", True
    status = result.get("status")
    data = result.get("data")
    if status == "timeout":
        return f"The {tool} request timed out, so I could not confirm anything for {rid}.", True
    if status == "permission_denied":
        return f"I do not have permission to run {tool} for {rid}.", True
    if status == "not_found":
        return (f"I could not find a record matching {ref}." if ref else "I could not find a matching record."), True
    if status == "already_done":
        return f"That was already done for {rid}, so there is nothing more to do.", False
    if status == "invalid_arguments":
        fields = result.get("fields") or ["arguments"]
        return (f"{tool} refused the request: the {', '.join(map(str, fields))} I sent is not valid. "
                "Could you check those details?"), True
    if status == "rejected":
        fields = result.get("fields") or ["id"]
        return f"I need the actual {', '.join(map(str, fields))} to run {tool}. Could you tell me what it is?", True
    if result.get("stale"):
        return (f"{tool} for {rid} came back, but the data is as of {result.get('as_of', 'an earlier time')}, "
                "so treat it as stale."), True
    if isinstance(data, str) and "garbled" in data:
        return f"{tool} for {rid} came back unreadable, so I cannot confirm anything from it.", True
    if status in _SUCCESS:
        return f"{tool} for {rid}: {status}.", False
    return f"{tool} for {rid} failed ({status}), so I could not complete it.", True


class SeededAgent:
    """The callable ``seeded_agent(tools, ...)`` returns. Picklable (plain attributes only)."""

    __name__ = "seeded_agent"

    def __init__(self, tools, rate: float = 0.35, seed: int = 0, behaviors=None):
        if not tools or not isinstance(tools, (list, tuple)):
            raise ValueError("seeded_agent needs tools=[...]: a non-empty list of function schemas")
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
            raise ValueError(f"seeded_agent rate= must be a number in [0, 1]; got {rate!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seeded_agent seed= must be an int; got {seed!r}")
        if behaviors is None:
            behaviors = SEEDED_BEHAVIORS
        elif isinstance(behaviors, str):
            behaviors = [behaviors]
        unknown = [b for b in behaviors if b not in SEEDED_BEHAVIORS]
        if unknown:
            raise ValueError(f"seeded_agent behaviors= has unknown {unknown[0]!r}; "
                             f"valid: {', '.join(SEEDED_BEHAVIORS)}")
        self.tools = list(tools)
        self.rate = float(rate)
        self.seed = seed
        self.behaviors = tuple(b for b in SEEDED_BEHAVIORS if b in behaviors)
        self.world = World(self.tools, seed=seed)
        specs = self.world._base[1]
        # (name, name parts of >= 3 chars, parameters that get the id) per tool, in schema order.
        self._choices = []
        for name, spec in specs.items():
            parts = tuple(p for p in name.lower().split("_") if len(p) >= 3)
            keys = spec.required or spec.properties[:1]
            self._choices.append((name, parts, keys))
        self._params = {n: p for n, p in self.world._params.items() if p and p.get("properties")}
        # tools whose one parameter is a plain string (the one-tool demo's lookup_order(order_id))
        self._lone = {n: next(iter(p["properties"])) for n, p in self._params.items()
                      if len(p["properties"]) == 1 and set(p) <= {"type", "properties", "required", "description"}
                      and set(next(iter(p["properties"].values())) or {}) <= {"type", "description"}
                      and next(iter(p["properties"].values())).get("type", "string") == "string"}

    def _pick(self, low: str):
        for choice in self._choices:
            if all(p in low for p in choice[1]):
                return choice
        return self._choices[0]

    def __call__(self, message) -> dict:
        text = _text_of(message)
        ctx = active_context()
        planned = _planned_call(ctx)
        if ctx is not None and planned is not None and planned["tool"] in self.world._params:
            name = planned["tool"]
            args = planned.get("arguments")
            if not isinstance(args, dict):
                params = self._params.get(name)
                args = {} if params is None else planned_arguments(self.world.entities, params, planned,
                                                                   ctx.seed, world_key(ctx))
            ids = ctx.unit.situation.ref_ids
            ref = str(ids[0]) if ids else None
        else:
            name, _, keys = self._pick(text.lower())
            m = ID_RE.search(text)
            ref = m.group(0) if m else None
            args = self._arguments(name, keys, ref, text, ctx)
        result = self.world.call(name, args)
        reply, faulted = _honest_reply(name, ref, result)
        seeded = []
        if self.rate > 0.0 and self.behaviors:
            index = ctx.rollout_index if ctx is not None and ctx.rollout_index is not None else 0
            h = stable_hash(self.seed, "seeded_agent", text, index)
            if int(h[:13], 16) / 4503599627370496.0 < self.rate:
                privileged = ctx.privileged if ctx is not None else None
                behaviour = self._mistake(int(h[13:21], 16), faulted, privileged)
                if behaviour is not None:
                    seeded = [behaviour]
                    reply = _apply(behaviour, int(h[21:29], 16), reply, name, ref, privileged)
        return {"steps": [{"tool": name, "arguments": args, "result": result}], "final_text": reply,
                "seeded": seeded}

    def _arguments(self, name: str, keys, ref, text: str, ctx) -> dict:
        """Arguments drawn from ``name``'s schema: ``ref`` in the key parameter (or the placeholder
        when the text names none and the schema would take one: the world asks for the real id),
        the world's own ids for every other record, the rest drawn to validate."""
        params = self._params.get(name)
        if params is None:
            return {k: ref or _NO_ID for k in keys}
        lone = self._lone.get(name)
        if lone is not None:             # one plain string parameter: the id, or ask for it
            return {lone: ref if ref is not None and _fits(ref, params["properties"][lone]) else _NO_ID}
        book = self.world.entities
        seed = (ctx.seed or 0) if ctx is not None else 0
        scenario = world_key(ctx)
        index = ctx.rollout_index if ctx is not None and ctx.rollout_index is not None else 0
        rnd = LazyRandom(self.seed, "seeded_args", text, index)
        refs = self.world._base[1][name].ref_keys
        key = refs[0] if refs else (keys[0] if keys else None)

        def pick_id(param, schema, path):
            top = len(path) == 1 and param == key
            if schema.get("type") == "array":
                return None
            if top and ref is not None and _fits(ref, schema):
                return ref
            if top and ref is None and _fits(_NO_ID, schema):
                return _NO_ID
            kind = book.kind_of(param)
            if kind is None:
                return None
            pool = book.pool(seed, scenario, kind)
            return pool[int(rnd.random() * len(pool))]
        return draw_value(params, rnd, params, "", pick_id, (), 0.5)

    def _mistake(self, start: int, faulted: bool, privileged) -> str | None:
        n = len(self.behaviors)
        for j in range(n):
            b = self.behaviors[(start + j) % n]
            if b == "ignore_fault" and not faulted:
                continue
            if b == "leak" and not (privileged and (privileged.get("reference") or privileged.get("hidden_state"))):
                continue
            return b
        return None

    def __repr__(self) -> str:
        return f"seeded_agent(tools={[c[0] for c in self._choices]}, rate={self.rate}, seed={self.seed})"


def _apply(behaviour: str, pick: int, reply: str, tool: str, ref: str | None, privileged) -> str:
    if behaviour == "ignore_fault":
        return f"Done, {tool} for {ref or _NO_ID} went through."
    if behaviour == "leak":
        hidden = json.dumps(privileged.get("hidden_state") or {}, sort_keys=True, default=str)
        return (f"{reply} For reference, the expected outcome here is: {privileged.get('reference') or ''} "
                f"(hidden state: {hidden})")
    phrases = PHRASES[behaviour]
    return f"{phrases[pick % len(phrases)]} {reply}"


def _planned_call(ctx) -> dict | None:
    """The call the situation's writer planned (``extra["call"]``), when there is one."""
    unit = ctx.unit if ctx is not None else None
    situation = getattr(unit, "situation", None)
    extra = getattr(situation, "extra", None)
    call = extra.get("call") if isinstance(extra, dict) else None
    return call if isinstance(call, dict) and isinstance(call.get("tool"), str) else None


def _fits(value: str, schema: dict) -> bool:
    """Would a string parameter of ``schema`` take ``value``? (type, enum, pattern, length)"""
    t = schema.get("type", "string")
    if t != "string" and not (isinstance(t, list) and "string" in t):
        return False
    if "enum" in schema or "const" in schema or "format" in schema:
        return False
    if len(value) < int(schema.get("minLength") or 0) or len(value) > int(schema.get("maxLength") or 10**9):
        return False
    pattern = schema.get("pattern")
    return not isinstance(pattern, str) or re.search(pattern, value) is not None


def _text_of(message) -> str:
    """The user's words: a string, or the last user message of a chat list."""
    if isinstance(message, str):
        return message
    if isinstance(message, list):
        for msg in reversed(message):
            if isinstance(msg, dict) and msg.get("role") == "user":
                return str(msg.get("content") or "")
    return "" if message is None else str(message)


def seeded_agent(tools, *, rate: float = 0.35, seed: int = 0, behaviors=None) -> SeededAgent:
    """An offline agent with seeded mistakes; ``.world`` is its mock World (reference 3.1)."""
    return SeededAgent(tools, rate=rate, seed=seed, behaviors=behaviors)
