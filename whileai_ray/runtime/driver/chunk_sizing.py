"""How many units one call to a rollout lane carries (issue 32).

A call's fixed costs (its submit and reply through Ray, the Driver's turn that settles it) are paid
once a chunk. A chunk of a lane's slots keeps a slow agent's rows landing as they finish: its
units play at once and come back together. A fast agent's chunk comes back within milliseconds,
and there a chunk of twice the slots halves the calls a row and keeps the lane fed (a lane holds
its slots plus one chunk, ``rules.chunk_limit``: its next units are there as its slots free).

So a run starts with chunks of a lane's slots (``chunk_size`` at most, ``advanced={"chunk_size":
...}``); once a rollout chunk comes back within ``FAST_S`` of being sent, the next ones carry up to
``CHUNK_SLOTS`` times the slots, and a chunk slower than ``SLOW_S`` brings them back to the slots
(a model agent's seconds-long calls never leave chunks of its slots: its first rows land after one
call, not two). Measured on 2 cores at concurrency 32 (16 slots a lane), against chunks of the
slots: the no-delay agent's Driver CPU a row 3-11% lower (warm 50 ms runs: no change seen in
three pairs). A lane's slots still bound what plays on it at once, and which units travel
together never changes the plan (rows are keyed by unit). Plain logic, no Ray.
"""
from __future__ import annotations

__all__ = ["ChunkSizing", "CHUNK_SLOTS", "FAST_S", "SLOW_S"]

CHUNK_SLOTS = 2      # a chunk of a fast agent holds up to this many times a lane's slots
FAST_S = 0.25        # a chunk back this soon after it was sent: the next ones may be larger
SLOW_S = 1.0         # a chunk back this late: the next ones are a lane's slots again


class ChunkSizing:
    """``units``: how many units the next call to a lane carries."""

    def __init__(self, chunk_size: int, slots: int):
        self.small = max(1, min(int(chunk_size), int(slots)))
        self.large = max(1, min(int(chunk_size), CHUNK_SLOTS * int(slots)))
        self.units = self.small

    def came_back(self, seconds: float) -> bool:
        """A lane's own rollout chunk came back ``seconds`` after it was sent; True when ``units`` changed."""
        units = self.large if seconds < FAST_S else self.small if seconds > SLOW_S else self.units
        changed, self.units = units != self.units, units
        return changed
