"""Progress lines: what a long run says while it goes.

One line every ``every_rows`` events (landed + re-rolled + lost) or ``every_s`` seconds,
plus one at the end, in the seeds' format::

    120/2404 rollouts, 601 situations written, 1h2m elapsed, ~19h left, 96 re-rolled, 3 lost (3 agent error)

Lines go to the ``whileai.simulations`` logger at INFO (``whileai_ray`` hears them too:
``progress/run_log.py``), and to stderr when no handler listens, unless
the place has a better display: a tqdm bar in a terminal, the HTML bar in a notebook
(``result/progress/display.py``). ``on_progress`` receives the same numbers as a dict on every
line, whatever the budget.

The last line has no ETA: it says the run ended and why (``..., ended: tasks_done (every pinned
task has its rollouts)``), and its ``on_progress`` dict carries ``stopped_because`` too.
"""
from __future__ import annotations

import logging
import sys
import time

from ...core.progress import ProgressDict
from .run_log import announce, listens, logger   # noqa: F401  (logger: simulation.py logs its warnings there)

DICT_KEYS = ("rows", "cap", "landed", "resumed", "rerolled", "rerolled_by", "timed_out", "lost",
             "lost_by", "inflight", "situations", "elapsed_s")
REASON_WORDS = {"agent_error": "agent error", "empty_reply": "empty reply", "tool_markup": "tool markup",
                "worker_crashed": "worker crashed", "unserializable_result": "unserializable result",
                "rollout_failed": "rollout failed", "timed_out": "timed out"}


def clock(seconds: float) -> str:
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s"
    return f"{s // 3600}h{(s % 3600) // 60}m"


def eta(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))}s"
    if seconds < 3600:
        return f"{round(seconds / 60)}m"
    return clock(seconds)


STOP_WORDS = {
    "budget": "the budget is spent", "time_budget": "time_budget ran out",
    "tasks_done": "every pinned task has its rollouts",
    "situations_exhausted": "every situation asked for has its rollouts",
    "writer_exhausted": "the situation writer has nothing new to ask",
    "saturation": "every planned cell has its copies", "agent_failed": "the agent failed on every rollout",
    "empty_replies": "the agent returned empty replies", "writer_failed": "no situation could be written",
}


def format_line(snap: ProgressDict) -> str:
    """One progress line; the last one (``stopped_because`` set) says the run ended and why, with no ETA."""
    parts = [f"{snap['rows']}/{snap['cap']} rollouts" + (f" ({snap['resumed']} resumed)" if snap.get("resumed") else ""),
             f"{snap.get('situations', 0)} situations written", f"{clock(snap.get('elapsed_s', 0))} elapsed"]
    landed = snap.get("landed", 0)
    ended = snap.get("stopped_because")
    if not ended and landed >= 5 and snap["rows"] < snap["cap"] and snap.get("elapsed_s", 0) > 0:
        rate = landed / snap["elapsed_s"]
        parts.append(f"~{eta((snap['cap'] - snap['rows']) / rate)} left")
    if snap.get("rerolled"):
        parts.append(f"{snap['rerolled']} re-rolled")
    if snap.get("lost"):
        why = ", ".join(f"{n} {REASON_WORDS.get(k, k)}" for k, n in sorted(snap.get("lost_by", {}).items()))
        parts.append(f"{snap['lost']} lost ({why})")
    if ended:
        parts.append(f"ended: {ended} ({STOP_WORDS.get(ended, ended.replace('_', ' '))})")
    return ", ".join(parts)


class ProgressReporter:
    """Lines (and ``on_progress``) every ``every_rows`` events or ``every_s`` seconds; with a
    ``display`` (a terminal or notebook bar: ``progress_display.choose_display()`` picks the one
    that fits the place) the bar follows every snapshot and replaces the stderr lines."""

    def __init__(self, on_progress=None, every_rows: int = 10, every_s: float = 10.0, base: dict | None = None,
                 display=None):
        self.on_progress = on_progress
        self.every_rows = every_rows
        self.every_s = every_s
        self.base = base or {}
        self._last_events = 0
        self._last_t = time.monotonic()
        self.lines: list[str] = []
        self.display = display

    def _events(self, snap: ProgressDict) -> int:
        return snap.get("landed", 0) + snap.get("rerolled", 0) + snap.get("lost", 0)

    def update(self, snap: ProgressDict) -> None:
        """One poll's snapshot. Its ``marks`` (the Driver's snapshots each time the events passed a
        multiple of ``every_rows``: ``runtime/driver/progress_marks.py``) give the count-driven lines, at
        the numbers of their moment, however many rows landed between two polls; without marks
        the poll's own count decides. ``every_s`` without a line writes one from the poll."""
        marks = snap.pop("marks", None)
        for mark in marks or ():
            if self._events(mark) > self._last_events:
                self.emit(mark)
        if snap.get("done"):
            return
        if self.display is not None and snap.get("cap", 0) >= 10:
            self.display.update(self._with_base(snap))
        ev = self._events(snap)
        by_count = marks is None and ev - self._last_events >= self.every_rows
        if by_count or (time.monotonic() - self._last_t >= self.every_s and ev > 0):
            self.emit(snap)

    def _with_base(self, snap: ProgressDict) -> ProgressDict:
        return {**snap, **{k: v + snap.get(k, 0) for k, v in self.base.items()}} if self.base else snap

    def emit(self, snap: ProgressDict) -> None:
        self._last_events = self._events(snap)
        self._last_t = time.monotonic()
        snap = self._with_base(snap)
        line = format_line(snap)
        self.lines.append(line)
        if snap.get("cap", 0) >= 10:
            announce(logging.INFO, line)
            if self.display is None and not listens(logging.INFO):
                print(line, file=sys.stderr, flush=True)
        if self.on_progress is not None:
            keys = DICT_KEYS + (("stopped_because",) if snap.get("stopped_because") else ())
            self.on_progress({k: snap.get(k) for k in keys})

    def close(self, snap: ProgressDict | None = None) -> None:
        """The run ended (``snap``: its final numbers) or failed (None): the bar is finished."""
        if self.display is not None:
            self.display.close(snap if snap is not None and snap.get("cap", 0) >= 10 else None)
            self.display = None
