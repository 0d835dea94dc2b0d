"""JudgeWorker: grades landed rows in the loop, beside the rollout actors.

Rows travel to a judge actor in chunks; each row is scored in a thread executor (a callable
grader, ``wai.Judge`` over HTTP, or the conduct check) under a semaphore of
``judge_concurrency`` slots, with ``judge_timeout`` per verdict. Only the verdicts travel back.
A grader given as a class is built once per judge actor (``agents/forms.py``); an ``async def``
grader is awaited on the actor's event loop instead of a thread.
Rollout slots are free as soon as a rollout ends, so a slow judge never stalls rollouts; the
driver observes a unit once its verdict is in, which is what steers the search.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from ..agents.forms import RoleBuildError, build_role, is_async_callable
from ..score.judging import normalize_judge_result
from ..store.row_builder import export_row


def score_row(grader, row: dict) -> dict:
    """One verdict in the judge contract; an exception is a verdict with judge_status=error."""
    internal = getattr(grader, "wants_internal_row", False)
    try:
        return _verdict(grader(row if internal else export_row(row)))
    except Exception as exc:  # marked on the row, never turned into a 0
        return normalize_judge_result(exc)


async def score_row_async(grader, row: dict, timeout: float | None) -> dict:
    """:func:`score_row` for an ``async def`` grader, awaited on the running loop."""
    internal = getattr(grader, "wants_internal_row", False)
    try:
        pending = grader(row if internal else export_row(row))
        return _verdict(await (asyncio.wait_for(pending, timeout) if timeout else pending))
    except asyncio.TimeoutError:
        return normalize_judge_result(TimeoutError(f"the judge took longer than {timeout:g}s"))
    except Exception as exc:
        return normalize_judge_result(exc)


def _verdict(raw) -> dict:
    verdict = normalize_judge_result(raw)
    if isinstance(raw, dict) and isinstance(raw.get("judge_meta"), dict):
        verdict["judge_meta"] = raw["judge_meta"]
    return verdict


class JudgeWorker:
    def __init__(self, grader, concurrency: int = 32, timeout: float | None = None):
        self.build_error = None
        try:
            grader = build_role(grader, "grader")     # a class: built once per judge actor
        except RoleBuildError as exc:
            self.build_error = exc
        self.grader = grader
        self.is_async = self.build_error is None and is_async_callable(grader)
        self.timeout = timeout or None
        self.sem = asyncio.Semaphore(max(1, int(concurrency)))
        self.pool = ThreadPoolExecutor(max_workers=max(1, int(concurrency)) + 4, thread_name_prefix="judge")
        self.judged = 0

    def ping(self) -> bool:
        if self.build_error is not None:
            raise self.build_error
        return True

    async def judge_chunk(self, rows: list) -> list:
        return list(await asyncio.gather(*(self._one(r) for r in rows)))

    async def _one(self, row: dict) -> dict:
        loop = asyncio.get_running_loop()
        async with self.sem:
            if self.build_error is not None:
                return normalize_judge_result(self.build_error)
            if self.is_async:
                verdict = await score_row_async(self.grader, row, self.timeout)
                self.judged += 1
                return verdict
            fut = loop.run_in_executor(self.pool, score_row, self.grader, row)
            try:
                verdict = await (asyncio.wait_for(fut, self.timeout) if self.timeout else fut)
            except asyncio.TimeoutError:
                verdict = normalize_judge_result(TimeoutError(f"the judge took longer than {self.timeout:g}s"))
        self.judged += 1
        return verdict
