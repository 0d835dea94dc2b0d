"""The caller's half of the caller's pool: a pull-based player in the caller's own process.

When the callables stay at home (``pools/sizing.py``: a one-node Ray), ``caller/run.py`` starts a
``CallerPlayer`` beside the Driver actor. On a thread of its own, with an event loop of its own
(the caller's main thread keeps polling the Driver for progress, and a notebook's loop is left
alone), it asks the Driver for work (``pull``), plays each chunk with the very classes a rollout
or judge actor runs (``RolloutWorker.run_chunk``, ``JudgeWorker.judge_chunk``), and hands the
results back (``push``: one call carries every chunk that finished since the last one). Many
chunks are in play at once; the Driver's loop decides how many (the lane's slots plus one chunk
of prefetch), exactly as for an actor.

The player stops when a pull answers None (the Driver's loop is over) or when ``stop()`` is
called; an error that ends it (the Driver died) is kept in ``error`` for the caller to raise.
"""
from __future__ import annotations

import asyncio
import threading

from ..messages import PoolChunk, PoolReply
from ..pools.judge_worker import JudgeWorker
from ..pools.rollout_worker import RolloutWorker
from ..pools.slim_results import slim_lanes

__all__ = ["CallerPlayer"]


class CallerPlayer:
    def __init__(self, driver, spec, plan, node_id: str):
        self.driver, self.spec, self.plan, self.node_id = driver, spec, plan, node_id
        self.error: BaseException | None = None
        self.chunks = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task | None = None
        self._thread = threading.Thread(target=self._run, name="whileai-caller-pool", daemon=True)

    def start(self) -> "CallerPlayer":
        self._thread.start()
        return self

    def stop(self, wait_s: float = 10.0) -> None:
        """End the player: what it still plays is cancelled (the run is over)."""
        loop, main = self._loop, self._main
        if loop is not None and main is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(main.cancel)
            except RuntimeError:        # the loop closed in between
                pass
        self._thread.join(wait_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # ------------------------------------------------------------ the player's thread
    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            self._main = loop.create_task(self._serve())
            loop.run_until_complete(self._main)
        except asyncio.CancelledError:
            pass
        except BaseException as exc:      # the Driver died, or our own code failed: the caller raises it
            self.error = exc
        finally:
            _let_cancelled_end(loop)
            loop.close()

    async def _serve(self) -> None:
        spec, plan = self.spec, self.plan
        rollouts = RolloutWorker(spec.agent, spec.meta, spec.execute, None, plan.per_actor, spec.timeout,
                                 spec.judge_timeout, spec.model, metrics=spec.metrics, node_id=self.node_id,
                                 shards=spec.shards, deadline_at=spec.deadline_at, slim=slim_lanes(spec, plan))
        if rollouts.build_error is not None:     # a class's __init__ raised: the run stops, saying where
            raise rollouts.build_error
        judges = (JudgeWorker(spec.grader, spec.judge_concurrency, spec.judge_timeout or None, metrics=spec.metrics)
                  if plan.judges_where == "caller" and spec.grader is not None else None)
        playing: set = set()
        self._done: asyncio.Queue[PoolReply] = asyncio.Queue()
        pusher = asyncio.ensure_future(self._push_done())
        pusher.add_done_callback(self._pusher_ended)
        try:
            while True:
                batch = await self.driver.pull.remote()
                if batch is None:
                    return
                for chunk in batch:
                    worker = judges if chunk.kind == "judge" else rollouts
                    task = asyncio.ensure_future(self._play(worker, chunk))
                    playing.add(task)
                    task.add_done_callback(playing.discard)
        finally:
            pusher.cancel()
            for task in list(playing):
                task.cancel()
            rollouts.shutdown()
            rollouts.flush_shards()           # shared storage: the last Parquet part

    async def _push_done(self) -> None:
        """Hand finished chunks back to the Driver, every chunk that finished meanwhile in one call:
        a wave of a thousand rollouts that end together is a few calls, not thirty, so the Driver's
        loop is not left queueing them (and the pull behind them) between its rounds."""
        done = self._done
        while True:
            items = [await done.get()]
            while not done.empty():
                items.append(done.get_nowait())
            await self.driver.push.remote(items)

    def _pusher_ended(self, task: asyncio.Task) -> None:
        """A push that failed (the Driver died) ends the player with its error: the Driver would
        otherwise wait for results that never come."""
        if not task.cancelled() and task.exception() is not None and self.error is None:
            self.error = task.exception()
            if self._main is not None:
                self._main.cancel()

    async def _play(self, worker, chunk: PoolChunk) -> None:
        try:
            if worker is None:
                raise RuntimeError(f"no {chunk.kind} worker in the caller's pool")
            results = await (worker.play_chunk(chunk.payload) if chunk.kind == "roll"
                             else worker.write_asks(*chunk.payload) if chunk.kind == "asks"   # (driver/edge_writing.py)
                             else worker.judge_chunk(chunk.payload))
        except asyncio.CancelledError:
            raise
        except Exception as exc:          # our code failed on the chunk: the Driver re-issues it
            self._done.put_nowait(PoolReply(chunk.token, None, f"{type(exc).__name__}: {exc}"[:500]))
            return
        self.chunks += 1
        self._done.put_nowait(PoolReply(chunk.token, results))


def _let_cancelled_end(loop: asyncio.AbstractEventLoop, wait_s: float = 2.0) -> None:
    """Tasks still open when the player stops (chunks it was playing) are cancelled and given a
    moment to end, so closing the loop destroys none ("Task was destroyed but it is pending" on
    stderr, at a SIGTERM or a failed run)."""
    try:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=wait_s))
    except Exception:
        pass
