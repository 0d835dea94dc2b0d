"""Progress lines: the seeds' format, cadence, and stderr when nobody listens."""
import subprocess
import sys

import pytest

from whileai_ray.result.progress.lines import ProgressReporter, clock, format_line


def test_format_line_matches_the_seeds():
    snap = {"rows": 21, "cap": 30, "landed": 21, "resumed": 0, "rerolled": 42, "lost": 33,
            "lost_by": {"agent_error": 15, "tool_markup": 18}, "situations": 111, "elapsed_s": 0.4}
    assert format_line(snap) == ("21/30 rollouts, 111 situations written, 0s elapsed, ~1s left, 42 re-rolled, "
                                 "33 lost (15 agent error, 18 tool markup)")
    assert format_line({"rows": 32, "cap": 1000, "landed": 0, "resumed": 32, "situations": 16,
                        "elapsed_s": 0.1}) == "32/1000 rollouts (32 resumed), 16 situations written, 0s elapsed"
    assert clock(100) == "1m40s" and clock(3840) == "1h4m" and clock(45) == "45s"


def test_cadence_every_ten_events_and_on_progress_gets_every_line():
    got = []
    rep = ProgressReporter(on_progress=got.append, every_rows=10, every_s=1e9)
    for n in range(1, 26):
        rep.update({"rows": n, "cap": 5, "landed": n, "situations": n, "elapsed_s": 1.0})
    assert [g["rows"] for g in got] == [10, 20]
    assert set(got[0]) == {"rows", "cap", "landed", "resumed", "rerolled", "rerolled_by", "timed_out", "lost",
                           "lost_by", "inflight", "situations", "elapsed_s"}


def test_lines_go_to_stderr_when_no_handler_listens():
    code = ("from whileai_ray.result.progress.lines import ProgressReporter as P; "
            "P().emit({'rows': 10, 'cap': 10, 'landed': 10, 'situations': 10, 'elapsed_s': 2})")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert "10/10 rollouts, 10 situations written, 2s elapsed" in err
    code2 = "import logging; logging.basicConfig(level=logging.INFO); " + code
    err2 = subprocess.run([sys.executable, "-c", code2], capture_output=True, text=True, check=True).stderr
    assert err2.count("10/10 rollouts") == 1          # through the handler only, not printed twice


def test_the_last_line_says_the_run_ended_and_why_without_an_eta():
    got = []
    rep = ProgressReporter(on_progress=got.append)
    rep.emit({"rows": 5, "cap": 200, "landed": 5, "situations": 5, "elapsed_s": 1.0,
              "stopped_because": "situations_exhausted"})
    line = rep.lines[-1]
    assert "left" not in line
    assert line.endswith("ended: situations_exhausted (every situation asked for has its rollouts)")
    assert got[-1]["stopped_because"] == "situations_exhausted"
    running = format_line({"rows": 5, "cap": 200, "landed": 5, "situations": 5, "elapsed_s": 1.0})
    assert "~39s left" in running and "ended" not in running


def test_the_run_clock_stops_dispatch_at_the_deadline_and_cuts_at_deadline_plus_timeout():
    from whileai_ray.search.planner.clock import RunClock
    now = [100.0]
    clk = RunClock(deadline_at=103.0, grace_s=0.5, now=lambda: now[0])
    assert clk.on and not clk.expired() and clk.wait_s() == 0.5
    now[0] = 102.8
    assert clk.wait_s() == pytest.approx(0.2)            # wakes up at the deadline, not 0.5 s later
    now[0] = 103.1
    assert clk.expired() and not clk.drain_over()        # in-flight rollouts may still land...
    assert clk.wait_s() == pytest.approx(0.4)
    now[0] = 103.5
    assert clk.drain_over()                              # ...until deadline + timeout at most
    clk.stop()
    clk.skipped, clk.cut = 7, 2
    assert clk.summary(started_at=100.0) == {"time_budget": 3.0, "stopped_after_s": 3.5, "overrun_s": 0.5,
                                             "skipped": 7, "cut": 2}
    assert RunClock(None, 300).summary() is None and not RunClock(None, 300).expired()
