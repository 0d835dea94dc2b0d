"""The driver bench line's process accounting (pure parts; the line itself runs on Ray)."""
import os
import sys

import pytest

from whileai_ray.bench.driver_line import _cpu_seconds, _spent, format_driver_line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_process_cpu_time_is_read_from_proc_and_grows_with_work():
    before = _cpu_seconds(os.getpid())
    t = sum(i * i for i in range(2_000_000))       # about 0.1 s of CPU
    after = _cpu_seconds(os.getpid())
    assert t > 0 and before is not None and after is not None and after > before
    assert _cpu_seconds(2**22 + 12345) is None     # no such process


def test_cpu_is_summed_by_role_and_a_process_that_appeared_counts_whole():
    before = {10: ("driver", 5.0), 11: ("rollout", 1.0), 12: ("rollout", 2.0)}
    after = {10: ("driver", 6.5), 11: ("rollout", 3.0), 13: ("rollout", 0.5)}    # 12 went, 13 came
    assert _spent(before, after) == {"driver": 1.5, "rollout": 2.5}


def test_the_line_states_the_targets_and_the_ceiling():
    line = format_driver_line({"mode": "explore", "rows": 30000, "actors": 2, "rows_s": 500.0, "all_us": 2469.0,
                               "us_per_row": {"driver": 1661.0, "rollout": 661.0, "caller": 147.0},
                               "ceiling_rows_s": 602.0})
    assert "driver 1,661, rollout 661, caller 147, all 2,469" in line and "Driver <= 100" in line
    assert "ceiling ~602 rows/s" in line and "asks from the lanes" not in line     # (edge writing off)


def test_the_line_says_how_many_asks_the_lanes_wrote_and_how_many_went_unused():
    line = format_driver_line({"mode": "explore", "rows": 30000, "actors": 2, "rows_s": 900.0, "all_us": 1100.0,
                               "us_per_row": {"driver": 400.0, "rollout": 550.0, "caller": 150.0},
                               "ceiling_rows_s": 2500.0,
                               "edge_asks": {"hits": 53000, "misses": 500, "hit_rate": 0.9907, "written": 54600,
                                             "unused": 1600, "edge_seconds": 4.0}})
    assert "asks from the lanes 99.1% of those taken, 1.82 written a row, 2.9% of them unused" in line


def test_the_parquet_writer_beside_the_driver_is_a_role_of_its_own_and_counts_in_all():
    from whileai_ray.bench.driver_line import ROLES
    assert ROLES["ray::ParquetWriter"] == "parquet"      # runtime/driver/parquet_writer.py's actor class
    line = format_driver_line({"mode": "rl", "rows": 30000, "actors": 2, "rows_s": 900.0, "all_us": 800.0,
                               "us_per_row": {"driver": 290.0, "rollout": 360.0, "parquet": 90.0, "caller": 60.0},
                               "ceiling_rows_s": 3448.0})
    assert "driver 290, rollout 360, parquet 90, caller 60, all 800" in line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_only_the_processes_a_bench_started_are_counted_when_it_says_so():
    import subprocess
    from whileai_ray.bench.driver_line import _descends
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert _descends(child.pid, os.getpid())
        assert not _descends(os.getpid(), child.pid) and not _descends(child.pid, child.pid + 10**6)
    finally:
        child.kill()
        child.wait(10)


def test_the_line_of_a_corpus_tool_set_names_it_and_a_missing_corpus_is_said_before_any_run():
    from whileai_ray.bench.driver_line import bench_driver
    line = format_driver_line({"mode": "explore", "rows": 10000, "actors": 2, "rows_s": 1300.0, "all_us": 1200.0,
                               "tools": "retail", "us_per_row": {"driver": 350.0, "rollout": 700.0, "caller": 50.0},
                               "ceiling_rows_s": 2857.0})
    assert line.startswith("driver         explore, no-delay agent on the retail tools, 10,000 rows")
    missing = bench_driver(rows=10, tools="no_such_domain")        # (returns before Ray starts)
    assert missing["error"].startswith("corpus not found") and "tools_no_such_domain.json" in missing["error"]
    assert format_driver_line(missing).startswith("driver         explore (no_such_domain tools): corpus not found")
