"""Callable agents: turn whatever a user's function returned into a trajectory, and judge usability.

A callable agent is ``message -> {"steps": [...], "final_text": str}``. Users also return a
plain string, None, or raise; ``normalize_trajectory`` and ``agent_error`` turn each case into
the same trajectory shape, and ``unusable_reason`` says which rollouts must be re-rolled
(reference 4.3): agent errors, empty replies, and raw tool-call markup leaking into the text.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from ..core.row_values import json_default, json_value

__all__ = ["normalize_trajectory", "agent_error", "unusable_reason", "AGENT_ERROR_PREFIX"]

AGENT_ERROR_PREFIX = "<agent error"

# Raw tool-call syntax or dumped function schemas in text a person would read.
_MARKUP_RE = re.compile(
    r"</?tool_call>|<\|tool_call\|>|</?function_call>|<\|python_tag\|>|\[TOOL_CALLS\]"
    r"|\"name\"\s*:\s*\"[^\"]*\"\s*,\s*\"(?:arguments|parameters)\"\s*:"
    r"|\"type\"\s*:\s*\"function\"\s*,\s*\"function\"\s*:"
    r"|\"parameters\"\s*:\s*\{\s*\"type\"\s*:\s*\"object\"")


def agent_error(exc: BaseException, timed_out: bool = False) -> dict:
    """The trajectory of a rollout whose agent raised (or ran past its timeout)."""
    msg = f"{type(exc).__name__}: {exc}"
    return {"steps": [], "final_text": f"{AGENT_ERROR_PREFIX}: {msg}>", "finish_reason": "error",
            "error": msg, "timed_out": bool(timed_out)}


def _shape_error(message: str) -> dict:
    return agent_error(TypeError(message))


def normalize_trajectory(result) -> dict:
    """Agent return value -> ``{"steps": list, "final_text": str, ...}`` (a fresh dict).

    * dict with ``steps`` and/or ``final_text``: kept, other keys too (``seeded``, ``finish_reason``);
      a pydantic model, dataclass or mapping with those fields reads as that dict;
    * str (or any other value): ``{"steps": [], "final_text": str(result)}`` (bytes as UTF-8 text);
    * None: an empty reply; a dict with neither key: an agent error naming the keys it had.
    """
    if result is None:
        return {"steps": [], "final_text": ""}
    if isinstance(result, str):
        return {"steps": [], "final_text": result}
    if not isinstance(result, dict):
        record = _record(result)
        if record is None:
            return {"steps": [], "final_text": _text(result)}
        result = record
    if "steps" not in result and "final_text" not in result:
        keys = sorted(map(str, result))
        return _shape_error(f"agent returned keys {keys} instead of steps and final_text")
    out = dict(result)
    steps = out.get("steps")
    if steps is None:
        steps = []
    elif isinstance(steps, tuple):
        steps = list(steps)
    if not isinstance(steps, list):
        return _shape_error(f"agent returned steps as {type(steps).__name__}; steps must be a list of dicts")
    bad = next((i for i, s in enumerate(steps) if not isinstance(s, dict)), None)
    if bad is not None:
        return _shape_error(f"agent returned steps[{bad}] as {type(steps[bad]).__name__}; "
                            "each step must be a dict like {'tool', 'arguments', 'result'}")
    out["steps"] = steps
    text = out.get("final_text")
    out["final_text"] = "" if text is None else _text(text)
    return out


def _text(value) -> str:
    """A reply as text: bytes as their UTF-8 text (not ``"b'...'"``), anything else as ``str()``."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return json_value(value)[0]
    return str(value)


def _record(result) -> dict | None:
    """A typed reply (a pydantic model, a dataclass, a mapping) with ``steps``/``final_text`` fields
    as a dict; None for any other value (its text becomes the reply)."""
    if isinstance(result, (bytes, bytearray, list, tuple, int, float)) or isinstance(result, type):
        return None
    try:
        record = dict(result) if isinstance(result, Mapping) else json_default(result)
    except Exception:      # a model that cannot dump itself: its text is the reply
        return None
    if isinstance(record, dict) and ("steps" in record or "final_text" in record):
        return record
    return None


def unusable_reason(traj: dict) -> str | None:
    """Why this rollout cannot be used ("agent_error", "empty_reply", "tool_markup"), or None."""
    text = traj.get("final_text") or ""
    if text.startswith(AGENT_ERROR_PREFIX) or traj.get("finish_reason") == "error" and traj.get("error"):
        return "agent_error"
    if not text.strip():
        return "empty_reply"
    if _MARKUP_RE.search(text):
        return "tool_markup"
    for step in traj.get("steps") or ():
        visible = step.get("text") if isinstance(step, dict) else None
        if isinstance(visible, str) and visible and _MARKUP_RE.search(visible):
            return "tool_markup"
    return None
