"""RolloutWorker: plays chunks of work units, many at a time, on one asyncio loop.

A plain class: a rollout pool makes it a Ray actor (``pools/actor_pool.py``), and the caller's own
pool (``caller/player.py``) runs the very same class in the caller's process. It asks Ray only
for the name of its node, and only when it was not told one.

The agent comes in three forms (``agents/forms.py``). A class is built here, once per lane (a
model loaded or a client opened in its ``__init__``), then its instance is called per rollout.
An ``async def`` agent (or a class whose ``__call__`` is one) is awaited on this loop, one task
per rollout: no thread, no new loop, one shared client, thousands in flight. A plain callable
runs on a thread (never on the event loop), at most ``concurrency`` threads (made on first use):
the threads take the chunk's units themselves and build each whole result (row, stored line,
spool text) there, and the loop hears of finished units in batches (``pools/pull_threads.py``).
The driver sends more units than there are slots (one chunk of prefetch), so a slot that frees
is refilled at once instead of waiting for the driver's next round trip. While another lane of the
pool is still starting, the Driver lends this one its slots: a chunk marked ``lent`` plays beyond
``concurrency``, on threads of its own (``driver/lending.py`` keeps the run's total). An agent call that runs
past ``timeout`` is cut: the unit comes back as an agent error marked timed out (lost as
``timed_out`` once its re-rolls are spent). A sync call's thread runs on (Python cannot kill
it) but leaves the lane's threads, so hung calls never starve the others; an async call's task
is cancelled and never waited for.

Grading happens on separate judge actors (pools/judge_worker.py), so a rollout slot is free as
soon as its rollout ends.

A model-backed actor imports the model path (openai, the mock world) and builds its clients
in ``__init__``: about 0.6 s of CPU that would otherwise stall the first chunk's event loop.
The driver pings every actor before it sends work, so that time is spent before any unit.
"""
from __future__ import annotations

import asyncio
import contextlib
import time

from ...agents.callable import agent_error
from ...agents.forms import RoleBuildError, build_role, is_async_callable
from ...agents.play_callable import play_async_unit, play_callable_unit
from ...agents.play_model import play_model_row
from ...agents.routing import EndpointClients
from ...agents.row_builder import build_row
from ...search.coverage import row_marks
from ...search.edge_asks import AskBuilder, AskDesk
from ...store.checkpoint.edge_lines import Digest, Plain, encoded_plain
from ...store.parquet.spill_text import edge_text, lane_text
from ...store.shards.storage import ShardWriter, check_probe
from .pull_threads import PullThreads
from ...world.faults import is_fault_parent
from ..messages import ROLLOUT_FAILED, UNSERIALIZABLE, RolloutResult, unpack_units
from .dataplane import pack
from .slim_results import slimmed
from ..metrics.recorder import run_metrics

LENT_SLOTS = 1 << 20     # lent units a lane plays at once: as many as it is lent (the Driver bounds them)


class RolloutWorker:
    def __init__(self, agent, meta, execute=None, grader=None, concurrency: int = 32,
                 timeout: float | None = None, judge_timeout: float | None = None, model=None,
                 metrics: dict | None = None, node_id: str | None = None, shards: str | None = None,
                 deadline_at: float | None = None, slim: bool = False):
        self.build_error: RoleBuildError | None = None
        try:                                  # a class form is built here, once per lane
            agent = build_role(agent, "agent")
            execute = build_role(execute, "execute")
        except RoleBuildError as exc:
            self.build_error = exc
        self.agent = agent
        self.is_async = model is None and self.build_error is None and is_async_callable(agent)
        self.model = model                  # ModelSettings when the agent is a model backend
        self.clients = None
        if model is not None:                 # one client per endpoint per actor, sticky per rollout
            self.clients = EndpointClients(model.backend, model.user_backend, timeout=model.timeout or 300.0,
                                           cache=getattr(model, "cache", None))
            self.clients.warm()
        self.meta = meta
        self.execute = execute
        self.grader = grader
        self.timeout = timeout
        self.judge_timeout = judge_timeout
        self.slots = max(1, int(concurrency))
        self.sem = asyncio.Semaphore(self.slots)
        self.threads = PullThreads(self._play_sync, self._timed_out, self.slots, timeout)  # sync agents only
        # units lent by a lane still starting (driver/lending.py), played beyond the slots: as many
        # at once as the Driver lends, which the starting lanes' slots bound
        self.lent_threads = PullThreads(self._play_sync, self._timed_out, LENT_SLOTS, timeout, prefix="lent")
        self.node_id = node_id or _ray_node_id()
        self.deadline_at = deadline_at      # time_budget= (wall clock): past it, units not started are skipped
        self.played = 0
        self.metrics = run_metrics(metrics)
        self.shards = ShardWriter(shards) if shards else None    # shared storage: rows go there (pools/dataplane.py)
        self.slim = slim and self.shards is None    # rows cross as stubs and text (pools/slim_results.py)

    def shutdown(self) -> None:
        """Let the idle threads go (a sync agent's; one still in a call ends when the call does)."""
        self.threads.shutdown()
        self.lent_threads.shutdown()

    def ping(self) -> str:
        if self.build_error is not None:      # a class whose __init__ raised: said once, at start
            raise self.build_error
        if self.shards is not None:          # every actor sees the Driver's folder, or the run stops here
            check_probe(self.shards.folder, self.meta.run_id, self.node_id)
        return self.node_id

    async def run_chunk(self, units: list, lent: bool = False) -> list[RolloutResult] | bytes:
        """Play ``units``; past the run's ``deadline_at`` (wall clock, ``time_budget=``) a unit not yet
        started comes back ``RolloutResult.not_started`` unplayed (search/planner/clock.py). On shared storage the
        rows go to a shard and the Driver gets keys and outcomes (pools/dataplane.py). ``lent``: the
        units play in the slots of a lane still starting, beyond this lane's (driver/lending.py)."""
        if self.model is None and self.build_error is None and not self.is_async:
            threads = self.lent_threads if lent else self.threads
            results = await threads.run(units)             # sync agent: its threads pull the units
        else:
            sem = contextlib.nullcontext() if lent else self.sem
            results = list(await asyncio.gather(*(self._one(u, self.deadline_at, sem) for u in units)))
        self.played += sum(1 for r in results if not r.skipped)
        self.metrics.rollout_seconds([r.seconds for r in results if not r.skipped])    # metrics: once per chunk
        if self.shards is not None:          # the rows to a shard, keys and outcomes to the Driver
            return await asyncio.to_thread(pack, results, self.shards, self.node_id)
        return results

    async def play_chunk(self, units: list | bytes, lent: bool = False) -> list[tuple] | bytes:
        """``run_chunk`` as a rollout actor serves the Driver: ``units`` may come pickled already
        (``messages.pack_units``), and each result goes back as its ``wire()`` tuple (the Driver
        puts the unit back by position), slim where the run's lanes send slim results (``slim``:
        ``pools/slim_results.py``)."""
        results = await self.run_chunk(unpack_units(units), lent)
        if isinstance(results, bytes):
            return results
        return [r.wire() for r in (slimmed(results) if self.slim else results)]

    async def write_asks(self, token: str, box: list, requests: list | bytes):
        """Write, sketch and family-key the asks the Driver's planner will most likely need next
        (``search/edge_asks.py``), here beside the rollouts, so that the Driver only looks them up.
        ``box[0]``: the run's ``AskBuilder``, or a Ray reference to it, read the first time only
        (None: the caller's pool was shown it already; None comes back if it was not).
        ``requests``: a list, or pickled by the Driver (``messages.pack_units``)."""
        desk = self.__dict__.setdefault("ask_desk", AskDesk())
        if not desk.knows(token):
            builder = box[0]
            if builder is None:
                return None
            desk.learn(token, builder if isinstance(builder, AskBuilder) else await builder)
        return await asyncio.to_thread(desk.write, token, unpack_units(requests))

    def flush_shards(self) -> str | None:
        """The run is over: write the Parquet rows still buffered; returns the writer's token."""
        return self.shards.flush() if self.shards is not None else None

    async def _one(self, unit, deadline_at: float | None = None, slot=None) -> RolloutResult:
        """One unit of a model-backed or async agent (or of a class that failed to build), on the loop,
        in one of the lane's slots (``slot``: the lane's semaphore by default; a lent unit's is free)."""
        async with self.sem if slot is None else slot:
            if deadline_at is not None and time.time() >= deadline_at:
                return RolloutResult.not_started(unit)
            t0 = time.monotonic()
            try:
                if self.model is not None:
                    assert self.clients is not None        # built with the model settings
                    client, user_client = self.clients.for_unit(unit)
                    row = await play_model_row(client, user_client, self.model, unit, self.meta, self.execute)
                    problem, edge = storable(row)
                elif self.build_error is not None:
                    row, problem, edge = build_row(unit, agent_error(self.build_error), self.meta), None, None
                else:
                    row = await play_async_unit(self.agent, unit, self.meta, self.execute, self.timeout)
                    problem, edge = storable(row)
            except Exception as exc:       # our code failed on this unit's output: the unit, not the chunk
                row, edge, problem = None, None, _failed(exc)
        return self._result(unit, row, problem, edge, t0)     # the slot is free already

    def _play_sync(self, unit) -> RolloutResult:
        """One unit of a sync agent, whole, on the pool thread that took it (``pools/pull_threads.py``):
        played, checked, encoded and stamped there, so the loop only files the result."""
        deadline_at = self.deadline_at
        if deadline_at is not None and time.time() >= deadline_at:
            return RolloutResult.not_started(unit)
        t0 = time.monotonic()
        try:
            row, (problem, edge) = _play_checked(self.agent, unit, self.meta, self.execute)
        except Exception as exc:           # our code failed on this unit's output: the unit, not the chunk
            row, edge, problem = None, None, _failed(exc)
        return self._result(unit, row, problem, edge, t0)

    def _timed_out(self, unit, seconds: float) -> RolloutResult:
        """A sync call cut at ``timeout`` (its thread runs on, out of the lane's): an agent error marked timed out."""
        err = TimeoutError(f"agent call took longer than timeout={self.timeout:g}s")
        t0 = time.monotonic() - seconds
        try:
            row, problem = build_row(unit, agent_error(err, timed_out=True), self.meta), None
        except Exception as exc:
            row, problem = None, _failed(exc)
        return self._result(unit, row, problem, None, t0)

    def _result(self, unit, row, problem, edge, t0: float) -> RolloutResult:
        """The unit's result: its row stamped (``_ordinal``, ``_node``, ``_seconds``), stored line and
        spool text, or the unit lost when its row cannot be stored."""
        if problem is not None or row is None:   # one unit that cannot become a row never sinks its chunk
            problem = problem or (ROLLOUT_FAILED, "no row")
            return RolloutResult.lost(unit, problem[0], problem[1], time.monotonic() - t0)
        unusable = row.get("_unusable")
        row["_ordinal"] = unit.ordinal
        row["_node"] = self.node_id
        seconds = time.monotonic() - t0
        row["_seconds"] = round(seconds, 4)         # "_" keys: not in the stored line (edge_lines.py)
        line, digest, plain = edge if edge is not None and not unusable else (None, None, None)
        # the spool's row_json, stamps in: from the line's text when the row begins with its stored form
        text = None if line is None else edge_text(row) if plain is None else lane_text(row, *plain)
        return RolloutResult(unit=unit, row=None if unusable else row, unusable=unusable, seconds=seconds,
                             timed_out=bool(row.get("_timed_out")), fault_parent=is_fault_parent(row),
                             error=row.get("_error"), line=line, digest=digest, text=text,
                             # the planner's counts, made here (a shard's entry carries none: pools/dataplane.py)
                             marks=None if unusable or self.shards is not None else row_marks(row))


def _ray_node_id() -> str:
    """The node this actor runs on, as Ray names it (rows carry it: ``placement.rows_by_node``)."""
    import ray   # here only: a RolloutWorker told its node (the caller's pool, a unit test) never needs Ray
    return ray.get_runtime_context().get_node_id()


def storable(row: dict) -> tuple[tuple[str, str] | None, tuple[bytes, Digest | None, Plain | None] | None]:
    """``(problem, edge)``: ``problem`` is ``(cause, message)`` when ``row`` cannot be stored or
    sent back (a circular or 5,000-deep value an agent returned), else None; ``edge`` is the
    row's checkpoint line and key digest (``store/checkpoint/edge_lines.py``), made by the very
    encoding that checks it, and sent to the Driver so that it appends bytes, and the stored form
    and its text when plain (``encoded_plain``: the spool text is then made from them)."""
    try:
        return None, encoded_plain(row)
    except (ValueError, RecursionError, TypeError) as exc:
        kind = "circular" if "ircular" in str(exc) else "too deep" if isinstance(exc, RecursionError) else "not JSON"
        return (UNSERIALIZABLE, f"the rollout's row cannot be stored ({kind}: {type(exc).__name__}: "
                                f"{str(exc)[:120]})"), None


def _failed(exc: Exception) -> tuple[str, str]:
    """The problem of a unit whose output our code failed on (a value too deep or circular to copy)."""
    bad_value = isinstance(exc, RecursionError) or "ircular reference" in str(exc)
    return UNSERIALIZABLE if bad_value else ROLLOUT_FAILED, f"{type(exc).__name__}: {exc}"[:300]


def _play_checked(agent, unit, meta, execute):
    """Play in the worker thread and check (and encode) the row there, off the event loop."""
    row = play_callable_unit(agent, unit, meta, execute)
    return row, storable(row)
