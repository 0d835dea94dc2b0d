"""What the mock world is made of: tool specs, reference ids, placeholder values and records.

A record is a pure function of ``(world seed, run seed, reference id)``: the same id always
has the same name, owner, status and date, and exists (or not) the same way, on any actor.
One sha256 per id (via ``rng.stable_hash``) feeds every field, so a record costs microseconds.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.rng import stable_hash
from .options import WorldOptions

__all__ = ["ID_RE", "ToolSpec", "tool_specs", "is_placeholder", "record_hash", "exists", "make_record"]

# An id a person would type: ORD-6206, A1001, inv_77, or a bare number of 3+ digits.
ID_RE = re.compile(r"\b[A-Za-z]+[-_]?\d+\b|\b\d{3,}\b")
_PARTS_RE = re.compile(r"[A-Za-z][a-z]*|\d+")
_REF_PARTS = frozenset(("id", "ids", "number", "no", "num", "ref", "reference", "code", "sku", "email",
                        "account", "key", "handle", "username", "slug", "uuid", "identifier"))
_WRAPPED_RE = re.compile(r"^\s*(<[^<>]*>|\{[^{}]*\}|\[[^\[\]]*\])\s*$")
_ARTICLE_RE = re.compile(r"^(the|a|an|my|your|some|this|that) [a-z]+( id| number| code)?$")


def name_parts(name: str) -> list[str]:
    """``lookupOrder`` / ``lookup_order`` -> ["lookup", "order"] (lowercase)."""
    return [p.lower() for p in _PARTS_RE.findall(name or "")]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    properties: tuple      # parameter names in schema order
    required: tuple        # required parameter names
    ref_keys: tuple        # parameters that name a record (order_id, email, ...), schema order
    kind: str              # read / search / create / delete / calc / action
    noun: str              # "order" for lookup_order; used in record names


def _kind(parts: list[str], props: tuple, opts: WorldOptions) -> str:
    if any(p in ("calc", "calculate", "calculator", "math", "evaluate", "compute", "arithmetic")
           for p in parts) and props:
        return "calc"
    for p in parts:
        if p in opts.delete_verbs:
            return "delete"
        if p in opts.create_verbs:
            return "create"
        if p in opts.search_verbs:
            return "search"
        if p in opts.read_verbs:
            return "read"
    return "action"


def tool_specs(tools, opts: WorldOptions) -> dict[str, ToolSpec]:
    """Tool schemas (OpenAI ``{"type":"function","function":{...}}`` or bare ``{"name",...}``) -> specs."""
    if not isinstance(tools, (list, tuple)):
        raise ValueError(f"tools must be a list of function schemas; got {type(tools).__name__}")
    specs: dict[str, ToolSpec] = {}
    verbs = set(opts.read_verbs) | set(opts.create_verbs) | set(opts.delete_verbs) | set(opts.search_verbs)
    for i, tool in enumerate(tools):
        fn = tool.get("function", tool) if isinstance(tool, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(fn, dict) or not isinstance(name, str) or not name:
            raise ValueError(f"tools[{i}] has no function name; pass OpenAI function schemas like "
                             "{'type': 'function', 'function': {'name': ..., 'parameters': {...}}}")
        params = fn.get("parameters") or {}
        props = tuple((params.get("properties") or {}).keys())
        required = tuple(r for r in (params.get("required") or []) if isinstance(r, str))
        ref_keys = tuple(k for k in props if _REF_PARTS.intersection(name_parts(k)))
        parts = name_parts(name)
        nouns = [p for p in parts if p not in verbs and len(p) >= 3]
        specs[name] = ToolSpec(name, props, required, ref_keys, _kind(parts, props, opts),
                               nouns[-1] if nouns else "")
    return specs


def is_placeholder(value, placeholders: frozenset) -> bool:
    """True for values an agent types when it does not know the real one: "the record", "<id>", ""."""
    if not isinstance(value, str):
        return value is None
    v = value.strip().lower()
    return v in placeholders or bool(_WRAPPED_RE.match(v)) or bool(_ARTICLE_RE.match(v))


def record_hash(world_seed: int, run_seed, ref: str) -> str:
    """The one digest every field of a record (and its existence) is cut from."""
    return stable_hash(world_seed, "record", run_seed, ref)


def exists(h: str, share: float) -> bool:
    """Does the id behind digest ``h`` exist? True with probability ``share``, fixed per id."""
    return int(h[:8], 16) / 4294967296.0 < share


def make_record(h: str, ref: str, spec: ToolSpec, arguments: dict, opts: WorldOptions) -> dict:
    """A plausible record for ``ref``: id, name, status, owner, updated_at, the arguments echoed, ref."""
    lo, hi = opts.id_range
    year0, n_years = opts.date_years
    noun = spec.noun or opts.topics[int(h[8:12], 16) % len(opts.topics)]
    rec = {
        "id": lo + int(h[12:20], 16) % (hi - lo),
        "name": f"{opts.adjectives[int(h[20:24], 16) % len(opts.adjectives)]} {noun}",
        "status": opts.statuses[int(h[24:28], 16) % len(opts.statuses)],
        "owner": opts.people[int(h[28:32], 16) % len(opts.people)],
        "updated_at": f"{year0 + int(h[32:36], 16) % n_years}-{1 + int(h[36:38], 16) % 12:02d}"
                      f"-{1 + int(h[38:40], 16) % 28:02d}",
    }
    for k, v in arguments.items():
        if k not in rec:
            rec[k] = v
    rec["ref"] = h[40:48]
    return rec
