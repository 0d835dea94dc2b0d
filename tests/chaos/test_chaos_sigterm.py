"""Issue 28 item 14: SIGTERM to a process running simulate() exits cleanly.

A script that starts its own Ray and runs simulate() with an agent that stays in the caller's
process gets SIGTERM mid-run (a container stopped, a job cancelled). Before, Ray's handler killed
Ray's processes under the caller's pool thread and the process aborted (SIGABRT, a core dump, 2
tries in 3), printing "Task was destroyed but it is pending!". Now the run unwinds: exit status
143, nothing of the sort on stderr, three times in a row, each within a bounded time."""
import os
import selectors
import signal
import subprocess
import sys
import time

VICTIM = r"""
import threading, time, whileai_ray as wai
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
    "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
seeded, lock = wai.seeded_agent(TOOLS), threading.Lock()
def agent(messages):                 # holds a lock: it stays in this process (the caller's pool)
    with lock:
        pass
    time.sleep(0.05)
    return seeded(messages)
agent.__name__ = "seeded_agent"
said = []
def on_progress(snap):
    if not said:
        said.append(1)
        print("RUNNING", flush=True)
wai.simulate(agent, tools=TOOLS, simulator=False, budget=5000, seed=9, concurrency=4, on_progress=on_progress,
             advanced={"progress_every_rows": 20, "progress_every_s": 3600.0})
print("FINISHED", flush=True)
"""


def _wait_for_line(proc, text: str, timeout: float) -> bool:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if sel.select(timeout=0.5) and text in proc.stdout.readline():
            return True
    return False


def _one_try(script) -> tuple[int | None, str]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}      # its own Ray, as a script's
    env.update(RAY_AUTH_MODE="disabled", WHILEAI_RAY_NODE_IP="127.0.0.2", PYTHONFAULTHANDLER="")
    proc = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert _wait_for_line(proc, "RUNNING", timeout=150), "the run never started"
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)       # a hang after SIGTERM fails here
        return proc.returncode, err
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def test_sigterm_mid_run_exits_cleanly_three_times(tmp_path):
    script = tmp_path / "victim.py"
    script.write_text(VICTIM)
    for attempt in range(3):
        rc, err = _one_try(script)
        assert rc != -signal.SIGABRT, f"try {attempt}: aborted (SIGABRT)\n{err[-3000:]}"
        assert "Task was destroyed but it is pending" not in err, f"try {attempt}:\n{err[-3000:]}"
        assert rc == 128 + signal.SIGTERM, f"try {attempt}: exit status {rc}\n{err[-3000:]}"
