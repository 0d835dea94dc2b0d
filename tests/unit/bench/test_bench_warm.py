"""The warm second run bench line (bench/warm.py): the second run's figure, then the median and
range of every warm run, since one run alone moves +-2% on a 2-core machine (no Ray here)."""
import re

from whileai_ray.bench.warm import format_line


def _run(share, driver="reused", rollouts="reused", first_row=0.1, lent=0):
    return {"wall_rows_s": 640 * share, "share": share, "first_row_s": first_row, "driver": driver,
            "rollouts": rollouts, "lent": lent}


def test_the_line_gives_the_second_run_and_the_median_and_range_of_the_warm_ones():
    b = {"ideal": 640.0, "rows": 1000, "concurrency": 32,
         "runs": [_run(0.58, "started", "started", 0.97, 96), _run(0.861), _run(0.884), _run(0.843), _run(0.879)]}
    line = format_line(b)
    assert "first run 371 rows/s = 58% (first row 0.97s after the call, 96 units lent while a lane started)" in line
    assert "second run 551 rows/s = 86.1% (reused Driver, reused actors, first row 0.10s)" in line
    assert "4 warm runs: median 87.0%, lowest 84.3%, highest 88.4%" in line
    assert line.endswith("(targets: first run in a process >= 70%, second run >= 90%, first row <= 1 s)")


def test_a_single_run_reads_as_the_first_run_alone():
    line = format_line({"ideal": 640.0, "rows": 1000, "concurrency": 32, "runs": [_run(0.6, "started", "started")]})
    assert re.search(r", second run \d", line) is None and "warm runs:" not in line and "first run 384 rows/s = 60%" in line


def test_the_first_runs_of_fresh_processes_lead_the_line_and_the_cold_run_here_follows():
    fresh = [_run(0.718, "started", "started", 0.41), _run(0.702, "started", "started", 0.45),
             _run(0.731, "started", "started", 0.39)]
    b = {"ideal": 640.0, "rows": 1000, "concurrency": 32, "fresh": fresh,
         "runs": [_run(0.56, "started", "started", 1.15, 16), _run(0.91)]}
    line = format_line(b)
    assert ("rows/s: first run in a fresh process 71.8%, 70.2%, 73.1% (median 71.8%, first row 0.41s after "
            "the call); cold run in this process 358 rows/s = 56% (first row 1.15s") in line
    assert "failed" not in line


def test_a_fresh_process_that_failed_is_said_and_the_others_still_count():
    fresh = [_run(0.72, "started", "started", 0.4), {"error": "exit status 1: boom"}]
    line = format_line({"ideal": 640.0, "rows": 1000, "concurrency": 32, "fresh": fresh, "runs": [_run(0.6)]})
    assert "first run in a fresh process 72.0% (median 72.0%, first row 0.40s after the call), 1 of 2 failed (exit status 1: boom)" in line
    alone = format_line({"ideal": 640.0, "rows": 1000, "concurrency": 32, "fresh": [{"error": "no answer in 180 s"}],
                         "runs": [_run(0.6)]})
    assert "first run in a fresh process: not measured (no answer in 180 s); cold run in this process" in alone
