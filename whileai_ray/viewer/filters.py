"""A run page's filters: which rows of a ``RunIndex`` a query asks for, done on the server.

Query parameters (each optional, exact values as the filter menus list them):
``tool`` (the row used that tool; ``none``: it used none), ``tier``, ``fault`` (a fault kind
the row was dealt; ``none``: no fault), ``verdict`` (``pass`` / ``fail`` / ``ungraded``),
``judge`` (the judge status; ``none`` when the row has none) and ``page`` (from 1). The
filtering walks the index's plain lists (100,000 rows in a few milliseconds), never rows.
"""
from __future__ import annotations

from collections import Counter

__all__ = ["FILTERS", "parse", "select", "options", "PAGE_ROWS"]

FILTERS = ("tool", "tier", "fault", "verdict", "judge")
PAGE_ROWS = 100


def parse(query: dict) -> tuple[dict, int]:
    """``({filter: value}, page)`` from parsed query parameters (first value of each)."""
    chosen = {}
    for name in FILTERS:
        value = (query.get(name) or [""])[0]
        if value:
            chosen[name] = value[:200]
    try:
        page = max(1, int((query.get("page") or ["1"])[0]))
    except ValueError:
        page = 1
    return chosen, page


def _match(index, i: int, chosen: dict) -> bool:
    for name, value in chosen.items():
        if name == "tool":
            tools = index.tools[i]
            if not (value in tools if value != "none" else not tools):
                return False
        elif name == "fault":
            kinds = index.faults[i]
            if not (value in kinds if value != "none" else not kinds):
                return False
        elif name == "tier" and index.tier[i] != value:
            return False
        elif name == "verdict" and index.verdict[i] != value:
            return False
        elif name == "judge" and index.judge[i] != value:
            return False
    return True


def select(index, chosen: dict) -> list:
    """Indices of the rows that pass every chosen filter, in run order."""
    if not chosen:
        return list(range(len(index)))
    return [i for i in range(len(index)) if _match(index, i, chosen)]


def options(index) -> dict:
    """``{filter: [(value, rows)]}``: what each menu offers, most common first."""
    tools: Counter[str] = Counter()
    faults: Counter[str] = Counter()
    for names in index.tools:
        tools.update(set(names) or ["none"])
    for kinds in index.faults:
        faults.update(set(kinds) or ["none"])
    return {"tool": tools.most_common(), "tier": Counter(index.tier).most_common(),
            "fault": faults.most_common(), "verdict": Counter(index.verdict).most_common(),
            "judge": Counter(index.judge).most_common()}
