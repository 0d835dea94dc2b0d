"""What the metrics recorder itself costs, measured where contention cannot hide it.

A/B rows/s (metrics on vs off) on a shared 2-core machine swings by more than the few per
cent it is meant to show, so ``whileai-ray bench`` also reports the recorder's own CPU time:
the calls a run of ``rows`` rows makes (one ``landed``, ``inflight``, ``causes`` and
``rollout_seconds`` per chunk of ``chunk`` rows, graded rows included), replayed in an actor
and timed with ``process_time``. Divided by the run's seconds per row, that is the share of
the run metrics cost on the one process that carries most of them.
"""
from __future__ import annotations

import time
from typing import Any


class _Recorder:
    def replay(self, rows: int, chunk: int) -> float:
        from .recorder import RunMetrics
        m = RunMetrics("bench_recorder", "explore")
        batch = [{"_node": "bench-node", "reward": 1.0, "judge_status": "ok"} for _ in range(chunk)]
        seconds = [0.001] * chunk
        t0 = time.process_time()
        for i in range(max(1, rows // chunk)):
            m.landed(batch)
            m.inflight(32, 100, 0)
            m.causes({"agent_error": i // 10}, {})
            m.rollout_seconds(seconds)
        return time.process_time() - t0


def recorder_cpu_seconds(rows: int = 20000, chunk: int = 32) -> float:
    """CPU seconds the recorder spends on a ``rows``-row run (best of two replays)."""
    import ray
    actor: Any = ray.remote(_Recorder).options(num_cpus=0).remote()   # a handle (Ray's stubs type it loosely)
    try:
        return min(ray.get([actor.replay.remote(rows, chunk) for _ in range(2)]))
    finally:
        ray.kill(actor)
