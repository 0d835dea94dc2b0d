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
three pairs).

An agent whose units play in under ``QUICK_UNIT_S`` (the median of a chunk's play times: a
function that computes its answer, not one that waits on a model) goes further: its chunks back
fast carry up to ``QUICK_SLOTS`` times the slots (``chunk_size`` at most: 64 unless set). There a
call's fixed cost is what a lane spends most on: ~2 ms of a lane's CPU a call (its dispatch to
the slots' threads, the reply's pickling and transfer), ~60 us a row in chunks of 32. Measured on
2 cores (no-delay demo agent, 30,000 rows, concurrency 32, three pairs, explore): chunks of 64
against 32, rollout actors 401-428 us a row against 450-457, the Driver 252-262 against 262-271,
wall -7%; chunks of 128 gained the lanes little more and cost the Driver more. A 50 ms agent's
units take 50 ms, so its chunks never reach this tier.

A lane's slots still bound what plays on it at once, and which units travel together never
changes the plan (rows are keyed by unit). Plain logic, no Ray.
"""
from __future__ import annotations

from statistics import median_low

__all__ = ["ChunkSizing", "CHUNK_SLOTS", "FAST_S", "SLOW_S", "QUICK_SLOTS", "QUICK_UNIT_S", "unit_seconds"]

CHUNK_SLOTS = 2      # a chunk of a fast agent holds up to this many times a lane's slots
FAST_S = 0.25        # a chunk back this soon after it was sent: the next ones may be larger
SLOW_S = 1.0         # a chunk back this late: the next ones are a lane's slots again
QUICK_SLOTS = 4      # a chunk of a quick agent (units under QUICK_UNIT_S) holds up to this many times the slots
QUICK_UNIT_S = 0.005  # a chunk whose units' median play time is under this: a quick agent


class ChunkSizing:
    """``units``: how many units the next call to a lane carries."""

    def __init__(self, chunk_size: int, slots: int):
        self.small = max(1, min(int(chunk_size), int(slots)))
        self.large = max(1, min(int(chunk_size), CHUNK_SLOTS * int(slots)))
        self.quick = max(1, min(int(chunk_size), QUICK_SLOTS * int(slots)))
        self.units = self.small

    def came_back(self, seconds: float, unit_s: float | None = None) -> bool:
        """A lane's own rollout chunk came back ``seconds`` after it was sent, its units' median
        play time ``unit_s`` (None: not known); True when ``units`` changed."""
        if seconds < FAST_S:
            units = self.quick if unit_s is not None and unit_s < QUICK_UNIT_S else self.large
        else:
            units = self.small if seconds > SLOW_S else self.units
        changed, self.units = units != self.units, units
        return changed


def unit_seconds(results: list) -> float | None:
    """The median play time of a chunk's units that were played (``RolloutResult``s, or their wire
    tuples, ``RolloutResult.wire``: ``skipped`` second, ``seconds`` seventh); None when none was."""
    played = [r[6] if type(r) is tuple else r.seconds for r in results
              if not (r[1] if type(r) is tuple else r.skipped)]
    return median_low(played) if played else None
