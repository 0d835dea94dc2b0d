"""Rows -> trainer-ready chat records in the OpenAI wire format, with the round-trip gate.

One record per row::

    {"messages": [{"role": "system", "content": <system prompt>},      # when there is one
                  {"role": "user", "content": <prompt>},
                  {"role": "assistant", "tool_calls": [{"id": "call_0000", "type": "function",
                       "function": {"name": "lookup_order", "arguments": "{\\"order_id\\": \\"ORD-1\\"}"}}]},
                  {"role": "tool", "tool_call_id": "call_0000", "content": "<JSON result>"},
                  {"role": "assistant", "content": <final reply>}],
     "tools": [<the run's tools, {"type": "function", "function": {...}} form>],
     "loss_mask": [0, 0, 1, 0, 1],        # 1 on assistant turns (mask_mode "assistant")
     "schema_version": "1",
     "group_id": "g-...", "reward": 1.0}  # rl selections only

Tool-call ids are ``call_0000``, ``call_0001``... per record; arguments are JSON strings.
The round-trip gate (``validate=True``) drops a record unless every assistant tool call names a
declared tool, its arguments parse to an object holding the required parameters with the
declared JSON types, every tool reply answers an earlier call, and turning the record back
into a conversation gives exactly ``conversation(row)``. The report says how many failed and why.
"""
from __future__ import annotations

import json
from typing import Any

from ..core.rows import conversation
from ..score.pass_at.estimate import as_rows
from .row_checks import leaks_privileged, reward_of
from .training_files import read_training_file, write_records, write_training_jsonl, write_training_parquet

__all__ = ["wire_tools", "training_record", "training_records", "record_to_conversation", "validate_record",
           "roundtrip_check", "export_training", "write_training_jsonl",
           "write_training_parquet", "read_training_file", "MASK_MODE"]

MASK_MODE = "assistant"
_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
          "object": (dict,), "array": (list,)}
_MAX_ERRORS = 5


def wire_tools(tools) -> list:
    """Tool schemas in the ``{"type": "function", "function": {...}}`` form (bare ones wrapped)."""
    out = []
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            raise TypeError(f"tools[{i}] must be a function schema dict, got {type(tool).__name__}")
        fn = tool.get("function") if tool.get("type") == "function" else tool
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise ValueError(f"tools[{i}] has no function name; pass {{'type': 'function', "
                             "'function': {'name': ..., 'parameters': {...}}}")
        fn = dict(fn)
        fn.setdefault("parameters", {"type": "object", "properties": {}})
        out.append({"type": "function", "function": fn})
    return out


def _arguments_text(args) -> str:
    if isinstance(args, str):
        return args
    return json.dumps({} if args is None else args, ensure_ascii=False)


def training_record(row: dict, system_prompt: str = "", tools: list | None = None) -> dict:
    """One row as an OpenAI chat record (see the module docstring); ``tools`` already wire form."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    pending: list = []
    n_calls = 0
    for m in conversation(row):
        role = m["role"]
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for call in m["tool_calls"]:
                cid = f"call_{n_calls:04d}"
                n_calls += 1
                pending.append(cid)
                calls.append({"id": cid, "type": "function",
                              "function": {"name": call.get("name"), "arguments": _arguments_text(call.get("arguments"))}})
            msg = {"role": "assistant", "tool_calls": calls}
            if m.get("content"):
                msg["content"] = m["content"]
            messages.append(msg)
        elif role == "tool":
            cid = pending.pop(0) if pending else f"call_{n_calls:04d}"
            messages.append({"role": "tool", "tool_call_id": cid, "content": m.get("content") or ""})
        else:
            messages.append({"role": role, "content": m.get("content") or ""})
    record: dict[str, Any] = {"messages": messages, "tools": tools or [],
              "loss_mask": [1 if m["role"] == "assistant" else 0 for m in messages], "schema_version": "1"}
    if row.get("group_id"):
        record["group_id"] = row["group_id"]
        if isinstance(row.get("reward"), (int, float)) and not isinstance(row.get("reward"), bool):
            record["reward"] = float(row["reward"])
    return record


def training_records(rows, system_prompt: str = "", tools=None) -> list:
    """Every row as a training record (no checks; see ``roundtrip_check``)."""
    wire = wire_tools(tools)
    return [training_record(r, system_prompt, wire) for r in as_rows(rows)]


def record_to_conversation(record: dict) -> list:
    """The inverse of ``training_record``: the ``conversation(row)`` messages back (system dropped)."""
    names, out = {}, []
    for m in record["messages"]:
        role = m.get("role")
        if role == "system":
            continue
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                names[c["id"]] = c["function"]["name"]
                calls.append({"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])})
            out.append({"role": "assistant", "content": m.get("content") or "", "tool_calls": calls})
        elif role == "tool":
            out.append({"role": "tool", "name": names.get(m.get("tool_call_id")), "content": m.get("content")})
        else:
            out.append({"role": role, "content": m.get("content")})
    return out


def validate_record(record: dict) -> list:
    """Problems with ``record`` as an OpenAI chat record with tools (``[]`` when it is valid)."""
    errs = []
    msgs = record.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return ["messages must be a non-empty list"]
    ids = set()
    for i, m in enumerate(msgs):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("system", "user", "assistant", "tool"):
            errs.append(f"messages[{i}] has role {role!r}")
            continue
        if role == "assistant" and "tool_calls" in m:
            for c in m["tool_calls"]:
                fn = c.get("function") if isinstance(c, dict) else None
                if not (isinstance(c.get("id"), str) and c.get("type") == "function" and isinstance(fn, dict)
                        and isinstance(fn.get("name"), str) and isinstance(fn.get("arguments"), str)):
                    errs.append(f"messages[{i}] has a malformed tool call {c!r:.80}")
                else:
                    ids.add(c["id"])
            if "content" in m and not isinstance(m["content"], str):
                errs.append(f"messages[{i}] content must be a string")
        elif not isinstance(m.get("content"), str):
            errs.append(f"messages[{i}] ({role}) content must be a string")
        if role == "tool" and m.get("tool_call_id") not in ids:
            errs.append(f"messages[{i}] answers tool_call_id {m.get('tool_call_id')!r}, which no earlier call has")
    mask = record.get("loss_mask")
    if mask is not None and (len(mask) != len(msgs) or any(v not in (0, 1) for v in mask)):
        errs.append("loss_mask must hold one 0/1 per message")
    for t in record.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if not (t.get("type") == "function" and isinstance(fn, dict) and isinstance(fn.get("name"), str)):
            errs.append(f"tool {t!r:.60} is not {{'type': 'function', 'function': {{'name': ...}}}}")
    return errs


def _call_errors(record: dict, declared: dict) -> tuple[int, list]:
    n, errs = 0, []
    for m in record["messages"]:
        for c in m.get("tool_calls") or ():
            n += 1
            name = c["function"]["name"]
            if name not in declared:
                errs.append(f"call to {name!r}, which is not a declared tool")
                continue
            try:
                args = json.loads(c["function"]["arguments"])
            except ValueError:
                errs.append(f"{name} arguments are not valid JSON")
                continue
            if not isinstance(args, dict):
                errs.append(f"{name} arguments are a JSON {type(args).__name__}, not an object")
                continue
            params = declared[name]
            missing = [k for k in params.get("required") or () if k not in args]
            if missing:
                errs.append(f"{name} is missing required argument {missing[0]!r}")
            for key, value in args.items():
                want = ((params.get("properties") or {}).get(key) or {}).get("type")
                ok = _TYPES.get(want) if isinstance(want, str) else None
                if ok and (not isinstance(value, ok) or (want != "boolean" and isinstance(value, bool))):
                    errs.append(f"{name} argument {key!r} is {type(value).__name__}, declared {want}")
    return n, errs


def roundtrip_check(records: list, tools, rows=None) -> dict:
    """Check every record (see the module docstring); returns the counts and ``bad`` record indices."""
    declared = {t["function"]["name"]: t["function"].get("parameters") or {} for t in wire_tools(tools)}
    calls, bad = 0, []
    errors: list[str] = []
    for i, rec in enumerate(records):
        problems = validate_record(rec)
        if not problems:
            n, problems = _call_errors(rec, declared)
            calls += n
        if not problems and rows is not None and record_to_conversation(rec) != _canonical(rows[i]):
            problems = ["the record does not turn back into the row's conversation"]
        if problems:
            bad.append(i)
            errors.extend(f"record {i}: {p}" for p in problems[:1])
    return {"records": len(records), "tool_calls": calls, "failed": len(bad), "passed": not bad,
            "errors": errors[:_MAX_ERRORS], "bad": bad}


def _canonical(row: dict) -> list:
    msgs = conversation(row)
    for m in msgs:
        for c in m.get("tool_calls") or ():
            if c.get("arguments") is None:
                c["arguments"] = {}
            elif isinstance(c["arguments"], str):
                try:
                    c["arguments"] = json.loads(c["arguments"])
                except ValueError:
                    pass
    return msgs


def export_training(rows, path=None, system_prompt: str = "", tools=None, validate: bool = True,
                    sources=None) -> dict:
    """Records for ``rows``, gated when ``validate``, written to ``path`` (``*.parquet`` -> Parquet)."""
    rows = as_rows(rows)
    wire = wire_tools(tools)
    records = [training_record(r, system_prompt, wire) for r in rows]
    check = None
    if validate:
        check = roundtrip_check(records, wire, rows)
        bad = set(check.pop("bad"))
        records = [r for i, r in enumerate(records) if i not in bad]
        rows = [r for i, r in enumerate(rows) if i not in bad]
    sources = rows if sources is None else sources
    rewards = [v for v in (reward_of(r) for r in rows) if v is not None]
    report = {
        "n": len(records), "format": "openai", "with_tools": bool(wire),
        "groups": len({r["group_id"] for r in records if r.get("group_id")}),
        "tool_call_roundtrip": check, "mask_mode": MASK_MODE,
        "privileged_leaks": sum(1 for s in sources if leaks_privileged(s)),
        "privileged_checked": sum(1 for s in sources if isinstance(s.get("privileged"), dict)),
        "rewards": {"n": len(rewards), "mean": round(sum(rewards) / len(rewards), 4) if rewards else None,
                    "pass": sum(1 for v in rewards if v >= 1.0), "fail": sum(1 for v in rewards if v <= 0.0)},
        "tool_calls": sum(len(m.get("tool_calls") or ()) for r in records for m in r["messages"]),
        "system_prompt": bool(system_prompt), "path": None,
    }
    if path is not None:
        report["path"] = write_records(records, path)
    return report

