"""Issue 28 item 4: a slow moment in the caller is not a dead caller.

With ``caller_timeout_s=2``: a caller-pool agent that holds the GIL for 5 s once (a C call that
keeps it: every thread of the caller stops, its polls and heartbeats too), and an ``on_progress``
that blocks 6 s once, each used to stop the run ("the caller did not poll for 2 s") and lose its
rows. Both runs now complete with every row. A caller that really stops (SIGSTOP past the
timeout), without a checkpoint, still ends its run, but keeps the rows that landed in a file the
error names, which ``wai.load`` reads."""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key

from bounded_call import bounded as _bounded

BUDGET = 40
FAST = {"caller_timeout_s": 2.0, "progress_every_rows": 5, "progress_every_s": 3600.0}


def _home_agent(tools, on_call=None):
    """A seeded agent that stays in the caller's process (it holds a lock: it does not pickle)."""
    seeded, lock, calls = wai.seeded_agent(tools), threading.Lock(), []

    def agent(messages):
        with lock:
            calls.append(1)
            n = len(calls)
        if on_call is not None:
            on_call(n)
        return seeded(messages)
    agent.__name__ = "seeded_agent"
    return agent


def test_an_agent_holding_the_gil_past_caller_timeout_does_not_end_the_run(ray_local, tools):
    held = []

    def hold_gil_once(n):
        if n == 5 and not held:
            t0 = time.monotonic()
            ctypes.PyDLL(None).sleep(5)          # libc sleep() called with the GIL held
            held.append(time.monotonic() - t0)

    data = _bounded(lambda: wai.simulate(_home_agent(tools, hold_gil_once), tools=tools, simulator=False,
                                         budget=BUDGET, seed=3, concurrency=2, advanced=FAST))
    assert held and held[0] >= 4.5
    assert data.report()["placement"]["pool"] == "caller"
    assert len(data.rows()) == BUDGET


def test_an_on_progress_that_blocks_past_caller_timeout_does_not_end_the_run(ray_local, tools):
    blocked = []

    def slow_progress(snap):
        if not blocked:
            blocked.append(snap["rows"])
            time.sleep(6.0)

    def agent_with_pause(n):              # 40 rows at 2 x 4/s: the run plays on while on_progress blocks
        time.sleep(0.25)

    data = _bounded(lambda: wai.simulate(_home_agent(tools, agent_with_pause), tools=tools, simulator=False,
                                         budget=BUDGET, seed=4, concurrency=2, on_progress=slow_progress,
                                         advanced=FAST))
    assert blocked and blocked[0] < BUDGET          # it blocked while the run was playing
    assert len(data.rows()) == BUDGET


VICTIM = r"""
import sys, threading, time, whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
    "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
seeded, lock = wai.seeded_agent(TOOLS), threading.Lock()
def agent(messages):
    with lock:
        pass
    time.sleep(0.05)
    return seeded(messages)
agent.__name__ = "seeded_agent"
def on_progress(snap):
    print("ROWS", snap["rows"], flush=True)
try:
    wai.simulate(agent, tools=TOOLS, simulator=False, budget=3000, seed=5, concurrency=4, on_progress=on_progress,
                 advanced={"caller_timeout_s": 2.0, "progress_every_rows": 10, "progress_every_s": 3600.0,
                           "spill_rows": int(sys.argv[1])})
    print("FINISHED", flush=True)
except RuntimeError as exc:
    print("ERROR", str(exc).replace("\n", " "), flush=True)
"""


@pytest.mark.parametrize("spill_rows", [50_000, 20], ids=["rows-in-memory", "rows-spilled-to-parquet"])
def test_a_frozen_caller_without_checkpoint_keeps_its_rows_in_a_named_file(ray_local, tmp_path, spill_rows):
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    env = dict(os.environ, RAY_ADDRESS=ray_local.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled")
    proc = subprocess.Popen([sys.executable, str(script), str(spill_rows)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 150
        while True:                            # wait for 30 rows to land
            line = proc.stdout.readline()
            assert line and time.monotonic() < deadline, "the victim never landed 30 rows"
            if line.startswith("ROWS") and int(line.split()[1]) >= 30:
                break
        proc.send_signal(signal.SIGSTOP)       # frozen: no poll, no heartbeat, state T
        time.sleep(6.0)                        # caller_timeout_s=2: its Driver stops and keeps the rows
        proc.send_signal(signal.SIGCONT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    said = next((ln for ln in out.splitlines() if ln.startswith("ERROR")), "")
    assert "stopped (SIGSTOP)" in said, out[-2000:]
    found = re.search(r"Its (\d+) rows were kept in (\S+?): wai\.load", said)
    assert found, said
    kept, path = int(found.group(1)), found.group(2)
    assert kept >= 30
    try:
        rows = wai.load(path).rows()
        assert len(rows) == kept and len({row_key(r) for r in rows}) == kept
    finally:          # the run's own folder: the JSONL file's, or the spill folder itself
        folder = path if os.path.isdir(path) else os.path.dirname(path)
        if os.path.basename(folder).startswith(("run_", "whileai-ray-run-")):
            shutil.rmtree(folder, ignore_errors=True)
