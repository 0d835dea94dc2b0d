"""Warm starts: the Driver actor and rollout actors of a finished run serve the next run of
the same process (the caller's side; the Driver's side is ``driver/actor.py``).

A notebook runs many small simulations. Without this, each ``simulate()`` started a Driver actor
and then its rollout actors, a worker process apiece: a 1,000-row run of a 50 ms agent spent a
third of its wall time starting up, and a second run in the same process was no faster.

So a run that ends cleanly hands its Driver host back here (``checkin``), idle, and the next run
takes it (``checkout``). Whether the host's rollout actors can play the next run is decided by a
fingerprint of what a fresh actor would be started *with* and *where* (``pools/key.py``). Equal: the host renews its
actors with the run's arguments (``pools/warm_rollout.py``: a fresh copy of the agent, the run's id,
seed and metrics; nothing of the last run stays in them). Different: the caller starts new
rollout actors beside the host and the host stops its old ones.

Bounds: rollout actors that reserve resources (CPUs, GPUs, custom) are stopped after their run
(only the host waits); at most ``MAX_IDLE`` hosts wait (the most recent); one that idles ``IDLE_S`` seconds is
stopped; all end at interpreter exit, with this process's Ray (``_at_exit``). Every actor here is
owned by this process (never detached), so Ray also ends them with it, and a ``ray.shutdown()``
ends them at once (a host of another Ray session is simply forgotten). A run that fails, is interrupted, or stops
because its caller went quiet stops its host instead of handing it back.
"""
from __future__ import annotations

import atexit
import threading
from typing import Any
from contextlib import contextmanager
from dataclasses import dataclass, field

import ray

from ..pools.key import holds_resources, pool_key

__all__ = ["Warm", "pool_key", "holds_resources", "checkout", "checkin", "discard", "release_all", "claimed", "session",
           "IDLE_S", "MAX_IDLE"]

IDLE_S = 600.0          # an idle host (and its rollout actors) is stopped after this long
MAX_IDLE = 1            # idle hosts kept (the most recently used)
PING_S = 5.0


@dataclass(eq=False)
class Warm:
    host: Any                                   # the Driver actor (a Ray actor handle)
    session: tuple                              # the Ray session it lives in
    key: str | None = None                      # the fingerprint of the rollout pool it keeps
    owned: list = field(default_factory=list)   # rollout actors this process started for it
    timer: threading.Timer | None = None


_lock = threading.RLock()
_idle: list[Warm] = []
_running: set = set()                           # run ids playing in this process


def session() -> tuple:
    """Which Ray this process is connected to (a host of another session is gone)."""
    ctx = ray.get_runtime_context()
    try:
        node = ctx.get_node_id()
    except Exception:
        node = None
    return (getattr(ctx, "gcs_address", None), ctx.get_job_id(), node)


def _alive(host) -> bool:
    try:
        ray.get(host.ping.remote(), timeout=PING_S)
        return True
    except Exception:
        return False


def checkout() -> Warm | None:
    """An idle host of this Ray session that answers, or None (start one)."""
    now = session()
    with _lock:
        while _idle:
            warm = _idle.pop()
            if warm.timer is not None:
                warm.timer.cancel()
            if warm.session != now:
                continue                    # its Ray is gone, and the actors with it
            if _alive(warm.host):
                return warm
            _stop(warm)
    return None


def checkin(warm: Warm, keep_actors: bool = True) -> None:
    """``warm``'s run ended cleanly: keep it for the next run (for ``IDLE_S`` at most); its rollout
    actors too unless ``keep_actors`` is False (they hold resources: ``pool_key.holds_resources``)."""
    if not keep_actors and (warm.key is not None or warm.owned):
        try:
            warm.host.drop_pool.remote()
        except Exception:
            pass
        for actor in warm.owned:
            try:
                ray.kill(actor)
            except Exception:
                pass
        warm.key, warm.owned = None, []
    with _lock:
        _idle.append(warm)
        while len(_idle) > MAX_IDLE:
            _stop(_idle.pop(0))
        warm.timer = threading.Timer(IDLE_S, _expire, (warm,))
        warm.timer.daemon = True
        warm.timer.start()


def discard(warm: Warm) -> None:
    """``warm``'s run did not end cleanly: stop its host and the rollout actors started for it."""
    with _lock:
        if warm in _idle:
            _idle.remove(warm)
    _stop(warm)


def release_all() -> None:
    """Stop every idle host and its rollout actors (tests and benches that want a fresh start)."""
    for warm in _take_idle():
        _stop(warm)


def _take_idle() -> list[Warm]:
    """The idle hosts, no longer kept."""
    with _lock:
        idle = list(_idle)
        _idle.clear()
    return idle


def _expire(warm: Warm) -> None:
    with _lock:
        if warm not in _idle:
            return
        _idle.remove(warm)
    _stop(warm)


def _stop(warm: Warm) -> None:
    if warm.timer is not None:
        warm.timer.cancel()
    if not ray.is_initialized():
        return
    try:
        if warm.session != session():
            return
    except Exception:
        return
    for actor in (warm.host, *warm.owned):
        try:
            ray.kill(actor)
        except Exception:
            pass


def is_running(run_id) -> bool:
    """Whether a run with this id is running in this process now (``claimed``)."""
    with _lock:
        return run_id in _running


@contextmanager
def claimed(run_id: str):
    """Hold ``run_id`` for one run: a second run with the same id in this process is an error
    (two runs would share their unit keys and checkpoint)."""
    with _lock:
        if run_id in _running:
            raise RuntimeError(f"a run named {run_id!r} is already running in this process; wait for it "
                               "to finish or pass another advanced={'run_id': ...}")
        _running.add(run_id)
    try:
        yield
    finally:
        with _lock:
            _running.discard(run_id)


def _at_exit() -> None:
    """At interpreter exit: the kept hosts and their rollout actors end with this process's Ray,
    all at once (``ray.shutdown()``, what Ray's own exit hook does a moment later). Stopping them
    one by one first (``release_all``) made a local Ray start fresh idle workers in their place,
    which its shutdown then killed while they imported: each printed a "*** SIGTERM received ***"
    stack at the end of every script, ``whileai-ray demo`` included. (An idle timer that fires
    later finds its host no longer kept: ``_expire``.)"""
    if _take_idle() and ray.is_initialized():
        try:
            ray.shutdown()
        except Exception:
            pass


atexit.register(_at_exit)
