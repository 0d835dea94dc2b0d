"""Values drawn from a tool's JSON Schema: arguments a real API would accept.

Users bring the schemas of their product: nested objects, arrays of objects, enums, integer
bounds, formats, ``anyOf``/``oneOf``, ``$ref`` to ``$defs``. The template writer and the
seeded agent draw their arguments here, so a success situation's call validates (draft 7 /
2020-12, as OpenAI tools use them) and the world can refuse only what is really wrong.

``draw_value(schema, rnd)`` walks the schema once; ``rnd`` is a ``random.Random`` from
``core/rng.unit_rng`` (never the global one). ``pick_id(name, schema, path)`` lets a caller
(the entity book, ``entities.py``) supply the value of a parameter that names a record; it
returns None to let the schema decide. Pure: no I/O, no jsonschema (that is ``validation.py``).
"""
from __future__ import annotations

import math
from typing import Any, Callable

from ..core.rng import unit_rng
from .patterns import string_for_pattern

__all__ = ["draw_value", "resolve", "schema_type", "LazyRandom", "WORDS"]

WORDS = ("blue", "standard", "north", "quick", "gift", "large", "morning", "express", "home", "spare",
         "classic", "window", "weekly", "travel", "office", "green")
_FIRST = ("maria", "james", "aisha", "chen", "lucas", "fatima", "noah", "olga", "ravi", "sofia")
_LAST = ("lopez", "smith", "khan", "wang", "adeyemi", "rossi", "novak", "patel", "kim", "berg")
_SENTENCES = ("the item arrived damaged", "I no longer need it", "please change the size",
              "my plans changed", "the package never arrived", "wrong colour was sent")
_NAME_HINTS = (("expression", "math"), ("formula", "math"), ("first_name", "first"), ("last_name", "last"),
               ("email", "email"), ("date", "date"), ("phone", "phone"), ("reason", "sentence"),
               ("note", "sentence"), ("comment", "sentence"), ("message", "sentence"),
               ("description", "sentence"), ("name", "name"), ("city", "city"), ("zip", "zip"))
_CITIES = ("Lisbon", "Austin", "Osaka", "Nairobi", "Denver", "Lyon", "Seattle", "Toronto")

PickId = Callable[[str, dict, tuple], Any]


class LazyRandom:
    """``unit_rng(seed, *parts)``, seeded on its first draw: most calls of a simple tool draw
    nothing (every parameter required and given), and seeding costs more than the rest."""
    __slots__ = ("parts", "_rng")

    def __init__(self, *parts):
        self.parts, self._rng = parts, None

    def random(self) -> float:
        if self._rng is None:
            self._rng = unit_rng(*self.parts)
        return self._rng.random()


def resolve(schema, root: dict) -> dict:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed; else itself.
    A ``$ref`` outside the schema (a URL) or to nothing reads as ``{}`` (any value): it is never
    fetched, and a tool's odd schema never stops a run."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 16:
        ref = schema["$ref"]
        if not ref.startswith("#"):
            return {}
        target: Any = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            return {}
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **rest} if rest else target
        seen += 1
    return schema if isinstance(schema, dict) else {}


def schema_type(schema: dict, rnd=None) -> str:
    """The one JSON type a value for ``schema`` takes (a ``type`` list: a non-null member)."""
    t = schema.get("type")
    if isinstance(t, list):
        choices = [x for x in t if x != "null"] or ["null"]
        return choices[0] if rnd is None else choices[int(rnd.random() * len(choices))]
    if isinstance(t, str):
        return t
    if "properties" in schema or "required" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema or "minItems" in schema:
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")):
        return "number"
    return "string"


def draw_value(schema, rnd, root: dict | None = None, name: str = "", pick_id: PickId | None = None,
               path: tuple = (), optional_share: float = 0.5) -> Any:
    """A value that validates against ``schema`` (``root`` holds its ``$defs``).

    ``name`` is the parameter's name (hints: ``email``, ``date``, ``reason``...). Optional object
    properties are included with probability ``optional_share``.
    """
    root = root if root is not None else (schema if isinstance(schema, dict) else {})
    schema = resolve(schema, root)
    if pick_id is not None and name:
        got = pick_id(name, schema, path)
        if got is not None:
            return got
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][int(rnd.random() * len(schema["enum"]))]
    for key in ("oneOf", "anyOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            base = {k: v for k, v in schema.items() if k != key}
            order = sorted(range(len(branches)), key=lambda _: rnd.random())
            usable = [i for i in order if resolve(branches[i], root).get("type") != "null"] or order
            branch = resolve(branches[usable[0]], root)
            merged = _merge(base, branch) if base else branch
            return draw_value(merged, rnd, root, name, pick_id, path, optional_share)
    if isinstance(schema.get("allOf"), list):
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            merged = _merge(merged, resolve(part, root))
        return draw_value(merged, rnd, root, name, pick_id, path, optional_share)
    kind = schema_type(schema, rnd)
    if kind == "object":
        return _object(schema, rnd, root, pick_id, path, optional_share)
    if kind == "array":
        return _array(schema, rnd, root, name, pick_id, path, optional_share)
    if kind == "integer":
        return _integer(schema, rnd)
    if kind == "number":
        return _number(schema, rnd)
    if kind == "boolean":
        return rnd.random() < 0.5
    if kind == "null":
        return None
    return _string(schema, rnd, name)


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if k == "properties" and isinstance(out.get(k), dict):
            out[k] = {**out[k], **v}
        elif k == "required" and isinstance(out.get(k), list):
            out[k] = list(dict.fromkeys(out[k] + list(v)))
        else:
            out[k] = v
    return out


def _object(schema: dict, rnd, root, pick_id, path, optional_share) -> dict:
    props = schema.get("properties") or {}
    required = [r for r in (schema.get("required") or []) if isinstance(r, str)]
    out: dict[str, Any] = {}
    want = max(0, int(schema.get("minProperties") or 0))
    for key, sub in props.items():
        if key in required or rnd.random() < optional_share or len(required) + len(out) < want:
            out[key] = draw_value(sub, rnd, root, key, pick_id, path + (key,), optional_share)
    for key in required:            # required but undeclared (allowed when additionalProperties is open)
        if key not in out:
            extra = schema.get("additionalProperties")
            sub = extra if isinstance(extra, dict) else {"type": "string"}
            out[key] = draw_value(sub, rnd, root, key, pick_id, path + (key,), optional_share)
    return out


def _array(schema: dict, rnd, root, name, pick_id, path, optional_share) -> list:
    lo = int(schema.get("minItems") or 0)
    hi = schema.get("maxItems")
    hi = lo + 3 if hi is None else int(hi)
    top = min(hi, max(lo, 1) + 2)
    n = lo if top <= lo else lo + int(rnd.random() * (top - lo + 1))
    n = max(n, min(1, hi))                  # one element at least, when allowed: a call worth making
    prefix = schema.get("prefixItems")
    if not isinstance(prefix, list):
        prefix = []
    items = schema.get("items")
    if not isinstance(items, dict):
        items = {}
    out: list = []
    tries = 0
    while len(out) < n and tries < 4 * n + 8:
        tries += 1
        i = len(out)
        sub = prefix[i] if i < len(prefix) else items
        value = draw_value(sub, rnd, root, name, pick_id, path + (i,), optional_share)
        if schema.get("uniqueItems") and value in out:
            continue
        out.append(value)
    return out


def _bounds(schema: dict, step) -> tuple:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    xlo, xhi = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(xlo, bool):                   # draft 4 style: a flag on minimum
        xlo = lo if xlo else None
        lo = None if xlo is not None else lo
    if isinstance(xhi, bool):
        xhi = hi if xhi else None
        hi = None if xhi is not None else hi
    if xlo is not None:
        lo = xlo + step if lo is None else max(lo, xlo + step)
    if xhi is not None:
        hi = xhi - step if hi is None else min(hi, xhi - step)
    return lo, hi


def _integer(schema: dict, rnd) -> int:
    lo, hi = _bounds(schema, 1)
    lo = math.ceil(lo) if lo is not None else None
    hi = math.floor(hi) if hi is not None else None
    if lo is None:
        if hi is None:
            lo, hi = 1, 10
        else:
            lo = min(1, hi) if hi >= 1 else hi - 9
    elif hi is None:
        hi = lo + 9
    m = schema.get("multipleOf")
    if isinstance(m, int) and m > 0:
        first = -(-lo // m) * m
        count = (hi - first) // m + 1 if hi >= first else 1
        return first + m * int(rnd.random() * max(1, count))
    return lo + int(rnd.random() * (hi - lo + 1))


def _number(schema: dict, rnd) -> float:
    lo, hi = _bounds(schema, 0.01)
    if lo is None and hi is None:
        lo, hi = 1.0, 100.0
    elif lo is None:
        lo = hi - 100.0
    elif hi is None:
        hi = lo + 100.0
    m = schema.get("multipleOf")
    if isinstance(m, (int, float)) and m > 0:
        first = math.ceil(lo / m)
        count = max(1, int(math.floor(hi / m)) - first + 1)
        return round((first + int(rnd.random() * count)) * m, 10)
    value = round(lo + rnd.random() * (hi - lo), 2)
    return min(max(value, lo), hi)


def _formatted(fmt: str, rnd) -> str | None:
    r = rnd.random
    if fmt == "date":
        return f"{2024 + int(r() * 3)}-{1 + int(r() * 12):02d}-{1 + int(r() * 28):02d}"
    if fmt == "date-time":
        return (f"{2024 + int(r() * 3)}-{1 + int(r() * 12):02d}-{1 + int(r() * 28):02d}"
                f"T{int(r() * 24):02d}:{int(r() * 60):02d}:00Z")
    if fmt == "time":
        return f"{int(r() * 24):02d}:{int(r() * 60):02d}:00"
    if fmt == "email":
        return f"{_FIRST[int(r() * 10)]}.{_LAST[int(r() * 10)]}{int(r() * 100)}@example.com"
    if fmt == "uuid":
        h = "".join("0123456789abcdef"[int(r() * 16)] for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"
    if fmt in ("uri", "url"):
        return f"https://example.com/{WORDS[int(r() * len(WORDS))]}"
    if fmt == "ipv4":
        return ".".join(str(1 + int(r() * 254)) for _ in range(4))
    return None


def _hinted(name: str, rnd) -> str:
    low = name.lower()
    r = rnd.random
    for word, hint in _NAME_HINTS:
        if word in low:
            if hint == "email" or hint == "date":
                value = _formatted(hint, rnd)
                assert value is not None        # email and date are formats _formatted writes
                return value
            if hint == "math":
                return f"{1 + int(r() * 99)} * {1 + int(r() * 9)} + {int(r() * 50)}"
            if hint in ("first", "last"):
                return (_FIRST if hint == "first" else _LAST)[int(r() * 10)].title()
            if hint == "phone":
                return "+1555" + "".join(str(int(r() * 10)) for _ in range(7))
            if hint == "sentence":
                return _SENTENCES[int(r() * len(_SENTENCES))]
            if hint == "name":
                return f"{_FIRST[int(r() * 10)].title()} {_LAST[int(r() * 10)].title()}"
            if hint == "city":
                return _CITIES[int(r() * len(_CITIES))]
            if hint == "zip":
                return "".join(str(int(r() * 10)) for _ in range(5))
    return f"{WORDS[int(r() * len(WORDS))]} {WORDS[int(r() * len(WORDS))]}"


def _string(schema: dict, rnd, name: str) -> str:
    lo = int(schema.get("minLength") or 0)
    hi = schema.get("maxLength")
    pattern = schema.get("pattern")
    value = None
    if isinstance(pattern, str):
        value = string_for_pattern(pattern, rnd)
    if value is None and isinstance(schema.get("format"), str):
        value = _formatted(schema["format"], rnd)
    if value is None:
        value = _hinted(name, rnd)
    if len(value) < lo:
        filler = "x" if pattern is None else value[-1:] or "x"
        value = value + filler * (lo - len(value))
    if hi is not None and len(value) > int(hi):
        value = value[:int(hi)].rstrip() or value[:int(hi)]
        if len(value) < lo:
            value = value + "x" * (lo - len(value))
    return value
