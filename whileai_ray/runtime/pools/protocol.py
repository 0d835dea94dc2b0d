"""The pool protocol: where the Driver's chunks run, as the loop sees it.

The Driver's loop (``driver/loop.py``) holds the work: what to decide, what to send, what
landed. A pool holds only *where* it runs, as datatrove's executors differ only in where the
per-shard work runs. A pool has ``lanes`` (a rollout actor, a judge actor, the caller's process),
each taking up to ``slots`` units at once plus one chunk of prefetch, and three operations:

* ``submit(lane, payload)``: send one chunk (units to play, or rows to judge); an awaitable of
  its results, one per item, in order. It raises when the lane failed (its actor died, its node
  went away): the chunk's units are then the loop's to send again;
* the loop awaits what it submitted and takes the *next result* that comes back, from any
  pool (``DriverLoop._next_done``);
* ``replace(lane, error)``: the lane failed; when its actor died, a fresh one takes its place
  (made when work next comes for it). It says *why* the chunk failed (``driver/chunk_retry.py``'s
  causes: the node was lost, the worker crashed, the result could not be sent, the rollout
  raised), which decides whether the chunk's units are sent again as they are or tried alone.

Suspects of a poison rollout are tried alone (``submit_alone``): on a lane that plays nothing
else, so a crash there names its unit; ``alone_ok()`` says the last one came back.

``start()`` returns once a lane can take work (actors placed and built) and ``nodes`` says
where each lane runs; ``lanes_up()`` says which lanes answered since, and ``starting()`` gives
what to await to hear of the next one (the loop lends a starting lane's slots to those up:
``driver/lending.py``; ``submit(..., lent=True)`` plays a chunk beyond the lane's slots);
``close()`` lets go of them. Implementations: ``actor_pool.ActorPool``
(Ray actors spread over the cluster's nodes) and ``caller_pool.CallerPool`` (the caller's own
process pulls chunks: callables that cannot travel run as written); the unit tests drive the
loop with an in-process pool of plain ``RolloutWorker``s.

No Ray here.
"""
from __future__ import annotations

from typing import Awaitable, Protocol

__all__ = ["Pool", "LaneFailed"]


class LaneFailed(RuntimeError):
    """A lane could not return a chunk's results (raised by a pool that is not Ray's)."""


class Pool(Protocol):
    where: str              # "actors" or "caller": reported in report()["placement"]["pool"]

    @property
    def lanes(self) -> int:
        """How many lanes (rollout or judge actors; 1 for the caller's own process)."""

    slots: int              # units each lane plays at once
    lends: bool             # a starting lane's slots may play on the lanes up (driver/lending.py)
    nodes: list             # the node of each lane, known after start()

    async def start(self) -> None:
        """Wait until a lane can take work (or raise, saying what the cluster lacks); the others
        come up meanwhile (``lanes_up``)."""

    def submit(self, lane: int, payload: list, lent: bool = False) -> Awaitable[list]:
        """Send one chunk to ``lane``; await it for one result per item (raises if the lane failed).
        ``lent``: the chunk plays in the slots of a lane still starting, beyond ``lane``'s own."""

    def lanes_up(self) -> list[bool]:
        """Which lanes can take work now (a lane still starting cannot yet); raises the placement
        error when lanes could not be placed in time."""

    def starting(self) -> list:
        """Awaitables that finish as the lanes still starting come up (empty when none is)."""

    def replace(self, lane: int, error: BaseException) -> str:
        """``lane`` (-1: the lane for units alone) failed with ``error``: replace it if it died;
        return the cause (``chunk_retry.NODE_LOST``, ``WORKER_CRASHED``, ...)."""

    def submit_alone(self, payload: list) -> Awaitable[list]:
        """Play ``payload`` (one suspect unit) on a lane that plays nothing else."""

    def alone_ok(self) -> None:
        """The unit played alone came back: the lane for the next one may be readied."""

    async def close(self) -> None:
        """Let go of the lanes (the run is over)."""
