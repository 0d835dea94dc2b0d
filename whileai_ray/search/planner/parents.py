"""The failures waiting to be mutated from: a queue of wordings, oldest first.

A landed row whose world faulted (or that a judge failed) makes its wording a *parent*: a later
``failure_mutation`` slot writes a new ask from it (``writer.mutate``). The queue is two
append-only columns (wording id, aim) and a head that moves as parents are used; ``pinned``
says whether a wording still waits in it, so the planner holds that wording's Situation until
then. ``state()`` / ``load_state()`` carry it across a planner snapshot.

It also counts the *owed* mutation slots. The first rounds of a run are decided before any of
their rows come back (``search/planner/rounds.py``: ~120 units), so a ``failure_mutation`` slot drawn
then finds no failure to mutate. Such a slot is owed, not lost: once a failure waits, the next
``structured`` slots pay it back (``slot_due``), at most ``MAX_OWED`` of them. No budget is held
back for them (a smaller budget's plan stays a prefix of a larger one's: ``planner/budget_bound.py``).
"""
from __future__ import annotations

import numpy as np

from ...core.columns import Column, State

__all__ = ["AIMS", "ParentQueue"]

AIMS = ("world_fault", "graded_failure")
MAX_OWED = 32          # mutation slots held back for failures that have not landed yet


class ParentQueue:
    def __init__(self):
        self._wid, self._aim, self._head = Column(np.int64), Column(np.uint8), 0
        # wording id -> times it waits in the queue (an array by id, not a dict: a long run keeps
        # ~15% of its rows waiting, 164,000 at a million rows)
        self._pins = np.zeros(1024, dtype=np.uint32)
        self.owed = 0          # mutation slots drawn while no failure waited

    def __bool__(self) -> bool:
        return self._head < len(self._wid)

    def waiting(self) -> int:
        """How many parents wait in the queue."""
        return len(self._wid) - self._head

    def push(self, wid: int, aim: str) -> None:
        self._wid.append(wid)
        self._aim.append(AIMS.index(aim))
        if wid >= len(self._pins):
            grown = np.zeros(max(wid + 1, 2 * len(self._pins)), dtype=np.uint32)
            grown[:len(self._pins)] = self._pins
            self._pins = grown
        self._pins[wid] += 1

    def pop(self) -> tuple[int, str]:
        """The oldest parent: ``(wording id, aim)``."""
        wid, aim = int(self._wid[self._head]), AIMS[int(self._aim[self._head])]
        self._head += 1
        self._pins[wid] -= 1
        return wid, aim

    def slot_due(self, arm: str) -> bool:
        """Is a situation slot drawn for ``arm`` spent on mutating a waiting failure? A
        ``failure_mutation`` slot with none waiting is owed; a ``structured`` slot pays back an
        owed one once a failure waits."""
        if arm == "failure_mutation":
            if self:
                return True
            self.owed = min(self.owed + 1, MAX_OWED)
        elif arm == "structured" and self.owed and self:
            self.owed -= 1
            return True
        return False

    def pinned(self, wid: int) -> bool:
        return wid < len(self._pins) and bool(self._pins[wid])

    def state(self) -> State:
        return State(meta={"head": self._head, "owed": self.owed}, logs={"wid": self._wid.view(), "aim": self._aim.view()})

    def load_state(self, state: State, wordings: int) -> None:
        wid, aim = state.array("wid", np.int64), state.array("aim", np.uint8)
        head = int(state.meta["head"])
        if len(wid) != len(aim) or not 0 <= head <= len(wid) \
                or (len(wid) and (wid.min() < 0 or wid.max() >= wordings or aim.max() >= len(AIMS))):
            raise ValueError("snapshot parent queue is out of range")
        self._wid, self._aim, self._head = Column.of(wid, np.int64), Column.of(aim, np.uint8), head
        self._pins = np.bincount(wid[head:], minlength=max(1024, wordings)).astype(np.uint32)
        self.owed = int(state.meta.get("owed", 0))      # absent in snapshots written before it
