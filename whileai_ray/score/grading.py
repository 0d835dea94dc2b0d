"""Calling a grader: the one path every grade takes (in the loop, after the run, in a comparison).

``call_grader(grader, row)`` hands the grader the row (exported, unless it asks for the
internal row with ``wants_internal_row``), maps whatever comes back -- or is raised -- to one
verdict in the judge contract (``judging.normalize_judge_result``: a failure is unjudged, never
a 0), and keeps a ``judge_meta`` dict the grader returned. The judge actor, ``data.grade()``,
``grade(judge=...)`` and ``compare_judges`` all go through it, so a grader behaves the same
wherever it runs. ``grade_in_place`` scores a run's trajectories on a thread pool.
"""
from __future__ import annotations

import asyncio
import inspect
import uuid
from concurrent.futures import ThreadPoolExecutor

from ..core.rows import export_row
from .judges.contract import apply_verdict, judge_name, normalize_judge_result

__all__ = ["call_grader", "call_grader_async", "grade_in_place", "grade_batch", "note_grading", "fresh_scoring_run_id"]


def fresh_scoring_run_id() -> str:
    """A fresh id per scoring pass (per-invocation identity, not part of the draw)."""
    return "score_" + uuid.uuid4().hex[:12]


def call_grader(grader, row: dict, *, internal: bool | None = None, transform=None) -> dict:
    """One verdict from ``grader`` on ``row``; an exception is a verdict with judge_status=error.

    ``internal``: pass ``row`` as it is (True), its exported form (False), or ask the grader
    (None: its ``wants_internal_row`` attribute). ``transform`` maps the raw answer before it
    is normalized (``grade(scale=...)``). An ``async def`` grader called here (after a run, in a
    thread) is run to its end on a loop of its own; the judge actor awaits one on its own loop
    instead (:func:`call_grader_async`).
    """
    try:
        raw = grader(_grader_input(grader, row, internal))
        if inspect.isawaitable(raw):
            raw = asyncio.run(_awaited(raw))
    except Exception as exc:  # marked on the row, never turned into a 0
        return normalize_judge_result(exc)
    return _verdict(raw, transform)


async def call_grader_async(grader, row: dict, timeout: float | None = None) -> dict:
    """:func:`call_grader` for an ``async def`` grader, awaited on the running loop (a judge
    actor's, or the caller's pool's); past ``timeout`` seconds the verdict is a timeout error."""
    try:
        raw = grader(_grader_input(grader, row, None))
        if inspect.isawaitable(raw):
            raw = await (asyncio.wait_for(raw, timeout) if timeout else raw)
    except asyncio.TimeoutError:
        return normalize_judge_result(TimeoutError(f"the judge took longer than {timeout:g}s"))
    except Exception as exc:
        return normalize_judge_result(exc)
    return _verdict(raw, None)


def _grader_input(grader, row: dict, internal: bool | None) -> dict:
    if internal is None:
        internal = bool(getattr(grader, "wants_internal_row", False))
    return row if internal else export_row(row)


async def _awaited(awaitable):
    return await awaitable


def _verdict(raw, transform) -> dict:
    try:
        if transform is not None:
            raw = transform(raw)
        verdict = normalize_judge_result(raw)
    except Exception as exc:  # marked on the row, never turned into a 0
        return normalize_judge_result(exc)
    if isinstance(raw, dict) and isinstance(raw.get("judge_meta"), dict):
        verdict["judge_meta"] = raw["judge_meta"]
    return verdict


def grade_in_place(data, grader, concurrency: int = 32) -> None:
    """Score every trajectory of ``data`` with ``grader`` on a thread pool, in place."""
    if not callable(grader):
        raise TypeError("grader= takes a callable row -> number | bool | {'reward': ..., 'reason': ...}")
    name, rows = judge_name(grader), data.trajectories
    grade_batch(rows, grader, name, fresh_scoring_run_id(), concurrency)
    note_grading(data, rows, name)


def note_grading(data, rows: list, name: str) -> None:
    """What a grading pass after the run tells its ``data``: which search arm found the failures
    (``arm_yield``) and the grader's counts (``search["grader"]``)."""
    from .grader_summary import arm_yield, grader_summary
    data.arm_yield = arm_yield(rows)
    if isinstance(getattr(data, "search", None), dict):
        data.search["grader"] = grader_summary(rows, name, in_loop=False)


def grade_batch(rows: list, grader, name: str, run_id: str, concurrency: int = 32) -> None:
    """Score ``rows`` with ``grader`` on a thread pool, in place (one batch of a run: every
    batch of one grading pass shares its ``name`` and ``run_id``)."""
    # internal=False: data.grade(grader=) has always shown the grader the exported row
    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), 64))) as pool:
        verdicts = list(pool.map(lambda r: call_grader(grader, r, internal=False), rows))
    for row, v in zip(rows, verdicts):
        apply_verdict(row, v, name, run_id)
        if row.get("reason") is None and v.get("judge_status") == "ok":
            row["reason"] = "graded"
        if row.get("faults"):
            row["fault_detected"] = True
        row["judge_meta"] = {"trust": None}
