"""Per-run grading counts: ``search["grader"]`` and ``SimulationData.arm_yield``.

``grader_summary(rows, judge, in_loop)`` counts the verdicts on a run's rows the way the
reference reports them: ``{"judge", "judged_in_loop", "judged_after", "errors", "scored",
"passes", "failures", "partials", "unjudged"}``. ``scored`` rows got a valid reward (passes are
1s, failures 0s, partials the rewards strictly between, as ``pass_at`` counts them);
``errors`` are verdicts the judge failed to give (error / timeout / missing or invalid result,
never counted as a 0); ``unjudged`` rows carry no verdict at all.

``arm_yield(rows)`` is ``{arm: {"executed", "failing"}}``: how many rows each search arm
produced and how many of them a judge failed -- which arm finds failures.
"""
from __future__ import annotations

from numbers import Real

__all__ = ["grader_summary", "arm_yield", "PASS_THRESHOLD"]

PASS_THRESHOLD = 0.5


def _reward(row):
    value = row.get("reward")
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    return value


def grader_summary(rows, judge: str | None, in_loop: bool) -> dict[str, str | int | None]:
    out: dict[str, int] = {"judged_in_loop": 0, "judged_after": 0, "errors": 0, "scored": 0, "passes": 0,
                           "failures": 0, "partials": 0, "unjudged": 0}
    for row in rows:
        status = row.get("judge_status")
        if status is None:
            out["unjudged"] += 1
            continue
        out["judged_in_loop" if in_loop else "judged_after"] += 1
        reward = _reward(row)
        if status != "ok" or reward is None:
            out["errors"] += 1
            continue
        out["scored"] += 1
        if reward in (0, 1):
            out["passes" if reward == 1 else "failures"] += 1
        else:
            out["partials"] += 1
    return {"judge": judge, **out}


def arm_yield(rows) -> dict:
    out: dict = {}
    for row in rows:
        arm = row.get("arm") or "structured"
        slot = out.setdefault(arm, {"executed": 0, "failing": 0})
        slot["executed"] += 1
        reward = _reward(row)
        if reward is not None and (row.get("judge_status") or "ok") == "ok" and reward < PASS_THRESHOLD:
            slot["failing"] += 1
    return dict(sorted(out.items()))
