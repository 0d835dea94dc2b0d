"""The --scale --runs bench reads its rates off progress samples and finds its own Driver among
its descendants: both from real data (samples as a run reports them, this process's /proc)."""
import os
import subprocess
import sys

from whileai_ray.bench.scale_runs import _at, _descendants, _rates


def test_rates_come_from_the_progress_samples():
    # 1,000 rows: 100 rows/s for the first 10% (after the first row at 1 s), then 200 rows/s
    samples = [(1.0, 0), (2.0, 100)] + [(2.0 + i * 0.5, 100 + 100 * i) for i in range(1, 10)]
    assert _at(samples, 100) == 2.0 and _at(samples, 150) == 2.25 and _at(samples, 5000) is None
    r = _rates(samples, 1000, first_row_s=1.0)
    assert r["first10_rate"] == 100.0 and r["last10_rate"] == 200.0 and r["steady_rate"] == 200.0
    assert _rates([(1.0, 10)], 1000, 0.5) == {"first10_rate": None, "last10_rate": None, "steady_rate": None}
    # the sample that says every row landed came 4 s late (the Driver's loop was finishing the run):
    # the Driver's own time of its last row is used instead
    late = samples[:-1] + [(10.5, 1000)]
    assert round(_rates(late, 1000, 1.0)["last10_rate"], 2) == 22.22          # 100 rows over 4.5 s
    assert _rates(late, 1000, 1.0, last_row_s=6.5)["last10_rate"] == 200.0


def test_descendants_are_found_through_their_parents():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in _descendants(os.getpid())
        assert os.getpid() not in _descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
