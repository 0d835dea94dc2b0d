"""Arguments that break a tool's schema on purpose, labelled with how.

A situation that aims at bad arguments (``tool_condition="invalid_arguments"``) starts from
valid arguments (``schema_values.draw_value``) and breaks exactly one thing the schema says: a
value outside the ``enum``, past a ``maximum``, shorter than ``minLength``, a date that is no
date, an empty list where ``minItems`` is 1, a missing ``required`` field, a field
``additionalProperties: false`` forbids, a string where an integer belongs. The label
``{"keyword", "path"}`` travels with the situation, so valid and invalid calls are told apart.

``break_arguments`` checks its result with the tool's validator and tries another break when
one did not take (a ``oneOf`` can absorb a change), so what it returns is refused by the world.
"""
from __future__ import annotations

import copy

from .schema_values import resolve
from .validation import validator_for

__all__ = ["break_arguments", "breaks_of"]

_BAD_FORMAT = {"date": "31/02/2024", "date-time": "yesterday at noon", "email": "not an email",
               "uuid": "1234", "time": "noonish", "uri": "not a link"}


_SURE_FORMATS = frozenset(("date", "date-time", "email", "uuid"))    # formats jsonschema always checks


def breaks_of(schema, value, root: dict, path: tuple = ()) -> list[tuple]:
    """Every ``(keyword, path, new_value_or_DROP)`` that breaks ``value`` under ``schema``.

    Keywords are conjunctive and the walk never enters ``anyOf``/``oneOf``, so breaking one keyword
    of a node breaks the whole call; :func:`sure` says which breaks need no validator to confirm."""
    schema = resolve(schema, root)
    out: list[tuple] = []
    if "const" in schema:
        out.append(("const", path, f"{schema['const']}-other" if isinstance(schema["const"], str) else "other"))
    if isinstance(schema.get("enum"), list):
        out.append(("enum", path, "something else"))
    if isinstance(value, bool):
        out.append(("type", path, "yes"))
    elif isinstance(value, (int, float)):
        out.append(("type", path, "two"))
        if isinstance(schema.get("maximum"), (int, float)):
            out.append(("maximum", path, schema["maximum"] + (1 if isinstance(value, int) else 1.5)))
        if isinstance(schema.get("minimum"), (int, float)):
            out.append(("minimum", path, schema["minimum"] - 1))
        for key in ("exclusiveMaximum", "exclusiveMinimum"):
            if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool):
                out.append((key, path, schema[key]))
    elif isinstance(value, str):
        if schema.get("type") == "string":
            out.append(("type", path, 12345))
        if isinstance(schema.get("minLength"), int) and schema["minLength"] > 0:
            out.append(("minLength", path, ""))
        if isinstance(schema.get("maxLength"), int):
            out.append(("maxLength", path, "x" * (schema["maxLength"] + 1)))
        if isinstance(schema.get("pattern"), str):
            out.append(("pattern", path, "?? not the format ??"))
        if schema.get("format") in _BAD_FORMAT:
            out.append(("format", path, _BAD_FORMAT[schema["format"]]))
    elif isinstance(value, list):
        out.append(("type", path, "one, two"))
        if isinstance(schema.get("minItems"), int) and schema["minItems"] > 0:
            out.append(("minItems", path, []))
        if isinstance(schema.get("maxItems"), int) and value:
            out.append(("maxItems", path, value + [value[0]] * (schema["maxItems"] + 1 - len(value))))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value[:2]):
                out.extend(breaks_of(items, v, root, path + (i,)))
    elif isinstance(value, dict):
        if path:
            out.append(("type", path, "see above"))
        props = schema.get("properties") or {}
        for key in schema.get("required") or ():
            if key in value:
                out.append(("required", path + (key,), _DROP))
        if schema.get("additionalProperties") is False:
            out.append(("additionalProperties", path + ("unexpected_field",), "surprise"))
        for key, v in value.items():
            if key in props:
                out.extend(breaks_of(props[key], v, root, path + (key,)))
    return out


class _Drop:
    def __repr__(self) -> str:
        return "<drop>"


_DROP = _Drop()


def sure(schema, root: dict, keyword: str, path: tuple, new) -> bool:
    """Is this break invalid without asking the validator? (a pattern can match anything, a
    ``type`` break under a type list or no type may be allowed, an unchecked format is not checked)"""
    node = schema
    for step in path[:-1] if keyword in ("required", "additionalProperties") else path:
        node = resolve(node, root)
        node = (node.get("items") if isinstance(step, int) else (node.get("properties") or {}).get(step)) or {}
    node = resolve(node, root)
    if any(k in node for k in ("anyOf", "oneOf", "allOf", "not", "if")):
        return False
    if keyword == "pattern":
        return False
    if keyword == "additionalProperties":
        return path[-1] not in (node.get("properties") or {}) and "patternProperties" not in node
    if keyword == "type":
        return isinstance(node.get("type"), str)
    if keyword == "format":
        return node.get("format") in _SURE_FORMATS
    if keyword == "enum":
        return new not in node.get("enum", ())
    return True


def _apply(args: dict, path: tuple, new) -> dict:
    """``args`` with ``new`` at ``path``: the containers on the path are copied, nothing else."""
    out = copy.copy(args)
    target = out
    for step in path[:-1]:
        target[step] = copy.copy(target[step])
        target = target[step]
    if new is _DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = new
    return out


def break_arguments(parameters: dict, args: dict, rnd, prefer: str | None = None,
                    validator=None) -> tuple[dict, dict] | None:
    """``(bad_args, {"keyword", "path"})``: ``args`` with one schema rule broken; None when the
    schema allows anything (no properties, no rule to break). ``validator`` (or a function that
    returns one) is asked only about breaks :func:`sure` cannot vouch for."""
    options = [b for b in breaks_of(parameters, args, parameters) if b[1]]
    if prefer is not None:
        options = [b for b in options if b[0] == prefer] or options
    order = sorted(range(len(options)), key=lambda _: rnd.random())
    for i in order:
        keyword, path, new = options[i]
        bad = _apply(args, path, new)
        if not sure(parameters, parameters, keyword, path, new):
            if callable(validator) and not hasattr(validator, "is_valid"):
                validator = validator()
            validator = validator or validator_for(parameters)
            if validator is None or validator.is_valid(bad):
                continue
        return bad, {"keyword": keyword, "path": "/".join(map(str, path))}
    return None
