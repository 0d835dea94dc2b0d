"""Issue 28 item 1: an agent call that never returns ends as a lost unit, never as a run that never ends.

The agent hangs (``time.sleep(10**6)``) on one prompt in three, with ``timeout=1`` and
``concurrency=2``. Before the fix a call past its timeout kept its thread and a lane had
``slots + 8`` of them: once they were all wedged, every later unit timed out without the agent
being called and ``simulate()`` never returned. Now a wedged call's thread leaves the lane's
threads (an async agent's task is cancelled), the unit is re-rolled, then lost with cause
``timed_out``, and the run returns within ``timeout`` plus a few seconds of its last row.

Both places a sync agent plays are driven: the rollout actors (asked for with
``advanced={"ray": {"rollout_actors": 1}}``) and the caller's own pool (an agent that closes over a
lock cannot travel, so it plays in the caller's process; that process must then exit too, with
hung threads still in it). Each run is a subprocess on the module's Ray, so a hang fails the test
instead of hanging the suite.
"""
import json
import os
import subprocess
import sys

import pytest

HANG_RUN = r"""
import asyncio, json, sys, threading, time, zlib
import whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
    "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
base = wai.seeded_agent(TOOLS)
where, form = sys.argv[1], sys.argv[2]
lock = threading.Lock()            # closed over: the agent cannot travel, it plays in this process
cancelled = []

def hangs(message):
    return zlib.crc32(message.encode()) % 3 == 0

def travelling_agent(message):
    if hangs(message):
        time.sleep(10**6)
    return base(message)

def home_agent(message):
    with lock:
        pass
    if hangs(message):
        time.sleep(10**6)
    return base(message)

async def async_home_agent(message):
    with lock:
        pass
    if hangs(message):
        try:
            await asyncio.sleep(10**6)
        except asyncio.CancelledError:
            cancelled.append(message)
            raise
    return base(message)

agent = {"sync": travelling_agent if where == "actors" else home_agent, "async": async_home_agent}[form]
advanced = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
if where == "actors":
    advanced["ray"] = {"rollout_actors": 1}
t0 = time.monotonic()
data = wai.simulate(agent, tools=TOOLS, simulator=False, budget=12, seed=5, timeout=1, concurrency=2,
                    advanced=advanced)
elapsed = time.monotonic() - t0
ro = data.search["rollouts"]
print("RESULT " + json.dumps({"rows": len(data.rows()), "elapsed": elapsed,
                               "after_last_row": elapsed - data.search["timings"]["last_row_s"],
                               "pool": data.report()["placement"]["pool"], "timed_out": ro["timed_out"],
                               "lost_by": ro.get("lost_by", {}), "rerolled_by": ro.get("rerolled_by", {}),
                               "report_lost_by": data.report()["rollouts_lost_by"], "cancelled": len(cancelled),
                               "warnings": data.warnings, "stopped_because": data.stopped_because}), flush=True)
"""


def _run_hanging(ray_local, tmp_path, where: str, form: str) -> dict:
    script = tmp_path / "hang.py"
    script.write_text(HANG_RUN)
    env = dict(os.environ, RAY_ADDRESS=ray_local.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled")
    try:
        out = subprocess.run([sys.executable, str(script), where, form], env=env, capture_output=True, text=True,
                             timeout=90)
    except subprocess.TimeoutExpired as exc:
        said = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        returned = "RESULT " in said
        raise AssertionError(f"the run with hung agent calls ({where}, {form}) did not "
                             f"{'exit' if returned else 'return'} within 90 s") from None
    line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, (out.stdout + out.stderr)[-3000:]
    got = json.loads(line[len("RESULT "):])
    print(f"hung calls ({where}, {form}):", {k: got[k] for k in ("rows", "elapsed", "after_last_row", "timed_out",
                                                               "lost_by", "pool", "cancelled")})
    return got


def _check(got: dict, where: str) -> None:
    assert got["pool"] == where, got
    assert got["rows"] == 12 and got["stopped_because"] == "budget", got
    assert got["timed_out"] >= 4, got                      # hung calls were cut, first tries and re-rolls
    assert got["lost_by"].get("timed_out", 0) >= 2, got     # each hung unit ends lost, with its cause
    assert got["report_lost_by"].get("timed_out") == got["lost_by"]["timed_out"], got
    assert got["after_last_row"] < 1 + 5, got               # timeout plus a few seconds of the last row
    said = [w for w in got["warnings"] if "never became rows" in w]
    assert said and "timed out" in said[0], got["warnings"]


@pytest.mark.parametrize("where", ["actors", "caller"])
def test_hung_sync_calls_end_as_lost_units_and_the_run_returns(ray_local, tmp_path, where):
    _check(_run_hanging(ray_local, tmp_path, where, "sync"), where)


def test_hung_async_calls_are_cancelled_in_the_callers_pool(ray_local, tmp_path):
    got = _run_hanging(ray_local, tmp_path, "caller", "async")
    _check(got, "caller")
    assert got["cancelled"] == got["timed_out"], got        # every cut call's task was cancelled
