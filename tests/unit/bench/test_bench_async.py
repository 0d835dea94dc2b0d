"""The async bench line's steady figure: the refill rate after the pipe is full (no Ray here)."""
import math

from whileai_ray.bench.async_line import refill_rate
from whileai_ray.bench.lines import LINES, run_bench


def test_rows_landing_in_waves_of_the_concurrency_read_as_the_ideal():
    # 4 waves of 1,000 rows, each landing within 10 ms of the wave's second: 1,000 rows/s
    seconds = [wave + 1 + i * 1e-5 for wave in range(4) for i in range(1000)]
    assert abs(refill_rate(seconds, 1000) - 1000) < 5
    # a pipe that refills at half speed after the first wave reads half
    slow = [1 + i * 1e-5 for i in range(1000)] + [1 + (i + 1) * 0.002 for i in range(3000)]
    assert abs(refill_rate(slow, 1000) - 500) < 1
    assert math.isnan(refill_rate(seconds[:1000], 1000))


def test_bench_lines_are_named_and_an_unknown_name_is_refused():
    assert list(LINES) == ["latency", "cpu", "driver", "metrics", "model", "async", "selection", "micro", "judge",
                           "resume", "chaos", "nodes", "shared", "schema", "viewer"]
    try:
        run_bench(only=["asnyc"])            # refused before Ray starts (the unit conftest makes ray.init raise)
    except ValueError as exc:
        assert "unknown line(s) asnyc;" in str(exc) and "async" in str(exc)
    else:
        raise AssertionError("an unknown bench line was accepted")


def test_whileai_ray_bench_only_with_an_unknown_line_exits_2_naming_the_lines(capsys):
    from whileai_ray.cli import main
    assert main(["bench", "--only", "async,asnyc"]) == 2
    err = capsys.readouterr().err
    assert "whileai-ray bench: bench --only: unknown line(s) asnyc;" in err and "latency, cpu" in err
