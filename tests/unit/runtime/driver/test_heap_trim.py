"""HeapTrim gives freed memory back at most every ``every_s`` seconds of the loop's clock."""
from whileai_ray.runtime.driver.heap_trim import HeapTrim


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_trims_once_per_period_whatever_the_number_of_turns():
    clock = Clock()
    trim = HeapTrim(every_s=10.0, clock=clock)
    for step in range(1000):            # 1,000 loop turns over 35 s
        clock.t = step * 0.035
        trim.maybe()
    assert trim.calls == 3              # at 10, 20 and 30 s


def test_a_trim_runs_here_with_pyarrow_loaded():
    import pyarrow as pa
    pa.array(list(range(100_000)))       # something in the pool to give back
    trim = HeapTrim(every_s=10.0, clock=Clock())
    trim.now()
    assert trim.calls == 1 and trim._trim is not None    # glibc here: malloc_trim was found
