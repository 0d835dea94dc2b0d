"""LoopSettings: the knobs of one run's Driver loop (``driver/loop.py``), read from its JobSpec."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LoopSettings"]


@dataclass(frozen=True)
class LoopSettings:
    reproducible: bool = True
    lag: int = 8
    chunk_size: int = 64
    concurrency: int = 32
    judge_chunk: int = 32
    time_budget: float | None = None       # seconds; the deadline is DriverLoop(deadline=) (from the call), else t0 + this
    timeout: float | None = None           # one agent call's limit: the watchdog reports past it + grace

    @classmethod
    def of(cls, spec) -> "LoopSettings":
        return cls(reproducible=spec.reproducible, lag=spec.lag, chunk_size=spec.chunk_size,
                   concurrency=spec.concurrency, judge_chunk=max(1, min(spec.chunk_size, spec.judge_concurrency)),
                   time_budget=spec.time_budget, timeout=spec.timeout)
