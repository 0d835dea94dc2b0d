"""The failures waiting to be mutated from: a queue of wordings, oldest first.

A landed row whose world faulted (or that a judge failed) makes its wording a *parent*: a later
``failure_mutation`` slot writes a new ask from it (``writer.mutate``). The queue is two
append-only columns (wording id, aim) and a head that moves as parents are used; ``pinned``
says whether a wording still waits in it, so the planner holds that wording's Situation until
then. ``state()`` / ``load_state()`` carry it across a planner snapshot.
"""
from __future__ import annotations

import numpy as np

from ..core.columns import Column, State

__all__ = ["AIMS", "ParentQueue"]

AIMS = ("world_fault", "graded_failure")


class ParentQueue:
    def __init__(self):
        self._wid, self._aim, self._head = Column(np.int64), Column(np.uint8), 0
        self._pins: dict[int, int] = {}         # wording id -> times it waits in the queue

    def __bool__(self) -> bool:
        return self._head < len(self._wid)

    def waiting(self) -> int:
        """How many parents wait in the queue."""
        return len(self._wid) - self._head

    def push(self, wid: int, aim: str) -> None:
        self._wid.append(wid)
        self._aim.append(AIMS.index(aim))
        self._pins[wid] = self._pins.get(wid, 0) + 1

    def pop(self) -> tuple[int, str]:
        """The oldest parent: ``(wording id, aim)``."""
        wid, aim = int(self._wid[self._head]), AIMS[int(self._aim[self._head])]
        self._head += 1
        self._pins[wid] -= 1
        if not self._pins[wid]:
            del self._pins[wid]
        return wid, aim

    def pinned(self, wid: int) -> bool:
        return wid in self._pins

    def state(self) -> State:
        return State(meta={"head": self._head}, logs={"wid": self._wid.view(), "aim": self._aim.view()})

    def load_state(self, state: State, wordings: int) -> None:
        wid, aim = state.array("wid", np.int64), state.array("aim", np.uint8)
        head = int(state.meta["head"])
        if len(wid) != len(aim) or not 0 <= head <= len(wid) \
                or (len(wid) and (wid.min() < 0 or wid.max() >= wordings or aim.max() >= len(AIMS))):
            raise ValueError("snapshot parent queue is out of range")
        self._wid, self._aim, self._head = Column.of(wid, np.int64), Column.of(aim, np.uint8), head
        self._pins = {}
        for w in wid[head:].tolist():
            self._pins[w] = self._pins.get(w, 0) + 1
