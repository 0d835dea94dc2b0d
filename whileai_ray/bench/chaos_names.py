"""``whileai-ray bench --only chaos``'s "two names" line: one checkpoint, two names, two runs at once.

A run (a subprocess on the same Ray, so a live caller of its own) writes ``real.jsonl``; while it
holds the checkpoint, a second ``simulate()`` here is pointed at ``link.jsonl``, a symlink to the
same file. Both names are one file, so the second run must be refused (``CheckpointBusy``) and
the file must end with every row once. Before issue 28 the lock, the sidecars and the index were
named after the unresolved path: both runs wrote, every row twice (504 lines for a budget of 300).

Rows twice = keys written more than once in the checkpoint; the target is 0.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..agents.seeded import seeded_agent
from ..core.identity import row_key
from ..simulation import simulate
from ..store.checkpoint.lock import probe
from ..testing.seeded_rows import TOOLS

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}


class SlowAgent:
    """The seeded agent with a short sleep: the first run is still writing when the second comes."""

    def __init__(self, latency_s: float = 0.05):
        self.inner, self.latency_s = seeded_agent(TOOLS), latency_s
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        time.sleep(self.latency_s)
        return self.inner(message)


def _run(checkpoint, rows):
    return simulate(SlowAgent(), tools=TOOLS, simulator=False, budget=rows, seed=31, concurrency=4,
                    checkpoint=checkpoint, advanced=QUIET)


def _keys(path: Path) -> list:
    out = []
    for line in path.read_bytes().splitlines():
        try:
            out.append(row_key(json.loads(line)))
        except ValueError:
            pass
    return out


def bench_two_names(rows: int = 300) -> dict:
    """Run the two writers (see the module docstring); return the counts of the line."""
    from ..runtime.cluster import ensure_ray, gcs_address   # lazy: ray, once the bench starts
    ensure_ray()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="wai-names-") as folder:
        real, link = Path(folder) / "real.jsonl", Path(folder) / "link.jsonl"
        os.symlink(real, link)
        env = dict(os.environ, RAY_ADDRESS=gcs_address(), RAY_AUTH_MODE=os.environ.get("RAY_AUTH_MODE", "disabled"))
        proc = subprocess.Popen([sys.executable, "-m", "whileai_ray.bench.chaos_names", "--victim", str(real),
                                 str(rows)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 180
            while probe(real) is None and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            held = probe(real) is not None
            refused, ran = 0, 0
            try:
                _run(str(link), rows)
                ran = 1
            except RuntimeError:            # CheckpointBusy: one writer per file, whatever its name
                refused = 1
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        keys = _keys(real)
    return {"rows": len(keys), "budget": rows, "rows_twice": len(keys) - len(set(keys)), "held": held,
            "second_refused": refused, "second_ran": ran, "first_rc": proc.returncode,
            "wall_s": time.monotonic() - t0}


def format_line(c: dict) -> str:
    second = "refused" if c["second_refused"] else "NOT refused" if c["second_ran"] else "not tried"
    return (f"two names for one checkpoint (rows twice: {c['rows_twice']}): a run on real.jsonl and one on a "
            f"symlink to it at once, the second {second}; {c['rows']} rows on disk for a budget of {c['budget']} "
            f"(target: rows twice 0), {c['wall_s']:.0f}s")


if __name__ == "__main__" and sys.argv[1:2] == ["--victim"]:
    _run(sys.argv[2], int(sys.argv[3]))
