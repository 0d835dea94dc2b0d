"""Warm the caller's result path while a run plays.

A run's end builds its report from Arrow tables (``score/row_facts.py``: ``facts_table``), and
pyarrow's first ``pa.array`` imports pandas (it checks every input against pandas' types). In
a process's first ``simulate()`` that import came after the last row had landed: 0.4-0.85 s of
the latency bench's cold run (1,000 rows of a 50 ms agent, ~1.6 s of rollouts), with the caller
idle all the while before. So once the run's first rows land (its rollout actors are up: the
import does not compete with their start), a thread makes that first Arrow table; the report
then finds its modules loaded. Nothing else changes: the same modules, imported earlier, once
per process.
"""
from __future__ import annotations

import threading

__all__ = ["warm_result_path", "THREAD_NAME"]

THREAD_NAME = "whileai-warm-result-path"
_lock = threading.Lock()
_thread: threading.Thread | None = None


def warm_result_path() -> threading.Thread:
    """Start (once per process) the thread that loads what a run's report needs; returns it."""
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_warm, name=THREAD_NAME, daemon=True)
            _thread.start()
        return _thread


def _warm() -> None:
    try:
        from ..score.row_facts import facts_table
        facts_table([])             # pyarrow, and pandas through pyarrow's first pa.array
    except Exception:               # the report imports them again, and says what failed
        pass
