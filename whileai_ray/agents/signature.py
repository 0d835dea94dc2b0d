"""Behaviour signatures: a 12-hex fingerprint of *what the agent did*, not of its exact words.

Two rollouts with the same signature called the same tools, with arguments of the same
provenance, got the same result statuses, refused (or not) alike and wrote replies of a
similar length. The search counts new signatures as yield, and repeat policies use them as
a label when no grader scored a rollout (reference 1.1, 4.2).
"""
from __future__ import annotations

import json
import re

from ..core.rng import short_hash
from ..world.records import ID_RE

__all__ = ["behavior_signature", "argument_provenance", "REFUSAL_RE"]

REFUSAL_RE = re.compile(r"\b(?:can't|can’t|cannot|can not|unable|won't|won’t)\b", re.IGNORECASE)
_PLACEHOLDER_RE = re.compile(r"^\s*(?:|the record|<[^<>]*>|\{[^{}]*\}|unknown|n/?a|none|null|tbd|\?|\.\.\.)\s*$",
                             re.IGNORECASE)


def argument_provenance(value, prompt: str | None = None, seen: str = "") -> str:
    """Where an argument value came from: prompt / prior_result / placeholder / id / number / literal."""
    if isinstance(value, bool) or value is None:
        return "literal"
    if isinstance(value, (int, float)):
        text = str(value)
        if prompt and text in prompt:
            return "prompt"
        return "prior_result" if seen and text in seen else "number"
    if not isinstance(value, str):
        return type(value).__name__
    if _PLACEHOLDER_RE.match(value):
        return "placeholder"
    if prompt and value in prompt:
        return "prompt"
    if seen and value in seen:
        return "prior_result"
    return "id" if ID_RE.fullmatch(value.strip()) else "literal"


def _status(result) -> str:
    if not isinstance(result, dict):
        return "text" if result is not None else "none"
    status = str(result.get("status", "ok"))
    if result.get("stale"):
        return status + "+stale"
    data = result.get("data")
    if isinstance(data, str) and "garbled" in data:
        return status + "+malformed"
    return status


def behavior_signature(steps, final_text: str, prompt: str | None = None) -> str:
    """12 hex chars from (per step: tool, argument provenance, result status), refusal, length bucket.

    ``prompt`` is optional; with it, arguments copied from the user's words read ``prompt``.
    """
    parts = []
    seen = ""
    steps = steps or ()
    last = len(steps) - 1
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            continue
        if "tool" in step:
            args = step.get("arguments")
            if isinstance(args, dict):
                prov = [[k, argument_provenance(args[k], prompt, seen)] for k in sorted(args, key=str)]
            else:
                prov = [["_", argument_provenance(args, prompt, seen)]]
            result = step.get("result")
            parts.append(["tool", step.get("tool"), prov, _status(result)])
            if result is not None and i < last:   # only later steps can reuse it
                seen += json.dumps(result, default=str) if not isinstance(result, str) else result
        elif "user" in step:
            parts.append(["user"])
        elif "text" in step:
            parts.append(["text"])
    text = final_text or ""
    refusal = bool(REFUSAL_RE.search(text))
    bucket = min(len(text.split()) // 12, 12)
    return short_hash("behavior_signature", parts, refusal, bucket, n=12)
