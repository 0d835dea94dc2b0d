"""The records a rollout's world holds: orders, users, reservations... and their ids.

Tools name the kinds of things behind them through their parameters: ``order_id`` names an
order, ``item_ids`` a list of items, ``payment_method_id`` a payment method. An
:class:`EntityBook` reads every tool's parameters once and learns, per kind, what an id looks
like: the parameter's ``pattern`` first, else the example its description gives ("e.g.
W0000000" means a ``W`` and seven digits: the example is a FORMAT, never a value), else the
engine's default ``ORD-48211``. Integer and ``uuid`` ids keep their type.

A rollout's world holds a few ids of every kind, a pure function of ``(run seed, scenario
id, kind)``: the template writer names one of them in its ask, the world finds it, a lookup
returns the ids of the linked records (the order's user, items, payment method), and the next
call with those ids finds them too. Ids outside the pool keep the older rule (``records.py``).
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from .patterns import string_for_pattern
from .schema_values import resolve

__all__ = ["EntityBook", "entity_kind", "POOL_SIZE"]

POOL_SIZE = 6
_PARTS_RE = re.compile(r"[A-Za-z][a-z]*|\d+")
_NUMBERED = frozenset(("order", "flight", "ticket", "invoice", "reservation", "booking", "confirmation",
                       "tracking", "account", "case", "claim", "policy", "shipment"))
_QUALIFIERS = frozenset(("new", "old", "original", "duplicate", "parent", "target", "source", "other",
                         "primary", "secondary", "current", "previous", "replacement"))
_EXAMPLE_RE = re.compile(r"(?:e\.g\.?|eg|for example|for instance|such as|like|format|example:?)\s*[:,]?\s*"
                         r"['\"`]?(#?[A-Za-z0-9][A-Za-z0-9_\-]{2,31})['\"`]?", re.I)
_DIGITS = "0123456789"
_UPPER = "ABCDEFGHJKLMNPQRSTUVWXYZ"
_LOWER = "abcdefghijkmnpqrstuvwxyz"


@lru_cache(maxsize=4096)
def entity_kind(name: str) -> str | None:
    """``order_id`` -> "order", ``item_ids`` -> "item", ``paymentMethodId`` -> "payment_method",
    ``flight_number`` -> "flight"; None for a parameter that names no record (``reason``)."""
    parts = [p.lower() for p in _PARTS_RE.findall(name or "")]
    while len(parts) > 2 and parts[0] in _QUALIFIERS:     # new_item_ids names items too
        parts = parts[1:]
    if len(parts) < 2:
        return None
    last, head = parts[-1], parts[:-1]
    if last in ("id", "ids", "sku", "skus") or last == "number" and head[-1] in _NUMBERED:
        return "_".join(head)
    return None


class _Stream:
    """``random()`` cut from sha256 blocks of one key: a world's ids are drawn for every situation
    written, and seeding a ``random.Random`` per id would cost more than the rest of the ask.
    Each block gives four draws, its bytes 0-6, 7-13, 14-20 and 21-27 read as 56-bit integers
    over 2**56; they are cut from the block at once when it is made (a draw is then a pop)."""
    __slots__ = ("key", "block", "left")

    def __init__(self, key: str):
        self.key = key.encode()
        self.block = 0
        self.left = _draws(hashlib.sha256(self.key).digest())

    def random(self) -> float:
        left = self.left
        if not left:
            self.block += 1
            left = self.left = _draws(hashlib.sha256(self.key + b"#%d" % self.block).digest())
        return left.pop()


_M56 = (1 << 56) - 1


def _draws(block: bytes) -> list[float]:
    """A block's four draws, the last one first (``random()`` pops them)."""
    x = int.from_bytes(block[:28], "big")
    return [(x & _M56) / 72057594037927936.0, (x >> 56 & _M56) / 72057594037927936.0,
            (x >> 112 & _M56) / 72057594037927936.0, (x >> 168) / 72057594037927936.0]


class _Format:
    """How one kind's ids are written: a pattern, an example's shape, a type."""
    __slots__ = ("pattern", "example", "kind_type", "fmt", "prefix", "bounds", "name", "list_name")
    pattern: str | None         # the id parameter's schema pattern
    example: str | None         # an id quoted in a description
    kind_type: str              # "string" or "integer"
    fmt: str | None             # the id parameter's schema format
    prefix: str                 # ORD in ORD-48211
    bounds: tuple[int, int]     # an integer id's range
    name: str                   # the parameter name a record field uses
    list_name: str | None       # the array parameter that lists these ids, when one does

    def __init__(self, kind: str):
        self.pattern = self.example = self.fmt = None
        self.name, self.list_name = f"{kind}_id", None      # the parameter names a record field uses
        self.kind_type = "string"
        self.prefix = re.sub(r"[^A-Z]", "", kind.split("_")[-1].upper())[:3] or "REF"
        self.bounds = (1000, 99999)

    def learn(self, param: str, schema: dict, description: str) -> None:
        items = schema.get("items") if schema.get("type") == "array" else None
        if isinstance(items, dict):
            self.list_name = self.list_name or param
            schema = items
        elif param.lower().endswith(("_id", "id", "number", "sku")) and self.name.endswith("_id"):
            self.name = param
        t = schema.get("type")
        if t == "integer" or isinstance(t, list) and "integer" in t:
            self.kind_type = "integer"
            lo = schema.get("minimum", self.bounds[0])
            hi = schema.get("maximum", max(lo + 10, self.bounds[1]))
            self.bounds = (int(lo), int(hi))
        if isinstance(schema.get("pattern"), str) and self.pattern is None:
            self.pattern = schema["pattern"]
        if isinstance(schema.get("format"), str) and self.fmt is None:
            self.fmt = schema["format"]
        if self.example is None:
            m = _EXAMPLE_RE.search(str(schema.get("description") or "") + " " + (description or ""))
            if m and any(c.isdigit() for c in m.group(1)) or m and m.group(1).isupper():
                self.example = m.group(1)

    def plain(self) -> bool:
        """The engine's own ``ORD-48211`` form (no pattern, format, example or integer type)."""
        return self.kind_type == "string" and self.pattern is None and self.fmt is None and self.example is None

    def draw(self, rnd) -> object:
        r = rnd.random
        if self.kind_type == "integer":
            lo, hi = self.bounds
            return lo + int(r() * (hi - lo + 1))
        if self.pattern is not None:
            got = string_for_pattern(self.pattern, rnd)
            if got is not None:
                return got
        if self.fmt == "uuid":
            h = "".join("0123456789abcdef"[int(r() * 16)] for _ in range(32))
            return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
        if self.fmt == "email":
            return f"user{int(r() * 90000) + 1000}@example.com"
        if self.example is not None:
            return _like(self.example, rnd)
        return f"{self.prefix}-{1000 + int(r() * 99000)}"


def _like(example: str, rnd) -> str:
    """An id shaped like ``example``: a letter prefix before digits stays, the digits are drawn;
    an id of mixed letters and digits is drawn character by character in the same classes."""
    r = rnd.random
    m = re.fullmatch(r"(\D*)(\d+)", example)
    if m:
        digits = "".join(_DIGITS[int(r() * 10)] for _ in m.group(2))
        return m.group(1) + (digits if digits.strip("0") else "1" + digits[1:])
    out = []
    for c in example:
        pool = _DIGITS if c.isdigit() else _UPPER if c.isupper() else _LOWER if c.islower() else None
        out.append(pool[int(r() * len(pool))] if pool else c)
    return "".join(out)


class EntityBook:
    """The kinds of records the tools name, and the ids a rollout's world holds of each."""

    def __init__(self, tools):
        self.formats: dict[str, _Format] = {}
        self.tool_kinds: dict[str, tuple] = {}
        for tool in tools or ():
            fn = tool.get("function", tool) if isinstance(tool, dict) else {}
            params = fn.get("parameters") if isinstance(fn, dict) else None
            kinds: list = []
            if isinstance(params, dict):
                self._scan(params, params, kinds, 0, str(fn.get("description") or ""))
            self.tool_kinds[str(fn.get("name"))] = tuple(dict.fromkeys(kinds))
        self._pools: dict = {}

    def _scan(self, schema, root, kinds: list, depth: int, tool_desc: str) -> None:
        schema = resolve(schema, root)
        if depth > 8:
            return
        for name, sub in (schema.get("properties") or {}).items():
            sub = resolve(sub, root)
            kind = entity_kind(name)
            if kind is not None:
                self.formats.setdefault(kind, _Format(kind)).learn(name, sub, tool_desc)
                kinds.append(kind)
            self._scan(sub, root, kinds, depth + 1, tool_desc)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                self._scan(schema[key], root, kinds, depth + 1, tool_desc)
        for key in ("anyOf", "oneOf", "allOf"):
            for branch in schema.get(key) or ():
                self._scan(branch, root, kinds, depth + 1, tool_desc)

    def kind_of(self, name: str) -> str | None:
        kind = entity_kind(name)
        return kind if kind in self.formats else None

    def pool_id(self, run_seed, scenario_id, kind: str, k: int):
        """The ``k``-th id of ``kind`` the world of ``(run_seed, scenario_id)`` holds (one digest;
        the writer names one per situation, so the plain form skips the stream)."""
        return self._drawn(kind, f"{run_seed or 0}|entities|{scenario_id}|{kind}|{k}")

    def _drawn(self, kind: str, key: str):
        fmt = self.formats.get(kind) or _Format(kind)
        if fmt.plain():
            x = int.from_bytes(hashlib.sha256(key.encode()).digest()[:7], "big")
            return f"{fmt.prefix}-{1000 + (x * 99000 >> 56)}"
        return fmt.draw(_Stream(key))

    def pool(self, run_seed, scenario_id, kind: str) -> tuple:
        """Every id of ``kind`` that world holds (POOL_SIZE draws, duplicates dropped)."""
        key = (run_seed, scenario_id, kind)
        got = self._pools.get(key)
        if got is None:
            if len(self._pools) > 4096:
                self._pools.clear()
            got = self._pools[key] = tuple(dict.fromkeys(self.pool_id(run_seed, scenario_id, kind, k)
                                                         for k in range(POOL_SIZE)))
        return got

    def holds(self, run_seed, scenario_id, kind: str, value) -> bool:
        return kind in self.formats and value in self.pool(run_seed, scenario_id, kind)

    def invent(self, run_seed, scenario_id, kind: str, salt, check: bool = True) -> object:
        """An id of ``kind``'s format that the world does NOT hold. ``check=False`` skips the look
        at the pool (an "entity missing" ask: that world state answers not_found whatever the id)."""
        held = self.pool(run_seed, scenario_id, kind) if check else ()
        for attempt in range(16):
            v = self._drawn(kind, f"{run_seed or 0}|missing|{scenario_id}|{kind}|{salt}|{attempt}")
            if v not in held:
                return v
        return v

    def linked(self, run_seed, scenario_id, kind: str, value) -> dict:
        """The other records a held record points at: ``{"user_id": ..., "item_ids": [...]}``."""
        pick = sum(ord(c) for c in str(value)) % POOL_SIZE
        out = {}
        for other, fmt in self.formats.items():
            if other == kind:
                continue
            pool = self.pool(run_seed, scenario_id, other)
            if fmt.list_name:
                out[fmt.list_name] = [pool[(pick + j) % len(pool)] for j in range(2)]
            else:
                out[fmt.name] = pool[pick % len(pool)]
        return out
