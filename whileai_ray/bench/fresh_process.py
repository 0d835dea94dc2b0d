"""A bench figure measured in a fresh Python process, away from this process's warm state.

``python -m <module> <args>`` plays what it measures and prints its figures as JSON on one line
that starts with a mark; :func:`figures_of` runs it and reads that line back. Two lines need it:
the first run of a process (``bench/warm.py``: a process that has played nothing, whose Ray
has just started) and an actor the OOM killer takes, on a Ray of its own
(``bench/chaos_lanes.py``). A process that fails, or gives no answer in time, comes back as
``{"error": ...}`` saying so; the line that asked prints it instead of its figures.
"""
from __future__ import annotations

import json
import subprocess
import sys

__all__ = ["figures_of"]


def figures_of(module: str, args: list, mark: str, timeout_s: float, env: dict | None = None) -> dict:
    """The figures ``python -m module *args`` printed after ``mark`` (its last such line), or
    ``{"error": ...}``: no answer in ``timeout_s``, or its exit status and the end of its output.
    ``env``: the process's environment (None: this one's)."""
    cmd = [sys.executable, "-m", module, *(str(a) for a in args)]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"no answer in {timeout_s:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(mark):
            return json.loads(line[len(mark):])
    tail = (done.stdout + done.stderr).strip()[-400:].replace("\n", " | ")
    return {"error": f"exit status {done.returncode}: {tail or 'no output'}"}
