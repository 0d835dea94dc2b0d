"""JudgeWorker: grades landed rows in the loop, beside the rollout actors.

Rows travel to a judge actor in chunks; each row is scored in a thread executor (a callable
grader, ``wai.Judge`` over HTTP, or the conduct check) under a semaphore of
``judge_concurrency`` slots, with ``judge_timeout`` per verdict. Only the verdicts travel back.
A grader given as a class is built once per judge lane (``agents/forms.py``); an ``async def``
grader is awaited on the lane's event loop instead of a thread.
Rollout slots are free as soon as a rollout ends, so a slow judge never stalls rollouts; the
driver observes a unit once its verdict is in, which is what steers the search.
"""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from ...agents.forms import RoleBuildError, build_role, is_async_callable
from ...score.grading import call_grader, call_grader_async
from ...score.judges.contract import normalize_judge_result
from ..metrics.recorder import run_metrics


class JudgeWorker:
    def __init__(self, grader, concurrency: int = 32, timeout: float | None = None, metrics: dict | None = None):
        self.build_error: RoleBuildError | None = None
        try:
            grader = build_role(grader, "grader")     # a class: built once per judge lane
        except RoleBuildError as exc:
            self.build_error = exc
        self.grader = grader
        self.is_async = self.build_error is None and is_async_callable(grader)
        self.timeout = timeout or None
        self.sem = asyncio.Semaphore(max(1, int(concurrency)))
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(concurrency)) + 4, thread_name_prefix="judge")
        self.judged = 0
        self.metrics = run_metrics(metrics)

    def ping(self) -> bool:
        if self.build_error is not None:
            raise self.build_error
        return True

    async def judge_chunk(self, rows: list) -> list:
        timed = await asyncio.gather(*(self._one(r) for r in rows))
        self.metrics.judge_seconds([s for _, s in timed])          # metrics: once per chunk
        return [verdict for verdict, _ in timed]

    async def _one(self, row: dict) -> tuple:
        loop = asyncio.get_running_loop()
        async with self.sem:
            t0 = time.monotonic()
            if self.build_error is not None:
                verdict = normalize_judge_result(self.build_error)
            elif self.is_async:
                verdict = await call_grader_async(self.grader, row, self.timeout)
            else:
                fut = loop.run_in_executor(self.pool, call_grader, self.grader, row)
                try:
                    verdict = await (asyncio.wait_for(fut, self.timeout) if self.timeout else fut)
                except asyncio.TimeoutError:
                    verdict = normalize_judge_result(TimeoutError(f"the judge took longer than {self.timeout:g}s"))
            seconds = time.monotonic() - t0
        self.judged += 1
        return verdict, seconds
