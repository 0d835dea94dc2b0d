"""``steps`` and ``messages`` as nested Arrow types: the Parquet copy's form since schema "2".

A row's ``steps`` and ``messages`` are where its tool calls are. Stored as JSON text (schema
"1") a query engine reaches a tool call only through JSON functions; stored as these types,
DuckDB or polars unnest them directly (``select unnest(steps).tool from 'rows.parquet'``):

``steps``     list<struct<kind, tool, arguments_json, result_json, status, text, user, extra_json>>
    ``kind`` is ``"tool"``, ``"user"``, ``"text"`` or ``"other"``; ``status`` is the tool
    result's ``status`` when it has one. Tool arguments and results are arbitrary JSON (an
    agent may send anything: nested dicts whose keys vary, arrays of objects, any depth), so
    they stay JSON text inside the struct; so do a step's other keys (``extra_json``) and a step
    that is not a dict (``kind="other"``). A field the step does not have is null.
``messages``  list<struct<role, content, name, tool_calls: list<struct<name, arguments_json>>>>
    ``content`` that is not text is JSON text.

The columns are a view for queries, not a lossless encoding: ``row_json`` holds every row
exactly and is what ``whileai_ray`` reads back. ``result/nested_columns.py`` (``to_arrow(nested=True)``)
uses the same types, so a table from a result and the Parquet copy agree.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Iterable

from ...core.strict_json import dumps

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["nested_types", "nested_column", "nest_columns", "nested_schema", "nest_json_columns", "NESTED"]

NESTED = ("steps", "messages")
_STEP_KEYS = ("tool", "arguments", "result", "text", "user")


def nested_types() -> tuple[pa.DataType, pa.DataType]:
    """``(steps type, messages type)``."""
    import pyarrow as pa
    s = pa.string()
    step = pa.struct([("kind", s), ("tool", s), ("arguments_json", s), ("result_json", s), ("status", s),
                      ("text", s), ("user", s), ("extra_json", s)])
    call = pa.struct([("name", s), ("arguments_json", s)])
    message = pa.struct([("role", s), ("content", s), ("name", s), ("tool_calls", pa.list_(call))])
    return pa.list_(step), pa.list_(message)


def _text(value: Any) -> str | None:
    return None if value is None else value if isinstance(value, str) else dumps(value)


def _json(value: Any) -> str | None:
    return None if value is None else dumps(value)


def _step(step: Any) -> dict:
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


def _message(message: Any) -> dict:
    if not isinstance(message, dict):
        return {"content": _text(message)}
    calls = message.get("tool_calls")
    return {"role": _text(message.get("role")), "content": _text(message.get("content")),
            "name": _text(message.get("name")),
            "tool_calls": None if calls is None else
            [{"name": _text(c.get("name")), "arguments_json": _json(c.get("arguments"))} if isinstance(c, dict)
             else {"name": None, "arguments_json": _json(c)} for c in (calls if isinstance(calls, list) else [calls])]}


def nested_column(values: Iterable[Any], name: str) -> pa.Array:
    """The Arrow array of column ``name`` (``steps`` or ``messages``) for these row values (a value
    that is not a list is taken as a one-item list; None stays null).

    Built column by column (``nested_build.py``: each struct field a flat list, the lists' offsets
    beside), which is what the Driver pays per landed row; a text Arrow refuses (a lone
    surrogate) builds it the plain way, from the dicts below, which stores it replaced."""
    from .nested_build import built_messages, built_steps
    values = values if isinstance(values, list) else list(values)
    steps_type, messages_type = nested_types()
    try:
        return built_steps(values, steps_type, _STEP_KEYS) if name == "steps" else built_messages(values, messages_type)
    except UnicodeEncodeError:
        return dict_column(values, name)


def dict_column(values: Iterable[Any], name: str) -> pa.Array:
    """``nested_column`` from one dict per step or message (the plain way; the reference)."""
    import pyarrow as pa
    convert = _step if name == "steps" else _message
    arrow_type = nested_types()[0 if name == "steps" else 1]
    out = [None if v is None else [convert(x) for x in (v if isinstance(v, list) else [v])] for v in values]
    try:
        return pa.array(out, type=arrow_type)
    except UnicodeEncodeError:          # a lone surrogate in a text field: stored replaced (row_json is exact)
        return pa.array(json.loads(dumps(out)), type=arrow_type)


def nest_columns(table: pa.Table, rows: Iterable[dict]) -> pa.Table:
    """``table`` (one row per ``rows`` item) with ``steps`` and ``messages`` as the nested types."""
    for name in NESTED:
        i = table.schema.get_field_index(name)
        column = nested_column([r.get(name) for r in rows], name)
        table = table.set_column(i, table.schema.field(i).with_type(column.type), column)
    return table


def nest_json_columns(table: pa.Table) -> pa.Table:
    """A schema-"1" table (``steps`` and ``messages`` as JSON text) with them nested (schema "2"'s
    types), decoded from that text: how a version-1 file joins version-2 ones."""
    import pyarrow as pa
    loads = json.JSONDecoder().decode
    for name in NESTED:
        i = table.schema.get_field_index(name)
        if i < 0 or not pa.types.is_string(table.schema.field(i).type):
            continue
        values = [None if t is None else loads(t) for t in table.column(i).to_pylist()]
        column = nested_column(values, name)
        table = table.set_column(i, table.schema.field(i).with_type(column.type), column)
    return table


def nested_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``steps`` and ``messages`` nested (its metadata kept)."""
    for name, arrow_type in zip(NESTED, nested_types()):
        i = schema.get_field_index(name)
        schema = schema.set(i, schema.field(i).with_type(arrow_type))
    return schema
