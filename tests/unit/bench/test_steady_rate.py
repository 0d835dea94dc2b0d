"""The bench's steady rate (``bench/lines.py``: ``steady_rate``) reads rows that land in bursts at their rate (no Ray here)."""
import math

from whileai_ray.bench.lines import steady_rate


def _bursts(size: int, every_s: float, count: int) -> list[float]:
    """``count`` bursts of ``size`` rows, a burst's rows 10 us apart, one burst every ``every_s``."""
    return [1.0 + k * every_s + i * 1e-5 for k in range(count) for i in range(size)]


def test_bursts_of_a_lanes_chunk_read_at_their_rate_not_a_burst_high():
    # one lane of a 100 ms agent: 32 rows every 200 ms for 4 s = 160 rows/s
    seconds = _bursts(32, 0.2, 20)
    first_to_last = (len(seconds) - 1) / (max(seconds) - min(seconds))
    assert first_to_last > 168                          # the first burst counted as landed in no time
    assert abs(steady_rate(seconds) - 160) < 0.5
    # three lanes whose bursts interleave: 480 rows/s, three times one lane's reading
    three = sorted(t + lane * 0.2 / 3 for lane in range(3) for t in seconds)
    assert abs(steady_rate(three) - 480) < 1.5
    assert abs(steady_rate(three) / steady_rate(seconds) - 3) < 0.01


def test_an_even_stream_reads_its_rate_and_a_slower_one_slower():
    assert abs(steady_rate([i * 0.01 for i in range(500)]) - 100) < 1e-6
    assert abs(steady_rate(list(reversed([i * 0.02 for i in range(500)]))) - 50) < 1e-6   # (order is not read)


def test_under_two_rows_or_one_instant_is_no_rate():
    assert math.isnan(steady_rate([]))
    assert math.isnan(steady_rate([3.0]))
    assert math.isnan(steady_rate([3.0, 3.0, 3.0]))
