"""One unit against a model backend, end to end (async, no Ray): context, simulated user,
multi-turn play, and the row. The rollout actor awaits this on its event loop; what it plays
with is a ``ModelSettings`` (``model_settings.py``)."""
from __future__ import annotations

from ..world.context import activate
from ..world.mock import World
from .callable import agent_error, unusable_reason
from .model_conversation import play_model_unit
from .model_settings import ModelSettings
from .play_callable import context_for
from .response_cache import unit_tally
from .row_builder import build_row
from .user_sim import USER_TEMPERATURE, SimulatedUser


async def play_model_row(client, user_client, settings: ModelSettings, unit, meta, execute=None) -> dict:
    ctx = context_for(unit, meta, execute)
    world = World(meta.tools, seed=meta.seed, options=meta.world_options or None)
    user = SimulatedUser(settings.user_backend, settings.patience, seed=unit.seed, unit_key=unit.draw_key(),
                         opening=unit.prompt, client=user_client if settings.user_backend else None,
                         temperature=getattr(settings, "user_temperature", USER_TEMPERATURE))
    with activate(ctx), unit_tally() as cache_counts:
        try:
            traj = await play_model_unit(
                client, settings.backend, unit, meta, world_call=world.call, max_turns=settings.max_turns,
                avg_turns=settings.avg_turns, temperature=settings.temperature, max_tokens=settings.max_tokens,
                timeout=settings.timeout, logprobs=settings.logprobs, user=user,
                tool_choice=settings.tool_choice, min_user_turns=settings.min_user_turns)
        except Exception as exc:  # an HTTP error, a timeout, a malformed body: an agent error, re-rolled
            traj = agent_error(exc, timed_out=isinstance(exc, TimeoutError))
    if user.model or settings.user_backend is not None:
        traj.setdefault("user_model", user.model)
    row = build_row(unit, traj, meta, ctx)
    row["_unusable"] = unusable_reason(traj)
    for key in ("ended_on_question", "user_turns"):
        if key in traj:
            row["_" + key] = traj[key]
    row["_user_think"] = dict(user.think)
    if cache_counts:                      # the response cache's hits and misses in this unit, by role
        row["_cache"] = cache_counts
    return row
