"""When a lane's actor is gone, and why: every error by which Ray says so (no unit's fault).

An actor is gone in more ways than ``RayActorError`` says: Ray's memory monitor killing it raises
``OutOfMemoryError`` on that call *and every later one* (a lane never replaced failed ~250 chunks
a second for good), a lost node ``NodeDiedError``; :func:`lane_is_dead` knows them all and
:func:`death_cause` names why (``pools/actor_pool.py`` replaces the lane, ``driver/chunk_retry.py``
decides what its units do next).
"""
from __future__ import annotations

import ray

from ..messages import NODE_LOST, WORKER_CRASHED

__all__ = ["lane_is_dead", "death_cause", "LANE_DEAD"]

_X = ray.exceptions
# Every error by which Ray says a call's actor is gone (ray/exceptions.py, Ray 2.60): ActorDiedError
# (ray.kill, os._exit, a segfault, its node gone) and ActorUnavailableError are RayActorErrors;
# the memory monitor's kill is an OutOfMemoryError, a worker that died mid-call a
# WorkerCrashedError, a node NodeDiedError or LocalRayletDiedError, a result that died with its
# node an ObjectLostError (OwnerDiedError, ObjectReconstructionFailedError, ...).
LANE_DEAD = (_X.RayActorError, _X.OutOfMemoryError, _X.WorkerCrashedError, _X.NodeDiedError,
             _X.LocalRayletDiedError, _X.ObjectLostError)
_NODE_GONE = (_X.NodeDiedError, _X.LocalRayletDiedError)


def lane_is_dead(error: BaseException) -> bool:
    """Whether ``error`` (what awaiting a chunk raised) says the lane's actor is gone, so the lane needs a
    fresh one; False when the actor is alive and the chunk raised in our code (a ``RayTaskError``)."""
    return isinstance(error, LANE_DEAD) and not isinstance(error, _X.RayTaskError)


def death_cause(error: BaseException, node_alive: bool = True) -> str | None:
    """Why a lane died, as ``chunk_retry`` names it, or None when it did not (``lane_is_dead``).

    ``node_lost`` when its node went (the units are sent again as they are); ``worker_crashed``
    otherwise: the actor's process died under a unit (an OOM kill, a segfault, ``os._exit``,
    ``ray.kill``), whose units are then tried alone until the one that kills is found."""
    if not lane_is_dead(error):
        return None
    if (isinstance(error, _NODE_GONE) or not node_alive or getattr(error, "preempted", False)
            or "node has died" in str(error)):
        return NODE_LOST
    return WORKER_CRASHED
