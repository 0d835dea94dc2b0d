"""EdgeWriting: the rollout lanes write the asks the Driver's planner will need next (issue 32).

Writing a new situation's ask, its MinHash sketch and its scenario family key were most of the
Driver's planner time; they are pure functions of the run's template writer and ``(cell,
instance, phrasing)`` (``search/edge_asks.py``), and the grid asks the planner will write next
are known ahead (``search/ask_forecast.py``), as are its next open-ended probes (``(PROBE, index,
0)``). So, after each chunk the Driver settles (``tick``), when fewer than half of a window's
asks are ahead it names the next ones and asks the rollout lanes (``RolloutWorker.write_asks``,
lanes in turn, six calls of 192 asks at most in flight) to write them: calls that are not
awaited. (One call for a whole window came back too
late for a fast run: at 1,300 rows/s without a checkpoint a fifth of the asks were written by the
Driver meanwhile and again, unused, by a lane; in pieces, 98-99% arrive in time.) Each call
names its asks when it goes out, the nearest picks first, past the picks the planner will make
before its answer can land (the ``lead``: as many as it made while the last call was out); a
small fast run decides its whole plan in about the time a lane takes to answer, and its lanes
wrote asks it had already written itself. When the
answer lands (on the Driver's event loop, between two steps of its loop, never inside a decision)
it fills the planner's ``asks`` (a ``WrittenAsks``); the
planner takes an ask from there when it is there and writes it itself when it is not. What
arrives, and when, changes how much the Driver computes, never what it decides: the plan, the
rows and the checkpoint are the same with or without it, at any number of lanes.

It is on when the writer is the template writer (an LLM writer is not a pure function) and the
planner picks grid cells, whether Ray actors or the caller's own pool play (an ``asks`` chunk the
caller's player hands its ``RolloutWorker``); ``advanced={"ray": {"edge_writing": False}}`` turns it
off. The writer's recipe (``AskBuilder``) goes to the object store once per run and each call
carries its reference and token, read by an actor the first time only; the caller's pool is
handed the recipe itself in its first call.
"""
from __future__ import annotations

import asyncio
import functools
import logging

import ray

from ...search.ask_batching import situation_units
from ...search.ask_forecast import AskForecast
from ...search.edge_asks import AskBuilder, WrittenAsks
from ..messages import pack_units
from ..pools.actor_pool import await_ref

__all__ = ["EdgeWriting", "WINDOW_ROUNDS"]

_log = logging.getLogger(__name__)

WINDOW_ROUNDS = 12         # asks kept ahead: this many rounds' new situations
FLIGHTS = 6                # calls in flight at most (each to the next lane in turn): with 3, once a fast agent's
                           # calls carried 64 units, 83-90% of the asks taken came from the lanes; with 4, 93-96%
                           # (91-95% in explore at 30,000 rows, the picks a late call passed written by the Driver
                           # and again, unused, by a lane); with 6 and the probes named as far ahead, 97-99%
CALL_ASKS = 192           # asks a call writes at most: a window's asks go out as several calls
LANE_FAILURES = 8          # answers lost (lanes died, calls failed) before edge writing stops for the run


class EdgeWriting:
    def __init__(self, planner, pool, builder: AskBuilder, first_units: int = 0):
        self.planner, self.pool = planner, pool
        s = planner.s
        per = situation_units(planner)
        self.window = max(16, WINDOW_ROUNDS * s.round_size // per)
        # asks kept at most: 4 windows' (one ask per competing instance and phrasing of each pick)
        self.asks = planner.asks = WrittenAsks(4 * self.window * max(1, s.novelty_candidates) * max(1, s.n) + 1024)
        self.forecast = AskForecast(planner)
        # the first units are decided before a lane could answer (while the lanes start, or at once):
        # the planner writes their asks itself, so the lanes start past them
        self.forecast.skip(-(-max(0, first_units) // per))
        self.token, self.builder = builder.token(), builder
        # once per run: each actor reads it the first time; the caller's pool is handed it in its first call
        self.box: list = [ray.put(builder)] if pool.where == "actors" else [builder]
        self.flights: dict[asyncio.Future, int] = {}    # call in flight -> the planner's grid picks when sent
        self.call_picks = max(1, CALL_ASKS // (max(1, s.novelty_candidates) * max(1, s.n)))
        self.lag = 0                          # grid picks the planner made while the last answered call was out
        self.rolling = False                  # a chunk has settled: every call may go out (tick)
        self.lane = 0
        self.calls = self.failures = 0
        self.closed = False

    @classmethod
    def start(cls, spec, planner, pool, first_units: int = 0) -> "EdgeWriting | None":
        """Edge writing for this run, or None when it does not apply (see the module docstring).
        ``first_units``: the units the Driver decides before its first results
        (``rules.first_units``): their asks are left to it."""
        recipe = spec.planner
        if (not getattr(spec, "edge_writing", True) or recipe.writer is not None or planner.picker is None
                or planner.pinned_mode or not (hasattr(pool, "actors") or hasattr(pool, "outbox"))):
            return None
        builder = AskBuilder(list(recipe.tools or []), recipe.system_prompt or "", int(recipe.seed),
                             list(planner.picker.cells))
        try:
            return cls(planner, pool, builder, first_units)
        except Exception as exc:             # (tools that cannot travel): the Driver writes every ask, as before
            planner.asks = None
            _log.info("whileai_ray: edge writing is off for this run: %s", exc)
            return None

    def tick(self, settled: bool = True) -> None:
        """Ask lanes for the next asks when fewer than half a window's are ahead: ``CALL_ASKS`` a
        call (a small call comes back sooner, and the lanes write them side by side), ``FLIGHTS``
        calls at most, each named when it goes out, past the picks the planner will make before
        its answer can land (``lead``).
        ``settled``: the Driver settled a chunk (False: the run starts, or an answer landed).
        Until a first chunk has settled, one call at most: a warm run's lanes are up at once, and
        asks on both of them delayed its first rows (~30 ms of a 1.6 s run)."""
        self.rolling = self.rolling or settled
        if self.closed or self.failures >= LANE_FAILURES:
            return
        while len(self.flights) < (FLIGHTS if self.rolling else 1):
            taken = self.forecast.taken()
            need = self.forecast.due(self.window, self.lead(taken), most=self.call_picks) + self.forecast.probes_due()
            want = self.asks.wanted(need) if need else []
            if not want:
                return
            flight = self._send(want)
            if flight is None:
                self.asks.fill(None, want)          # no lane up now: the planner writes these itself
                return
            self.calls += 1
            self.flights[flight] = taken
            flight.add_done_callback(functools.partial(self._landed, want))

    def lead(self, taken: int) -> int:
        """The grid picks the planner will likely make before a call sent now comes back: as many
        as it made while the last call was out (half as many again as an earlier, longer one, at
        least), and at least as many as it made since a call still out was sent. A small run of
        a fast agent decides its whole plan in about the time a lane takes to answer (its lanes
        busy playing): asks named from the planner's position on came back after it had written
        them itself, every one (a 300-row run on a loaded machine: 604 asks written, none used)."""
        since = max((taken - sent for sent in self.flights.values()), default=0)
        return max(self.lag, since)

    def _send(self, want: list) -> asyncio.Future | None:
        """The call that writes ``want``: to the next actor that is up, or to the caller's pool."""
        if not hasattr(self.pool, "actors"):                     # the caller's pool (pools/caller_pool.py)
            future = self.pool.outbox.put("asks", [self.token, self.box, want])
            self.box = [None]                                    # (its one process keeps the writer)
            return future
        actors = self.pool.actors
        for step in range(len(actors)):
            actor = actors[(self.lane + step) % len(actors)]
            if actor is not None:
                self.lane = (self.lane + step + 1) % len(actors)
                # (the requests pickled: Ray's own serializer takes ~2 us a tuple in a list argument)
                return asyncio.ensure_future(await_ref(actor.write_asks.remote(self.token, self.box, pack_units(want))))
        return None

    def _landed(self, want: list, flight: asyncio.Future) -> None:
        sent = self.flights.pop(flight, None)
        if sent is not None and not self.closed:
            self.lag = max(self.forecast.taken() - sent, self.lag // 2)
        error = None if flight.cancelled() else flight.exception()
        if flight.cancelled() or error is not None:
            self.failures += 1
            self.asks.fill(None, want)
            if error is not None and self.failures == LANE_FAILURES:
                _log.info("whileai_ray: edge writing stopped for this run: %s", error)
            return
        batch = flight.result()
        self.asks.fill(batch, want)
        if batch is None:                       # a lane that was never shown the writer's recipe
            self.failures += 1
            self.box = [self.builder] if not hasattr(self.pool, "actors") else self.box
            return
        self.tick(settled=False)                # still short (a burst of decisions): the next batch now

    def close(self) -> dict:
        """The run is over: no answer is awaited any more; returns the figures (hits, misses, ...)."""
        self.closed = True
        for flight in list(self.flights):
            flight.cancel()
        self.flights.clear()
        self.planner.asks = None
        return {**self.asks.figures(), "calls": self.calls, "failed_calls": self.failures}
