"""Play one work unit against a Python callable agent and return its row.

The player builds the rollout context (fault plan, world state, privileged block, execute=),
activates it in the calling thread so ``current_rollout`` and the mock world see it, calls the
agent with the prompt, turns whatever came back (or was raised) into a trajectory, and builds
the internal row. For a sync agent timeouts are the caller's job: it runs this in a worker thread
and, when the clock runs out, builds the row from ``agent_error(TimeoutError(...), timed_out=True)``
itself.

An ``async def`` agent is played by :func:`play_async_unit` on the running event loop (a rollout
lane's, whether an actor or the caller's own pool): the context is activated in the rollout's own
asyncio task (a ContextVar, so concurrent rollouts on one loop each see their own
``current_rollout``), and ``timeout`` cancels the coroutine's task (never waiting for it to end).
"""
from __future__ import annotations

import asyncio
import inspect

from .row_builder import build_row
from ..world.context import RolloutContext, activate, privileged_block
from ..world.faults import validate_fault_plan
from .callable import agent_error, normalize_trajectory

__all__ = ["context_for", "call_agent", "call_async_agent", "play_callable_unit", "play_async_unit"]


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

    A callable that is not ``async def`` but returns an awaitable anyway is run to completion on
    a private event loop in this thread (``async def`` agents go to :func:`play_async_unit`).
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


async def call_async_agent(agent, message, timeout: float | None = None) -> dict:
    """Await ``agent(message)`` (at most ``timeout`` seconds) and normalize, like :func:`call_agent`.

    Past ``timeout`` the agent's task is cancelled and *not* waited for: a coroutine that swallows
    the cancellation (``except BaseException: await ...``) would otherwise hold its slot for good,
    as ``asyncio.wait_for`` waits for the cancelled task to end."""
    try:
        result = agent(message)
        if inspect.isawaitable(result):
            if not timeout:
                result = await result
            else:
                task = asyncio.ensure_future(result)
                try:
                    done, _ = await asyncio.wait({task}, timeout=timeout)
                except asyncio.CancelledError:     # the chunk was cancelled: so is the agent's call
                    task.cancel()
                    raise
                if not done:
                    task.cancel()
                    task.add_done_callback(_quiet)
                    return agent_error(TimeoutError(f"agent call took longer than timeout={timeout:g}s"),
                                       timed_out=True)
                result = task.result()
    except (Exception, SystemExit) as exc:  # an agent's failure is a row, never a crash
        return agent_error(exc)
    return normalize_trajectory(result)


def _quiet(task) -> None:
    """A cancelled agent task that ended with an error of its own: read it, so asyncio does not log it."""
    if not task.cancelled():
        task.exception()


async def play_async_unit(agent, unit, meta, execute=None, timeout: float | None = None) -> dict:
    """Play ``unit`` against the ``async def`` ``agent`` in the running asyncio task; the internal row.

    Call it from a task of its own per rollout (``asyncio.gather`` makes one per coroutine): the
    context set here is that task's, and the ``wait_for`` task inherits it."""
    ctx = context_for(unit, meta, execute)
    with activate(ctx):
        traj = await call_async_agent(agent, unit.prompt, timeout)
    return build_row(unit, traj, meta, ctx)
