"""Rows: the internal trajectory of one rollout, built from what the agent played.

``build_row`` assembles every key of reference 1.1 in its order, the situational keys of 1.2
when they apply, and internal keys (``privileged`` and ``_``-prefixed bookkeeping) that never
leave the process. The exported ``rows()`` form (``export_row``, ``conversation``) lives in
``core/rows.py``: every layer reads rows, only the players build them.

Every play path (a callable on an actor or in the caller's pool, an ``async def`` agent, a model
backend) ends here, so this is the one place a row's values take their normal form
(``core/row_values.py``): what the agent returned is made plain JSON data before anything is
derived from it, and the rest of the row after. A fresh row is then equal to the same row read
back from the checkpoint, and its ``usage`` is in the documented names (``core/usage.py``).
"""
from __future__ import annotations

import hashlib
from functools import lru_cache

from ..core.defaults import TOOL_OK_STATUSES as _SUCCESS
from ..core.row_values import json_value
from ..core.rows import conversation
from ..core.strict_json import REPAIRS_KEY
from ..core.usage import normal_usage
from ..world.context import privileged_block
from .callable import unusable_reason
from .signature import behavior_signature

__all__ = ["build_row", "policy_version"]

# Keys a model-backed agent may return that belong on the row as they are.
_PASS_THROUGH = ("usage", "user_model", "ended_by", "opener", "opening", "logprob", "n_tokens",
                 "token_logprobs", "steering")
_OPEN_STATES = frozenset(("unknown", "unspecified"))


@lru_cache(maxsize=256)
def _prompt_facts(system_prompt: str) -> tuple[str, str, int]:
    sha = hashlib.sha256(system_prompt.encode()).hexdigest()[:16]
    return sha, system_prompt[:120], len(system_prompt)


def policy_version(model_version: str, system_prompt: str) -> str:
    """``"<model_version>@<sha256(system prompt)[:16]>"``."""
    return f"{model_version}@{_prompt_facts(system_prompt or '')[0]}"


def _finish_reason(traj: dict, steps: list, final_text: str) -> str:
    given = traj.get("finish_reason")
    if given:
        return given
    if traj.get("error"):
        return "error"
    if any(isinstance(s, dict) and s.get("truncated") for s in steps):
        return "length"
    if steps and isinstance(steps[-1], dict) and "tool" in steps[-1] and not final_text.strip():
        return "tool"
    return "stop"


def _realized_dims(steps: list, ctx) -> dict:
    """For situations without a grid cell: what actually happened (reference 1.1)."""
    tool = next((s["tool"] for s in steps if isinstance(s, dict) and "tool" in s), None)
    condition = None
    calls = ctx.calls if ctx is not None and ctx.calls else None
    if calls:
        for c in calls:
            if c.get("fault"):
                condition = c["fault"]
                break
            if c.get("status") not in _SUCCESS:
                condition = c.get("status")
                break
    else:
        for s in steps:
            res = s.get("result") if isinstance(s, dict) and "tool" in s else None
            if isinstance(res, dict):
                st = res.get("status")
                if res.get("stale"):
                    condition = "stale"
                elif isinstance(res.get("data"), str) and "garbled" in res["data"]:
                    condition = "malformed"
                elif st not in _SUCCESS:
                    condition = st
                if condition:
                    break
    return {"tool": tool or "unrelated", "tool_condition": condition or "success", "origin": "realized"}


def _normal_traj(traj: dict) -> tuple[dict, dict]:
    """``(traj, repairs)``: what the agent returned in its normal form, ``usage`` in the documented
    names. A circular or too-deep value raises here, as the checkpoint's encoder would."""
    if traj.get("usage") is not None:
        traj = {**traj, "usage": normal_usage(traj["usage"])}
    return json_value(traj)


# Keys whose values come from the (already normal) trajectory: not walked a second time.
_FROM_TRAJ = frozenset(("messages", "steps", "final_text", "behavior_signature", "finish_reason", "tools_used",
                        "seeded") + _PASS_THROUGH)


def _normal_rest(row: dict, repairs: dict) -> dict:
    """The row with its other values (the situation's, ``sampling=``, tags) in normal form too,
    and the repairs made on the row's exported keys noted as ``json_repairs``."""
    for key, value in row.items():
        if key not in _FROM_TRAJ:
            new, fixed = json_value(value)
            if new is not value:
                row[key] = new
            repairs.update({f"{key}.{path}" if path != "." else key: what for path, what in fixed.items()})
    shown = {path: what for path, what in repairs.items()
             if path.split(".", 1)[0] in row and path[:1] != "_" and path.split(".", 1)[0] != "privileged"}
    if shown:
        row[REPAIRS_KEY] = shown
    return row


def build_row(unit, traj: dict, meta, ctx=None) -> dict:
    """The internal trajectory dict of one rollout (keys in reference 1.1 order, then 1.2, then internal)."""
    traj, repairs = _normal_traj(traj)
    s = unit.situation
    steps = traj.get("steps") or []
    final_text = traj.get("final_text") or ""
    sha, head, chars = _prompt_facts(meta.system_prompt or "")
    model_version = meta.model_version
    row = {
        "prompt": s.prompt,
        "messages": conversation({"prompt": s.prompt, "steps": steps, "final_text": final_text}),
        "steps": steps,
        "final_text": final_text,
        "scenario_id": s.scenario_id,
        "tier": s.tier,
        "ask_family": s.ask_family,
        "intent_known": s.intent_known,
        "tool_known": s.tool_known,
        "rollout_index": unit.rollout_index,
        "model_version": model_version,
        "policy_version": (f"{model_version}@{sha}" if not getattr(meta, "scaffold", "") else
                           policy_version(model_version, meta.agent_system_prompt())),
        "writer_model": s.writer_model,
        "schema_version": "1",
        "scenario_dimensions": dict(s.dims) if s.dims else _realized_dims(steps, ctx),
        "arm": s.arm,
        "behavior_signature": behavior_signature(steps, final_text, s.prompt),
        "lineage": {"system_prompt_sha": sha, "system_prompt_head": head, "system_prompt_chars": chars},
        "seed": meta.seed,
        "selection_reason": s.selection_reason,
        "finish_reason": _finish_reason(traj, steps, final_text),
        "tools_used": [st["tool"] for st in steps if isinstance(st, dict) and "tool" in st],
    }
    if "seeded" in traj and traj["seeded"] is not None:
        row["seeded"] = list(traj["seeded"])
    if s.world_state and s.world_state not in _OPEN_STATES:
        row["world_state"] = s.world_state
    if unit.faults:
        row["faults"] = unit.faults
    for k, v in s.tags.items():
        if k not in row and v is not None:
            row[k] = v
    stance = s.dims.get("stance") if s.dims else None
    if stance and stance != "ordinary" and "stance" not in row:
        row["stance"] = stance
    if s.parent_failure_id:
        row["parent_failure_id"] = s.parent_failure_id
    sampling = meta.sampling if meta.sampling is not None else traj.get("sampling")
    if sampling is not None:
        row["sampling"] = sampling
    for k in _PASS_THROUGH:
        if traj.get(k) is not None:
            row[k] = traj[k]
    row = _normal_rest(row, repairs)
    row["privileged"] = ctx.privileged if ctx is not None else privileged_block(s, unit.faults)
    row["_key"] = list(unit.key)
    row["_attempt"] = unit.attempt
    row["_unusable"] = unusable_reason(traj)
    row["_fault_fired"] = bool(ctx is not None and any(c.get("fault") for c in ctx.calls))
    row["_error"] = traj.get("error")
    if traj.get("timed_out"):
        row["_timed_out"] = True
    return row
