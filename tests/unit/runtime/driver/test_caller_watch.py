"""Issue 28 item 4: the Driver's caller watch tells a busy caller from a gone one.

A caller whose process is visible (same host) is gone when its process exits or sits stopped
(SIGSTOP) past ``caller_timeout_s``; silence alone (an agent holding the GIL, a slow
``on_progress``) is not enough. A caller on another host is judged by its polls and heartbeats."""
import os
import signal
import socket
import subprocess
import time

import pytest

from whileai_ray.runtime.driver.caller_watch import LOOK_S, CallerWatch, process_stopped
from whileai_ray.store.checkpoint.lock import caller_identity


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def child():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_silent_but_running_caller_on_this_host_is_busy_not_gone():
    clock = Clock()
    watch = CallerWatch(caller_identity(), timeout_s=2.0, clock=clock)
    clock.now += 30.0                       # no poll for 30 s: the GIL was held, on_progress slept
    assert watch.gone() is None


def test_a_stopped_caller_is_gone_once_silent_past_the_timeout(child):
    clock = Clock()
    watch = CallerWatch(caller_identity(child.pid), timeout_s=2.0, clock=clock)
    child.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while not process_stopped({"pid": child.pid}) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process_stopped({"pid": child.pid})
    clock.now += 1.0
    assert watch.gone() is None             # stopped, but not yet for caller_timeout_s
    clock.now += 2.0
    assert "stopped" in (watch.gone() or "")
    child.send_signal(signal.SIGCONT)


def test_an_exited_caller_is_gone_within_a_look(child):
    clock = Clock()
    watch = CallerWatch(caller_identity(child.pid), timeout_s=60.0, clock=clock)
    assert watch.gone() is None
    child.kill()
    child.wait()
    clock.now += LOOK_S                     # its process is looked at once a LOOK_S (the loop asks every turn)
    assert "exited" in (watch.gone() or "")
    assert "exited" in (watch.gone() or "")  # and stays gone


def test_a_remote_callers_heartbeats_keep_it_there_and_silence_ends_it():
    clock = Clock()
    far = {"pid": os.getpid(), "host": socket.gethostname() + "-elsewhere", "start": None}
    watch = CallerWatch(far, timeout_s=2.0, clock=clock)
    for _ in range(10):                     # the polling loop is stuck in on_progress; the heart beats
        clock.now += 1.0
        watch.beat()
        assert watch.gone() is None
    clock.now += 2.5
    assert "did not poll" in (watch.gone() or "")
