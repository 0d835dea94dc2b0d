"""Before a run starts: can the caller's callables travel to the actors that run them?

``agent=``, ``grader=`` and ``execute=`` are pickled and sent to rollout (and judge) actors. On a
cluster of several nodes, or a Ray reached through ``RAY_ADDRESS``, they must travel: a callable
that closes over a client with a lock or a socket cannot. Ray would fail at the first actor with
a report tens of thousands of characters long; :func:`check_callables_travel` fails first, before
the Driver starts (no checkpoint opened, no situation written, no rollout played), with the
short message of ``agents/travel.py``: which object, and the two fixes.

:func:`callables_must_travel` says whether the run's callables have to leave this process for
another machine (several alive nodes, or an address that is not a local Ray). On a one-node local
Ray they still go to actor processes today, so the check runs there too; the message names the
reason it applies in each case.
"""
from __future__ import annotations

import os

import ray

from ..agents.travel import travel_message, unpicklable_path

__all__ = ["callables_must_travel", "check_callables_travel"]

_ROLES = ("agent", "grader", "execute")


def _alive_nodes() -> int:
    try:
        return sum(1 for n in ray.nodes() if n.get("Alive"))
    except Exception:   # not connected: the caller starts Ray first
        return 1


def _remote_address() -> str | None:
    address = os.environ.get("RAY_ADDRESS") or ""
    if address and address not in ("local", "auto"):
        return address
    try:
        from ray.util.client import ray as client_ray
        if client_ray.is_connected():
            return address or "a Ray client connection"
    except Exception:
        pass
    return None


def callables_must_travel() -> bool:
    """True when callables leave this machine: several alive nodes, or Ray at a remote address."""
    return _alive_nodes() > 1 or _remote_address() is not None


def _where() -> str:
    nodes = _alive_nodes()
    if nodes > 1:
        return f"this Ray cluster has {nodes} nodes, and the actors run on them"
    address = _remote_address()
    if address:
        return f"Ray runs at RAY_ADDRESS={address}, in other processes"
    return "they run in other processes, even on this one-node Ray"


def check_callables_travel(job: dict) -> None:
    """TypeError (under 15 lines) when a callable of ``job`` does not pickle; None otherwise."""
    from ray import cloudpickle
    for role in _ROLES:
        obj = job.get(role)
        if obj is None or isinstance(obj, str):
            continue
        found = unpicklable_path(obj, cloudpickle.dumps, role)
        if found is not None:
            steps, error = found
            raise TypeError(travel_message(role, steps, error, _where()))
