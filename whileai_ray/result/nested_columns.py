"""``steps`` and ``messages`` as nested Arrow columns, for ``data.to_arrow(nested=True)``.

In the Parquet copy (``store/schema.py``) both are JSON text: a query engine reaches a tool call
through JSON functions. ``nested=True`` gives them Arrow types instead, so DuckDB or polars
unnest the tool calls directly (``select unnest(steps).tool from data``):

``steps``     list<struct<kind, tool, arguments_json, result_json, status, text, user, extra_json>>
    ``kind`` is ``"tool"``, ``"user"``, ``"text"`` or ``"other"``; ``status`` is the tool
    result's ``status`` when it has one. Tool arguments and results are arbitrary JSON (an
    agent may send anything), so they stay JSON text inside the struct; so do a step's other
    keys (``extra_json``). A field the step does not have is null.
``messages``  list<struct<role, content, name, tool_calls: list<struct<name, arguments_json>>>>
    ``content`` that is not text is JSON text.

``row_json`` still holds every row exactly; these columns are a view for queries.
"""
from __future__ import annotations

from ..core.strict_json import dumps

__all__ = ["nest_columns", "nested_schema"]

_STEP_KEYS = ("tool", "arguments", "result", "text", "user")


def _types():
    import pyarrow as pa
    s = pa.string()
    step = pa.struct([("kind", s), ("tool", s), ("arguments_json", s), ("result_json", s), ("status", s),
                      ("text", s), ("user", s), ("extra_json", s)])
    call = pa.struct([("name", s), ("arguments_json", s)])
    message = pa.struct([("role", s), ("content", s), ("name", s), ("tool_calls", pa.list_(call))])
    return pa.list_(step), pa.list_(message)


def _text(value):
    return None if value is None else value if isinstance(value, str) else dumps(value)


def _json(value):
    return None if value is None else dumps(value)


def _step(step) -> dict:
    if not isinstance(step, dict):
        return {"kind": "other", "extra_json": _json(step)}
    kind = next((k for k in ("tool", "user", "text") if k in step), "other")
    result = step.get("result")
    extra = {k: v for k, v in step.items() if k not in _STEP_KEYS}
    return {"kind": kind, "tool": _text(step.get("tool")), "arguments_json": _json(step.get("arguments")),
            "result_json": _json(result),
            "status": _text(result.get("status")) if isinstance(result, dict) else None,
            "text": _text(step.get("text")), "user": _text(step.get("user")),
            "extra_json": _json(extra) if extra else None}


def _message(message) -> dict:
    if not isinstance(message, dict):
        return {"content": _text(message)}
    calls = message.get("tool_calls")
    return {"role": _text(message.get("role")), "content": _text(message.get("content")),
            "name": _text(message.get("name")),
            "tool_calls": None if calls is None else
            [{"name": _text(c.get("name")), "arguments_json": _json(c.get("arguments"))} if isinstance(c, dict)
             else {"name": None, "arguments_json": _json(c)} for c in (calls if isinstance(calls, list) else [calls])]}


def _column(rows, key, convert, arrow_type):
    import pyarrow as pa
    values = []
    for row in rows:
        value = row.get(key)
        values.append(None if value is None else [convert(v) for v in (value if isinstance(value, list) else [value])])
    return pa.array(values, type=arrow_type)


def nest_columns(table, rows):
    """``table`` (the Parquet copy's schema, one row per ``rows`` item) with ``steps`` and
    ``messages`` as the nested types above."""
    step_type, message_type = _types()
    for name, convert, arrow_type in (("steps", _step, step_type), ("messages", _message, message_type)):
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, _column(rows, name, convert, arrow_type))
    return table


def nested_schema(schema):
    """``schema`` with ``steps`` and ``messages`` nested (its metadata kept)."""
    step_type, message_type = _types()
    for name, arrow_type in (("steps", step_type), ("messages", message_type)):
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(i).with_type(arrow_type))
    return schema
