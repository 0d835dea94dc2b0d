"""Issue 11 item 2: one checkpoint, one writer.

A second live run on a checkpoint fails fast naming the first (pid, host, run id) and the first
finishes alone; the Driver of a caller killed with SIGKILL lets go at once and an immediate
resume appends alone; the Driver of a frozen caller (SIGSTOP) stops appending once its polls
stop, so it never writes beside a resume."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import whileai_ray as wai
from whileai_ray.store.schema import row_key

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}

# The victim's agent lives in a module both processes import (written beside the script): a resume
# is refused unless it plays the same agent (issue 28 item 7), and this one sleeps only in the victim
# (SLOW_AGENT_DELAY), so the test's own resumes play it at full speed.
SLOW_AGENT = r"""
import os, time, whileai_ray as wai
from whileai_ray.testing.seeded_rows import TOOLS
class Slow:
    def __init__(self):
        self.a = wai.seeded_agent(TOOLS)
        self.__name__ = "seeded_agent"
    def __call__(self, m):
        time.sleep(float(os.environ.get("SLOW_AGENT_DELAY") or 0))
        return self.a(m)
"""

VICTIM = r"""
import sys, whileai_ray as wai
from slow_agent import Slow
from whileai_ray.testing.seeded_rows import TOOLS
ck, budget, concurrency = sys.argv[1], int(sys.argv[2]), int(sys.argv[4])
advanced = {"run_id": "victim-run", "progress_every_rows": 10**6, "progress_every_s": 3600.0}
if len(sys.argv) > 5:                      # a shorter caller_timeout_s than the 10 s default
    advanced["caller_timeout_s"] = float(sys.argv[5])
data = wai.simulate(Slow(), tools=TOOLS, simulator=False, budget=budget, seed=9, checkpoint=ck,
                    concurrency=concurrency, advanced=advanced)
print("ROWS", len(data.rows()))
"""


def slow_agent(tmp_path, monkeypatch):
    """The victim's agent, imported here from the module the victim imports (no delay here)."""
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_agent", raising=False)
    import slow_agent as module
    return module.Slow()


def body(path):
    if not os.path.exists(path):
        return []
    out = []
    data = open(path, encoding="utf-8").read()
    # whole lines only: a batch being appended by the victim right now can be read half written
    for line in data[:data.rfind("\n") + 1].splitlines():
        if line.strip() and "_whileai_ray_checkpoint" not in line:
            out.append(json.loads(line))
    return out


def start_victim(ray_local, tmp_path, ck, budget, delay, concurrency, caller_timeout_s=None):
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    (tmp_path / "slow_agent.py").write_text(SLOW_AGENT)
    env = dict(os.environ, RAY_ADDRESS=ray_local.get_runtime_context().gcs_address,
               WHILEAI_RAY_NODE_IP="127.0.0.2", RAY_AUTH_MODE="disabled", SLOW_AGENT_DELAY=str(delay))
    extra = [] if caller_timeout_s is None else [str(caller_timeout_s)]
    return subprocess.Popen([sys.executable, str(script), str(ck), str(budget), str(delay), str(concurrency), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def wait_rows(proc, ck, n, timeout=120):
    deadline = time.monotonic() + timeout
    while len(body(ck)) < n:
        assert proc.poll() is None, "the victim ended before it wrote enough rows"
        assert time.monotonic() < deadline, "the victim wrote too slowly"
        time.sleep(0.05)


def test_a_second_run_on_a_live_checkpoint_fails_fast_naming_the_first(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"
    proc = start_victim(ray_local, tmp_path, ck, budget=400, delay=0.05, concurrency=4)
    try:
        wait_rows(proc, ck, 20)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match="is being written by") as info:
            wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=400, seed=9,
                         checkpoint=str(ck), advanced=QUIET)
        assert time.monotonic() - t0 < 15
        said = str(info.value)
        assert "victim-run" in said and f"pid {proc.pid}" in said and socket.gethostname() in said, said
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "ROWS 400" in out
    rows = body(ck)
    assert len(rows) == 400 and len({row_key(r) for r in rows}) == 400


def test_a_killed_callers_driver_lets_go_and_an_immediate_resume_appends_alone(ray_local, tools, tmp_path,
                                                                              monkeypatch):
    ck = tmp_path / "ck.jsonl"
    proc = start_victim(ray_local, tmp_path, ck, budget=1500, delay=0.01, concurrency=16)
    wait_rows(proc, ck, 150)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    full = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=1500, seed=9,
                        concurrency=16, advanced=QUIET)
    resumed = wai.simulate(slow_agent(tmp_path, monkeypatch), tools=tools, simulator=False, budget=1500, seed=9,
                           concurrency=16, checkpoint=str(ck), advanced=QUIET)
    rows = body(ck)
    assert len(rows) == 1500 and len({row_key(r) for r in rows}) == 1500
    assert [r["final_text"] for r in resumed.rows()] == [r["final_text"] for r in full.rows()]


def test_a_frozen_callers_driver_stops_appending_and_a_resume_takes_over(ray_local, tools, tmp_path, monkeypatch):
    ck = tmp_path / "ck.jsonl"
    # caller_timeout_s=2 (the 10 s default is checked in tests/unit/config/test_knobs.py): the
    # Driver must notice the stopped caller past it, whatever its value; 2 s spares 8 s of waiting
    proc = start_victim(ray_local, tmp_path, ck, budget=2500, delay=0.1, concurrency=8, caller_timeout_s=2.0)
    try:
        wait_rows(proc, ck, 60)
        proc.send_signal(signal.SIGSTOP)          # alive, but it polls its Driver no more
        time.sleep(6.0)                           # past caller_timeout_s=2, with room for a loaded machine
        first = len(body(ck))
        time.sleep(3.0)
        assert len(body(ck)) == first < 2500, "the Driver of a frozen caller went on appending"
        resumed = wai.simulate(slow_agent(tmp_path, monkeypatch), tools=tools, simulator=False, budget=2500,
                               seed=9, concurrency=8, checkpoint=str(ck), advanced=QUIET)
        assert resumed.search["rollouts"]["resumed"] == first
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    rows = body(ck)
    assert len(rows) == 2500 and len({row_key(r) for r in rows}) == 2500
