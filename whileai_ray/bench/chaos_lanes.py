"""Two of ``whileai-ray bench --only chaos``'s lines: calls that never return, and actors Ray kills.

* hung calls: an agent that never returns on one prompt in three (``time.sleep(10**6)``),
  ``timeout=3``, ``concurrency=2``. The run must reach its budget and return within ``timeout``
  plus a few seconds of its last landed row; the figure is those seconds (hung calls used to
  take every thread of a lane, and ``simulate()`` never returned).
* OOM-killed actor: an agent that, on one prompt in twenty, takes memory until Ray's memory
  monitor kills its rollout actor. It runs on a Ray of its own, started by a subprocess with the
  monitor's threshold 3 GiB above the memory the machine uses then, so the kill comes at ~3 GiB
  (the bench's own Ray is left alone). Figures: rows landed against the budget, lanes replaced
  and how their actors died, and the poison units lost (as ``worker_crashed``).

Both agents are classes of this module, so the rollout actors (which import whileai_ray) can
play them.
"""
from __future__ import annotations

import json
import os
import sys
import time
import zlib

from ..agents.seeded import seeded_agent
from ..simulation import simulate
from ..testing.seeded_rows import TOOLS
from .fresh_process import figures_of

__all__ = ["HangingAgent", "MemoryHog", "bench_hung_calls", "bench_oom_killed", "chaos_lane_lines", "format_hung_line",
           "format_oom_line"]

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
OOM_MARGIN_BYTES = 3 * 2**30


class HangingAgent:
    """The seeded agent, except on about one prompt in ``every``: that call never returns."""

    def __init__(self, every: int = 3):
        self.inner, self.every = seeded_agent(TOOLS), every
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        if zlib.crc32(message.encode("utf-8", "replace")) % self.every == 0:
            time.sleep(10**6)
        return self.inner(message)


class MemoryHog:
    """The seeded agent, except on about one prompt in ``every``: it takes memory, 128 MiB at a time
    (8 GiB at most), until something kills its process."""

    def __init__(self, every: int = 20):
        self.inner, self.every = seeded_agent(TOOLS), every
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        if zlib.crc32(message.encode("utf-8", "replace")) % self.every == 0:
            held = []
            for _ in range(64):
                held.append(b"\x01" * (128 * 2**20))
                time.sleep(0.02)
            time.sleep(60)
        return self.inner(message)


def bench_hung_calls(rows: int = 60, timeout: float = 3.0) -> dict:
    """One run of ``HangingAgent`` on the bench's Ray; its figures."""
    t0 = time.monotonic()
    data = simulate(HangingAgent(), tools=TOOLS, simulator=False, budget=rows, seed=5, timeout=timeout,
                    concurrency=2, advanced=QUIET)
    wall = time.monotonic() - t0
    ro = data.search["rollouts"]
    last = data.search["timings"]["last_row_s"]
    return {"rows": len(data.rows()), "budget": rows, "timeout": timeout, "wall_s": wall,
            "after_last_row_s": wall - last if last is not None else float("nan"),
            "timed_out": ro.get("timed_out", 0), "lost_timed_out": ro.get("lost_by", {}).get("timed_out", 0),
            "pool": data.report()["placement"]["pool"]}


def oom_threshold() -> float:
    """``RAY_memory_usage_threshold`` that kills ``OOM_MARGIN_BYTES`` above what the machine uses now
    (at most 0.9): an agent that takes memory is killed by Ray's monitor, nothing else is."""
    mem = {}
    with open("/proc/meminfo") as fh:
        for line in fh:
            key, value = line.split(":")
            mem[key] = int(value.split()[0]) * 1024
    return min(0.9, (mem["MemTotal"] - mem["MemAvailable"] + OOM_MARGIN_BYTES) / mem["MemTotal"])


def _oom_main(rows: int) -> None:
    """In the subprocess: a Ray of its own whose memory monitor kills 3 GiB above today's use."""
    os.environ["RAY_memory_usage_threshold"] = f"{oom_threshold():.4f}"
    os.environ["RAY_memory_monitor_refresh_ms"] = "100"
    t0 = time.monotonic()
    data = simulate(MemoryHog(), tools=TOOLS, simulator=False, budget=rows, seed=11, concurrency=4, timeout=90,
                    advanced={**QUIET, "ray": {"rollout_actors": 2}})
    poison = data.search.get("poison") or {}
    print("RESULT " + json.dumps({
        "rows": len(data.rows()), "budget": rows, "wall_s": time.monotonic() - t0,
        "lanes_replaced": poison.get("lanes_replaced", 0), "lane_deaths": poison.get("lane_deaths", {}),
        "lost_by": data.search["rollouts"].get("lost_by", {}), "stopped_because": data.stopped_because}), flush=True)


def bench_oom_killed(rows: int = 60, limit_s: float = 300.0) -> dict:
    """``MemoryHog`` on a Ray of its own (a subprocess); its figures, or ``{"error": ...}``."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.setdefault("RAY_AUTH_MODE", "disabled")
    out = figures_of("whileai_ray.bench.chaos_lanes", ["--oom", rows], "RESULT ", limit_s, env=env)
    return {**out, "budget": rows} if "error" in out else out


def format_hung_line(c: dict) -> str:
    return (f"hung calls     1 in 3 calls never return, timeout={c['timeout']:g}: {c['rows']}/{c['budget']} rows "
            f"({c['pool']}), returned {c['after_last_row_s']:.1f}s after the last landed row (target <= timeout "
            f"+ a few s), {c['timed_out']} calls cut, {c['lost_timed_out']} units lost as timed_out, "
            f"{c['wall_s']:.0f}s")


def format_oom_line(c: dict) -> str:
    if "error" in c:
        return f"OOM-killed     FAILED ({c['budget']} rows asked): {c['error']}"
    deaths = ", ".join(f"{n} {k}" for k, n in sorted(c["lane_deaths"].items())) or "none"
    return (f"OOM-killed     actor: rows landed {c['rows']}/{c['budget']}, lanes replaced {c['lanes_replaced']} "
            f"({deaths}), poison units lost {c['lost_by'].get('worker_crashed', 0)} as worker_crashed, "
            f"{c['lost_by'].get('rollout_failed', 0)} as rollout_failed (target 0), {c['wall_s']:.0f}s")


def chaos_lane_lines(quick: bool = False) -> list[str]:
    """The two lines, as ``bench --only chaos`` prints them."""
    rows = 30 if quick else 60
    return [format_hung_line(bench_hung_calls(rows=rows)), format_oom_line(bench_oom_killed(rows=rows))]


if __name__ == "__main__" and sys.argv[1:2] == ["--oom"]:
    _oom_main(int(sys.argv[2]))
