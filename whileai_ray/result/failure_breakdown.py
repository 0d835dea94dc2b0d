"""Where a run fails: graded failures counted by grid cell, tool, fault kind and arm.

Plain functions over exported rows, for the HTML report (``html/report.py``) and anyone who
wants the same table in a notebook. A row is *graded* when it carries a numeric ``reward``
(a judge failure leaves ``reward`` unset and is not counted either way); it *failed* when that
reward is under 0.5, the same line the search steers by. Each breakdown is a list of
``Group(key, n, failed)`` sorted by failures, then failure rate, then key, so the worst
place comes first and the order never depends on dict order.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Group", "graded", "failed", "by_cell", "by_tool", "by_fault", "by_arm", "heat_map", "cell_label",
           "fault_kinds", "varying_axes"]

FAIL_BELOW = 0.5


@dataclass(frozen=True)
class Group:
    key: str
    n: int            # graded rows in the group
    failed: int       # of which failed

    @property
    def rate(self) -> float:
        return self.failed / self.n if self.n else 0.0


def graded(row: dict) -> bool:
    reward = row.get("reward")
    return isinstance(reward, (int, float)) and not isinstance(reward, bool)


def failed(row: dict) -> bool:
    return graded(row) and row["reward"] < FAIL_BELOW


def cell_label(row: dict, axes=None) -> str:
    """The row's grid cell as ``axis=value`` pairs (sorted by axis, ``origin`` left out), or as
    the values of ``axes`` alone (in that order) when given."""
    dims = row.get("scenario_dimensions") or {}
    if axes is not None:
        return " \u00b7 ".join(str(dims.get(a, "-")) for a in axes) or "(one cell)"
    return " \u00b7 ".join(f"{k}={dims[k]}" for k in sorted(dims) if k != "origin") or "(no cell)"


def varying_axes(rows) -> list:
    """The grid axes whose value differs between the graded rows, sorted by name."""
    values: dict = {}
    for r in rows:
        if graded(r):
            for k, v in (r.get("scenario_dimensions") or {}).items():
                if k != "origin":
                    values.setdefault(k, set()).add(str(v))
    return sorted(a for a, vs in values.items() if len(vs) > 1)


def fault_kinds(row: dict) -> list:
    """The fault modes scheduled for the row (``faults`` plan), else ``none``."""
    plan = row.get("faults") or {}
    kinds = sorted({str(v.get("mode")) for v in plan.values() if isinstance(v, dict) and v.get("mode")}) \
        if isinstance(plan, dict) else []
    return kinds or ["none"]


def _groups(rows, keys_of) -> list:
    counts: dict = {}
    for row in rows:
        if not graded(row):
            continue
        bad = failed(row)
        for key in keys_of(row):
            n, f = counts.get(key, (0, 0))
            counts[key] = (n + 1, f + bad)
    groups = [Group(str(k), n, f) for k, (n, f) in counts.items()]
    return sorted(groups, key=lambda g: (-g.failed, -g.rate, g.key))


def by_cell(rows, axes=None) -> list:
    """By grid cell; with ``axes``, cells are told apart by those axes only (``varying_axes``)."""
    return _groups(rows, lambda r: [cell_label(r, axes)])


def by_tool(rows) -> list:
    """Each tool a row called counts the row once; a row that called none counts as ``no tool``."""
    return _groups(rows, lambda r: sorted(set(r.get("tools_used") or ())) or ["no tool"])


def by_fault(rows) -> list:
    return _groups(rows, fault_kinds)


def by_arm(rows) -> list:
    return _groups(rows, lambda r: [str(r.get("arm") or "unknown")])


def heat_map(rows, max_values: int = 10) -> dict | None:
    """Failure rate over the two grid axes with the most values (each cut to ``max_values``):
    ``{"x": axis, "y": axis, "xs": [...], "ys": [...], "cells": {(y, x): Group}}``, or None
    when the rows have fewer than two axes or no graded row."""
    rows = [r for r in rows if graded(r)]
    values: dict = {}
    for r in rows:
        for k, v in (r.get("scenario_dimensions") or {}).items():
            if k != "origin":
                values.setdefault(k, set()).add(str(v))
    axes = sorted((a for a in values if len(values[a]) > 1), key=lambda a: (-len(values[a]), a))[:2]
    if len(axes) < 2:
        return None
    y_axis, x_axis = axes
    cells = {g.key: g for g in _groups(rows, lambda r: [_pair(r, y_axis, x_axis)])}
    ys = _top_values(cells, 0, max_values)
    xs = _top_values(cells, 1, max_values)
    grid = {}
    for key, g in cells.items():
        y, x = key.split("\x00")
        if y in ys and x in xs:
            grid[(y, x)] = g
    return {"x": x_axis, "y": y_axis, "xs": xs, "ys": ys, "cells": grid}


def _pair(row: dict, y_axis: str, x_axis: str) -> str:
    dims = row.get("scenario_dimensions") or {}
    return f"{dims.get(y_axis, '-')}\x00{dims.get(x_axis, '-')}"


def _top_values(cells: dict, side: int, limit: int) -> list:
    totals: dict = {}
    for key, g in cells.items():
        v = key.split("\x00")[side]
        totals[v] = totals.get(v, 0) + g.n
    return sorted(sorted(totals), key=lambda v: -totals[v])[:limit]
