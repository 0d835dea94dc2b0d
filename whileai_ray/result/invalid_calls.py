"""Calls the world refused because their arguments broke the tool's schema.

A row's step whose result is ``{"status": "invalid_arguments", ...}`` (``world/validation.py``)
is an invalid call: the agent sent what the tool's JSON Schema does not allow. The count per
row is a fact column (``invalid_calls``, ``score/row_facts.py``); ``report()["delivered"]`` carries
the run's total, the rows with at least one, and the count per tool, so a run whose agent
breaks schemas says so instead of passing for one that did the job.
"""
from __future__ import annotations

from ..core.invalid_calls import INVALID_STATUS, invalid_call_count, invalid_tools

__all__ = ["INVALID_STATUS", "invalid_call_count", "invalid_calls_report"]


def invalid_calls_report(rows) -> dict:
    """``{"calls", "rows", "by_tool"}`` over a run's rows: in-memory rows are read directly, rows
    on disk through their ``invalid_calls`` fact column (no per-tool split there)."""
    from .row_store import row_store
    store = row_store(rows)
    if getattr(store, "is_arrow", False):
        import pyarrow.compute as pc
        try:
            column = store.facts(("invalid_calls",)).column("invalid_calls")
        except (KeyError, ValueError):
            return {"calls": 0, "rows": 0, "by_tool": {}}
        calls = int(pc.sum(column).as_py() or 0) if len(column) else 0
        hit = int(pc.sum(pc.cast(pc.greater(column, 0), "int64")).as_py() or 0) if len(column) else 0
        return {"calls": calls, "rows": hit, "by_tool": {}}
    calls = hit = 0
    by_tool: dict = {}
    for r in rows:
        tools = invalid_tools(r)
        if tools:
            hit += 1
            calls += len(tools)
            for t in tools:
                by_tool[t] = by_tool.get(t, 0) + 1
    return {"calls": calls, "rows": hit, "by_tool": by_tool}
