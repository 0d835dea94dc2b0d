"""The Driver loop's decisions, as plain functions over its state (no Ray, no asyncio).

As Ray Data keeps its scheduling decisions apart from the streaming executor's loop
(``streaming_executor_state.py``), the loop (``driver/loop.py``) asks these and does what they
say; each is tested alone (``tests/unit/test_driver_loop.py``).
"""
from __future__ import annotations

from ...search.planner.clock import DRAINING, OVER, RUNNING
from ...search.planner.rounds import round_room

__all__ = ["stop_reason", "pick_lane", "may_decide", "may_start", "wait_s", "chunk_limit", "decide_target",
           "local_deadline", "reserve", "first_units", "WAIT_S", "RESERVE_SHARE"]

WAIT_S = 0.5            # the longest the loop waits for a result before it looks at the clock again


def stop_reason(planner_reason: str | None, clock: str, inflight: int, judging: int) -> str | None:
    """Why the run stops now, or None. ``clock`` is the run clock's phase (``search/planner/clock.py``).

    Past the deadline (``DRAINING``) nothing new starts and the planner's reasons no longer
    matter: the run stops on ``time_budget`` as soon as nothing is in flight or being judged, and
    at ``deadline + timeout`` (``OVER``) whatever is still out is cut. Before it, any reason of
    the planner's stops the run at once but the budget: ``budget`` means every landed row is
    counted but units may still be in flight or being judged, and those are waited for (they are
    part of the budget; a re-roll frees its slot)."""
    if clock == OVER or (clock == DRAINING and not inflight and not judging):
        return "time_budget"
    if clock == DRAINING or planner_reason is None:
        return None
    if planner_reason == "budget" and (inflight or judging):
        return None
    return planner_reason


def may_start(clock: str) -> bool:
    """Whether new work may start: deciding, dispatching, trying a suspect alone. Only while the
    clock runs; past the deadline only what is already out may land."""
    return clock == RUNNING


def local_deadline(deadline_at: float | None, wall_now: float, now: float) -> float | None:
    """A wall-clock deadline (``JobSpec.deadline_at``, ``time.time()``) as an instant of the
    loop's own clock, whose reading is ``now`` while the wall clock reads ``wall_now``."""
    return None if deadline_at is None else now + (deadline_at - wall_now)


def pick_lane(load: list[int], limit: int) -> int | None:
    """The least loaded lane that can take another chunk (load below ``limit``), or None.

    Ties go to the lowest index, so dispatch is a function of the loads alone."""
    if not load:
        return None
    lane = min(range(len(load)), key=load.__getitem__)
    return lane if load[lane] < limit else None


def chunk_limit(slots: int, chunk: int) -> int:
    """Units a lane may hold: its slots plus one chunk of prefetch, so a slot that frees is
    refilled at once instead of after the Driver's next round trip."""
    return slots + chunk


def decide_target(concurrency: int, chunk: int, lanes: int) -> int:
    """Units that keep every lane busy: its slots plus one chunk of prefetch each. The loop sends
    what it decided once its queue holds this many (the first row comes a round in, not eight)."""
    return concurrency + chunk * lanes


RESERVE_SHARE = 0.25    # of the concurrency: units a non-reproducible run keeps decided beyond what its lanes hold


def reserve(concurrency: int) -> int:
    """Units a non-reproducible run keeps decided beyond ``decide_target``. Rollouts that start
    together end together: a thousand 1 s rollouts come back in waves, and a wave of 700 results
    would otherwise wait ~0.25 s on the planner (0.35 ms a unit) before their slots refill; the
    reserve goes out at once and is decided again in the quiet between waves. Its units are
    decided without the latest outcomes, as the ones in flight are (a quarter more of them)."""
    return int(concurrency * RESERVE_SHARE)


def may_decide(reproducible: bool, book_allows: bool, queued: int, inflight: int, target: int) -> bool:
    """Whether the planner may decide another round now.

    Reproducible: only when the round book allows it (round ``r + lag`` waits for rounds ``<= r``
    to be observed), whatever is queued. Otherwise: while fewer than ``target`` units are decided
    and not yet back (the loop passes ``decide_target`` plus the ``reserve``)."""
    if reproducible:
        return book_allows
    return queued + inflight < target


def wait_s(now: float, edge: float | None, longest: float = WAIT_S) -> float:
    """How long the loop may wait for the next result: at most ``longest``, never past the clock's
    next edge (the deadline, then the deadline plus the grace: ``RunClock.edge()``)."""
    if edge is None:
        return longest
    return max(0.0, min(longest, edge - now))


def first_units(limit: int, reproducible: bool, next_round: int, lag: int, round_size: int) -> int:
    """About how many units the loop decides before a first result can be observed: whole rounds
    from ``next_round`` until the queue's ``limit`` (``decide_target``, plus the ``reserve`` when
    not reproducible), and at most ``lag`` rounds when reproducible (the next waits for an
    observed one). Edge writing leaves their asks to the planner (``driver/edge_writing.py``)."""
    total, r = 0, next_round
    while total < limit and (not reproducible or r < next_round + lag):
        total += round_room(round_size, r)
        r += 1
    return total
