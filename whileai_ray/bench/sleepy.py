"""SleepyAgent: the seeded agent behind a fixed sleep, the bench's stand-in for a model with
latency L (the latency-bound, warm second run and nodes lines)."""
from __future__ import annotations

import time

from ..agents.seeded import seeded_agent

__all__ = ["SleepyAgent"]


class SleepyAgent:
    """The seeded agent behind a fixed sleep (a stand-in for a model with latency L)."""

    def __init__(self, tools, latency_s: float):
        self.inner = seeded_agent(tools)
        self.latency_s = latency_s
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        time.sleep(self.latency_s)
        return self.inner(message)
