"""The warm second run bench line (bench/warm.py): the second run's figure, then the median and
range of every warm run, since one run alone moves +-2% on a 2-core machine (no Ray here)."""
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
    assert line.endswith("(targets: later runs >= 85%, first row <= 1 s)")


def test_a_single_run_reads_as_the_first_run_alone():
    line = format_line({"ideal": 640.0, "rows": 1000, "concurrency": 32, "runs": [_run(0.6, "started", "started")]})
    assert ", second run" not in line and "warm runs:" not in line and "first run 384 rows/s = 60%" in line
