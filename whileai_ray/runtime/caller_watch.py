"""Is the Driver's caller still there? (plain logic, no Ray: the Driver asks it every loop)

The Driver actor outlives a caller killed with SIGKILL for a few seconds (until Ray reaps it),
and for good when Ray does not notice; an orphaned Driver that goes on appending to the
checkpoint would write beside the resume that follows. The caller polls the Driver every 0.2 s
(``runtime/run.py``), so the Driver stops once either:

* the caller's process is gone: same host, its pid no longer running or reused by another
  process (``store.checkpoint_lock.process_alive``), told within one loop (0.5 s); or
* no poll came for ``timeout_s`` seconds (``advanced={"caller_timeout_s": 10}``): a caller on
  another host (Ray Client), or one that is frozen (SIGSTOP, a laptop lid) and would come back
  to a run it no longer watches.
"""
from __future__ import annotations

import time

from ..store.checkpoint_lock import process_alive

__all__ = ["CallerWatch", "CALLER_GONE"]

CALLER_GONE = "caller_gone"


class CallerWatch:
    def __init__(self, caller: dict | None, timeout_s: float = 10.0, clock=time.monotonic):
        self.caller = caller
        self.timeout_s = float(timeout_s)
        self._clock = clock
        self.last_poll = clock()
        self.reason: str | None = None
        # watch the pid only when it is visible from here at the start (same host, same pid space)
        self._pid_visible = process_alive(caller) is True

    def polled(self) -> None:
        self.last_poll = self._clock()

    def gone(self) -> str | None:
        """Why the caller counts as gone (and the Driver must stop), or None."""
        if self.reason is not None:
            return self.reason
        if self._pid_visible and process_alive(self.caller) is False:
            self.reason = f"the caller (pid {self.caller.get('pid')} on {self.caller.get('host')}) exited"
        elif self.timeout_s > 0 and self._clock() - self.last_poll > self.timeout_s:
            self.reason = (f"the caller did not poll for {self._clock() - self.last_poll:.0f} s "
                           f"(caller_timeout_s={self.timeout_s:g})")
        return self.reason
