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


def test_glibc_is_found_once_a_process_and_without_a_child_process(monkeypatch):
    """Every run's Driver makes a HeapTrim as it opens the run; ``ctypes.util.find_library``
    learned glibc's name by running ``ldconfig -p`` (~50 ms in a new Driver on a busy machine,
    before the first units went out). Here: none of the programs it runs (``ldconfig``, then a
    C compiler or ``ld``) is started, and one lookup a process."""
    import os
    import subprocess
    from whileai_ray.runtime.driver import heap_trim
    started = []
    real = subprocess.Popen

    class Recorded(real):                                   # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            command = args[0] if args else kwargs.get("args")
            program = os.path.basename(str(command[0] if isinstance(command, (list, tuple)) else command).split()[0])
            if program in ("ldconfig", "gcc", "cc", "ld", "objdump"):
                started.append(command)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    heap_trim._libc_calls.cache_clear()                     # as in a new process
    first, second = HeapTrim(every_s=10.0, clock=Clock()), HeapTrim(every_s=10.0, clock=Clock())
    assert started == []
    assert first._trim is not None and second._trim is first._trim
    first.now()
    assert first.calls == 1
