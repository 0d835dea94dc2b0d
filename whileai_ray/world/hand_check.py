"""The world's check of a tool's arguments by hand: the schemas real tools write, in a microsecond.

``validation.ToolValidator`` checks a call against the tool's JSON Schema with jsonschema, which
costs 10-70 us a call. Most tools' schemas are flat: typed properties, some required, maybe no
others allowed, each property's rules among a pattern, an enum of strings, lengths, bounds, and
arrays of such items with item counts (and unique strings). ``flat_rules(schema)`` reads such a
schema once (None for any other: nesting, references, combinations, ``format``, ``const``...), and
``flat_ok(rules, arguments)`` says whether the arguments keep every rule, each rule read as
jsonschema reads it (a pattern is ``re.search``, a length counts code points, a bound applies to
numbers, ``true`` is no integer). It only ever answers "valid": a False is a doubt, and jsonschema
then decides and its errors are the refusal. So a mistake here could only let through a call the
schema breaks; ``tests/unit/world/test_hand_check.py`` puts every call it passes to jsonschema.
"""
from __future__ import annotations

import re

__all__ = ["flat_rules", "flat_ok"]

_TOP = frozenset(("type", "properties", "required", "additionalProperties", "description", "title", "$schema"))
_LEAF = frozenset(("type", "description", "title", "examples", "default"))     # no rule in these
_TYPES = frozenset(("string", "boolean", "integer", "number"))


def _typed(kind: str, value) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if isinstance(value, bool):
        return kind == "boolean"
    return kind == "integer" and isinstance(value, int) or kind == "number" and isinstance(value, (int, float))


def _bound(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _size(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _leaf(sub, depth: int = 0):
    """A property's check by hand: its type (``_TYPES``, or ``"array"`` of such items) and the
    rules a real tool puts beside it (a pattern, an enum of strings, lengths, bounds, item
    counts), each read as jsonschema reads it; None for anything else (jsonschema checks it).
    Returns ``(type, rules)``, ``rules`` None when the type is all there is."""
    if not isinstance(sub, dict) or depth > 1:
        return None
    kind = sub.get("type")
    rules: dict = {}
    if kind == "string":
        pattern = sub.get("pattern")
        if pattern is not None:
            try:
                rules["pattern"] = re.compile(pattern).search     # jsonschema: re.search
            except (re.error, TypeError):
                return None
        enum = sub.get("enum")
        if enum is not None:
            if not isinstance(enum, list) or not enum or not all(isinstance(e, str) for e in enum):
                return None
            rules["enum"] = frozenset(enum)
        for key in ("minLength", "maxLength"):
            if key in sub:
                if not _size(sub[key]):
                    return None
                rules[key] = sub[key]
    elif kind == "array":
        items = _leaf(sub["items"], depth + 1) if "items" in sub else (None, None)
        if items is None:
            return None
        rules["items"] = items
        if "uniqueItems" in sub:            # of strings only: their equality is ==, as jsonschema's
            if not isinstance(sub["uniqueItems"], bool) or items[0] != "string":
                return None
            rules["uniqueItems"] = sub["uniqueItems"]
        for key in ("minItems", "maxItems"):
            if key in sub:
                if not _size(sub[key]):
                    return None
                rules[key] = sub[key]
    elif kind in ("integer", "number"):
        for key in ("minimum", "maximum"):
            if key in sub:
                if not _bound(sub[key]):
                    return None
                rules[key] = sub[key]
    elif kind != "boolean":
        return None
    if any(k not in _LEAF and k not in rules for k in sub):     # a rule not read above: jsonschema's
        return None
    return kind, rules or None


def _leaf_ok(leaf, value) -> bool:
    """Does ``value`` keep ``leaf``'s rules (False: not sure; jsonschema then decides)?"""
    kind, rules = leaf
    if kind is None:                    # an array's items without a schema of their own
        return True
    if kind == "array":
        if not isinstance(value, list):
            return False
    elif not _typed(kind, value):
        return False
    if rules is None:
        return True
    if kind == "string":
        if "pattern" in rules and not rules["pattern"](value) or "enum" in rules and value not in rules["enum"]:
            return False
        return rules.get("minLength", 0) <= len(value) <= rules.get("maxLength", len(value))
    if kind == "array":
        if not rules.get("minItems", 0) <= len(value) <= rules.get("maxItems", len(value)):
            return False
        items = rules["items"]
        if not all(_leaf_ok(items, v) for v in value):
            return False
        return not rules.get("uniqueItems") or len(set(value)) == len(value)
    return rules.get("minimum", value) <= value <= rules.get("maximum", value)


def flat_rules(params: dict):
    """``(leaves, required, closed)`` when every rule of the schema is a property's own
    (``_leaf``): no nesting, no references, no combinations."""
    if set(params) - _TOP or params.get("type", "object") != "object" \
            or params.get("additionalProperties", True) not in (True, False):
        return None
    props, required = params.get("properties") or {}, params.get("required") or []
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    leaves = {}
    for key, sub in props.items():
        leaf = _leaf(sub)
        if leaf is None or leaf[0] not in _TYPES and leaf[0] != "array":
            return None
        leaves[key] = leaf
    return leaves, tuple(required), params.get("additionalProperties") is False


def flat_ok(flat, arguments) -> bool:
    leaves, required, closed = flat
    if not isinstance(arguments, dict) or any(r not in arguments for r in required):
        return False
    for key, value in arguments.items():
        leaf = leaves.get(key)
        if leaf is None:
            if closed:
                return False
        elif not (_typed(leaf[0], value) if leaf[1] is None else _leaf_ok(leaf, value)):   # (an array has rules)
            return False
    return True
