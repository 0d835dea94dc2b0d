"""Before a run opens its checkpoint: refuse a live second writer, clear an orphaned one.

The checkpoint's lock (``store/checkpoint/lock.py``) is held by the Driver actor of the run that
appends. When it is held as a new run starts, the holder's description says whose Driver it is:

* its caller is alive (or on another host, where we cannot tell): a second writer. Fail fast
  with ``CheckpointBusy`` naming the run id, the caller's pid and host, and the Driver's pid;
* its caller is this process and that run is still going here (two ``simulate()`` calls at once,
  say in two threads, on one checkpoint or on two names of it): ``CheckpointBusy``, "held by a
  run in this process";
* its caller is gone (killed a moment ago): an orphaned Driver, which stops by itself within a
  loop of noticing (``driver/caller_watch.py``), and which Ray ends with its caller anyway (a Driver
  actor is owned by its caller's process, never detached: ``caller/warm_pools.py``). Wait for it to let
  go, then try to stop it by its run name (a Driver named by run id in namespace ``whileai_ray``,
  as Drivers before the warm host were); never append beside it.
"""
from __future__ import annotations

import logging
import os
import socket
import time

import ray

from ...store.checkpoint.lock import CheckpointBusy, probe, process_alive
from ..cluster import NAMESPACE
from .warm_pools import is_running

_log = logging.getLogger(__name__)   # a child of whileai_ray.runtime

__all__ = ["clear_checkpoint"]

ORPHAN_WAIT_S = 5.0     # an orphaned Driver notices its caller is gone within 0.5 s, then closes
KILL_WAIT_S = 15.0


def _released(checkpoint, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while probe(checkpoint) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def clear_checkpoint(checkpoint, log=_log.warning) -> dict | None:
    """Return None when nobody holds ``checkpoint``'s lock (any orphan has let go or was
    stopped); raise ``CheckpointBusy`` when a live run holds it. Returns the orphan's
    description when one was waited for or stopped (the run says so)."""
    if checkpoint is None:
        return None
    holder = probe(checkpoint)
    if holder is None:
        return None
    caller = holder.get("caller") or {}
    mine = caller.get("pid") == os.getpid() and caller.get("host") == socket.gethostname()
    if process_alive(caller) is not False and not mine:     # mine: a Driver this process abandoned ...
        raise CheckpointBusy(checkpoint, holder)
    if mine and holder.get("run_id") and is_running(holder["run_id"]):    # ... unless that run still runs
        raise CheckpointBusy(checkpoint, holder)
    log(f"whileai_ray: the checkpoint {checkpoint} is still held by the Driver of run {holder.get('run_id')!r}, "
        "whose caller is gone (or which this process left behind); waiting for it to stop")
    if _released(checkpoint, ORPHAN_WAIT_S):
        return {**holder, "cleared": "stopped by itself"}
    run_id = str(holder.get("run_id"))
    try:
        ray.kill(ray.get_actor(run_id, namespace=NAMESPACE), no_restart=True)
    except (ValueError, TypeError):
        pass                                   # no such actor in this cluster: wait on
    if _released(checkpoint, KILL_WAIT_S):
        return {**holder, "cleared": "stopped by its run name"}
    raise CheckpointBusy(checkpoint, holder, note=(
        "; its caller is gone but its Driver still holds the lock and could not be stopped by name "
        f"(ray.kill of actor {run_id!r} in namespace {NAMESPACE!r})"))
