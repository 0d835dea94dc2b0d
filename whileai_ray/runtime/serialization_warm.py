"""Ray's serialization context, paid for before a run waits on it (issue 32, the cold start).

The first Ray call a process makes (creating an actor, sending a chunk, taking one) builds Ray's
serialization context, which imports pydantic (for Ray's pydantic serializers) and Ray's Arrow
serializers: 50-150 ms of CPU the first time, once in each process on the way to a run's first
row: the caller's (creating the Driver), the Driver's (creating the rollout actors) and each
rollout actor's (its first chunk). Measured on a 2-core machine (5 cold 1,000-row runs each,
alternating, bytecode cached on both sides), the Driver came up ~0.1 s sooner with both done ahead
(medians 0.32 -> 0.22 s after the call) and the first row ~0.08 s sooner.

Importing this module does those imports, so a local Ray's idle workers do them while nothing
waits (``cluster.PRELOAD`` names it); :func:`warm_serialization` builds the caller's context once
Ray is up (``cluster.ensure_ray``). Both only move work earlier: a Ray version whose modules are
named otherwise loses the head start, nothing else.
"""
from __future__ import annotations

import importlib

import ray

__all__ = ["warm_serialization", "SERIALIZER_MODULES"]

# what ray.util.serialization_addons.apply imports when a context is made (Ray 2.60): its modules,
# and what their functions import when called (pydantic's v1 field type for the compat serializer,
# starlette's State, Arrow and its JSON reader for the datasets serializers): ~40 ms of a cold
# worker's first call otherwise, on the way to a run's first row
SERIALIZER_MODULES = ("ray._common.pydantic_compat", "ray._private.arrow_serialization",
                      "pydantic.fields", "pydantic.v1.fields", "starlette.datastructures",
                      "pyarrow", "pyarrow.json")


def _import_serializers() -> None:
    for name in SERIALIZER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:          # another Ray's layout: the first call imports what it needs itself
            pass


def warm_serialization() -> None:
    """Build this process's serialization context now (Ray is up), not on the run's first call."""
    try:
        ray._private.worker.global_worker.get_serialization_context()
    except Exception:              # a Ray without it (or not connected): the first call builds it
        pass


_import_serializers()
