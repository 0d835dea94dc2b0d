"""The fingerprint of a run's rollout pool: whether the actors of an earlier run can play it.

A warm rollout actor (``pools/warm_rollout.py``) is renewed with the next run's arguments, so what it
cannot change is what it was *started* with and *where*: its process (the modules it imported),
its Ray options and its place in the pool. ``pool_key(spec, plan, dumps)`` hashes exactly that:

* the agent and ``execute=`` as they pickle (their code and their state: a changed agent, even
  one of the same class, is a different key) and the model endpoints of a model backend;
* the files of the modules they come from, with their modification times (an edited module
  gets fresh actors: a kept process would still run the old code);
* the actor options (``advanced={"ray": {...}}``: CPUs, GPUs, resources, strategy);
* the pool's shape and nodes (``PoolPlan``: actors, slots per actor, the nodes they may use) and
  the agent's form.

Equal keys: the actors are reused (``caller/warm_pools.py``), unless they hold resources
(``holds_resources``: CPUs, GPUs or custom resources reserved; those are stopped after their run). None: nothing to reuse (the caller's own
pool), or a callable that does not pickle here. No Ray here: ``dumps`` is passed in.
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Callable

__all__ = ["pool_key", "holds_resources"]


def holds_resources(spec) -> bool:
    """Whether ``spec``'s rollout actors reserve CPUs, GPUs or custom resources (``advanced={"ray":
    {...}}``): such a pool is not kept idle after its run (it would starve other work)."""
    opts = spec.actor_options or {}
    return bool(opts.get("num_cpus") or opts.get("num_gpus") or opts.get("resources"))


def _code_files(*objs) -> list[str]:
    """``path:mtime`` of the modules the callables come from: an edited file means fresh actors
    (an actor process keeps the module it imported)."""
    out = set()
    for obj in objs:
        if obj is None:
            continue
        for name in {getattr(obj, "__module__", None), getattr(type(obj), "__module__", None)}:
            path = getattr(sys.modules.get(name or ""), "__file__", None)
            if path:
                try:
                    out.add(f"{path}:{os.stat(path).st_mtime_ns}")
                except OSError:
                    pass
    return sorted(out)


def pool_key(spec, plan, dumps: Callable) -> str | None:
    """The fingerprint of the rollout pool ``spec`` (a JobSpec) needs under ``plan`` (a PoolPlan),
    or None when it has no actors to reuse (the caller's pool) or its callables do not pickle."""
    if plan.where != "actors":
        return None
    h = hashlib.sha256()

    def part(data: bytes) -> None:
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    try:
        part(repr((plan.actors, plan.per_actor, tuple(plan.nodes), spec.agent_form)).encode())
        part(dumps(sorted(spec.actor_options.items(), key=lambda kv: str(kv[0]))))
        part(dumps((spec.agent, spec.execute)))
        model = spec.model
        part(dumps((model.backend, model.user_backend) if model is not None else None))
    except Exception:
        return None
    for line in _code_files(spec.agent, spec.execute):
        part(line.encode())
    return h.hexdigest()[:24]
