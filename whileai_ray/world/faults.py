"""Scheduled tool faults: the world answers with a timeout, garbage, stale data or a denial.

A *fault plan* travels with a work unit: ``{"*": {"mode": "timeout", "rate": 1.0}}`` applies to
every tool, ``{"lookup_order": {"mode": "stale"}}`` to one. Faults are checked FIRST on every
call, before ``execute=`` or the mock, so a caller's real world is faulted the same way.
Whether a call faults is a keyed draw of (run seed, scenario, rollout, tool, call index).
"""
from __future__ import annotations

from ..core.rng import draw
from ..core.tool_outcome import classify_tool_answer
from .options import CONDITION_MODES, WorldOptions

__all__ = ["is_fault_parent", "FAULT_STATUSES", "FAULT_MODES", "ARGUMENT_FAULT", "normalize_mode", "validate_fault_plan", "plan_entry", "scheduled_fault",
           "fault_answer"]

FAULT_MODES = ("timeout", "malformed", "stale", "permission_denied")
# A situation that aims at bad arguments: the world adds no fault of its own, it refuses the call
# (``validation.py``); the call log names this mode only when the call was in fact refused.
ARGUMENT_FAULT = "invalid_arguments"


def normalize_mode(mode, opts: WorldOptions | None = None) -> str:
    """A fault mode, accepting grid tool_condition names too (``stale_result`` -> ``stale``)."""
    modes = opts.condition_modes if opts is not None else CONDITION_MODES
    mode = modes.get(mode, mode) if isinstance(mode, str) else mode
    if mode == ARGUMENT_FAULT:
        return mode
    if mode not in FAULT_MODES:
        raise ValueError(f"unknown fault mode {mode!r}; valid modes: {', '.join(FAULT_MODES)} "
                         f"(or tool conditions {', '.join(modes)})")
    return mode


def plan_entry(plan: dict | None, tool: str, opts: WorldOptions | None = None) -> tuple[str, float] | None:
    """(mode, rate) the plan sets for ``tool`` (its own entry, else ``"*"``), or None."""
    if not plan:
        return None
    entry = plan.get(tool)
    if entry is None:
        entry = plan.get("*")
    if entry is None or entry is False:
        return None
    default_mode = opts.default_fault_mode if opts is not None else "timeout"
    default_rate = opts.default_fault_rate if opts is not None else 1.0
    if isinstance(entry, str):
        return normalize_mode(entry, opts), default_rate
    if entry is True:
        return normalize_mode(default_mode, opts), default_rate
    if not isinstance(entry, dict):
        raise ValueError(f"fault plan entry for {tool!r} must be a dict like "
                         f"{{'mode': 'timeout', 'rate': 1.0}}; got {entry!r}")
    rate = entry.get("rate", default_rate)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)):
        raise ValueError(f"fault plan rate for {tool!r} must be a number; got {rate!r}")
    return normalize_mode(entry.get("mode", default_mode), opts), float(rate)


def validate_fault_plan(plan, opts: WorldOptions | None = None) -> dict | None:
    """Check a plan up front (before any rollout); returns it unchanged. ValueError names the problem."""
    if plan is None:
        return None
    if not isinstance(plan, dict):
        raise ValueError(f"a fault plan must be a dict tool-or-'*' -> {{'mode', 'rate'}}; got {plan!r}")
    for tool in plan:
        plan_entry(plan, tool, opts)
    return plan


def scheduled_fault(ctx, tool: str, call_index: int, opts: WorldOptions | None = None) -> str | None:
    """The fault mode that answers this call, or None. No plan (or no context) means no fault."""
    if ctx is None:
        return None
    entry = plan_entry(ctx.faults, tool, opts)
    if entry is None:
        return None
    mode, rate = entry
    if rate >= 1.0:
        return mode
    if rate <= 0.0:
        return None
    u = draw(ctx.seed or 0, "fault", ctx.scenario_id, ctx.rollout_index, tool, call_index)
    return mode if u < rate else None


def fault_answer(mode: str, tool: str, arguments, ctx, options: WorldOptions | None = None,
                 base: dict | None = None) -> dict:
    """What the world returns for a fired fault.

    ``stale`` needs the normal answer (``base``, a dict from the mock or execute=) and marks it
    ``"stale": True, "as_of": ...``; without a base it returns an ok record echoing the arguments.
    """
    opts = options or WorldOptions()
    if mode == "timeout":
        return {"status": "timeout", "error": "request timed out"}
    if mode == "malformed":
        return {"status": "ok", "data": opts.malformed_payload}
    if mode == "permission_denied":
        return {"status": "permission_denied"}
    if mode == "stale":
        if base is None:
            base = {"status": "ok", "data": dict(arguments) if isinstance(arguments, dict) else arguments}
        out = dict(base)
        out["stale"] = True
        out["as_of"] = opts.stale_as_of
        return out
    raise ValueError(f"unknown fault mode {mode!r}; valid modes: {', '.join(FAULT_MODES)}")


# what the mock world answers when it injects a fault (a failure the search may mutate from)
FAULT_STATUSES = {"error", "timeout", "not_found", "permission_denied", "denied", "malformed"}


def is_fault_parent(row: dict) -> bool:
    """Did the world fault in this rollout (a failure to mutate from)? The mock world's statuses,
    or an answer of the user's own tools (``execute=``) in a form real logs write errors in:
    ``Error: ...`` text, ``{"error": ...}``, an HTTP status (``core/tool_outcome.py``)."""
    if row.get("faults"):
        return True
    for step in row.get("steps") or ():
        res = step.get("result") if isinstance(step, dict) else None
        if isinstance(res, dict) and isinstance(res.get("status"), str):      # the mock world's own words
            if res["status"] in FAULT_STATUSES or res["status"] == "invalid_arguments":
                return True
        elif res is not None and classify_tool_answer(res).fault:
            return True
    return False
