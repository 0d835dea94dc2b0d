"""The ``steps`` and ``messages`` columns built column by column: what ``nested_column`` runs.

``nested_steps.py`` defines what a step or a message becomes (``_step``, ``_message``: one dict
per item, then ``pa.array`` over them all). Building those dicts and having Arrow walk them
again cost the Driver ~13 us a landed row. Here each struct field is one flat Python list,
each list level its offsets (and which entries are null), and Arrow takes every list in one
call. The values are the very ones ``_step`` and ``_message`` give (same ``kind`` rule, same
texts, same nulls), and ``tests/unit/store/parquet/test_row_columns.py`` holds the two equal on
odd rows. A text Arrow refuses (a lone surrogate) raises ``UnicodeEncodeError`` here;
``nested_column`` then takes the dict path, which stores it replaced.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .json_text import text_encoder

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["built_steps", "built_messages"]


def built_steps(values: list[Any], list_type: pa.DataType, step_keys: tuple[str, ...]) -> pa.Array:
    """``nested_column(values, "steps")`` (``list_type``: its type; ``step_keys``: the keys a step's
    own fields take, the rest is ``extra_json``); raises ``UnicodeEncodeError`` where Arrow refuses
    a text."""
    return _steps(values, text_encoder(), list_type, frozenset(step_keys))


def built_messages(values: list[Any], list_type: pa.DataType) -> pa.Array:
    """``nested_column(values, "messages")``; raises ``UnicodeEncodeError`` where Arrow refuses a text."""
    return _messages(values, text_encoder(), list_type)


def _list_array(offsets: list[int], valid: list[bool], items: pa.Array, list_type: pa.DataType) -> pa.Array:
    import pyarrow as pa
    mask = None if all(valid) else pa.array([not v for v in valid], pa.bool_())
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=list_type, mask=mask)


def _struct(children: list[list], struct_type: pa.DataType, built: dict[int, pa.Array] | None = None) -> pa.Array:
    import pyarrow as pa
    fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
    arrays = [built[i] if built and i in built else pa.array(c, fields[i].type) for i, c in enumerate(children)]
    return pa.StructArray.from_arrays(arrays, fields=fields)


def _steps(values: list[Any], text_of: Callable[[Any], str], list_type: pa.DataType,
           keys: frozenset[str]) -> pa.Array:
    kind: list = []
    tool: list = []
    args: list = []
    result_json: list = []
    status: list = []
    text: list = []
    user: list = []
    extra_json: list = []
    offsets, valid, n = [0], [], 0
    for value in values:
        valid.append(value is not None)
        if value is not None:
            for step in value if isinstance(value, list) else [value]:
                n += 1
                if not isinstance(step, dict):
                    kind.append("other")
                    extra_json.append(None if step is None else text_of(step))
                    for col in (tool, args, result_json, status, text, user):
                        col.append(None)
                    continue
                kind.append("tool" if "tool" in step else "user" if "user" in step else
                            "text" if "text" in step else "other")
                tool.append(_text(step.get("tool"), text_of))
                v = step.get("arguments")
                args.append(None if v is None else text_of(v))
                result = step.get("result")
                result_json.append(None if result is None else text_of(result))
                status.append(_text(result.get("status"), text_of) if isinstance(result, dict) else None)
                text.append(_text(step.get("text"), text_of))
                user.append(_text(step.get("user"), text_of))
                extra = {k: v for k, v in step.items() if k not in keys}
                extra_json.append(text_of(extra) if extra else None)
        offsets.append(n)
    items = _struct([kind, tool, args, result_json, status, text, user, extra_json], list_type.value_type)
    return _list_array(offsets, valid, items, list_type)


def _messages(values: list[Any], text_of: Callable[[Any], str], list_type: pa.DataType) -> pa.Array:
    role: list = []
    content: list = []
    name: list = []
    call_name: list = []
    call_args: list = []
    offsets, valid, n = [0], [], 0
    call_offsets, call_valid, m = [0], [], 0
    for value in values:
        valid.append(value is not None)
        if value is not None:
            for message in value if isinstance(value, list) else [value]:
                n += 1
                if not isinstance(message, dict):
                    role.append(None)
                    content.append(_text(message, text_of))
                    name.append(None)
                    call_valid.append(False)
                    call_offsets.append(m)
                    continue
                role.append(_text(message.get("role"), text_of))
                content.append(_text(message.get("content"), text_of))
                name.append(_text(message.get("name"), text_of))
                calls = message.get("tool_calls")
                call_valid.append(calls is not None)
                if calls is not None:
                    for c in calls if isinstance(calls, list) else [calls]:
                        m += 1
                        if isinstance(c, dict):
                            call_name.append(_text(c.get("name"), text_of))
                            v = c.get("arguments")
                            call_args.append(None if v is None else text_of(v))
                        else:
                            call_name.append(None)
                            call_args.append(None if c is None else text_of(c))
                call_offsets.append(m)
        offsets.append(n)
    message_type = list_type.value_type
    calls_type = message_type.field(3).type
    calls_array = _list_array(call_offsets, call_valid, _struct([call_name, call_args], calls_type.value_type),
                              calls_type)
    items = _struct([role, content, name, []], message_type, built={3: calls_array})
    return _list_array(offsets, valid, items, list_type)


def _text(value: Any, text_of: Callable[[Any], str]) -> str | None:
    """``nested_steps._text``: None, a str as it is, anything else its JSON text."""
    return None if value is None else value if isinstance(value, str) else text_of(value)
