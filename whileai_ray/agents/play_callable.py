"""Play one work unit against a Python callable agent and return its row.

The player builds the rollout context (fault plan, world state, privileged block, execute=),
activates it in the calling thread so ``current_rollout`` and the mock world see it, calls the
agent with the prompt, turns whatever came back (or was raised) into a trajectory, and builds
the internal row. Timeouts are the caller's job: it runs this in a worker thread and, when the
clock runs out, builds the row from ``agent_error(TimeoutError(...), timed_out=True)`` itself.
"""
from __future__ import annotations

import asyncio
import inspect

from .row_builder import build_row
from ..world.context import RolloutContext, activate, privileged_block
from ..world.faults import validate_fault_plan
from .callable import agent_error, normalize_trajectory

__all__ = ["context_for", "call_agent", "play_callable_unit"]


def context_for(unit, meta, execute=None) -> RolloutContext:
    """The RolloutContext of ``unit`` under the run ``meta`` (a fault plan is checked here, loudly)."""
    s = unit.situation
    validate_fault_plan(unit.faults)
    return RolloutContext(
        prompt=s.prompt,
        rollout_index=unit.rollout_index,
        seed=meta.seed,
        scenario_id=s.scenario_id,
        faults=unit.faults,
        world_state=s.world_state,
        tools=meta.tools,
        privileged=privileged_block(s, unit.faults),
        execute=execute,
        world_options=meta.world_options,
        unit=unit,
    )


def call_agent(agent, message) -> dict:
    """Call ``agent(message)`` and normalize; any exception becomes an agent-error trajectory.

    An ``async def`` agent is run to completion on a private event loop in this thread.
    """
    try:
        result = agent(message)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
    except (Exception, SystemExit) as exc:  # an agent's failure is a row, never a crash
        return agent_error(exc)
    return normalize_trajectory(result)


async def _await(awaitable):
    return await awaitable


def play_callable_unit(agent, unit, meta, execute=None) -> dict:
    """Play ``unit`` against the callable ``agent`` in this thread; return the internal row."""
    ctx = context_for(unit, meta, execute)
    with activate(ctx):
        traj = call_agent(agent, unit.prompt)
    return build_row(unit, traj, meta, ctx)
