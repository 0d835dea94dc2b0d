"""``simulate(traces=...)``: read production traces and find the regions of the grid they show.

A trace is one conversation someone had with the agent in production. Accepted forms:

* rows (``rows()`` of a run, a ``SimulationData`` / ``ScoredData``, or dicts with ``prompt``
  and ``steps`` as whileai_ray writes them);
* OpenAI chat format, the form people export from production: ``{"messages": [{"role": "user",
  ...}, {"role": "assistant", "tool_calls": [{"function": {"name", "arguments"}}]}, {"role":
  "tool", "content": "<json>"}, ...]}`` (an optional ``tools`` list beside it is ignored);
* a path to a JSONL file of either (or a Parquet file of rows). The file is data: each line is
  parsed as JSON, nothing in it is imported, unpickled or run.

From each trace :func:`read_traces` keeps the ask (the first user message), the tools called
and what the world answered them, mapped onto the grid's vocabulary: a ``timeout`` /
``malformed`` / ``stale`` / ``permission_denied`` answer is that ``tool_condition``, and an
error in the other forms real logs write (``Error: order not found``, ``{"error": ...}``,
``{"status": 404}``, ``{"ok": false}``, a traceback: ``core/tool_outcome.py``) is the fault
``"error"``, widened to the grid's fault cells by ``search/traces/steering.py``; a
``not_found`` answer is ``world_state="entity missing"``, ``already_done`` is ``"entity already
acted on"``, a clean answer about a named record is ``"entity exists"`` (a row's own
``scenario_dimensions`` / ``world_state`` / ``faults`` win when present). :meth:`TraceSet.regions`
is the axes override that aims the grid at those tools, conditions and world states.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ..core.tool_outcome import classify_tool_answer

__all__ = ["Trace", "TraceSet", "read_traces"]

_FAULT_MODE_CONDITION = {"timeout": "timeout", "malformed": "malformed_result", "stale": "stale_result",
                         "permission_denied": "permission_denied"}


@dataclass
class Trace:
    ask: str
    tools: list = field(default_factory=list)          # tool names called, in order
    conditions: set = field(default_factory=set)       # grid tool_condition values the answers show
    world_states: set = field(default_factory=set)     # grid world_state values the answers show
    reward: float | None = None
    form: str = "row"                                  # "row" or "chat"


@dataclass
class TraceSet:
    traces: list = field(default_factory=list)
    bad: int = 0                                       # lines / items that held no usable trace

    @property
    def asks(self) -> list[str]:
        return [t.ask for t in self.traces]

    def regions(self, axes: dict) -> dict:
        """``{"tool", "tool_condition", "world_state"}`` values the traces show, within ``axes``
        (an axis the traces say nothing about, or only outside the grid's vocabulary, is left out
        and keeps its full range)."""
        out = {}
        seen: dict[str, set[str]] = {"tool": set(), "tool_condition": set(), "world_state": set()}
        for t in self.traces:
            seen["tool"].update(t.tools)
            seen["tool_condition"].update(t.conditions)
            seen["world_state"].update(t.world_states)
        for axis, values in seen.items():
            keep = [v for v in axes.get(axis, ()) if v in values]
            if keep:
                out[axis] = keep
        return out

    def summary(self, axes: dict | None = None) -> dict:
        tools: Counter[str] = Counter()
        conds: Counter[str] = Counter()
        worlds: Counter[str] = Counter()
        for t in self.traces:
            tools.update(t.tools)
            conds.update(t.conditions)
            worlds.update(t.world_states)
        known = set((axes or {}).get("tool", ()))
        return {"traces": len(self.traces), "skipped": self.bad,
                "forms": dict(sorted(Counter(t.form for t in self.traces).items())),
                "tools": dict(sorted(tools.items())), "tool_conditions": dict(sorted(conds.items())),
                "world_states": dict(sorted(worlds.items())),
                "unknown_tools": sorted(n for n in tools if known and n not in known),
                "graded": sum(1 for t in self.traces if t.reward is not None),
                "failing": sum(1 for t in self.traces if t.reward is not None and t.reward < 0.5)}


def _text(content) -> str:
    if isinstance(content, list):       # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


def _result(value):
    """A tool answer as a dict when it is (or holds) JSON, else the raw text under ``text``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"text": value}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return {"value": value}


def _note_answer(trace: Trace, answer, named: bool) -> None:
    """What one tool answer shows, read by :func:`classify_tool_answer`: an error written as text,
    an error field, an HTTP status or an exception is a fault (``"error"`` when it names no grid
    fault mode), not a success."""
    outcome = classify_tool_answer(_text(answer) if isinstance(answer, list) and answer
                                   and all(isinstance(p, dict) and "text" in p for p in answer) else answer)
    if outcome.condition is None:
        return
    trace.conditions.add(outcome.condition)
    if outcome.world_state:
        trace.world_states.add(outcome.world_state)
    elif outcome.condition == "success" and named:
        trace.world_states.add("entity exists")


def _from_row(row: dict) -> Trace | None:
    ask = row.get("prompt")
    if not isinstance(ask, str) or not ask.strip():
        return None
    trace = Trace(ask=ask.strip(), form="row")
    for step in row.get("steps") or ():
        if isinstance(step, dict) and step.get("tool"):
            trace.tools.append(str(step["tool"]))
            _note_answer(trace, step.get("result"), bool(step.get("arguments")))
    dims = row.get("scenario_dimensions")
    if not isinstance(dims, dict):
        dims = {}
    if dims.get("origin") != "realized":
        if dims.get("tool_condition"):
            trace.conditions.add(dims["tool_condition"])
        if dims.get("world_state") not in (None, "unknown", "unspecified"):
            trace.world_states.add(dims["world_state"])
    if isinstance(row.get("world_state"), str):
        trace.world_states.add(row["world_state"])
    for plan in (row.get("faults") or {}).values() if isinstance(row.get("faults"), dict) else ():
        mode = plan.get("mode") if isinstance(plan, dict) else None
        if mode in _FAULT_MODE_CONDITION:
            trace.conditions.add(_FAULT_MODE_CONDITION[mode])
    reward = row.get("reward")
    trace.reward = float(reward) if isinstance(reward, (int, float)) and not isinstance(reward, bool) else None
    return trace


def _from_chat(messages: list) -> Trace | None:
    ask = next((_text(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "user"
                and _text(m.get("content")).strip()), None)
    if not ask:
        return None
    trace = Trace(ask=ask.strip(), form="chat")
    named: dict = {}
    for m in messages:
        if not isinstance(m, dict):
            continue
        for call in m.get("tool_calls") or () if m.get("role") == "assistant" else ():
            fn = call.get("function", call) if isinstance(call, dict) else {}
            name = fn.get("name") if isinstance(fn, dict) else None
            if isinstance(name, str) and name:
                trace.tools.append(name)
                args = _result(fn.get("arguments"))
                named[call.get("id")] = bool(args) and "text" not in args
        if m.get("role") == "tool":
            _note_answer(trace, m.get("content"), named.get(m.get("tool_call_id"), True))
    return trace


def _one(item) -> Trace | None:
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("messages"), list) and not isinstance(item.get("prompt"), str):
        return _from_chat(item["messages"])
    return _from_row(item)


def _items(traces):
    if hasattr(traces, "trajectories") and isinstance(traces.trajectories, list):
        return list(traces.trajectories), 0
    if isinstance(traces, (str, os.PathLike)):
        path = Path(os.fspath(traces))
        if not path.is_file():
            raise ValueError(f"traces={os.fspath(traces)!r} names no file; pass the JSONL path of your "
                             "production traces, or their rows")
        if path.suffix == ".parquet":
            from ..store.reader import load_rows
            return load_rows(path)[0], 0
        items, bad = [], 0
        with open(path, "r", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if not line.strip():
                    continue
                try:
                    items.append(json.loads(line))
                except ValueError:
                    bad += 1
        return items, bad
    if isinstance(traces, (list, tuple)):
        return list(traces), 0
    raise TypeError(f"traces= takes rows (a list of dicts), a SimulationData, or a JSONL path; "
                    f"got {type(traces).__name__}")


def read_traces(traces) -> TraceSet:
    """The :class:`TraceSet` of a ``traces=`` value; ValueError when no item holds a user ask."""
    items, bad = _items(traces)
    out = TraceSet(bad=bad)
    for item in items:
        trace = _one(item)
        if trace is None:
            out.bad += 1
        else:
            out.traces.append(trace)
    if not out.traces:
        raise ValueError(f"traces= holds no trace with a user ask ({len(items)} item(s) read, {bad} unreadable "
                         "line(s)); each trace is a row with 'prompt' (and 'steps'), or OpenAI chat format "
                         "{'messages': [{'role': 'user', 'content': ...}, ...]}")
    return out
