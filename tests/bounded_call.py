"""``bounded(fn, seconds)``: run ``fn()`` (usually a ``simulate()``) in a thread and return its value,
re-raise its exception, or fail the test when it has not returned in ``seconds``: a hang is a
failure, never a suite that waits. Imported by tests as ``from bounded_call import bounded``
(pytest puts ``tests/`` on the path for its conftest)."""
from __future__ import annotations

import threading

import pytest


def bounded(fn, seconds: float = 240.0):
    box: dict = {}

    def go():
        try:
            box["value"] = fn()
        except BaseException as exc:          # re-raised in the test's thread
            box["error"] = exc
    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"did not return within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]
