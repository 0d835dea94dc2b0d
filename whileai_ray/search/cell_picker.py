"""Which grid cell the next situation comes from.

Least-covered first, with a seeded tie-break, inside the tier class the round needs:
``hard_share`` of the new situations come from the hard tiers (ambiguous, boundary,
adversarial) and the rest from ordinary cells. The share is delivered exactly, not in
expectation: a running error term carries the fraction from one pick to the next, so after
any number of picks the hard count is within one of ``hard_share * picks``.

A second dial, the fault class, works the same way: when a situation must (or must not)
run under a tool fault, the picker draws from the cells whose ``tool_condition`` agrees, so
the prompt's wording and the fault plan never contradict each other.
"""
from __future__ import annotations

import heapq

import numpy as np

from ..core.rng import KeyedDraw
from ..situations.grid import HARD_TIERS, cell_key, tier_of
from ..core.columns import State


class CellPicker:
    def __init__(self, cells: list[dict], seed: int, hard_share: float):
        self.seed = seed
        self.hard_share = float(hard_share)
        self.cells = cells
        self.keys = [cell_key(c) for c in cells]
        self._ties: dict[int, KeyedDraw] = {}     # a cell's tie draws, its key's hash taken once
        self.opened = [0] * len(cells)          # situations opened per cell
        self._hard_debt = 0.0
        self.hard_picks = 0
        self.picks = 0
        self._build_heaps()
        self.has_hard = any(k[0] for k in self._heaps)
        self.has_ordinary = any(not k[0] for k in self._heaps)

    def _build_heaps(self) -> None:
        """Four heaps, (hard?, faulted?) -> [(opened, tie, index)], from ``opened``. A heap only
        ever hands out its least entry and its entries are all distinct, so heaps rebuilt from
        the counts pop in the same order as the ones that were grown pick by pick."""
        self._heaps: dict[tuple[bool, bool], list] = {}
        for i, c in enumerate(self.cells):
            hard = tier_of(c.get("stance", "ordinary")) in HARD_TIERS
            faulted = c.get("tool_condition", "success") not in ("success", None)
            self._heaps.setdefault((hard, faulted), []).append((self.opened[i], self._tie(i, self.opened[i]), i))
        for h in self._heaps.values():
            heapq.heapify(h)

    def _tie(self, index: int, opened: int) -> float:
        """``draw(seed, "cell-tie", cell key, opened)``."""
        tie = self._ties.get(index)
        if tie is None:
            tie = self._ties[index] = KeyedDraw(self.seed, "cell-tie", self.keys[index])
        return tie(opened)

    def _want_hard(self) -> bool:
        if not self.has_hard:
            return False
        if not self.has_ordinary:
            return True
        self._hard_debt += self.hard_share
        if self._hard_debt >= 0.5:
            self._hard_debt -= 1.0
            return True
        return False

    def pick(self, faulted: bool | None = None) -> tuple[dict, int]:
        """Return ``(cell, instance)``: the cell and how many situations it had before.

        ``faulted`` asks for a cell whose tool_condition is a fault (True), is success
        (False), or either (None); the tier class comes first, the fault class second.
        """
        index, instance = self.pick_index(faulted)
        return self.cells[index], instance

    def pick_index(self, faulted: bool | None = None) -> tuple[int, int]:
        """:meth:`pick`, with the cell's index in ``cells`` instead of the cell."""
        hard = self._want_hard()
        index = None
        for want_hard in (hard, not hard):
            for want_fault in ((faulted, not faulted) if faulted is not None else (None,)):
                index = self._pop(want_hard, want_fault)
                if index is not None:
                    break
            if index is not None:
                break
        assert index is not None        # a heap is never emptied (a pop pushes its cell back) and cells is not empty
        instance = self.opened[index]
        self.opened[index] += 1
        self.picks += 1
        if tier_of(self.cells[index].get("stance", "ordinary")) in HARD_TIERS:
            self.hard_picks += 1
        return index, instance

    def _pop(self, hard: bool, faulted: bool | None) -> int | None:
        found = [self._heaps.get((hard, f)) for f in ((True, False) if faulted is None else (faulted,))]
        heaps = [h for h in found if h]
        if not heaps:
            return None
        best = min(heaps, key=lambda h: h[0])
        opened, _tie, index = heapq.heappop(best)
        heapq.heappush(best, (opened + 1, self._tie(index, opened + 1), index))
        return index

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        return State(meta={"hard_debt": self._hard_debt, "hard_picks": self.hard_picks, "picks": self.picks},
                     tables={"opened": np.asarray(self.opened, dtype=np.int64)})

    def load_state(self, state: State) -> None:
        opened = state.array("opened", np.int64)
        if len(opened) != len(self.cells) or (len(opened) and int(opened.min()) < 0):
            raise ValueError(f"snapshot picker has {len(opened)} cells, this run plans {len(self.cells)}")
        self.opened = opened.tolist()
        m = state.meta
        self._hard_debt, self.hard_picks, self.picks = float(m["hard_debt"]), int(m["hard_picks"]), int(m["picks"])
        self._build_heaps()
