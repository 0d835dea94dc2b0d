"""``rank``: offline second-pass quality scores for rows that already exist.

It never touches ``reward``. Each row gains ``quality`` (0..1), ``quality_reason`` and
``quality_scores`` -- five heuristic scores in [0, 1], each a plain reading of the row:

* ``opener`` -- is the opening prompt a real ask? Empty, greeting-only, or writer debris
  ("Sure, here is a scenario:", "User:", "As an AI") scores low; a wall of text scores half.
* ``ping_pong`` -- does the conversation go round in circles? Every tool call that repeats an
  earlier (tool, arguments) pair, every assistant text said twice, and clarifying questions past
  the second cost points.
* ``leak`` -- 0 when the agent's words quote the row's ``privileged`` block (``leak.find_leak``;
  only internal rows carry it), else 1.
* ``complexity`` -- is the row worth having? 0.2 for a bare text exchange, more for a tool call,
  for several calls or a tool fault to handle, and for a prompt of 20+ words.
* ``structure`` -- is the row well formed? A prompt and a final reply that are non-empty text,
  steps that are dicts with dict arguments and a result, a finish other than length/error.

``quality`` is the mean of the five, capped at 0.2 when the row leaks or its structure is 0.
``quality_reason`` is ``"ok"`` when every score is at least 0.5, else the weakest score's name
and why. The summary dict: ``n``, ``mean``, ``median``, ``min``, ``max``, ``distribution``
(five 0.2-wide buckets), ``fail_rates`` (share of rows under 0.5, per score), ``n_pass``
(rows at or above ``min_quality``, default 0.6), ``min_quality`` and ``best`` (the top five).
"""
from __future__ import annotations

import json
import math
import re
import statistics

from .leak import find_leak
from ..core.defaults import TOOL_OK_STATUSES

__all__ = ["SCORES", "rank", "quality_of", "DEFAULT_MIN_QUALITY"]

SCORES = ("opener", "ping_pong", "leak", "complexity", "structure")
DEFAULT_MIN_QUALITY = 0.6
_BUCKETS = ("0.0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1.0")
_DEBRIS = re.compile(r"^\W*(sure[,!]|certainly[,!]|here is|here's|as an ai|scenario\s*:|user\s*:|"
                     r"prompt\s*:|customer\s*:|\[|\{)", re.I)
_GREETING = re.compile(r"^\W*(hi|hello|hey|good (morning|afternoon|evening))\W*(there)?\W*$", re.I)
_OK = TOOL_OK_STATUSES | {"found"}


def _opener(prompt) -> tuple[float, str]:
    if not isinstance(prompt, str) or not prompt.strip():
        return 0.0, "the opening prompt is empty."
    words = len(prompt.split())
    if _GREETING.match(prompt) or words < 3:
        return 0.2, "the opening prompt is a greeting or a fragment, not an ask."
    if _DEBRIS.match(prompt):
        return 0.3, "the opening prompt starts with writer debris, not the user's words."
    if words > 400:
        return 0.5, f"the opening prompt runs {words} words."
    return 1.0, ""


def _ping_pong(steps: list) -> tuple[float, str]:
    calls, texts, repeats, questions = set(), set(), 0, 0
    for step in steps:
        if step.get("tool"):
            key = (str(step["tool"]), json.dumps(step.get("arguments"), sort_keys=True, default=str))
            repeats += key in calls
            calls.add(key)
        text = step.get("text")
        if isinstance(text, str) and text.strip():
            norm = " ".join(text.lower().split())
            repeats += norm in texts
            texts.add(norm)
            questions += norm.endswith("?")
    score = max(0.0, 1.0 - 0.5 * repeats - 0.25 * max(0, questions - 2))
    if score >= 1.0:
        return 1.0, ""
    return score, f"{repeats} repeated call(s) or turn(s) and {questions} clarifying question(s)."


def _complexity(prompt, steps: list) -> tuple[float, str]:
    tool_steps = [s for s in steps if s.get("tool")]
    score = 0.2
    if tool_steps:
        score += 0.4
    faulted = any(isinstance(s.get("result"), dict) and str(s["result"].get("status") or "ok").lower()
                  not in _OK for s in tool_steps)
    if len(tool_steps) >= 2 or faulted:
        score += 0.2
    if isinstance(prompt, str) and len(prompt.split()) >= 20:
        score += 0.2
    score = min(1.0, round(score, 3))
    return score, ("" if score >= 0.5 else "a bare exchange: no tool call and a short prompt.")


def _structure(row: dict, steps_raw) -> tuple[float, str]:
    problems = []
    if not isinstance(row.get("prompt"), str) or not row["prompt"].strip():
        problems.append("no prompt")
    if not isinstance(row.get("final_text"), str) or not row["final_text"].strip():
        problems.append("an empty final reply")
    if not isinstance(steps_raw, list):
        problems.append("steps that are not a list")
    else:
        bad = sum(1 for s in steps_raw if not isinstance(s, dict) or (
            s.get("tool") and (not isinstance(s.get("arguments", {}), dict) or "result" not in s)))
        if bad:
            problems.append(f"{bad} malformed step(s)")
    if row.get("finish_reason") in ("length", "error"):
        problems.append(f"finish_reason {row['finish_reason']}")
    score = max(0.0, 1.0 - 0.25 * len(problems)) if len(problems) < 3 else 0.0
    return score, ("" if not problems else "the row has " + ", ".join(problems) + ".")


def quality_of(row: dict) -> tuple[float, str, dict]:
    """``(quality, quality_reason, quality_scores)`` for one row (read-only)."""
    steps_raw = row.get("steps")
    steps = [s for s in steps_raw if isinstance(s, dict)] if isinstance(steps_raw, list) else []
    leak = find_leak(row) if row.get("privileged") else None
    parts = {
        "opener": _opener(row.get("prompt")),
        "ping_pong": _ping_pong(steps),
        "leak": (0.0, f"the reply quotes its privileged {leak['field']} ('{leak['quote']}').") if leak
        else (1.0, ""),
        "complexity": _complexity(row.get("prompt"), steps),
        "structure": _structure(row, steps_raw),
    }
    scores = {name: round(parts[name][0], 3) for name in SCORES}
    quality = sum(scores.values()) / len(SCORES)
    if scores["leak"] == 0.0 or scores["structure"] == 0.0:
        quality = min(quality, 0.2)
    weakest = min(SCORES, key=lambda name: (scores[name], SCORES.index(name)))
    reason = "ok" if scores[weakest] >= 0.5 else f"{weakest}: {parts[weakest][1]}"
    return round(quality, 3), reason, scores


def rank(rows, min_quality: float | None = None) -> dict:
    """Score every row in place (``quality``, ``quality_reason``, ``quality_scores``); return the
    summary described in the module docstring. ``reward`` is left as it was."""
    floor = DEFAULT_MIN_QUALITY if min_quality is None else min_quality
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0.0 <= floor <= 1.0:
        raise ValueError(f"rank(min_quality=...) is a quality floor between 0 and 1; got {min_quality!r}")
    rows = [r for r in rows if isinstance(r, dict)]
    values, fails = [], {name: 0 for name in SCORES}
    buckets = {name: 0 for name in _BUCKETS}
    for row in rows:
        quality, reason, scores = quality_of(row)
        row["quality"], row["quality_reason"], row["quality_scores"] = quality, reason, scores
        values.append(quality)
        buckets[_BUCKETS[min(4, int(math.floor(quality * 5 + 1e-9)))]] += 1
        for name in SCORES:
            fails[name] += scores[name] < 0.5
    n = len(rows)
    order = sorted(range(n), key=lambda i: (-values[i], i))[:5]
    return {
        "n": n,
        "mean": round(sum(values) / n, 4) if n else None,
        "median": round(statistics.median(values), 4) if n else None,
        "min": min(values) if n else None,
        "max": max(values) if n else None,
        "distribution": buckets,
        "fail_rates": {name: round(fails[name] / n, 4) if n else 0.0 for name in SCORES},
        "n_pass": sum(1 for v in values if v >= floor),
        "min_quality": floor,
        "best": [{"index": i, "scenario_id": rows[i].get("scenario_id"),
                  "prompt": str(rows[i].get("prompt") or "")[:80], "quality": values[i]} for i in order],
    }
