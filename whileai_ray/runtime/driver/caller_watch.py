"""Is the Driver's caller still there? (plain logic, no Ray: the Driver asks it every loop)

The Driver actor outlives a caller killed with SIGKILL for a few seconds (until Ray reaps it),
and for good when Ray does not notice; an orphaned Driver that goes on appending to the
checkpoint would write beside the resume that follows. So the Driver stops once its caller is
*gone*, and only then: a caller that is merely *busy* is not gone. Busy is a caller-pool agent
that holds the GIL for 15 s (a tight loop, a C call), or an ``on_progress`` that blocks: the
caller then neither polls (every 0.2 s, ``runtime/caller/run.py``) nor beats (its heartbeat thread,
once a second, needs the GIL too), yet it will come back. What counts:

* the caller's process is visible from here (same host, same pid space): its existence is the
  signal. It is gone once its pid no longer runs (or runs another process:
  ``store.checkpoint_lock.process_alive``), told within ``LOOK_S`` (0.1 s: the Driver asks every
  turn of its loop, hundreds a second, and a look reads ``/proc``, ~2% of its CPU when it looked
  each time); or once it has been
  *stopped* (SIGSTOP, state ``T``) with no poll or beat for ``timeout_s``: a frozen caller that
  would come back to a run whose checkpoint a resume may have taken over. Silence alone is not
  enough: a process that runs, or waits in a call, is busy.
* the process is not visible (another host: Ray Client): no poll and no heartbeat came for
  ``timeout_s`` seconds (``advanced={"caller_timeout_s": 10}``). The heartbeat thread does not
  wait for the polling loop, so a slow ``on_progress`` does not count.

A run stopped this way without a checkpoint keeps its rows: ``keep_rows`` writes them to a JSONL
file in a folder of its own under the temporary directory, and the error (and the Driver's log)
says where.
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

from ...core.rows import stored_row
from ...store.checkpoint.lock import process_alive
from ...store.checkpoint.lines import dump_line

__all__ = ["CallerWatch", "CALLER_GONE", "LOOK_S", "process_stopped", "keep_rows"]

CALLER_GONE = "caller_gone"
LOOK_S = 0.1            # a visible caller's process is looked at once in this long at most


def process_stopped(identity: dict | None) -> bool:
    """Whether the process of ``identity`` (same host) is stopped by a signal (SIGSTOP, Ctrl-Z):
    state ``T`` in ``/proc/<pid>/stat``. False when it runs, sleeps, or cannot be told."""
    if identity is None:
        return False
    try:
        stat = Path(f"/proc/{int(identity['pid'])}/stat").read_text()
    except (OSError, KeyError, TypeError, ValueError):
        return False
    fields = stat.rsplit(")", 1)[-1].split()
    return bool(fields) and fields[0] == "T"


class CallerWatch:
    def __init__(self, caller: dict | None, timeout_s: float = 10.0, clock=time.monotonic,
                 stopped=process_stopped):
        self.caller = caller
        self.timeout_s = float(timeout_s)
        self._clock = clock
        self._stopped = stopped
        self.last_poll = clock()          # the last poll or heartbeat
        self.reason: str | None = None
        # watch the pid only when it is visible from here at the start (same host, same pid space)
        self._pid_visible = process_alive(caller) is True
        self._next_look = float("-inf")   # when the caller's process is looked at next

    def polled(self) -> None:
        """A poll or a heartbeat came: the caller is there."""
        self.last_poll = self._clock()

    beat = polled

    def gone(self) -> str | None:
        """Why the caller counts as gone (and the Driver must stop), or None."""
        if self.reason is not None:
            return self.reason
        now = self._clock()
        if self._pid_visible:
            if now < self._next_look:
                return None
            self._next_look = now + LOOK_S
        silent = now - self.last_poll
        quiet = self.timeout_s > 0 and silent > self.timeout_s
        who = f"the caller (pid {(self.caller or {}).get('pid')} on {(self.caller or {}).get('host')})"
        if self._pid_visible:
            if process_alive(self.caller) is False:
                self.reason = f"{who} exited"
            elif quiet and self._stopped(self.caller):
                self.reason = (f"{who} is stopped (SIGSTOP) and did not poll for {silent:.0f} s "
                               f"(caller_timeout_s={self.timeout_s:g})")
        elif quiet:
            self.reason = (f"the caller did not poll for {silent:.0f} s "
                           f"(caller_timeout_s={self.timeout_s:g})")
        return self.reason


def keep_rows(rows, run_id: str, parent: str | None = None) -> str:
    """Write ``rows`` (the Driver's internal rows, in order) as a JSONL file in the stored form
    (``wai.load`` reads it) and return its path: ``<tmp>/whileai_ray-stopped/<run_id>-<time>/rows.jsonl``.
    A run stopped because its caller was gone, without a checkpoint, loses no row this way."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(run_id))[:80] or "run"
    base = Path(parent or tempfile.gettempdir()) / "whileai_ray-stopped"
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{safe}-{time.strftime('%Y%m%d-%H%M%S')}-", dir=base))
    path = folder / "rows.jsonl"
    with open(path, "wb") as fh:
        for row in rows:
            fh.write(dump_line(stored_row(row)))
        fh.flush()
        os.fsync(fh.fileno())
    return str(path)
