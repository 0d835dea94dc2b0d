"""``current_rollout``: the read-only view of the rollout this thread or task is playing.

A module of its own because it sits above both halves of the world: it reads the active
:class:`~whileai_ray.world.context.RolloutContext` and, for ``current_rollout.call(...)``, builds
the mock :class:`~whileai_ray.world.mock.World` (which itself reads the context).
"""
from __future__ import annotations

from .context import RolloutContext, active_context
from .mock import World

__all__ = ["current_rollout"]


_READABLE = frozenset(RolloutContext.__slots__)


class _CurrentRollout:
    """Read-only view of the active rollout. ``current_rollout.prompt`` etc.; None outside a rollout."""

    __slots__ = ()

    def __getattr__(self, name: str):
        if name not in _READABLE:
            raise AttributeError(f"current_rollout has no attribute {name!r}; "
                                 f"readable: {', '.join(sorted(_READABLE))}")
        ctx = active_context()
        return None if ctx is None else getattr(ctx, name)

    def __setattr__(self, name, value):
        raise AttributeError("current_rollout is read-only; the player sets it before each rollout")

    @property
    def active(self) -> bool:
        """True inside a rollout."""
        return active_context() is not None

    def get(self) -> RolloutContext | None:
        return active_context()

    def call(self, tool: str, arguments=None) -> dict:
        """The world's answer to ``tool(arguments)`` for this rollout (faults, world state, execute=)."""
        ctx = active_context()
        if ctx is None:
            raise RuntimeError("current_rollout.call() works only inside a rollout; outside one use "
                               "wai.world(tools).call(tool, arguments)")
        if ctx.world is None:
            ctx.world = World(ctx.tools, seed=0, options=ctx.world_options)
        return ctx.world.call(tool, arguments)

    def __repr__(self) -> str:
        ctx = active_context()
        if ctx is None:
            return "current_rollout(<no rollout active>)"
        return (f"current_rollout(scenario_id={ctx.scenario_id!r}, rollout_index={ctx.rollout_index!r}, "
                f"seed={ctx.seed!r})")

    def __reduce__(self):
        # Pickles (cloudpickle too) as a reference to the singleton, never by value.
        return (_current_rollout_singleton, ())


def _current_rollout_singleton() -> "_CurrentRollout":
    return current_rollout


current_rollout = _CurrentRollout()
