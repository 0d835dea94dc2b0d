"""DriverLoop: the Driver's work, as a plain class over pools (no Ray).

One run, from the first decision to the stop:

1. **decide** rounds (``Planner.decide``) as the ``RoundBook`` allows (``loop_rules.may_decide``);
   a unit whose row is already on disk (a resume) is settled from it, the others are queued;
2. **dispatch** the queue in chunks to the rollout pool's least loaded lane, each lane filled to
   its slots plus one chunk of prefetch (``loop_rules.pick_lane``); while a lane still starts,
   its slots are lent to the lanes up (``driver/lending.py``);
3. take the **next result** that comes back from any pool: a rollout chunk's rows go to the
   judge pool when the run is graded (in chunks, least loaded judge lane first), and land once
   their verdicts are in; ungraded rows land at once, a turn's in one batch (``driver/landing.py``);
4. **observe** what landed: in reproducible mode one complete round at a time, in round order,
   each round's unlocked decisions taken before the next is observed, so the planner sees the
   same history whatever the completion order; otherwise as it lands;
5. a chunk whose lane **failed** is sent again when its node was lost (keys make delivery
   exactly-once); otherwise its units become suspects, tried **alone**, one at a time, so a
   poison rollout (one that kills or wedges whatever plays it) ends as a lost row with its
   cause and the run goes on (``driver/chunk_retry.py``); a judge chunk goes to a fresh judge;
6. **stop** when the planner or the clock says so (``loop_rules.stop_reason``), or at once when
   the caller is gone (``should_stop``: ``driver/caller_watch.py``); what is still in flight is
   abandoned. The clock (``time_budget=``, ``search/planner/clock.py``): at the deadline nothing new is
   decided, dispatched or tried alone and the queue is cleared; what is in flight may land until
   the deadline plus the agent's ``timeout``, then it is cut.

A ``metrics`` recorder (``metrics/recorder.py``) hears each landed batch, each turn and the end. Chunks run in
pools (``pools/protocol.py``); the Driver actor is a thin Ray shell around this loop; unit tests need no Ray.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Callable

from ...search.planner.clock import RunClock
from ...search.planner.rounds import RoundBook
from . import rules
from .caller_watch import CALLER_GONE
from .chunk_retry import ChunkRetry
from .chunk_sizing import ChunkSizing, unit_seconds
from .flights import STUCK_GRACE_S, Flight, watch_stuck
from .landing import Landing
from .lending import OWN, Lending
from .settings import LoopSettings
from ..messages import RolloutResult
from ..metrics.recorder import NoMetrics
from ..pools.protocol import Pool

__all__ = ["DriverLoop", "LoopSettings", "Flight", "STUCK_GRACE_S"]

_log = logging.getLogger(__name__)   # a child of whileai_ray.runtime

TURN_ROUNDS = 1        # rounds (~25 ms of planner each) decided per loop turn, each sent before the next is decided


def _say(line: str) -> None:
    _log.warning(line)      # an actor's stderr reaches the caller's console (log_to_driver)


class DriverLoop:
    def __init__(self, settings: LoopSettings, planner, rollouts: Pool, landing: Landing, resume,
                 judges: Pool | None = None, snapshots=None, restored: dict | None = None, t0: float | None = None,
                 clock: Callable[[], float] = time.monotonic, log: Callable[[str], None] | None = None,
                 should_stop: Callable[[], str | None] | None = None, metrics=None, unpack=None,
                 deadline: float | None = None, on_settled: Callable[[], None] | None = None):
        self.s, self.planner = settings, planner
        self.rollouts, self.judges = rollouts, judges
        self.landing = landing
        self.resume = resume                      # store/resume.ResumeIndex
        self.snapshots = snapshots                # store/plan_snapshot_keeper.PlanSnapshots, or None
        self.clock, self.log, self.should_stop = clock, log or _say, should_stop or (lambda: None)   # (gone: why)
        self.on_settled = on_settled or (lambda: None)     # after each chunk's results settled
        self.metrics = metrics or NoMetrics()
        self.unpack = unpack                      # shared storage: a rollout payload -> results (pools/dataplane.py)
        self.retry = ChunkRetry(key=lambda item: item[2].key)   # poison rollouts (driver/chunk_retry.py)
        self.alone: asyncio.Future | None = None                 # the suspect being tried alone
        self.t0 = clock() if t0 is None else t0    # the Driver's start
        # time_budget counts from simulate()'s call: ``deadline`` in this loop's clock (the Driver
        # converts JobSpec.deadline_at), else from the loop's start
        if deadline is None and settings.time_budget:
            deadline = self.t0 + settings.time_budget
        self.deadline = deadline
        self.run_clock = RunClock(deadline, settings.timeout, now=clock)
        self.sizing = ChunkSizing(settings.chunk_size, rollouts.slots)     # (driver/chunk_sizing.py)
        self.chunk = self.sizing.units
        self.book = RoundBook(settings.lag)
        self.round_units: dict = {}               # round -> its units, until observed (snapshots)
        self.queue: deque = deque()               # (round, index, unit) ready to dispatch
        self.flights: dict[asyncio.Future, Flight] = {}
        self.load = [0] * rollouts.lanes          # a lane's own units out (lent ones: self.lending)
        self.lending = Lending(rollouts.lanes, rollouts.slots, self.chunk, on=rollouts.lends)
        self.judge_load = [0] * (judges.lanes if judges is not None else 0)
        self.inflight = self.judging = 0          # units at rollout lanes, rows at judge lanes
        self.blocked = False                      # the planner had nothing to decide since the last observe
        self.stopped_because: str | None = None
        self.chunks_reissued = self.abandoned = 0
        self.stuck: dict = {}                     # unit key -> seconds in flight, past the watchdog's limit
        self.target = rules.decide_target(settings.concurrency, self.chunk, rollouts.lanes)
        self.ahead = self.target + rules.reserve(settings.concurrency)     # not reproducible: decided ahead
        self.turn_rounds = TURN_ROUNDS
        self._primed: bool | None = None          # prime()'s answer: more to decide (None: not primed)
        self._snapshotting = bool(snapshots is not None and snapshots.enabled and settings.reproducible
                                  and landing.sink is not None)
        if restored is not None:
            self._restore(restored)

    # ------------------------------------------------------------------ the loop
    def prime(self) -> bool:
        """Decide a round now, before the pools answer; ``run()`` sends what is decided first. True
        while there is more to decide before the lanes are full (the Driver calls it again while they start)."""
        self._primed = self._pump(self.turn_rounds)
        return self._primed

    async def run(self) -> str:
        """Play the run to its stop; returns why it stopped."""
        more = self._pump(self.turn_rounds) if self._primed is None else self._primed
        while True:
            gone = self.should_stop()
            if gone is not None:        # an orphan: stop appending now, a resume may be waiting
                self.stopped_because = CALLER_GONE
                self.landing.errors.append(gone)
                break
            phase = self.run_clock.phase()
            running = rules.may_start(phase)
            if not running:
                self._skip_queue()             # past the deadline nothing new starts
            # suspects waiting to be tried alone hold the run only while the clock runs
            reason = rules.stop_reason(self.planner.stop_reason(), phase, self.inflight,
                                       self.judging + (self.retry.pending() if running else 0))
            if reason is not None:
                self.stopped_because = reason
                if reason == "time_budget":
                    self.run_clock.stop()
                break
            self._dispatch()
            if running:
                self._dispatch_alone()
            if more and running:        # the chunks just queued go out before the next rounds are decided (a
                await asyncio.sleep(0)  # thousand slots fill while deciding, not after); chunks back come first
                if not any(task.done() for task in self.flights):
                    more = self._pump(self.turn_rounds)
                    continue
            if not self.flights:
                more = self._pump(self.turn_rounds)
                if self.queue:
                    continue
                self.stopped_because = self.planner.stop_reason() or "writer_exhausted"
                break
            for flight, results, error in await self._next_done():
                self._settle(flight, results, error)
                self.on_settled()              # progress marks after each chunk, not each turn
            if rules.may_start(self.run_clock.phase()):    # freed slots take what is decided before more is
                self._dispatch()
            # then the turn's rows go to disk in one batch, the lanes playing meanwhile (metrics hear each
            # batch), before the planner observes: a round's rows are in the spool before it releases them
            self.landing.flush(self.metrics.landed)
            await asyncio.sleep(0)          # and those chunks leave (their calls are made) before the planner decides
            more = self._pump(self.turn_rounds)
            self.metrics.inflight(self.inflight, len(self.queue), self.judging)   # metrics: once a turn
            self.metrics.causes(self.planner.rerolled_by, self.planner.lost_by)
        self._abandon()
        self.metrics.finish(self.planner.rerolled_by, self.planner.lost_by)     # metrics: the run ended
        return self.stopped_because

    async def finish_snapshots(self, final: bool = True) -> None:
        """After ``run()``: a last planner snapshot (``final``; an orphan writes none), else only
        the one still being written."""
        if self.snapshots is None:
            return
        if final and self._snapshotting:
            await self.snapshots.finish(self.planner, self.book, self.round_units)
        else:
            await self.snapshots.flush()

    def _skip_queue(self) -> None:      # the clock ran out: units never sent never start (skipped)
        self.run_clock.skipped += len(self.queue)
        self.queue.clear()

    def clock_summary(self) -> dict | None:
        """``search["clock"]``: how a time_budget stop landed (None without a clock)."""
        if self.deadline is None:
            return None
        return self.run_clock.summary(started_at=self.deadline - (self.s.time_budget or 0.0))

    # -------------------------------------------------------- deciding, observing
    def _pump(self, rounds: int | None = None) -> bool:
        """Decide what may be decided, settle resumed units, observe what is complete; True when
        it stopped after ``rounds`` decisions with more to decide now.

        One round is observed at a time, every decision it unlocks taken before the next is
        observed: the planner sees the same states whatever the completion order (reproducible
        mode). Once the queue can keep every lane busy, the rest (observing too) wait for a later turn:
        the queue goes out first, and a turn never decides a burst of rounds while results wait."""
        total = 0
        while True:
            while not self.blocked and rules.may_start(self.run_clock.phase()) and rules.may_decide(
                    self.s.reproducible, self.book.may_decide(), len(self.queue), self.inflight, self.ahead):
                if len(self.queue) >= self.target:
                    return False
                if rounds is not None and total >= rounds:
                    return True
                total += 1
                units = self.planner.decide(self.book.next_decide)
                if not units:
                    self.blocked = True
                    break
                r = self.book.add(units)
                if self._snapshotting:
                    self.round_units[r] = units
                self._settle_or_queue(r, units)
            if len(self.queue) >= self.target:     # (observing a round is what unlocks the next decision)
                return False
            outs = self.book.pop_one() if self.s.reproducible else None
            if outs is None:
                return False
            self._observe(outs)
            self.landing.release(max(o.unit.ordinal for o in outs))      # settled rows leave in order
            if self._snapshotting:
                self.snapshots.after_round(self.planner, self.book, self.round_units)

    def _settle_or_queue(self, r: int, units: list) -> None:
        """Units of a decided round: settled from disk when their row is there, else queued."""
        batch = []
        for i, u in enumerate(units):
            row = self.resume.take(u)
            if row is None:
                self.queue.append((r, i, u))
                continue
            o = self.landing.resumed(u, row)
            if self.s.reproducible:
                self.book.record(r, i, o)
            else:
                batch.append(o)
        if batch:
            self._observe(batch)

    def _observe(self, outcomes: list) -> None:
        self.planner.observe(outcomes)
        self.blocked = False

    def _restore(self, snap: dict) -> None:
        """Continue from a planner snapshot: its pending rounds are decided, not yet observed."""
        self.book.restore(snap["next_decide"], snap["observed"], {r: len(u) for r, u in snap["pending"].items()})
        for r, units in sorted(snap["pending"].items()):
            self.round_units[r] = units
            self._settle_or_queue(r, units)

    # ------------------------------------------------------------- dispatching
    def _dispatch(self) -> None:
        """Fill every rollout lane up to its slots plus one chunk of prefetch (a starting lane's
        slots lent to the lanes up: ``driver/lending.py``)."""
        lending, queue = self.lending, self.queue
        up = self.rollouts.lanes_up() if lending.active else None
        while queue:
            step = lending.next_chunk(self.load, up, len(queue))
            if step is None:
                return
            lane, n, owner = step
            self._send("roll", lane, [queue.popleft() for _ in range(n)], owner)

    def _dispatch_alone(self) -> None:
        """The quarantine lane: one suspect unit at a time, on a lane that plays nothing else, so
        a crash there names its unit (``driver/chunk_retry.py``)."""
        if self.alone is not None or not self.retry.pending():
            return
        item = self.retry.next_suspect()
        self.alone = asyncio.ensure_future(self.rollouts.submit_alone([item[2]]))
        self.flights[self.alone] = Flight("alone", -1, [item], self.clock())
        self.inflight += 1

    def _send_to_judges(self, items: list) -> None:
        """Rows that came back from a rollout go to the least loaded judge lane, in chunks."""
        for start in range(0, len(items), self.s.judge_chunk):
            part = items[start:start + self.s.judge_chunk]
            lane = min(range(len(self.judge_load)), key=self.judge_load.__getitem__)
            self._send("judge", lane, part)

    def _send(self, kind: str, lane: int, items: list, owner: int = OWN) -> None:
        lent = False
        if kind == "roll":
            payload = [u for _, _, u in items]
            if owner == OWN:
                self.load[lane] += len(items)
            else:
                self.lending.sent(lane, len(items), owner)
                lent = True
            self.inflight += len(items)
            pool = self.rollouts
        else:
            payload = [res.row for _, _, res in items]
            self.judge_load[lane] += len(items)
            self.judging += len(items)
            assert self.judges is not None, "judge chunks go out only when the run has judges"
            pool = self.judges
        task = asyncio.ensure_future(pool.submit(lane, payload, lent))
        self.flights[task] = Flight(kind, lane, items, self.clock(), owner)

    # ---------------------------------------------------------------- results
    async def _next_done(self) -> list[tuple[Flight, list | None, BaseException | None]]:
        """The chunks that came back, from any pool (waits at most ``loop_rules.wait_s``)."""
        timeout = rules.wait_s(self.clock(), self.run_clock.edge())
        waits = [*self.flights, *self.rollouts.starting()] if self.lending.active else list(self.flights)
        done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        watch_stuck(self.flights.values(), self.clock(), self.s.timeout, self.stuck, self.log)
        out = []
        for task in done:
            flight = self.flights.pop(task, None)
            if flight is None:                   # a starting lane came up: the next dispatch sends it work
                continue
            error = task.exception()
            out.append((flight, None if error is not None else task.result(), error))
        return out

    def _settle(self, flight: Flight, results: list | None, error: BaseException | None) -> None:
        n = len(flight.items)
        if flight.kind == "judge":
            self.judge_load[flight.lane] -= n
            self.judging -= n
        else:
            self.inflight -= n
            if flight.owner != OWN:
                self.lending.back(flight.lane, n, flight.owner)
            elif flight.kind == "roll":
                self.load[flight.lane] -= n
            else:
                self.alone = None
        if error is not None:
            results = self._failed(flight, error)
            if results is None:
                return
        elif flight.kind == "alone":
            self.retry.solo_ok(flight.items[0])
            self.rollouts.alone_ok()
        if error is None and flight.kind != "judge" and self.unpack is not None:
            results = self.unpack(flight.items, results)
        if error is None and flight.kind == "roll" and flight.owner == OWN and results is not None and \
                self.sizing.came_back(self.clock() - flight.sent_at, unit_seconds(results)):
            self._resized()
        landed, to_judge = [], []
        assert results is not None
        for (r, i, item), res in zip(flight.items, results):
            if flight.kind == "judge":
                landed.append((r, i, item.with_verdict(res)))
                continue
            res = RolloutResult.from_wire(item, res) if type(res) is tuple else res    # (the unit is ours)
            if res.skipped:                          # the clock ran out before the actor started it
                self.run_clock.skipped += 1
            elif self.judges is not None and res.row is not None:
                to_judge.append((r, i, res))
            else:
                landed.append((r, i, res))
        if to_judge:
            self._send_to_judges(to_judge)
        batch = []
        for r, i, res in landed:
            o = self.landing.played(res)
            if self.s.reproducible:
                self.book.record(r, i, o)
            else:
                batch.append(o)
        if batch:
            self._observe(batch)

    def _resized(self) -> None:
        """A call to a lane carries more (or fewer) units from now on (``driver/chunk_sizing.py``)."""
        self.chunk = self.lending.chunk = self.sizing.units
        self.target = rules.decide_target(self.s.concurrency, self.chunk, self.rollouts.lanes)
        self.ahead = self.target + rules.reserve(self.s.concurrency)

    def _failed(self, flight: Flight, error: BaseException) -> list | None:
        """A chunk came back as an error. Its lane is replaced when it died; a judge chunk goes to the judges
        again; a rollout chunk is sent again as it is (its node was lost) or its units become suspects, tried
        alone; a suspect that failed alone too is settled as lost with its cause (the result to land), else None."""
        self.landing.errors.append(f"{type(error).__name__}: {error}"[:300])
        self.chunks_reissued += 1
        if flight.kind == "judge":
            assert self.judges is not None
            self.judges.replace(flight.lane, error)
            self._send_to_judges(flight.items)
            return None
        cause = self.rollouts.replace(flight.lane, error)     # keys make re-sending exactly-once
        if flight.kind == "roll":
            self.queue.extendleft(reversed(self.retry.chunk_failed(flight.items, cause)))
            return None
        settled = self.retry.solo_failed(flight.items[0], cause)
        if settled is None:
            return None
        return [RolloutResult.lost(flight.items[0][2], settled, f"{settled}: {type(error).__name__}")]

    def _abandon(self) -> None:         # the run stopped: what is in flight is cut loose (never lands)
        cut = self.stopped_because == "time_budget"     # the clock stopped it: what is still out is cut
        for task, flight in self.flights.items():
            task.cancel()
            self.abandoned += len(flight.items)
            self.run_clock.cut += len(flight.items) if cut else 0
        self.abandoned += self.retry.pending()        # suspects never tried alone (a time budget ran out)
        self.flights.clear()
        self.inflight = 0
