"""Per-row checks shared by the selection gates, the export report and the publish gate.

* ``reward_of(row)``        -- the numeric reward, or None when ungraded or the judge failed;
* ``is_junk(row)``          -- unusable as training data (agent error, empty reply, markup, tiny prompt);
* ``leaks_privileged(row)`` -- the reply quotes its privileged block (internal rows only);
* ``is_truncated(row)``     -- the reply was cut off.
"""
from __future__ import annotations

from numbers import Real

from ..agents.callable import unusable_reason
# The conduct rule's own leak test (private there), so selection and grading agree on what a leak is.
from ..score.leak import find_leak

__all__ = ["reward_of", "is_junk", "leaks_privileged", "is_truncated"]


def reward_of(row: dict):
    """The reward as a float; None when ungraded, the judge failed, or the value is no number."""
    if (row.get("judge_status") or "ok") != "ok":
        return None
    value = row.get("reward")
    if isinstance(value, bool) or not isinstance(value, Real) or value != value:
        return None
    return float(value)


def is_junk(row: dict) -> bool:
    """Agent error, empty reply, tool-call markup in the text, a bad row shape, or a prompt under two words."""
    if not isinstance(row.get("prompt"), str) or not isinstance(row.get("steps"), list) \
            or not isinstance(row.get("final_text"), str):
        return True
    if row.get("finish_reason") == "error" or row.get("_error") or row.get("_unusable"):
        return True
    return unusable_reason(row) is not None or len(row["prompt"].split()) < 2


def leaks_privileged(row: dict) -> bool:
    """Does the reply quote 12+ characters of its privileged block that the agent never saw?
    The same detector as ``leak_report()`` and the conduct rule (``score.leak.find_leak``)."""
    return isinstance(row.get("privileged"), dict) and find_leak(row) is not None


def is_truncated(row: dict) -> bool:
    """``finish_reason == "length"`` or a step flagged ``truncated``."""
    return row.get("finish_reason") == "length" or any(
        isinstance(s, dict) and s.get("truncated") for s in row.get("steps") or ())
