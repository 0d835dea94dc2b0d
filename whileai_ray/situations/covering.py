"""Pairwise (strength-2) covering arrays over the coverage axes.

A covering array is a small set of cells (one value per axis) such that every pair of values
of every two axes appears together in at least one cell. It is how a handful of cells (62 for a
one-tool agent) stands in for the full product of the axes (3 x 10 x 6 x 5 x 5 = 4,500).

Construction (deterministic, no randomness):

* ``rule`` is built in layers, so adding a policy clause never reshuffles the cells that were
  there before: the first rule value (``unspecified`` when the grid has a policy) gets a full
  pairwise block over the other axes; every further clause gets its own block of
  ``max(len(axis))`` cells in which each other axis cycles through all its values.
* The pairwise block is IPOG (in-parameter-order growth): start from the product of the two
  largest axes, then add one axis at a time, first choosing for each existing cell the value that
  covers the most uncovered pairs (ties go to the least-used value), then appending cells for
  pairs still uncovered. Free slots left at the end take the least-used value of their axis.
"""
from __future__ import annotations

from itertools import combinations

__all__ = ["pairwise_cells", "all_pairs", "pairs_in"]

_AXIS_ORDER = ("tool", "rule", "stance", "world_state", "tool_condition", "history")
_LAYERED = "rule"


def _ordered_names(names) -> list[str]:
    known = [a for a in _AXIS_ORDER if a in names]
    return known + sorted(a for a in names if a not in _AXIS_ORDER)


def _ipog(values: list[list]) -> list[list[int]]:
    """Rows of value indices covering every pair of columns; ``values`` sorted by size desc."""
    n = len(values)
    sizes = [len(v) for v in values]
    if n == 1:
        return [[i] for i in range(sizes[0])]
    rows: list[list] = [[i, j] + [None] * (n - 2) for i in range(sizes[0]) for j in range(sizes[1])]
    for k in range(2, n):
        uncovered = {(j, a, b) for j in range(k) for a in range(sizes[j]) for b in range(sizes[k])}
        used = [0] * sizes[k]
        # horizontal growth
        for row in rows:
            best, best_key = 0, None
            for b in range(sizes[k]):
                gain = 0
                for j in range(k):
                    if row[j] is not None and (j, row[j], b) in uncovered:
                        gain += 1
                key = (-gain, used[b], b)
                if best_key is None or key < best_key:
                    best, best_key = b, key
            row[k] = best
            used[best] += 1
            for j in range(k):
                if row[j] is not None:
                    uncovered.discard((j, row[j], best))
        # vertical growth
        for (j, a, b) in sorted(uncovered):
            if (j, a, b) not in uncovered:
                continue
            placed = False
            for row in rows:
                if row[k] == b and row[j] is None:
                    row[j] = a
                    placed = True
                    break
                if row[j] == a and row[k] is None:
                    row[k] = b
                    placed = True
                    break
            if not placed:
                row = [None] * n
                row[j], row[k] = a, b
                rows.append(row)
            for jj in range(k):
                if row[jj] is not None and row[k] is not None:
                    uncovered.discard((jj, row[jj], row[k]))
    counts = [[0] * s for s in sizes]
    for row in rows:
        for c, v in enumerate(row):
            if v is not None:
                counts[c][v] += 1
    for row in rows:
        for c, v in enumerate(row):
            if v is None:
                pick = min(range(sizes[c]), key=lambda x: (counts[c][x], x))
                row[c] = pick
                counts[c][pick] += 1
    return rows


def _pairwise_block(axes: dict[str, list]) -> list[dict]:
    names = _ordered_names(axes)
    if not names:
        return [{}]
    order = sorted(names, key=lambda a: (-len(axes[a]), names.index(a)))
    rows = _ipog([list(axes[a]) for a in order])
    return [{a: axes[a][row[order.index(a)]] for a in names} for row in rows]


def _clause_block(axes: dict[str, list], clause: str, clause_index: int) -> list[dict]:
    """Cells pairing one clause with every value of every other axis (cycled, offset per clause)."""
    others = [a for a in _ordered_names(axes) if a != _LAYERED]
    width = max((len(axes[a]) for a in others), default=1)
    cells = []
    for i in range(width):
        cell = {}
        for pos, a in enumerate(others):
            vals = axes[a]
            cell[a] = vals[(i + clause_index * (pos + 1)) % len(vals)]
        cell[_LAYERED] = clause
        cells.append({a: cell[a] for a in _ordered_names(cell)})
    return cells


def pairwise_cells(axes: dict[str, list]) -> list[dict]:
    """A deterministic strength-2 covering array over ``axes`` (axis -> list of values).

    Every pair of values of every two axes appears in at least one returned cell; cells are
    dicts with the axes in the canonical order (tool, rule, stance, world_state,
    tool_condition, history).
    """
    clean = {a: list(dict.fromkeys(v)) for a, v in axes.items()}
    for a, v in clean.items():
        if not v:
            raise ValueError(f"axis {a!r} has no values; every coverage axis needs at least one")
    rules = clean.get(_LAYERED)
    if not rules or len(rules) == 1:
        return _pairwise_block(clean)
    base = dict(clean)
    base[_LAYERED] = rules[:1]
    cells = _pairwise_block(base)
    for i, clause in enumerate(rules[1:], start=1):
        cells.extend(_clause_block(clean, clause, i))
    return cells


def all_pairs(axes: dict[str, list]) -> set:
    """Every value pair the grid must cover: {((axis1, v1), (axis2, v2))} with axis1 < axis2."""
    names = _ordered_names(axes)
    out = set()
    for a1, a2 in combinations(names, 2):
        for v1 in axes[a1]:
            for v2 in axes[a2]:
                out.add(((a1, v1), (a2, v2)))
    return out


def pairs_in(cells) -> set:
    """The value pairs the given cells cover, in the same form as :func:`all_pairs`."""
    out = set()
    for cell in cells:
        names = _ordered_names(cell)
        for a1, a2 in combinations(names, 2):
            out.add(((a1, cell[a1]), (a2, cell[a2])))
    return out


def fold_fault_cells(cells: list[dict]) -> list[dict]:
    """Explore-style grids: keep one cell per fault condition, turn the other fault cells into
    success cells (duplicates dropped). Faults still reach any situation through fault_rate;
    the grid's breadth goes to the axes a success path exercises. (rl keeps every fault cell.)"""
    out, seen, kept_faults = [], set(), set()
    for cell in cells:
        cond = cell.get("tool_condition", "success")
        if cond != "success":
            if cond in kept_faults:
                cell = {**cell, "tool_condition": "success"}
            else:
                kept_faults.add(cond)
        key = tuple(sorted(cell.items()))
        if key not in seen:
            seen.add(key)
            out.append(cell)
    return out
