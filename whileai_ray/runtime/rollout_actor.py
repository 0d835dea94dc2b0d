"""RolloutWorker: plays chunks of work units, many at a time, on one asyncio loop.

The agent comes in one of three forms (``agents/forms.py``), and each runs where it belongs:

* a plain (sync) callable runs in a thread executor (never on the event loop), one thread per
  concurrent rollout: the pool is sized to the actor's slots (plus a few for stragglers), under a
  semaphore of ``concurrency`` slots. An agent call that runs past ``timeout`` is cut: the unit
  comes back as an agent error marked timed out (the thread runs on; Python cannot kill it, so
  the pool has headroom for such stragglers);
* an ``async def`` agent (or an object whose ``__call__`` is async) is awaited on this actor's
  own event loop: no thread and no new loop per rollout, so one ``AsyncOpenAI`` client serves
  every rollout and one actor holds thousands in flight. Each rollout is its own asyncio task,
  so ``wai.current_rollout`` (a ContextVar) is that rollout's; ``timeout`` cancels the coroutine;
* a class (or ``functools.partial`` of one) is built here, once, in ``__init__``; its instance is
  then the agent (sync or async by its ``__call__``). ``execute=`` likewise. A constructor that
  raises is reported by ``ping`` (the driver pings every actor before sending work).

The driver sends more units than there are slots (one chunk of prefetch), so a slot that frees
is refilled at once instead of waiting for the driver's next round trip.

Grading happens on separate judge actors (judge_actor.py), so a rollout slot is free as
soon as its rollout ends.

A model-backed actor imports the model path (openai, the mock world) and builds its clients
in ``__init__``: about 0.6 s of CPU that would otherwise stall the first chunk's event loop.
The driver pings every actor before it sends work, so that time is spent before any unit.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import ray

from ..agents.callable import agent_error
from ..agents.forms import RoleBuildError, build_role, is_async_callable
from ..agents.play import play_async_unit, play_callable_unit
from ..store.row_builder import build_row

FAULT_STATUSES = {"error", "timeout", "not_found", "permission_denied", "denied", "malformed"}


class RolloutWorker:
    def __init__(self, agent, meta, execute=None, grader=None, concurrency: int = 32,
                 timeout: float | None = None, judge_timeout: float | None = None, model=None):
        self.build_error: RoleBuildError | None = None
        try:                                  # a class form is built here, once per actor
            agent = build_role(agent, "agent")
            execute = build_role(execute, "execute")
        except RoleBuildError as exc:
            self.build_error = exc
        self.agent = agent
        self.is_async = model is None and self.build_error is None and is_async_callable(agent)
        self.model = model                  # ModelSettings when the agent is a model backend
        self.clients = None
        if model is not None:                 # one client per endpoint per actor, sticky per rollout
            from ..agents.model_unit import play_model_row  # noqa: F401  (imported now, see warm())
            from ..agents.routing import EndpointClients
            self.clients = EndpointClients(model.backend, model.user_backend, timeout=model.timeout or 300.0)
            self.clients.warm()
        self.meta = meta
        self.execute = execute
        self.grader = grader
        self.timeout = timeout
        self.judge_timeout = judge_timeout
        self.slots = max(1, int(concurrency))
        self.sem = asyncio.Semaphore(self.slots)
        self._pool: ThreadPoolExecutor | None = None   # sync agents only; made on first use
        self.node_id = ray.get_runtime_context().get_node_id()
        self.played = 0

    @property
    def pool(self) -> ThreadPoolExecutor:
        """One thread per slot (plus headroom for calls past their timeout that run on)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.slots + 8, thread_name_prefix="rollout")
        return self._pool

    def ping(self) -> str:
        if self.build_error is not None:
            raise self.build_error
        return self.node_id

    async def run_chunk(self, units: list) -> list[dict]:
        return list(await asyncio.gather(*(self._one(u) for u in units)))

    async def _one(self, unit) -> dict:
        loop = asyncio.get_running_loop()
        async with self.sem:
            t0 = time.monotonic()
            if self.model is not None:
                from ..agents.model_unit import play_model_row
                client, user_client = self.clients.for_unit(unit)
                row = await play_model_row(client, user_client, self.model, unit, self.meta, self.execute)
            elif self.build_error is not None:
                row = build_row(unit, agent_error(self.build_error), self.meta)
            elif self.is_async:
                row = await play_async_unit(self.agent, unit, self.meta, self.execute, self.timeout)
            else:
                fut = loop.run_in_executor(self.pool, play_callable_unit, self.agent, unit, self.meta, self.execute)
                try:
                    row = await asyncio.wait_for(fut, self.timeout) if self.timeout else await fut
                except asyncio.TimeoutError:
                    err = TimeoutError(f"agent call took longer than timeout={self.timeout:g}s")
                    row = build_row(unit, agent_error(err, timed_out=True), self.meta)
            unusable = row.get("_unusable")
        self.played += 1
        row["_ordinal"] = unit.ordinal
        row["_node"] = self.node_id
        row["_seconds"] = round(time.monotonic() - t0, 4)
        return {"unit": unit, "row": None if unusable else row, "unusable": unusable,
                "timed_out": bool(row.get("_timed_out")), "verdict": None,
                "fault_parent": _fault_parent(row), "error": row.get("_error")}


def _fault_parent(row: dict) -> bool:
    if row.get("faults"):
        return True
    for step in row.get("steps") or ():
        res = step.get("result") if isinstance(step, dict) else None
        if isinstance(res, dict) and res.get("status") in FAULT_STATUSES:
            return True
    return False
