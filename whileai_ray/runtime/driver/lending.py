"""Lending: the slots of a lane still starting, played by the lanes that are up (issue 32, the cold start).

A new pool's actors do not come up together. On a 2-core machine Ray keeps two worker processes
ready: the Driver takes one, the first rollout actor the other, and the second rollout actor
waits ~0.6 s for a process of its own. A chunk sent to a lane still starting waits at Ray for
it, so for that long a run of a 50 ms agent played at half its ``concurrency``. Instead, while a
lane starts, its slots are *lent*: its share of the units goes, in chunks marked lent, to the
lanes that are up, which play them beyond their own slots (``RolloutWorker.play_chunk(...,
lent=True)``); once it is up, it takes back its slots as the lent chunks come back.

The run's ``concurrency`` still holds at every instant, because a lane's slots are played on
it or, lent, elsewhere, never both:

* a lane still starting gets nothing itself, and at most ``slots`` of its units play elsewhere
  (``lent[j]``);
* a lane that is up while some of its slots are still lent holds at most ``slots - lent[j]``
  units of its own (no prefetch) until those chunks come back;
* otherwise a lane holds its slots plus one chunk of prefetch, as it always did
  (``rules.pick_lane``, ``rules.chunk_limit``).

A lent chunk counts against its lane's slots until it comes back, even once some of its units
finished (the bound errs on the safe side). Once every lane is up and nothing is lent, lending
is over for the run and dispatch is exactly what it was. Which lane plays a unit never changes
what is decided (rows are keyed by their unit), so the plan is the same with or without it.

Only a pool whose lanes' slots are ours to share lends (``Pool.lends``): not when the run set
a lane's own limit (``advanced={"ray": {"concurrency_per_actor": N}}``) or its actors reserve
CPUs, GPUs or resources (a class that loads a model once per actor may hold only so many calls
at once, whatever another lane's state).

Pure logic: the loop (``driver/loop.py``) asks :meth:`Lending.next_chunk` and says
:meth:`Lending.sent` and :meth:`Lending.back`.
"""
from __future__ import annotations

from . import rules

__all__ = ["Lending", "OWN"]

OWN = -1        # a chunk of a lane's own units (not lent)


class Lending:
    """One run's ledger of lent slots (see the module doc); inactive for good once lending is over."""

    def __init__(self, lanes: int, slots: int, chunk: int, on: bool = True):
        self.slots, self.chunk = max(1, int(slots)), max(1, int(chunk))
        self.lent = [0] * lanes           # units of lane j's slots playing on other lanes now
        self.hosted = [0] * lanes         # units lane i plays for lanes still starting
        self.active = on and lanes > 1    # until every lane is up and nothing is lent
        self.units_lent = 0               # units sent lent in the run (report()["placement"]["warm"]["units_lent"])

    def next_chunk(self, load: list[int], up: list[bool] | None, queued: int) -> tuple[int, int, int] | None:
        """``(lane, units, owner)`` of the next chunk to send, or None when no lane can take one.
        ``load[i]``: lane i's own units out; ``up[i]``: lane i answered (None: every lane, once
        lending is over); ``owner``: ``OWN``, or the starting lane whose slots the chunk plays in."""
        if queued <= 0:
            return None
        if self.active and (up is None or all(up)) and not any(self.lent):
            self.active = False
        if not self.active:
            lane = rules.pick_lane(load, rules.chunk_limit(self.slots, self.chunk))
            return None if lane is None else (lane, min(self.chunk, queued), OWN)
        assert up is not None, "while lending, the loop says which lanes are up"
        best, room = None, 0
        for i, n in enumerate(load):           # a lane's own units first: the least loaded lane up
            if not up[i]:
                continue
            if self.lent[i]:
                free = self.slots - self.lent[i] - n            # its slots still lent: no prefetch
            else:
                free = self.chunk if n < self.slots + self.chunk else 0
            if free > 0 and (best is None or n < load[best]):
                best, room = i, free
        if best is not None:
            return best, min(room, self.chunk, queued), OWN
        host = min((i for i in range(len(load)) if up[i]), key=lambda i: (load[i] + self.hosted[i], i), default=None)
        if host is None:
            return None
        for j in range(len(load)):             # then the slots of a lane still starting, lent to one up
            free = self.slots - self.lent[j]
            if not up[j] and free > 0:
                return host, min(free, self.chunk, queued), j
        return None

    def sent(self, lane: int, units: int, owner: int) -> None:
        if owner != OWN:
            self.lent[owner] += units
            self.hosted[lane] += units
            self.units_lent += units

    def back(self, lane: int, units: int, owner: int) -> None:
        """A lent chunk came back (landed or failed): its owner's slots are its own again."""
        if owner != OWN:
            self.lent[owner] -= units
            self.hosted[lane] -= units
