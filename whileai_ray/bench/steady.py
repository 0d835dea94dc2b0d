"""The steady rate of a run: rows per second while the pipe is full, read from its landing times.

Rows land in bursts: a lane answers a chunk at once, so a 100 ms agent's rows come back 32 at a
time every 200 ms (``runtime/driver/chunk_sizing.py``). ``(rows - 1) / (last - first)`` then counts
the whole first burst as landed in no time and reads high by up to one burst over the run: a
1-node run of the ``nodes`` line read 162 rows/s against its ideal of 160, a 3-node run (three
lanes whose bursts interleave) ~1% high, so their ratio read ~3% low. The least-squares slope of
the landed count against time reads a staircase of equal bursts at exactly their rate (its
steps' midpoints lie on a line of that slope), and an even stream at its rate too.
"""
from __future__ import annotations

import numpy as np

__all__ = ["steady_rate"]


def steady_rate(seconds) -> float:
    """Rows per second: the least-squares slope of rows landed against landing time (NaN under
    two rows, or when every row landed at one instant)."""
    ts = np.sort(np.asarray(seconds, dtype=np.float64))
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return float("nan")
    t = ts - ts.mean()
    count = np.arange(len(ts), dtype=np.float64)
    return float((t * (count - count.mean())).sum() / (t * t).sum())
