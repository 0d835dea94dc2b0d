"""The caller's own pool, as the Driver sees it: chunks wait in an outbox until the caller pulls.

On a one-node Ray (``pools/sizing.py``), the caller's callables never leave the caller's process:
the caller runs a player (``caller/player.py``: the same ``RolloutWorker`` and ``JudgeWorker``
an actor runs) that *pulls* chunks from the Driver and pushes their results back. So a function
that closes over an ``openai.OpenAI()`` client, an ``async def`` agent sharing one
``AsyncOpenAI``, an ``execute=`` that appends to the caller's list, a notebook global: all run
as written, and nothing is pickled but the units and the rows.

Here is the Driver's half. ``CallerOutbox`` holds the chunks the loop submitted and the futures
their results will resolve; the Driver actor serves ``pull``/``push`` from it to the caller.
``CallerPool`` is the pool protocol (``pools/protocol.py``) over an outbox: one lane (the caller's
process) of ``slots`` rollouts, or of judge slots; ``replace`` has nothing to replace (a caller
that is gone ends the run: ``caller/run.py`` raises its error). No Ray here.
"""
from __future__ import annotations

import asyncio
from collections import deque

from ..messages import ROLLOUT_FAILED, ChunkKind, PoolChunk, PoolReply
from .protocol import LaneFailed

__all__ = ["CallerOutbox", "CallerPool"]


class CallerOutbox:
    def __init__(self):
        self._queue: deque[PoolChunk] = deque()   # chunks not yet pulled
        self._waiting: dict[int, asyncio.Future] = {}
        self._ready: asyncio.Event | None = None  # made on the Driver's loop, at first use
        self._next = 0
        self.closed = False
        self.pulls = 0

    def _event(self) -> asyncio.Event:
        if self._ready is None:
            self._ready = asyncio.Event()
        return self._ready

    def put(self, kind: ChunkKind, payload: list) -> asyncio.Future:
        """Queue one chunk for the caller; the future resolves to its results."""
        token = self._next
        self._next += 1
        future = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        self._queue.append(PoolChunk(token, kind, payload))
        self._event().set()
        return future

    async def pull(self) -> list[PoolChunk] | None:
        """Every chunk queued now, waiting for one if none is; None once the run is over."""
        while not self._queue and not self.closed:
            event = self._event()
            event.clear()
            await event.wait()
        if self.closed:
            return None
        self.pulls += 1
        out = list(self._queue)
        self._queue.clear()
        return out

    def push(self, reply: PoolReply) -> None:
        """The caller's results for one chunk (or the error that stopped it)."""
        future = self._waiting.pop(reply.token, None)
        if future is None or future.done():          # abandoned when the run stopped
            return
        if reply.error is not None:
            future.set_exception(LaneFailed(f"the caller's pool failed on a chunk: {reply.error}"))
        else:
            future.set_result(reply.results)

    def close(self) -> None:
        """The run is over: the caller's next pull returns None; results still out are dropped."""
        self.closed = True
        self._queue.clear()
        for future in self._waiting.values():
            if not future.done():
                future.cancel()
        self._waiting.clear()
        self._event().set()


class CallerPool:
    where = "caller"
    lanes = 1
    lends = False

    def __init__(self, outbox: CallerOutbox, kind: ChunkKind, slots: int, node: str | None):
        self.outbox, self.kind = outbox, kind
        self.slots = max(1, int(slots))
        self.nodes = [node] if node else []

    async def start(self) -> None:
        """Nothing to wait for: the caller started its player before the Driver's loop."""

    def submit(self, lane: int, payload: list, lent: bool = False):
        return self.outbox.put(self.kind, payload)

    def lanes_up(self) -> list[bool]:
        return [True]               # the caller's own process: up since the run began

    def starting(self) -> list:
        return []

    def replace(self, lane: int, error: BaseException) -> str:
        """The caller's process is the lane: there is no other to put in its place. A chunk fails
        here only when our own code raised on it (an agent's failure is a row), so its units are
        tried alone, in the caller too."""
        return ROLLOUT_FAILED

    def submit_alone(self, payload: list):
        return self.outbox.put(self.kind, payload)

    def alone_ok(self) -> None:
        """Nothing to ready: the caller plays the next suspect too."""

    async def close(self) -> None:
        self.outbox.close()
