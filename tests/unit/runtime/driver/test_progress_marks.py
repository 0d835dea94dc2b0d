"""The docs' cadence: a progress line every 10 events however many land between two polls, and
the documented logger (issue 30 items 3 and 4). Plain logic: the Driver's marks and the
caller's reporter, no Ray."""
import logging

from whileai_ray.result.progress.lines import ProgressReporter
from whileai_ray.result.progress.run_log import listens
from whileai_ray.runtime.driver.progress_marks import ProgressMarks


def _snap(landed, rerolled=0, lost=0):
    return {"rows": landed, "cap": 60, "landed": landed, "resumed": 0, "rerolled": rerolled, "rerolled_by": {},
            "timed_out": 0, "lost": lost, "lost_by": {}, "inflight": 2, "situations": landed, "elapsed_s": 0.1}


def test_a_mark_each_time_the_events_pass_a_multiple_of_every():
    marks = ProgressMarks(10)
    for events in (2, 4, 9, 10, 12, 24, 29, 30):
        marks.note(events, lambda e=events: _snap(e))
    assert [m["landed"] for m in marks.take()] == [10, 24, 30]     # 24 passed 20: one mark, its own numbers
    assert marks.take() == []
    marks.note(31, lambda: _snap(31))
    assert marks.take() == []                                      # the next is due at 40


def test_marks_wait_bounded_for_a_poll():
    marks = ProgressMarks(1, keep=5)
    for events in range(1, 50):
        marks.note(events, lambda e=events: _snap(e))
    assert [m["landed"] for m in marks.take()] == [45, 46, 47, 48, 49]


def test_the_reporter_writes_a_line_per_mark_even_when_one_poll_brings_thirty_rows():
    seen = []
    rep = ProgressReporter(seen.append, every_rows=10, every_s=3600)
    rep.update({**_snap(34), "marks": [_snap(10), _snap(21), _snap(30)]})
    rep.update({**_snap(60), "marks": [_snap(30), _snap(40), _snap(50), _snap(60)]})   # an old mark is not repeated
    assert [d["landed"] for d in seen] == [10, 21, 30, 40, 50, 60]
    assert all(set(d) >= {"rows", "cap", "landed", "lost_by", "elapsed_s"} for d in seen)


def test_without_marks_the_poll_decides_as_before():
    seen = []
    rep = ProgressReporter(seen.append, every_rows=10, every_s=3600)
    for n in (4, 12, 15, 26):
        rep.update(_snap(n))
    assert [d["landed"] for d in seen] == [12, 26]


def test_a_handler_on_the_documented_logger_hears_the_lines_and_whileai_ray_still_does():
    heard = {"whileai.simulations": [], "whileai_ray": []}

    class Keep(logging.Handler):
        def __init__(self, name):
            super().__init__()
            self.name_ = name

        def emit(self, record):
            heard[self.name_].append(record.getMessage())

    docs, old = logging.getLogger("whileai.simulations"), logging.getLogger("whileai_ray")
    handlers = {n: Keep(n) for n in heard}
    try:
        assert not listens()
        for log in (docs, old):
            log.addHandler(handlers[log.name])
        old.setLevel(logging.INFO)                      # only the old name set up: it hears it there
        ProgressReporter(every_rows=10).update(_snap(10))
        assert heard["whileai_ray"] and not heard["whileai.simulations"]
        docs.setLevel(logging.INFO)                     # both: each hears each line once
        ProgressReporter(every_rows=10).update(_snap(20))
        assert len(heard["whileai.simulations"]) == 1 and len(heard["whileai_ray"]) == 2
        assert heard["whileai.simulations"][0].startswith("20/60 rollouts") and listens()
    finally:
        for log in (docs, old):
            log.removeHandler(handlers[log.name])
            log.setLevel(logging.NOTSET)
