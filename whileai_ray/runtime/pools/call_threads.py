"""CallThreads: the threads a lane plays plain (sync) agent calls on, none of which a hung call can take.

A sync agent runs in a thread (never on the lane's event loop). Python cannot kill a thread, so
an agent call that never returns (a model call with no timeout of its own, ``time.sleep(10**6)``,
a lock never released) keeps its thread for good. With a fixed-size executor (it was
``slots + 8`` threads) a few such calls took every thread: the next calls queued behind them,
timed out without the agent ever being called, and their re-rolls queued too, so the run never
ended.

Here a call past its ``timeout`` is *abandoned*: the lane stops waiting for it, the unit comes back
timed out, and its thread leaves the pool (it ends by itself if the call ever returns). The
next call gets an idle thread or a new one. So at most ``slots`` calls are waited for at once
(the lane's semaphore), and wedged threads are never counted among them. Threads are daemons:
a wedged one never keeps the process (the caller's, when its own pool plays) from exiting.

Threads are made on first use and reused while their calls return (a thread per slot in
steady state, not one per call). No Ray here.

At no-delay speeds the hand-off is a large part of a rollout's CPU (issue 32), so it is kept lean:
a thread hands its result to the loop's ``_Settler``, and only the first result of a batch wakes
the loop (one self-pipe write); the loop then settles every call that finished meanwhile, in the
order they finished. The caller awaits its future directly; a timeout is one loop timer, which
settles the future with ``_EXPIRED`` (no ``asyncio.wait`` per call).
"""
from __future__ import annotations

import asyncio
import queue
import threading
from collections import deque
from typing import Callable

__all__ = ["CallThreads", "CallTimedOut"]


class CallTimedOut(Exception):
    """The call ran past its timeout; it was abandoned on its thread."""


_EXPIRED = object()        # what a call's timer settles its future with: the call ran past its timeout


class _Worker:
    def __init__(self, owner: "CallThreads", name: str):
        self.owner = owner
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.abandoned = False
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            fn, args, settler, future = job
            try:
                result, error = fn(*args), None
            except BaseException as exc:      # handed to the awaiting task as it is
                result, error = None, exc
            # back among the idle threads before the caller hears of the result: a caller that
            # calls again at once then finds this thread, instead of making another
            keep = not self.abandoned and self.owner.give_back(self)
            settler.put(future, result, error)
            del job, fn, args, result, error
            if not keep:
                return                          # abandoned (its call took too long) or the pool closed


class _Settler:
    """The results of one event loop's calls, handed to it in batches.

    ``put`` (on a pool thread) queues a finished call; only a put that finds the queue empty
    schedules ``settle`` on the loop (``call_soon_threadsafe``: a write to the loop's self-pipe),
    so calls that finish while the loop is busy, or before it wakes, cost no wake-up of their own.
    ``settle`` (on the loop) takes the whole queue at once and settles each future in the order
    the calls finished."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._done: deque = deque()

    def put(self, future, result, error) -> None:
        with self._lock:
            first = not self._done
            self._done.append((future, result, error))
        if first:
            try:
                self.loop.call_soon_threadsafe(self.settle)
            except RuntimeError:                # the lane's loop is closed: the run is over, nobody waits
                with self._lock:
                    self._done.clear()

    def settle(self) -> None:
        with self._lock:
            done, self._done = self._done, deque()
        for future, result, error in done:
            if not future.done():               # abandoned or cancelled meanwhile: nobody waits
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)


def _expire(future) -> None:
    """A call's timer: its timeout passed before its result came (the loop runs this)."""
    if not future.done():
        future.set_result(_EXPIRED)


class CallThreads:
    def __init__(self, prefix: str = "rollout"):
        self.prefix = prefix
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._made = 0
        self.closed = False
        self.abandoned = 0                      # calls cut at their timeout, whose threads ran on
        self._settler: _Settler | None = None   # the results' way back to the loop that awaits them

    def give_back(self, worker: _Worker) -> bool:
        """A thread whose call returned joins the idle ones (False: the pool closed, it ends)."""
        with self._lock:
            if self.closed:
                return False
            self._idle.append(worker)
            return True

    def _take(self) -> _Worker:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            self._made += 1
            n = self._made
        return _Worker(self, f"{self.prefix}-{n}")

    async def call(self, fn: Callable, *args, timeout: float | None = None):
        """``fn(*args)`` on a thread of the pool; raises ``CallTimedOut`` past ``timeout`` seconds
        (the call is abandoned on its thread, which leaves the pool), or what ``fn`` raised."""
        loop = asyncio.get_running_loop()
        settler = self._settler
        if settler is None or settler.loop is not loop:     # a new loop (a renewed lane, a test's run)
            settler = self._settler = _Settler(loop)
        future = loop.create_future()
        worker = self._take()
        worker.jobs.put((fn, args, settler, future))
        timer = loop.call_later(timeout, _expire, future) if timeout is not None else None
        try:
            result = await future
        except asyncio.CancelledError:          # the chunk was cancelled (the run stopped)
            worker.abandoned = True
            future.cancel()
            raise
        finally:
            if timer is not None:
                timer.cancel()
        if result is _EXPIRED:
            worker.abandoned = True
            self.abandoned += 1
            raise CallTimedOut(f"took longer than {timeout:g}s")
        return result

    def shutdown(self) -> None:
        """Idle threads end now; a thread still in a call ends once that call returns."""
        with self._lock:
            self.closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.jobs.put(None)

    @property
    def threads(self) -> int:
        """Threads made so far (a measure of how many calls were ever abandoned or concurrent)."""
        return self._made
