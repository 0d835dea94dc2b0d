"""The rollout context: what the world and the agent may know about the rollout being played.

Before every rollout the player builds a :class:`RolloutContext` and activates it with
``with activate(ctx): ...``. While it is active, ``current_rollout`` (``world/current.py``, also
exported as ``wai.current_rollout``) reads from it, so an ``execute=`` callback or an agent can ask
``current_rollout.prompt``, ``.rollout_index``, ``.seed``, ``.faults``, ``.world_state``... Outside
a rollout every such attribute is ``None``.

The active context is held in a ``contextvars.ContextVar``: each thread (and each asyncio task)
sees only the rollout it is playing, never another thread's.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["RolloutContext", "activate", "active_context", "privileged_block", "world_key"]


@dataclass(slots=True)
class RolloutContext:
    prompt: str | None = None
    rollout_index: int | None = None
    seed: int | None = None
    scenario_id: str | None = None
    faults: dict | None = None            # fault plan, e.g. {"*": {"mode": "timeout", "rate": 1.0}}
    world_state: str | None = None
    tools: list = field(default_factory=list)
    privileged: dict = field(default_factory=dict)   # {"hidden_state": {...}, "reference": ...}
    execute: Callable | None = None      # the caller's world: (tool, arguments) -> result
    world_options: Any = None            # dict from advanced["world"] (or a WorldOptions)
    unit: Any = None                     # the Unit being played, when there is one
    calls: list = field(default_factory=list)      # {"tool","status","fault"} per world call
    records: dict = field(default_factory=dict)    # per-rollout memory of the mock world
    world: Any = None                    # the World that answers current_rollout.call (built lazily)
    in_execute: bool = False             # True while execute= runs (its own world calls use the mock)


_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("whileai_ray_rollout", default=None)


def active_context() -> RolloutContext | None:
    """The context of the rollout this thread/task is playing, or None."""
    return _ACTIVE.get()


@contextmanager
def activate(ctx: RolloutContext):
    """Make ``ctx`` the current rollout for the body of the ``with``; restore the previous one after."""
    if not isinstance(ctx, RolloutContext):
        raise TypeError(f"activate(ctx) needs a RolloutContext; got {type(ctx).__name__}")
    token = _ACTIVE.set(ctx)
    try:
        yield ctx
    finally:
        _ACTIVE.reset(token)


def world_key(ctx) -> str | None:
    """The scenario whose world (``entities.py``: the records it holds) a rollout plays: its own,
    or for a failure mutation its parent's (``extra["world_of"]``: the same world, new words)."""
    if ctx is None:
        return None
    extra = getattr(getattr(ctx.unit, "situation", None), "extra", None)
    if isinstance(extra, dict) and isinstance(extra.get("world_of"), str):
        return extra["world_of"]
    return ctx.scenario_id


_OPEN_STATES = frozenset(("entity exists", "unknown", "unspecified"))


def privileged_block(situation, faults: dict | None = None) -> dict:
    """What the grader may see and the agent must not (reference 1.4).

    ``{"hidden_state": {world_state?, tool_condition?, broken_arguments?, faults?, history?},
    "reference": text}``; each part omitted when empty (world_state when exists/unknown/unspecified,
    tool_condition when success, history when fresh; broken_arguments ``{"keyword", "path"}`` only
    for an ask whose arguments break the tool's schema on purpose). ``{}`` when there is nothing hidden.
    """
    dims = situation.dims or {}
    hidden = {}
    ws = situation.world_state or dims.get("world_state")
    if ws and ws not in _OPEN_STATES:
        hidden["world_state"] = ws
    cond = dims.get("tool_condition")
    if cond and cond != "success":
        hidden["tool_condition"] = cond
    broken = (situation.extra or {}).get("broken") if isinstance(situation.extra, dict) else None
    if broken:                           # which schema rule the ask's arguments break, on purpose
        hidden["broken_arguments"] = dict(broken)
    if faults:
        hidden["faults"] = faults
    history = dims.get("history")
    if history and history != "fresh":
        hidden["history"] = history
    out = {}
    if hidden:
        out["hidden_state"] = hidden
    if situation.reference:
        out["reference"] = situation.reference
    replay = replay_block(situation)
    if replay:
        out["replay"] = replay
    return out


REPLAY_EXTRA = ("call", "broken", "world_of")    # Situation.extra keys that decide how a unit plays


def replay_block(situation) -> dict:
    """What a ``tasks=`` / ``runs=`` replay needs beyond the prompt to play the same ask: the ids
    the prompt names and the writer's planned call (``situations/call_plan.py``), the rule its
    arguments break on purpose, whose world it plays. All of it the prompt already says, so the
    leak check passes it over (``score/leak.py``); ``search/tasks.py`` reads it back."""
    extra = situation.extra if isinstance(situation.extra, dict) else {}
    out = {k: extra[k] for k in REPLAY_EXTRA if extra.get(k)}
    if situation.ref_ids:
        out["ref_ids"] = list(situation.ref_ids)
    return out
