"""Calls the world refused because their arguments broke the tool's schema, counted in one row
(plain logic at the bottom layer: the row's fact column ``invalid_calls`` is computed from it in
``score/row_facts.py``, the run's report in ``result/invalid_calls.py``).

A step whose result is ``{"status": "invalid_arguments", ...}`` (``world/validation.py``) is an
invalid call: the agent sent what the tool's JSON Schema does not allow.
"""
from __future__ import annotations

__all__ = ["INVALID_STATUS", "invalid_tools", "invalid_call_count"]

INVALID_STATUS = "invalid_arguments"


def invalid_tools(row: dict) -> list:
    """The tool names of the steps in ``row`` whose call the world refused as invalid arguments."""
    out = []
    for s in row.get("steps") or ():
        if isinstance(s, dict) and "tool" in s:
            result = s.get("result")
            if isinstance(result, dict) and result.get("status") == INVALID_STATUS:
                out.append(s["tool"] if isinstance(s["tool"], str) else str(s["tool"]))
    return out


def invalid_call_count(row: dict) -> int:
    """How many of ``row``'s tool calls the world refused as invalid arguments."""
    return len(invalid_tools(row))
