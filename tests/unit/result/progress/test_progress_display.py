"""Progress that fits the place, seen from outside the process: a bar in a real pseudo-terminal,
plain lines in a pipe (a log, a Ray Job), lines through a configured logging handler."""
import subprocess
import sys

from whileai_ray.testing.terminal import run_in_terminal

# a run of 200 rows as the reporter sees it: snapshots from the driver, then the final numbers
CHILD = """
import logging, time
from whileai_ray.result.progress.lines import ProgressReporter
from whileai_ray.result.progress.display import choose_display
if {logging}:
    logging.basicConfig(level=logging.INFO, format="LOG %(message)s")
rep = ProgressReporter(every_rows=50, every_s=1e9, display=choose_display())
for n in range(0, 201, 20):
    rep.update({{"rows": n, "cap": 200, "landed": n, "resumed": 0, "rerolled": n // 10, "lost": 1,
                "lost_by": {{"agent_error": 1}}, "situations": n // 2, "elapsed_s": n / 100}})
    time.sleep(0.05)
final = {{"rows": 200, "cap": 200, "landed": 200, "resumed": 0, "rerolled": 20, "lost": 1,
         "lost_by": {{"agent_error": 1}}, "situations": 100, "elapsed_s": 2.0}}
rep.emit(final)
rep.close(final)
"""


def test_a_terminal_gets_one_bar_redrawn_in_place_with_rate_eta_and_rerolls():
    out = run_in_terminal(CHILD.format(logging=False))
    frames = [f for f in out.split("\r") if f.strip()]
    assert len(frames) >= 3, out                         # redrawn in place, not one line per update
    assert all(f.startswith("whileai_ray:") for f in frames), frames
    last = frames[-1]
    assert "100%" in last and "200/200" in last and "rows/s" in last
    assert "20 re-rolled" in last and "1 lost" in last
    assert any("<00:0" in f and "/200" in f for f in frames[:-1])      # time left while it runs
    assert "rollouts, " not in out                       # no plain progress line beside the bar
    assert out.endswith("\n")                            # the finished bar stays, the prompt moves on


def test_a_pipe_gets_plain_lines_and_no_bar():
    err = subprocess.run([sys.executable, "-c", CHILD.format(logging=False)], capture_output=True, text=True,
                         check=True).stderr
    lines = err.splitlines()
    # every 50 events (rows + re-rolls + losses): the first line at 60 rows (60 + 6 + 1 events)
    assert lines[0].startswith("60/200 rollouts, 30 situations written") and "6 re-rolled" in lines[0]
    assert lines[-1].startswith("200/200 rollouts, 100 situations written") and "1 lost (1 agent error)" in lines[-1]
    assert "\r" not in err and "%|" not in err


def test_a_terminal_whose_logging_is_configured_gets_the_lines_through_the_handler_only():
    out = run_in_terminal(CHILD.format(logging=True))
    assert "LOG 200/200 rollouts, 100 situations written" in out
    assert "%|" not in out
