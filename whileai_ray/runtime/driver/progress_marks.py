"""Progress marks: the Driver's side of the docs' cadence (plain logic, no Ray).

The docs promise a progress line (and an ``on_progress`` call) every 10 finished rollouts, re-rolls
and losses counted as events too. The caller polls the Driver every 0.2 s, and a fast run lands
30 rows between two polls, so lines drawn from the polls came every ~16 rows, and twice in a
whole 100-row run. So the Driver notes a snapshot each time the run's events pass a multiple of
``every`` (``note``, after every loop turn that settled results), and each poll carries the marks
noted since the last one (``take``); the caller's reporter writes a line for each
(``result/progress/lines.py``). Each mark holds the numbers of the moment it was noted: a turn that
settled 24 results at once gives one line, not two copies of the same counts. At most ``keep``
marks wait for a poll (the newest), so a caller that stopped polling holds the Driver's memory
to a bound.
"""
from __future__ import annotations

from collections import deque
from typing import Callable

from ...core.progress import ProgressSnapshot

__all__ = ["ProgressMarks"]


class ProgressMarks:
    def __init__(self, every: int = 10, keep: int = 256):
        self.every = max(1, int(every))
        self._next = self.every
        self._marks: deque[ProgressSnapshot] = deque(maxlen=keep)

    def note(self, events: int, snapshot: Callable[[], ProgressSnapshot]) -> None:
        """The run has had ``events`` (landed + re-rolled + lost): past the next multiple of
        ``every``, keep ``snapshot()`` (called only then) as a mark."""
        if events >= self._next:
            self._marks.append(snapshot())
            self._next = (events // self.every + 1) * self.every

    def take(self) -> list[ProgressSnapshot]:
        """The marks noted since the last ``take``, oldest first."""
        out = list(self._marks)
        self._marks.clear()
        return out
