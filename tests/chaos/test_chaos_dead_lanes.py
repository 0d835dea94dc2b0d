"""Issue 28 item 2: a rollout actor that dies, however it dies, is replaced and its units retried.

When Ray's memory monitor kills an actor, the call raises ``ray.exceptions.OutOfMemoryError``, and
so does every later call on that actor; it is not a ``RayActorError``. Before the fix the lane was
never replaced: its chunks failed as ``rollout_failed`` again and again and the run never ended.

* ``test_every_way_an_actor_dies_is_a_dead_lane``: the classification, on Ray's own exception
  classes as Ray 2.60 builds them (OOM kill, crashed worker, died or unavailable actor, lost node,
  lost result), against an actor that is alive and raised.
* ``test_an_oom_killed_rollout_actor_is_replaced_and_its_poison_unit_ends_lost``: a real kill by
  Ray's memory monitor. This module's Ray starts with ``RAY_memory_usage_threshold`` set 3 GiB above
  the machine's memory in use, and the agent, on its poison prompts, takes memory 128 MiB at a
  time until the monitor kills the actor (about 3-4 GiB, held for a second or two). Another poison
  prompt segfaults its actor. The run must reach its budget, replace the lanes, and end each
  poison unit lost as ``worker_crashed`` (never ``rollout_failed``).
"""
import json
import os
import subprocess
import sys

import pytest

from whileai_ray.bench.chaos_lanes import oom_threshold

@pytest.fixture(scope="module")
def ray_oom(request):
    """The module's Ray (``ray_local``), its raylet's memory monitor set to kill 3 GiB above what the
    machine uses now (the setting is read by the raylet when it starts, then put back)."""
    threshold = oom_threshold()
    saved = {k: os.environ.get(k) for k in ("RAY_memory_usage_threshold", "RAY_memory_monitor_refresh_ms")}
    os.environ["RAY_memory_usage_threshold"] = f"{threshold:.4f}"
    os.environ["RAY_memory_monitor_refresh_ms"] = "100"
    try:
        ray = request.getfixturevalue("ray_local")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return ray


def test_every_way_an_actor_dies_is_a_dead_lane():
    from ray import exceptions as X

    from whileai_ray.runtime.pools.actor_pool import death_cause, lane_is_dead
    from whileai_ray.runtime.driver.chunk_retry import NODE_LOST, WORKER_CRASHED

    oom = X.OutOfMemoryError("1 worker(s) were killed due to the node running low on memory.")
    worker_gone = [oom, X.WorkerCrashedError(), X.ActorDiedError(), X.RayActorError(),
                   X.ActorUnavailableError("connection lost", None), X.ObjectLostError("ab" * 14, None, ""),
                   X.OwnerDiedError("ab" * 14, None, "")]
    for error in worker_gone:
        assert lane_is_dead(error), type(error).__name__
        assert death_cause(error, node_alive=True) == WORKER_CRASHED, type(error).__name__
        assert death_cause(error, node_alive=False) == NODE_LOST, type(error).__name__
    for error in (X.NodeDiedError("node 3 is gone"), X.LocalRayletDiedError(),
                  X.RayActorError(preempted=True)):
        assert lane_is_dead(error) and death_cause(error) == NODE_LOST, type(error).__name__
    raised = X.RayTaskError("run_chunk", "Traceback ...", ValueError("our own bug")).as_instanceof_cause()
    for error in (raised, ValueError("x"), X.GetTimeoutError("slow")):
        assert not lane_is_dead(error) and death_cause(error) is None, type(error).__name__


OOM_RUN = r"""
import ctypes, json, sys, time, zlib
import whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
    "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
base = wai.seeded_agent(TOOLS)

def dies(message):
    h = zlib.crc32(message.encode()) % 16
    if h == 0:                                  # takes memory until Ray's memory monitor kills its actor
        held = []
        for _ in range(64):                     # 8 GiB at most; the monitor kills at ~3 GiB
            held.append(b"\x01" * (128 * 2**20))
            time.sleep(0.02)
        time.sleep(60)
    if h == 1:
        ctypes.string_at(0)                     # a segfault
    return base(message)

t0 = time.monotonic()
data = wai.simulate(dies, tools=TOOLS, simulator=False, budget=24, seed=11, concurrency=4, timeout=90,
                    advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0,
                              "ray": {"rollout_actors": 2}})
ro = data.search["rollouts"]
print("RESULT " + json.dumps({"rows": len(data.rows()), "elapsed": time.monotonic() - t0,
                               "pool": data.report()["placement"]["pool"], "lost_by": ro.get("lost_by", {}),
                               "poison": data.search.get("poison"), "warnings": data.warnings,
                               "stopped_because": data.stopped_because}), flush=True)
"""


def test_an_oom_killed_rollout_actor_is_replaced_and_its_poison_unit_ends_lost(ray_oom, tmp_path):
    script = tmp_path / "oom.py"
    script.write_text(OOM_RUN)
    env = dict(os.environ, RAY_ADDRESS=ray_oom.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled")
    try:
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=150)
    except subprocess.TimeoutExpired:
        raise AssertionError("the run whose actors were OOM-killed did not finish in 150 s") from None
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, (out.stdout + out.stderr)[-3000:]
    got = json.loads(line[len("RESULT "):])
    print("OOM-killed lanes:", {k: got[k] for k in ("rows", "elapsed", "lost_by", "poison")})
    assert got["pool"] == "actors", got
    assert got["rows"] == 24 and got["stopped_because"] == "budget", got
    poison = got["poison"] or {}
    # the monitor's kill reaches the Driver as OutOfMemoryError when a call was on the actor, as
    # ActorDiedError when it came between calls (both seen here): either is a dead lane
    deaths = poison.get("lane_deaths", {})
    assert sum(deaths.values()) >= 2 and set(deaths) <= {"OutOfMemoryError", "ActorDiedError", "RayActorError",
                                                          "WorkerCrashedError", "ActorUnavailableError"}, got
    assert poison["lanes_replaced"] >= 2, got                                     # and each lane got a new actor
    assert got["lost_by"].get("worker_crashed", 0) >= 2, got    # each poison unit: played twice, then lost
    assert got["lost_by"].get("rollout_failed", 0) == 0, got    # never taken for a unit our code failed on
    assert got["elapsed"] < 120, got
