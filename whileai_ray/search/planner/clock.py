"""The run's clock: when ``time_budget=`` stops dispatching and how long what is in flight may land.

``time_budget`` seconds count from the moment ``simulate()`` was called (a wall-clock instant,
``JobSpec.deadline_at``, so the Driver on the same node reads the same deadline whatever its own
start-up cost; the Driver's loop turns it into an instant of its own monotonic clock, and
``now`` is that clock). At the deadline (phase ``DRAINING``) the loop dispatches nothing new,
clears what it had queued and tries no suspect alone, and rollout actors skip the units they had
not started (``RolloutWorker(deadline_at=...)``); the rollouts already playing may land until
``deadline + grace``, where ``grace`` is the agent's call ``timeout``: a rollout never runs past
its own timeout, so the stop lands within one rollout's time of the deadline, and a hung actor
is cut at ``deadline + timeout`` at most (phase ``OVER``). The loop's stop rule reads the phase
(``runtime/loop_rules.stop_reason``). ``summary()`` is ``search["clock"]``. No Ray here.
"""
from __future__ import annotations

import time

__all__ = ["RunClock", "RUNNING", "DRAINING", "OVER"]

RUNNING, DRAINING, OVER = "running", "draining", "over"      # RunClock.phase()


class RunClock:
    def __init__(self, deadline_at: float | None, grace_s: float | None, *, now=time.time):
        self.deadline_at = deadline_at           # an instant of ``now``'s clock; None: no clock
        self.grace_s = float(grace_s or 300.0)
        self._now = now
        self.stopped_at: float | None = None
        self.skipped = 0                          # units never started because the clock had run out
                                                  # (still queued at the Driver, or skipped by an actor)
        self.cut = 0                              # units still in flight at deadline + grace: abandoned

    @property
    def on(self) -> bool:
        return self.deadline_at is not None

    def expired(self) -> bool:
        deadline = self.deadline_at
        return deadline is not None and self._now() >= deadline

    def drain_over(self) -> bool:
        """Past the deadline plus the grace: what is still in flight is cut."""
        deadline = self.deadline_at
        return deadline is not None and self._now() >= deadline + self.grace_s

    def phase(self) -> str:
        """``RUNNING`` (no clock, or before the deadline), ``DRAINING`` (past the deadline: nothing new
        starts, what is in flight may land) or ``OVER`` (past the deadline plus the grace)."""
        deadline = self.deadline_at
        if deadline is None:
            return RUNNING
        now = self._now()
        if now < deadline:
            return RUNNING
        return DRAINING if now < deadline + self.grace_s else OVER

    def edge(self) -> float | None:
        """The next instant the phase changes (None: no clock, or already over)."""
        deadline = self.deadline_at
        if deadline is None:
            return None
        now = self._now()
        if now < deadline:
            return deadline
        return deadline + self.grace_s if now < deadline + self.grace_s else None

    def wait_s(self, longest: float = 0.5) -> float:
        """How long the loop may wait for a result before looking at the clock again."""
        edge = self.edge()
        if edge is None:
            return longest if not self.on else 0.0
        return max(0.0, min(longest, edge - self._now()))

    def stop(self) -> str:
        """Note when the run stopped on the clock; returns the stop reason, ``"time_budget"``."""
        if self.stopped_at is None:
            self.stopped_at = self._now()
        return "time_budget"

    def summary(self, started_at: float | None = None) -> dict | None:
        """``{"time_budget", "stopped_after_s", "overrun_s", "skipped", "cut"}`` (None without a clock)."""
        deadline = self.deadline_at
        if deadline is None:
            return None
        stopped = self.stopped_at if self.stopped_at is not None else self._now()
        out = {"overrun_s": round(max(0.0, stopped - deadline), 3), "skipped": self.skipped,
               "cut": self.cut}
        if started_at is not None:
            out = {"time_budget": round(deadline - started_at, 3),
                   "stopped_after_s": round(stopped - started_at, 3), **out}
        return out
