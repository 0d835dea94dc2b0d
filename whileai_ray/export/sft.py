"""``sft_rows()``: graded rows as preference-pair seeds (what the agent said, and how it scored).

Each graded failure (reward below 1) becomes::

    {"prompt": ..., "rejected_response": <the agent's reply>, "chosen_response": None,
     "tool_trace": [{"tool", "arguments", "result"}, ...], "reward": ..., "reason": ..., "arm": ...}

``chosen_response`` is left for a person or a stronger model to write. With
``failures_only=False`` passing rows are listed too, with their reply as ``chosen_response``
and ``rejected_response`` None. Ungraded rows (no reward, or a failed judge) are skipped.
"""
from __future__ import annotations

from ..score.pass_at.estimate import as_rows
from .row_checks import reward_of

__all__ = ["sft_rows"]


def _trace(row: dict) -> list:
    return [{"tool": s.get("tool"), "arguments": s.get("arguments"), "result": s.get("result")}
            for s in row.get("steps") or () if isinstance(s, dict) and s.get("tool")]


def sft_rows(rows, failures_only: bool = True) -> list:
    """Graded rows as ``{prompt, rejected_response, chosen_response, tool_trace, reward, reason, arm}``."""
    if not isinstance(failures_only, bool):
        raise TypeError(f"sft_rows(failures_only={failures_only!r}): pass True or False")
    out = []
    for row in as_rows(rows):
        reward = reward_of(row)
        if reward is None or (failures_only and reward >= 1):
            continue
        passed = reward >= 1
        reply = row.get("final_text") or ""
        out.append({"prompt": row.get("prompt") or "",
                    "rejected_response": None if passed else reply,
                    "chosen_response": reply if passed else None,
                    "tool_trace": _trace(row), "reward": reward, "reason": row.get("reason"),
                    "arm": row.get("arm")})
    return out
