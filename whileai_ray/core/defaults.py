"""Defaults that more than one layer reads, defined once.

They sit in the bottom layer because the readers span the stack: the model player and the
argument models both need the sampling defaults, the planner and the report both count
re-roll reasons, the row builder, the seeded agent and the report all ask "did this tool call
succeed". ``config/`` exposes them as the documented ``simulate()`` defaults; nothing else
spells the numbers out.
"""
from __future__ import annotations

__all__ = ["TEMPERATURE", "MAX_TOKENS", "REROLL_REASONS", "POISON_REASONS", "LOST_REASONS", "POISON_TRIES", "TIMED_OUT",
           "TOOL_OK_STATUSES", "JUDGE_FLOORS", "JUDGE_PAYLOAD_CHARS", "JUDGE_MAX_TOKENS"]

# Sampling of a model-backed agent when the caller sets none (the reference's values).
TEMPERATURE = 0.8
MAX_TOKENS = 768

# Why a unit is re-rolled (and, once its re-rolls are spent, lost): planner counters and report keys.
REROLL_REASONS = ("agent_error", "empty_reply", "tool_markup")
# Why a unit could not be played at all (runtime/driver/chunk_retry.py): its worker process died with it, its
# row could not be stored, or building the row raised. Played at most POISON_TRIES times, then lost.
POISON_REASONS = ("worker_crashed", "unserializable_result", "rollout_failed")
# An agent call cut at timeout= (an agent error that was a call timeout): re-rolled, then lost, under its own name.
TIMED_OUT = "timed_out"
LOST_REASONS = REROLL_REASONS + (TIMED_OUT,) + POISON_REASONS
POISON_TRIES = 2

# Tool result statuses that mean the call did what was asked (mock world and execute= alike).
TOOL_OK_STATUSES = frozenset(("ok", "created", "success", "done", "updated", "deleted"))

# A judge is trusted when the Wilson lower bound of its agreement with gold labels is >= the
# first floor and Cohen's kappa >= the second.
JUDGE_FLOORS = (0.8, 0.6)

# What an LLM judge reads of a row (characters) and may answer (tokens).
JUDGE_PAYLOAD_CHARS = 8000
JUDGE_MAX_TOKENS = 120
