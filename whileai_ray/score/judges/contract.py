"""The judge contract: what a judge may return, and how a verdict lands on a row.

A *judge* (or grader) is any callable ``row -> result``. The result may be:

* a number in [0, 1] (``True``/``False`` count as 1/0) -> that is the reward;
* a dict with ``"reward"`` (or ``"score"``), optional ``"reason"`` (str), ``"markers"``
  (``{name: number}``) and ``"failure_class"`` (str); other keys are dropped.

Anything else is not a score, and is never turned into a 0. ``normalize_judge_result``
maps every outcome to one verdict dict with a ``judge_status``:

=================  ==========================================================  ========
judge_status       when                                                        reward
=================  ==========================================================  ========
``ok``             a number (or dict reward) in [0, 1]                         value
``missing_reward`` None, or a dict without ``reward``/``score``                None
``invalid_result`` a reward outside [0, 1], NaN, or a value that is no number  None
``error``          the judge raised (pass the exception object in)             None
``timeout``        the judge timed out (pass a ``TimeoutError`` in)            None
=================  ==========================================================  ========

``apply_verdict`` writes the verdict onto a row with the ``lineage`` stamp of reference
section 1.3 (``scoring_run_id``, ``source: "grade"``, ``judge``, ``parent``).
"""
from __future__ import annotations

import functools
import math
from numbers import Real

from ...core.rng import short_hash

__all__ = ["JUDGE_STATUSES", "normalize_judge_result", "judge_name", "apply_verdict",
           "is_graded_failure", "failed_markers", "new_scoring_run_id"]

JUDGE_STATUSES = ("ok", "missing_reward", "invalid_result", "error", "timeout")
_KEEP = ("reward", "reason", "markers", "failure_class", "judge_status")


def _verdict(reward=None, reason=None, markers=None, failure_class=None, status="ok") -> dict:
    return {"reward": reward, "reason": reason, "markers": markers,
            "failure_class": failure_class, "judge_status": status}


def _as_reward(value):
    """(reward, problem) for a raw reward value; problem is None when it is a valid score."""
    if isinstance(value, bool):
        return int(value), None
    if not isinstance(value, Real):
        return None, f"the judge's reward is a {type(value).__name__} ({value!r:.60}), not a number in [0, 1]"
    if isinstance(value, float) and math.isnan(value):
        return None, "the judge's reward is NaN; return a number in [0, 1]"
    if value < 0 or value > 1:
        return None, f"the judge's reward {value!r} is outside [0, 1]; return 0..1 or pass scale=(lo, hi)"
    return (int(value) if isinstance(value, int) else float(value)), None


def _clean_markers(markers):
    if not isinstance(markers, dict) or not markers:
        return None
    out = {}
    for name in sorted(markers, key=str):
        value = markers[name]
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, Real):
            out[str(name)] = value
    return out or None


def normalize_judge_result(value) -> dict:
    """Map whatever a judge returned (or raised) to one verdict dict.

    Returns ``{"reward", "reason", "markers", "failure_class", "judge_status"}``. A judge
    failure always has ``reward`` None -- it is unjudged, never a 0.
    """
    if isinstance(value, BaseException):
        status = "timeout" if isinstance(value, TimeoutError) else "error"
        return _verdict(reason=f"{type(value).__name__}: {value}", status=status)
    if value is None:
        return _verdict(reason="the judge returned None; return a number in [0, 1] or {'reward': ...}",
                        status="missing_reward")
    if isinstance(value, dict):
        raw = value.get("reward")
        if raw is None:
            raw = value.get("score")
        reason = value.get("reason")
        reason = str(reason) if reason not in (None, "") else None
        markers = _clean_markers(value.get("markers"))
        fclass = value.get("failure_class")
        fclass = str(fclass) if fclass not in (None, "") else None
        if raw is None:
            keys = ", ".join(sorted(map(str, value))) or "none"
            return _verdict(reason=reason or f"the judge's dict has no 'reward' or 'score' (keys: {keys})",
                            markers=markers, failure_class=fclass, status="missing_reward")
        reward, problem = _as_reward(raw)
        if problem:
            return _verdict(reason=problem, markers=markers, failure_class=fclass, status="invalid_result")
        return _verdict(reward, reason, markers, fclass, "ok")
    reward, problem = _as_reward(value)
    if problem:
        return _verdict(reason=problem, status="invalid_result")
    return _verdict(reward=reward)


def judge_name(grader) -> str:
    """A stable display name: ``.name`` of judge objects, a function's ``__name__``,
    ``lambda_judge`` for lambdas, else ``judge``."""
    if isinstance(grader, functools.partial):
        return judge_name(grader.func)
    name = getattr(grader, "name", None)
    if isinstance(name, str) and name:
        return name
    fname = getattr(grader, "__name__", None)
    if isinstance(fname, str) and fname:
        return "lambda_judge" if fname == "<lambda>" else fname
    return "judge"


def new_scoring_run_id(*parts) -> str:
    """``score_`` + 12 hex, keyed by ``parts`` (e.g. run_id, judge name, call counter)."""
    return "score_" + short_hash("scoring_run", *parts, n=12)


def apply_verdict(row: dict, verdict: dict, judge_name: str, scoring_run_id: str) -> None:
    """Write a normalized verdict onto ``row`` in place (reward, reason, judge_status, ...).

    Keys the verdict leaves empty are set to None (so a re-grade clears stale values, and
    the row export drops them). ``lineage`` gains scoring_run_id, source, judge and parent.
    """
    if not isinstance(row, dict):
        raise TypeError(f"apply_verdict: row must be a dict, got {type(row).__name__}")
    if not isinstance(verdict, dict) or "judge_status" not in verdict:
        verdict = normalize_judge_result(verdict)
    status = verdict.get("judge_status") or "ok"
    reward = verdict.get("reward") if status == "ok" else None   # a judge failure is never a 0
    row["reward"] = reward
    row["reason"] = verdict.get("reason") or None
    row["judge_status"] = status
    row["judge_name"] = judge_name
    row["markers"] = verdict.get("markers") or None
    row["failure_class"] = verdict.get("failure_class") or None
    lineage = row.get("lineage")
    if not isinstance(lineage, dict):
        lineage = {}
        row["lineage"] = lineage
    lineage["scoring_run_id"] = scoring_run_id
    lineage["source"] = "grade"
    lineage["judge"] = judge_name
    lineage["parent"] = row.get("scenario_id")


def is_graded_failure(verdict: dict, threshold: float = 0.5) -> bool:
    """True when the judge ran fine and scored below ``threshold`` (a row or a verdict).

    Unjudged rows (error, timeout, missing or invalid result) are not failures.
    """
    if not isinstance(verdict, dict):
        return False
    if (verdict.get("judge_status") or "ok") != "ok":
        return False
    reward = verdict.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, Real):
        return False
    return reward < threshold


def failed_markers(verdict: dict, threshold: float = 0.5) -> list[str]:
    """Names of markers that scored below ``threshold``, sorted (a row or a verdict)."""
    markers = verdict.get("markers") if isinstance(verdict, dict) else None
    if not isinstance(markers, dict):
        return []
    return sorted(str(name) for name, value in markers.items()
                  if isinstance(value, Real) and value < threshold)
