"""A row's exported form: what ``rows()``, files and graders see of an internal row.

Internal rows carry keys that never leave the process: ``privileged`` and the other
``HIDDEN_KEYS`` (at any depth) and ``_``-prefixed bookkeeping. ``export_row`` strips them (and
None values); ``conversation`` rebuilds the chat messages from prompt, steps and final text.
``stored_row`` is the form files keep (checkpoint, ``save()``, ``output=``): the exported row
plus its ``privileged`` block, which a ``tasks=`` replay needs (expected outcome, hidden state)
and which ``rows()``, ``training_set()``, ``select()`` and ``push()`` never show.
Plain Python at the bottom layer, because every layer that reads rows needs it (the store's
sinks, the graders, the result, the export), and none of them plays rollouts.
"""
from __future__ import annotations

import json
from typing import Any

from .row_values import json_default

__all__ = ["export_row", "stored_row", "conversation", "HIDDEN_KEYS"]

HIDDEN_KEYS = frozenset(("privileged", "principle", "hidden_state", "reference", "rubric", "vector"))


def conversation(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Chat messages from ``prompt``, ``steps`` and ``final_text`` (reference 1.1)."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": row.get("prompt") or ""}]
    for step in row.get("steps") or ():
        if not isinstance(step, dict):
            continue
        if "tool" in step:
            tool = step.get("tool")
            msgs.append({"role": "assistant", "content": step.get("text") or "",
                         "tool_calls": [{"name": tool, "arguments": step.get("arguments")}]})
            result = step.get("result")
            content = result if isinstance(result, str) else \
                json.dumps(result, ensure_ascii=False, default=json_default)    # as the row stores values
            msgs.append({"role": "tool", "name": tool, "content": content})
        elif "user" in step:
            msgs.append({"role": "user", "content": step.get("user") or ""})
        elif "text" in step:
            msgs.append({"role": "assistant", "content": step.get("text") or ""})
    final = row.get("final_text") or ""
    if final:
        last = msgs[-1]
        if last["role"] == "assistant" and last.get("content") == final:
            pass
        elif last["role"] == "assistant" and not last.get("content") and "tool_calls" not in last:
            last["content"] = final
        else:
            msgs.append({"role": "assistant", "content": final})
    return msgs


_CONTAINERS = (dict, list)


def _dirty(value: Any) -> bool:
    """Does a hidden key occur anywhere inside ``value``? (a scan, no copies)"""
    if type(value) is dict:
        if not HIDDEN_KEYS.isdisjoint(value):
            return True
        for v in value.values():
            if type(v) in _CONTAINERS and _dirty(v):
                return True
        return False
    for v in value:
        if type(v) in _CONTAINERS and _dirty(v):
            return True
    return False


def _clean(value: Any) -> Any:
    """Copy of dicts/lists without HIDDEN_KEYS at any depth (only called on dirty values)."""
    if type(value) is dict:
        return {k: _clean(v) if type(v) in _CONTAINERS else v for k, v in value.items() if k not in HIDDEN_KEYS}
    return [_clean(v) if type(v) in _CONTAINERS else v for v in value]


def export_row(traj: dict[str, Any]) -> dict[str, Any]:
    """The ``rows()`` form: a fresh dict without hidden keys (any depth), ``_`` keys or None values.

    Nested values that hold no hidden key are shared with ``traj``, not copied (that is what
    keeps ``rows()`` of 20,000 rows well under half a second); treat exported rows as read-only
    or copy them before changing nested values."""
    prompt, steps, final = traj.get("prompt"), traj.get("steps"), traj.get("final_text")
    if not isinstance(prompt, str) or not isinstance(steps, list) or not isinstance(final, str):
        raise ValueError("schema_invalid in export_row: prompt and final_text must be str and steps a list; got "
                         f"prompt={type(prompt).__name__}, steps={type(steps).__name__}, "
                         f"final_text={type(final).__name__}")
    out: dict[str, Any] = {}
    for k, v in traj.items():
        if v is None or k in HIDDEN_KEYS or k[:1] == "_":
            continue
        out[k] = _clean(v) if type(v) in _CONTAINERS and _dirty(v) else v
    return out


def stored_row(traj: dict[str, Any]) -> dict[str, Any]:
    """The form a row is stored in (checkpoint, ``save()``, ``output=``): ``export_row`` plus the
    top-level ``privileged`` block, so a replay from the file plays the same situations (issue 11
    item 6). Reading the file back gives trajectories that carry it again; ``rows()`` strips it."""
    out = export_row(traj)
    privileged = traj.get("privileged")
    if privileged:
        out["privileged"] = privileged
    return out
