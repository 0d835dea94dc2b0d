"""PullThreads: a lane's sync agent threads, which take their units themselves and hand results back in batches.

A plain (sync) agent runs on a thread, never on the lane's event loop. Handing each call to a
thread and each result back to the loop cost more CPU than the no-delay demo agent's own work
(issue 32): per call a task, a future, a semaphore turn, a timer, a thread wake-up and a loop
wake-up, sixteen threads and the loop taking the GIL from one another at every hand-off. Here
the loop puts a whole chunk on one queue and the threads *pull*: a thread whose unit is done
takes the next one at once, plays it, and builds its whole result (row, stored line, spool
text) itself. Finished results go back through a ``_Settler``: only the first result of a batch
wakes the loop, which then files every result that finished meanwhile, and a chunk's waiter
wakes once, when its last unit is filed.

What the lane promised before still holds:

- **Slots.** At most ``slots`` threads are live (not abandoned), each plays one unit at a time,
  so at most ``slots`` agent calls run at once. Threads are made on first use, kept while their
  calls return, and are daemons (a wedged one never keeps the caller's process from exiting).
- **Timeouts.** A call past ``timeout`` is *abandoned*: its unit comes back from
  ``expire(unit, seconds)`` (timed out), its thread leaves the live ones (Python cannot kill it;
  it ends by itself if the call ever returns, its result dropped) and a new thread takes the
  next unit. One loop timer watches every call in flight: it fires when the oldest is due, cuts
  what is due, and is set again for the next; it is armed by the thread that starts a call while
  none is armed, so a steady stream of quick calls costs one timer per ``timeout``, not one per call.
  A call is cut or delivered, never both: both sides decide under the pool's lock.
- **Cancellation.** A cancelled ``run`` (the run stopped, a warm lane renewed) drops its units not
  yet started and abandons its calls in flight, whose slots free at once, as cancelling one
  asyncio task per unit did.
- **Drain.** ``shutdown`` lets idle threads go; a thread in a call ends once its call returns and
  no unit is left. A pool shut down still plays what it is given (threads then end when idle).

No Ray here; ``pools/rollout_worker.py`` gives it the play and expire functions.
"""
from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Any, Callable

__all__ = ["PullThreads"]


class _Chunk:
    """One ``run``'s units: where their results go, and the future its caller awaits."""
    __slots__ = ("future", "results", "left", "cancelled")

    def __init__(self, future: asyncio.Future, n: int):
        self.future = future
        self.results: list = [None] * n
        self.left = n
        self.cancelled = False


class _Settler:
    """Finished units of one event loop, filed on it in batches (one loop wake-up per batch)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self._lock = threading.Lock()
        self._done: list = []

    def put(self, chunk: _Chunk, index: int, result: Any, error: BaseException | None) -> None:
        with self._lock:
            first = not self._done
            self._done.append((chunk, index, result, error))
        if first:
            try:
                self.loop.call_soon_threadsafe(self.settle)
            except RuntimeError:                # the lane's loop is closed: the run is over, nobody waits
                with self._lock:
                    self._done.clear()

    def settle(self) -> None:
        with self._lock:
            done, self._done = self._done, []
        for chunk, index, result, error in done:
            _file(chunk, index, result, error)


def _file(chunk: _Chunk, index: int, result: Any, error: BaseException | None) -> None:
    """One unit's result into its chunk (on the loop); the chunk's waiter wakes with its last."""
    future = chunk.future
    if future.done():                           # cancelled, or failed by another unit: nobody waits
        return
    if error is not None:
        future.set_exception(error)
        return
    chunk.results[index] = result
    chunk.left -= 1
    if chunk.left == 0:
        future.set_result(chunk.results)


class PullThreads:
    def __init__(self, play: Callable[[Any], Any], expire: Callable[[Any, float], Any], slots: int,
                 timeout: float | None = None, prefix: str = "rollout"):
        self.play = play                        # unit -> result, on a pool thread
        self.expire = expire                    # (unit, seconds) -> result, on the loop, for a cut call
        self.slots = max(1, int(slots))
        self.timeout = timeout or None
        self.prefix = prefix
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._jobs: deque = deque()             # (chunk, index, unit, settler) not yet started
        self._busy: dict[int, tuple] = {}       # thread number -> (chunk, index, unit, settler, t0)
        self._cut: set[int] = set()             # thread numbers whose calls were abandoned
        self._live = 0                          # threads not abandoned (at most ``slots``)
        self._waiting = 0                       # live threads asleep, not yet woken
        self._coming = 0                        # threads woken or made that have not looked for a unit yet
        self._made = 0
        self._armed = False                     # the loop's timeout timer is set (or about to be)
        self._settler: _Settler | None = None
        self.closed = False
        self.abandoned = 0                      # calls cut at their timeout, whose threads ran on

    async def run(self, units: list) -> list:
        """Play every unit on the pool's threads; their results, in the order of ``units``."""
        if not units:
            return []
        loop = asyncio.get_running_loop()
        chunk = _Chunk(loop.create_future(), len(units))
        settler = self._settler
        with self._lock:
            if settler is None or settler.loop is not loop:     # a new loop (a renewed lane, a test's run)
                settler = self._settler = _Settler(loop)
                self._armed = False             # a timer set on the last loop never fires here
            self._jobs.extend((chunk, i, unit, settler) for i, unit in enumerate(units))
            make = self._staff()
            others = self._live - make          # threads there already: each looks at the queue before it ends
        if not self._start(make) and not others:    # not one thread could start: the chunk fails, it is sent again
            self._drop(chunk)
            raise RuntimeError("the lane could not start a thread for its sync agent")
        try:
            return await chunk.future
        except asyncio.CancelledError:          # the chunk was cancelled (the run stopped)
            self._drop(chunk)
            raise

    def _staff(self) -> int:
        """Call one more thread when units wait and none is on its way; how many to make (lock held).

        One at a time: the thread called takes a unit and, if more wait, calls the next. Agent calls
        that block (a model's reply) so bring every slot's thread in within moments, while a burst
        of quick calls is played by the threads already running, not by sixteen threads taking the
        GIL from one another."""
        if self._coming or not self._jobs:
            return 0
        if self._waiting:
            self._waiting -= 1
            self._coming += 1
            self._wake.notify()
            return 0
        if self._live >= self.slots:
            return 0
        self._live += 1
        self._coming += 1
        return 1

    def _start(self, make: int) -> int:
        """Start ``make`` threads (counted by ``_staff``); how many did start."""
        started = 0
        for _ in range(make):
            with self._lock:
                self._made += 1
                n = self._made
            try:
                threading.Thread(target=self._work, args=(n,), name=f"{self.prefix}-{n}", daemon=True).start()
                started += 1
            except RuntimeError:                # the process cannot start a thread now: not counted;
                with self._lock:                # a thread that plays on calls again
                    self._live -= 1
                    self._coming -= 1
        return started

    def _drop(self, chunk: _Chunk) -> None:
        """A cancelled chunk: its queued units go, its calls in flight are abandoned (slots freed)."""
        with self._lock:
            chunk.cancelled = True
            self._jobs = deque(job for job in self._jobs if job[0] is not chunk)
            for n, job in list(self._busy.items()):
                if job[0] is chunk:
                    self._abandon(n)
            make = self._staff()
        self._start(make)

    def _abandon(self, n: int) -> None:
        del self._busy[n]
        self._cut.add(n)
        self._live -= 1

    def _work(self, n: int) -> None:
        """A pool thread: take the next unit, play it, hand the result back; sleep when none is left."""
        lock, called = self._lock, True     # a new thread was counted as coming
        while True:
            with lock:
                jobs = self._jobs
                while not jobs:
                    if called:
                        called, self._coming = False, self._coming - 1
                    if self.closed:
                        self._live -= 1
                        return
                    self._waiting += 1
                    self._wake.wait()
                    called = True               # whoever woke this thread counted it as coming
                    jobs = self._jobs
                chunk, index, unit, settler = jobs.popleft()
                if called:
                    called, self._coming = False, self._coming - 1
                make = self._staff() if jobs else 0
                skip = chunk.cancelled or chunk.future.done()     # cancelled (its task was), or failed
                if not skip:
                    self._busy[n] = (chunk, index, unit, settler, time.monotonic())
                arm = not skip and self.timeout is not None and not self._armed
                if arm:
                    self._armed = True
            if make:
                self._start(make)
            if skip:
                continue
            if arm:
                self._arm(settler.loop, 0.0)
            try:
                result, error = self.play(unit), None
            except BaseException as exc:        # not an agent's error (those are rows): fails the chunk
                result, error = None, exc
            with lock:
                if n in self._cut:              # cut at its timeout, or its chunk cancelled: dropped
                    self._cut.discard(n)
                    return
                del self._busy[n]
            settler.put(chunk, index, result, error)
            del chunk, unit, settler, result, error

    def _arm(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        try:
            if delay <= 0.0:
                loop.call_soon_threadsafe(self._check, loop)
            else:
                loop.call_later(delay, self._check, loop)
        except RuntimeError:                    # the loop is closed: nobody waits
            with self._lock:
                self._armed = False

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        """The timeout timer (on the loop): cut every call past ``timeout``, set itself for the next."""
        assert self.timeout is not None
        now, cut = time.monotonic(), []
        with self._lock:
            due = None
            for n, (chunk, index, unit, settler, t0) in list(self._busy.items()):
                if now - t0 >= self.timeout:
                    self._abandon(n)
                    self.abandoned += 1
                    cut.append((chunk, index, unit, t0))
                elif due is None or t0 < due:
                    due = t0
            self._armed = due is not None
            make = self._staff() if cut else 0
        self._start(make)
        if due is not None:
            self._arm(loop, due + self.timeout - now)
        for chunk, index, unit, t0 in cut:
            if not chunk.future.done():
                try:
                    result, error = self.expire(unit, time.monotonic() - t0), None
                except BaseException as exc:
                    result, error = None, exc
                _file(chunk, index, result, error)

    def shutdown(self) -> None:
        """Idle threads end now; a thread in a call ends once its call returns and no unit is left."""
        with self._lock:
            self.closed = True
            self._coming += self._waiting       # each sleeper wakes as if called, and ends
            self._waiting = 0
            self._wake.notify_all()

    @property
    def threads(self) -> int:
        """Threads made so far (a measure of how many calls were ever abandoned or concurrent)."""
        return self._made
