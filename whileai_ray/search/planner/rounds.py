"""Round bookkeeping for the fixed-lag pipeline (pure logic).

Rounds are decided in order and their outcomes arrive in any order. ``RoundBook`` hands the
planner each round's outcomes only when that round and every round before it are complete,
in unit order, so the planner sees the same history whatever the completion order was.
Round ``r + lag`` may be decided once rounds ``<= r`` are observed: ``lag`` rounds stay in
flight while the next one is decided, which keeps the pipe full without giving up
determinism.
"""
from __future__ import annotations

FIRST_ROUND = 4          # units of round 0; the size doubles every two rounds up to ``round_size``


def round_room(round_size: int, r: int) -> int:
    """Units round ``r`` may hold: the first rounds are small (4, 4, 8, 8, 16, 16, 32, 32, then
    ``round_size``), so the first outcomes steer the plan after ~120 units instead of ``lag x
    round_size`` (512): a 200-row run mutates the failures its grader found. A function of the
    round alone (never of the budget or the concurrency), so a smaller budget's plan stays a prefix
    of a larger one's and the draw is the same at any concurrency."""
    return max(1, min(int(round_size), FIRST_ROUND << (int(r) // 2)))


class RoundBook:
    def __init__(self, lag: int):
        self.lag = max(1, int(lag))
        self._rounds: dict[int, list] = {}
        self._missing: dict[int, int] = {}
        self.next_decide = 0
        self.observed = -1          # every round <= observed has been handed to the planner

    def may_decide(self) -> bool:
        return self.next_decide - self.lag <= self.observed

    def add(self, units: list) -> int:
        r = self.next_decide
        self._rounds[r] = [None] * len(units)
        self._missing[r] = len(units)
        self.next_decide += 1
        return r

    def record(self, r: int, index: int, outcome) -> None:
        slot = self._rounds[r]
        if slot[index] is None:
            slot[index] = outcome
            self._missing[r] -= 1

    def pop_one(self) -> list | None:
        """The next observable round's outcomes, or None. Observing one round at a time, with
        the decisions it unlocks taken before the next, keeps decisions independent of how many
        rounds happened to complete together."""
        r = self.observed + 1
        if r in self._rounds and self._missing[r] == 0:
            del self._missing[r]
            self.observed = r
            return self._rounds.pop(r)
        return None

    def pop_ready(self) -> list[list]:
        """Outcomes of the rounds that are now observable, oldest first."""
        out = []
        while (self.observed + 1) in self._rounds and self._missing[self.observed + 1] == 0:
            r = self.observed + 1
            out.append(self._rounds.pop(r))
            del self._missing[r]
            self.observed = r
        return out

    def pending(self) -> dict[int, int]:
        """``{round: units}`` for the rounds decided but not yet observed."""
        return {r: len(slots) for r, slots in self._rounds.items()}

    def restore(self, next_decide: int, observed: int, pending: dict[int, int]) -> None:
        """Continue from a snapshot: rounds <= observed are done, ``pending`` are decided and
        have no outcome yet."""
        self.next_decide, self.observed = int(next_decide), int(observed)
        self._rounds = {r: [None] * n for r, n in sorted(pending.items())}
        self._missing = dict(pending)

    def open_rounds(self) -> int:
        return len(self._rounds)
