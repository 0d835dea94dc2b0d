"""The caller's side of a run: start or join Ray, size the pools, start the Driver actor on this
node, or take the one this process's last run left warm (``caller/warm_pools.py``), and, when the
callables stay at home, the caller's own pool; relay the Driver's progress to the logger and
``on_progress``, and return the ``RunResult`` it produced."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import signal
import sys
import itertools
import threading
import time
from typing import Any

import ray
from ray import cloudpickle
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from ...core.strict_json import gc_paused
from ..pools.actor_pool import start_rollout_actors
from .player import CallerPlayer
from ..driver.caller_watch import CALLER_GONE
from .checkpoint_guard import clear_checkpoint
from ..cluster import NAMESPACE, cluster_view, ensure_ray, local_node_id
from ..pools.dataplane import with_full_rows
from ..driver.actor import Driver, RunHandle
from ...core.progress import Poll
from ..job_spec import JobSpec
from ..pools.sizing import ClusterView, PoolPlan, plan_pools
from ..run_result import RunResult
from .stay_home import why_home
from .travel import travel_message, unpicklable_path
from .warm_pools import Warm, checkin, checkout, claimed, discard, holds_resources, pool_key, session

POLL_S = 0.2
HEARTBEAT_S = 1.0       # the caller's heartbeat to its Driver, from a thread of its own (driver/caller_watch.py)
_TOKENS = itertools.count(1)


def _ship_user_code_by_value(*objs) -> None:
    """Agents, graders and execute= functions often live in a script, a notebook or a test
    module that Ray's workers cannot import; pickle such modules by value so the workers get
    the code itself. Installed packages (site-packages) and whileai_ray stay by reference."""
    for obj in objs:
        while isinstance(obj, functools.partial):      # functools.partial(MyAgent, ...): ship MyAgent's module
            obj = obj.func
        if obj is None:
            continue
        for name in {getattr(obj, "__module__", None), getattr(type(obj), "__module__", None)}:
            mod = sys.modules.get(name) if name else None
            path = getattr(mod, "__file__", None) or ""
            if (mod is None or name is None or name == "__main__" or name.startswith(("whileai_ray", "ray"))
                    or "site-packages" in path or "dist-packages" in path or not path
                    or inspect.getmodule(obj) is None and not path):
                continue
            try:
                cloudpickle.register_pickle_by_value(mod)
            except Exception:
                pass


def _for_the_driver(spec: JobSpec, plan: PoolPlan) -> JobSpec:
    """The spec the Driver actor gets: the callables that stay in the caller's process are left
    out (they need not pickle); the ones that travel to actors stay in."""
    keep_home: dict[str, Any] = {}
    if plan.where == "caller":
        keep_home.update(agent=None, execute=None)
    if plan.judges_where == "caller":
        keep_home.update(grader=None)
    return dataclasses.replace(spec, **keep_home) if keep_home else spec


def kept_home(spec: JobSpec) -> frozenset:
    """The roles whose callable must stay in this process (``caller/stay_home.py``)."""
    return frozenset(role for role, obj in spec.callables().items() if why_home(obj, cloudpickle.dumps))


def _why_they_travel(spec: JobSpec, cluster: ClusterView) -> str:
    if len(cluster.nodes) > 1:
        return f"this Ray cluster has {len(cluster.nodes)} nodes, and the actors run on them"
    if not cluster.caller_on_only_node:
        return "this process is not on the Ray node that runs the actors"
    return "advanced={'ray': {...}} asks for rollout actors, which are other processes"


def refuse_what_cannot_travel(spec: JobSpec, cluster: ClusterView) -> None:
    """TypeError (under 15 lines: which object, the two fixes) when a callable of ``spec`` -- the
    Driver's spec, whose callables all play on actors -- does not pickle. Raised before the Driver
    starts: no checkpoint opened, no situation written, no rollout played."""
    for role, obj in spec.callables().items():
        found = unpicklable_path(obj, cloudpickle.dumps, role)
        if found is not None:
            steps, error = found
            raise TypeError(travel_message(role, steps, error, _why_they_travel(spec, cluster)))


def execute_job(spec: JobSpec, on_snapshot=None) -> RunResult:
    """Run one job to the end. ``on_snapshot(dict)`` is called with each progress snapshot.

    The Driver is polled every ``POLL_S`` whether or not anyone listens, and a heartbeat thread
    tells it every ``HEARTBEAT_S`` that this process is there even while ``on_snapshot`` (the
    user's ``on_progress``) is slow: that is how it tells a busy caller from a gone one
    (``driver/caller_watch.py``). A run stopped because its caller was gone raises, saying where its
    rows are (its checkpoint, or the file the Driver kept them in). A checkpoint another live
    run writes is refused, and one an orphaned Driver still holds is cleared first
    (``driver/checkpoint_guard.py``). SIGTERM unwinds the run (``_sigterm_unwinds``).
    The Driver actor and the rollout actors of this process's last run are reused when they fit
    (``caller/warm_pools.py``); otherwise each starts in a process of its own (``_start_host``).
    """
    ensure_ray()
    cluster = cluster_view()
    plan = plan_pools(spec, cluster, kept_home(spec) if cluster.caller_on_only_node else frozenset())
    driver_spec = _for_the_driver(spec, plan)
    _ship_user_code_by_value(driver_spec.agent, driver_spec.grader, driver_spec.execute)
    refuse_what_cannot_travel(driver_spec, cluster)   # what must travel and cannot: a short error, now
    cleared = clear_checkpoint(spec.checkpoint)
    here = local_node_id()
    key = pool_key(driver_spec, plan, cloudpickle.dumps)
    with claimed(spec.run_id), _sigterm_unwinds():
        driver_started, started_wall = time.monotonic(), time.time()
        kept = checkout()
        warm = kept or Warm(_start_host(here), session())
        prebuilt = None
        if plan.where == "actors" and (key is None or key != warm.key):
            if kept is None:     # a new Driver starts alone, and its rollout actors once it is up (_start_host)
                warm.owned, warm.key = [], key
            else:                # a kept Driver is up: they start beside it, while it opens the run
                prebuilt = start_rollout_actors(driver_spec, plan)
                warm.owned, warm.key = [a for a, _ in prebuilt], key
        token = f"{spec.run_id}/{next(_TOKENS)}"       # this call's name for its run on the host
        driver, ok = RunHandle(warm.host, token), False
        player = heart = None
        try:
            done_ref = warm.host.run.remote(token, driver_spec, plan, here, key, prebuilt)
            heart = _Heartbeat(driver).start()
            if plan.where == "caller" or (plan.graded and plan.judges_where == "caller"):
                player = CallerPlayer(driver, spec, plan, here).start()
            shipped: list = []
            result, t0_wall = _wait(driver, done_ref, player, on_snapshot, shipped)
            result = _with_shipped(result, shipped)
            ok = result.stopped_because != CALLER_GONE
            result = dataclasses.replace(result, driver_started_at=driver_started + max(0.0, t0_wall - started_wall),
                                         orphan_cleared=cleared or None)
            result = with_full_rows(result, spec.shards, spec.checkpoint)    # shared storage: rows read here
            if not ok:
                raise RuntimeError(_gone_message(spec, result))
            return result
        finally:
            if heart is not None:
                heart.stop()
            if player is not None:
                player.stop()
            if ok:
                checkin(warm, keep_actors=not holds_resources(spec))
            else:
                discard(warm)


def _gone_message(spec: JobSpec, result: RunResult) -> str:
    """The error of a run its Driver stopped because this process counted as gone: why, and
    where the rows that landed are."""
    why = result.errors[-1] if result.errors else "its caller was gone"
    if spec.checkpoint:
        where = (f"The rows that landed are in the checkpoint {spec.checkpoint}; call simulate() again "
                 "with the same checkpoint= to resume.")
    elif result.kept_at:
        where = (f"Its {result.row_count} rows were kept in {result.kept_at}: wai.load({result.kept_at!r}) "
                 "reads them (pass checkpoint= to make a run resumable).")
    else:
        where = "No row had landed."
    return (f"the Driver of run {spec.run_id!r} stopped because {why}: this process was not polling "
            f"it. {where}")


class _Heartbeat:
    """Tells the Driver every ``HEARTBEAT_S`` that this process is there, from a thread of its own:
    the polling loop may be held up by a slow ``on_progress``, and that is not a gone caller."""

    def __init__(self, driver):
        self._driver, self._stop = driver, threading.Event()
        self._thread = threading.Thread(target=self._run, name="whileai-heartbeat", daemon=True)

    def start(self) -> "_Heartbeat":
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._driver.beat.remote()
            except Exception:            # Ray is going away: the run's own error says why
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)


class Terminated(SystemExit):
    """SIGTERM arrived while a run played: the run is unwound (the caller's pool thread stopped and
    joined, the Driver and its actors stopped) and the process exits with status 143."""


@contextlib.contextmanager
def _sigterm_unwinds():
    """While a run plays, SIGTERM raises ``Terminated`` in the main thread instead of Ray's
    handler, which kills Ray's processes under the caller's pool thread and exits at once: that
    thread, left inside a Ray call while the interpreter finalizes, aborted the process (SIGABRT,
    a core dump, 2 tries in 3). Unwinding first lets ``execute_job``'s clean-up run, and Ray shuts
    down at exit (``ray.shutdown`` is an atexit hook). A handler the user installed is left alone,
    and so is a run that is not on the main thread (signals reach only that one)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    if not (before in (signal.SIG_DFL, None) or getattr(before, "__module__", "").startswith("ray")):
        yield
        return

    fired: list = []

    def terminate(signum, frame):
        signal.signal(signal.SIGTERM, before)      # a second SIGTERM: Ray's (or the default) handler
        fired.append(signum)
        raise Terminated(128 + signum)

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    except BaseException:
        if fired:       # inside a Ray call, Ray turns the handler's exception into its own SystemExit(1)
            raise Terminated(128 + fired[0]) from None
        raise
    finally:
        if signal.getsignal(signal.SIGTERM) is terminate:
            signal.signal(signal.SIGTERM, before)


def _with_shipped(result: RunResult, shipped: list) -> RunResult:
    """The result with every row: its head rows, the ones the polls brought, then its own."""
    if result.spilled is not None or not result.rows_shipped:
        return result
    rows, head = result.rows, result.rows_head
    return dataclasses.replace(result, rows=rows[:head] + shipped[:result.rows_shipped] + rows[head:],
                               rows_head=0, rows_shipped=0)


def _wait(driver, done_ref, player, on_snapshot, shipped: list | None):
    """Poll the Driver until its run is over; what ``Driver.run`` returned. Each poll brings
    the rows released since the last (``shipped`` grows: a small run's rows cross while it plays,
    not all at its end; a run whose rows go to disk sends none). The run's last progress answer
    comes with its result (no poll after it)."""
    while True:
        ready, _ = ray.wait([done_ref], timeout=POLL_S)
        if ready:
            try:
                with gc_paused():                  # a thousand rows' dicts: no full collection halfway
                    out = ray.get(done_ref)
            except ray.exceptions.RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                while isinstance(cause, ray.exceptions.RayTaskError) and isinstance(
                        getattr(cause, "cause", None), Exception):
                    cause = cause.cause              # an actor's error the Driver passed on
                if isinstance(cause, Exception):   # the driver's own error, without Ray's wrapping
                    raise cause from None
                raise
            if on_snapshot is not None and out[0].last_poll is not None:
                on_snapshot(out[0].last_poll.progress())
            return out
        try:
            with gc_paused():
                poll: Poll = ray.get(driver.poll.remote(None if shipped is None else len(shipped)), timeout=30)
            if poll.rows_spilled and shipped is not None:   # on disk: none kept here
                shipped.clear()
                shipped = None
            elif poll.new_rows is not None and shipped is not None and poll.rows_from == len(shipped):
                shipped.extend(poll.new_rows)
            if on_snapshot is not None:
                on_snapshot(poll.progress())
        except ray.exceptions.GetTimeoutError:
            pass
        if player is not None and player.error is not None:   # it ends by itself only when the loop does
            raise RuntimeError(f"the caller's rollout pool stopped before the run ended: "
                               f"{type(player.error).__name__}: {player.error}") from player.error


def _start_host(here: str):
    """A Driver actor (``driver/actor.py``) on this node: it plays this run and, kept by
    ``caller/warm_pools.py``, the next ones. Owned by this process (never detached): it ends with it.

    It starts alone: its run's rollout actors are started by the Driver once it is up (they are
    its own, and end with it), and start while it opens the run and decides its first rounds. On
    a 2-core laptop three worker processes asked for at once (the Driver beside its two rollout
    actors) brought the Driver up 0.75-0.9 s after the call; alone, 0.2-0.4 s, and the first
    row of a 50 ms agent landed ~0.3 s sooner (issue 32 item 4, ``bench/warm.py``)."""
    return ray.remote(Driver).options(
        namespace=NAMESPACE, num_cpus=0, max_concurrency=1000,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False)).remote()
