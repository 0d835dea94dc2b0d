"""A row's identity on disk: ``row_key(row) = (scenario_id, prompt_sha, rollout_index, eval_run)``.

Plain Python (no pyarrow), so the planner can test prompts against the keys of a checkpoint.
"""
from __future__ import annotations

import hashlib

from .strict_json import clean_str

__all__ = ["row_key", "prompt_sha"]


def prompt_sha(prompt: str) -> str:
    """The prompt part of ``row_key``: 16 hex digits of the prompt's SHA-256 (UTF-8; a lone
    surrogate counts as U+FFFD, the character the strict JSON writer stores in its place, so a
    row keeps its key through a round trip to disk)."""
    return hashlib.sha256(clean_str(prompt).encode("utf-8")).hexdigest()[:16]


def row_key(row: dict) -> tuple:
    """The on-disk identity of a row: ``(scenario_id, prompt_sha, rollout_index, eval_run)``.

    Missing fields fall back to ``""`` / 0, so foreign rows still get a stable key. Text is
    taken as the strict JSON writer stores it (a lone surrogate as U+FFFD).
    """
    prompt = row.get("prompt")
    if not isinstance(prompt, str):
        prompt = "" if prompt is None else str(prompt)
    lineage = row.get("lineage")
    eval_run = lineage.get("eval_run", 0) if isinstance(lineage, dict) else 0
    return (
        clean_str(str(row.get("scenario_id") or "")),
        prompt_sha(prompt),
        row.get("rollout_index", 0) or 0,
        eval_run or 0,
    )
