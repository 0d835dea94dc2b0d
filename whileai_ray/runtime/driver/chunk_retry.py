"""Poison rollouts: find the unit that kills or poisons its chunk, settle it as lost, go on.

Plain logic (no Ray): the Driver reports failed chunks and solo tries, and asks what to send.

A chunk of units fails as a whole, for one of these causes (the rollout pool names it from Ray's
exception, ``actor_pool.death_cause``; a lane whose actor is gone, however it went, gets a new one):

* ``node_lost``: the node under the actor died. Nothing is wrong with the units: they are sent
  again as they are (``chunk_failed`` hands them back).
* ``worker_crashed``: the actor's process died (an agent that calls ``os._exit``, a segfault,
  Ray's memory monitor killing it for the memory it took, ``ray.kill``, a GPU model). Every chunk
  in flight on that actor fails at once, so which unit did it is unknown: all of them become
  *suspects*.
* ``unserializable_result`` / ``rollout_failed``: the chunk raised (its results could not be
  sent back, or our own code failed on one unit). Its units become suspects too.

Suspects are tried *alone*: one at a time on a quarantine actor that plays nothing else, so a
failure there names its unit. The failed chunk was every suspect's first try; a unit that then
fails alone too has had ``max_tries`` (2) and is settled as a lost rollout with that cause
(``search["rollouts"]["lost_by"]``, ``warnings``); one that plays fine alone lands like any
other. So a poison unit is played at most twice, and an innocent one that shared its chunk is
never lost for it. Without this a poison unit was re-sent forever and the run stalled on "A
worker died".
"""
from __future__ import annotations

from collections import Counter, deque
from typing import Callable

from ..messages import NODE_LOST, ROLLOUT_FAILED, UNSERIALIZABLE, WORKER_CRASHED

__all__ = ["ChunkRetry", "NODE_LOST", "WORKER_CRASHED", "UNSERIALIZABLE", "ROLLOUT_FAILED", "MAX_TRIES"]

MAX_TRIES = 2


class ChunkRetry:
    def __init__(self, key: Callable = lambda item: item, max_tries: int = MAX_TRIES):
        if max_tries < 1:
            raise ValueError(f"ChunkRetry(max_tries={max_tries}): at least 1")
        self.key = key
        self.max_tries = max_tries
        self._suspects: deque = deque()
        self._tries: dict = {}            # unit key -> solo failures so far
        self.lost_by: Counter = Counter()  # cause -> units settled as lost
        self.suspected = 0                 # units ever put in quarantine
        self.resent = 0                    # units sent again as they were (node loss)
        self.cleared = 0                   # suspects that then played fine alone

    # ------------------------------------------------------------ failures
    def chunk_failed(self, items: list, cause: str) -> list:
        """A chunk of ``items`` failed with ``cause``: return the items to send again as they
        are (node loss); every other item becomes a suspect, tried alone later."""
        if cause == NODE_LOST:
            self.resent += len(items)
            return list(items)
        for item in items:                 # the failed chunk was each unit's first try
            key = self.key(item)
            self._tries[key] = max(1, self._tries.get(key, 0))
        self._suspects.extend(items)
        self.suspected += len(items)
        return []

    def solo_failed(self, item, cause: str) -> str | None:
        """``item``, tried alone, failed with ``cause``. Return the cause when the unit is now
        settled as lost; None when it goes back to the front of the queue for another try (a
        node loss does not count as a try)."""
        if cause != NODE_LOST:
            key = self.key(item)
            self._tries[key] = self._tries.get(key, 0) + 1
            if self._tries[key] >= self.max_tries:
                del self._tries[key]
                self.lost_by[cause] += 1
                return cause
        self._suspects.appendleft(item)
        return None

    def solo_ok(self, item) -> None:
        """``item``, tried alone, came back (as a row or as an ordinary unusable outcome)."""
        self._tries.pop(self.key(item), None)
        self.cleared += 1

    # ------------------------------------------------------------ dispatch
    def next_suspect(self):
        """The next unit to try alone, or None."""
        return self._suspects.popleft() if self._suspects else None

    def pending(self) -> int:
        """Suspects waiting for their solo try (still in flight, as far as the run is concerned)."""
        return len(self._suspects)

    def stats(self) -> dict:
        return {"suspected": self.suspected, "cleared": self.cleared, "resent": self.resent,
                "lost_by": dict(self.lost_by), "waiting": len(self._suspects)}
