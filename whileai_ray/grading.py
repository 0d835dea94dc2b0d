"""Scoring rows with a callable grader, in the loop or after the run."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from .score.judging import apply_verdict, judge_name, normalize_judge_result
from .store.row_builder import export_row


def fresh_scoring_run_id() -> str:
    """A fresh id per scoring pass (per-invocation identity, not part of the draw)."""
    return "score_" + uuid.uuid4().hex[:12]


def _score(grader, row: dict) -> dict:
    try:
        return normalize_judge_result(grader(export_row(row)))
    except Exception as exc:  # marked on the row as judge_status="error", never a 0
        return normalize_judge_result(exc)


def grade_in_place(data, grader, concurrency: int = 32) -> None:
    """Score every trajectory of ``data`` with ``grader`` on a thread pool, in place."""
    if not callable(grader):
        raise TypeError("grader= takes a callable row -> number | bool | {'reward': ..., 'reason': ...}")
    name = judge_name(grader)
    run_id = fresh_scoring_run_id()
    rows = data.trajectories
    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), 64))) as pool:
        verdicts = list(pool.map(lambda r: _score(grader, r), rows))
    for row, v in zip(rows, verdicts):
        apply_verdict(row, v, name, run_id)
        if row.get("reason") is None and v.get("judge_status") == "ok":
            row["reason"] = "graded"
        if row.get("faults"):
            row["fault_detected"] = True
        row["judge_meta"] = {"trust": None}
    from .score.grader_summary import arm_yield, grader_summary
    data.arm_yield = arm_yield(rows)                  # which search arm found the failures
    if isinstance(getattr(data, "search", None), dict):
        data.search["grader"] = grader_summary(rows, name, in_loop=False)
