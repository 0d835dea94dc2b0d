"""The ``driver`` bench line: CPU per landed row of the Driver actor, the rollout actors and the caller.

The Driver is the one serial part of a run: every row, on any number of nodes, costs it some CPU,
so ``1 / (Driver CPU per row)`` is the most rows per second any cluster can reach with one Driver
(issue 32). This line plays the no-delay demo agent (``seeded_agent``) on 2 rollout actors, with a
checkpoint, in explore and in rl mode, and reads each process's CPU time (user + system, from
``/proc/<pid>/stat``) before and after the run. Ray names its worker processes after the actor
class they host (``ray::Driver``, ``ray::ReusableRolloutWorker``, ``ray::JudgeWorker``, the Driver's
``ray::ParquetWriter`` writing the checkpoint's Parquet copy: ``runtime/driver/parquet_writer.py``), which is
how the processes are told apart here; the caller is this process. A small run first starts the
Driver and its actors, so the measured run finds them warm and start-up is not counted.

A third run plays the 13-tool retail set of the repository's corpus (``tests/data/tools_retail.json``,
as the ``schema`` line does) in explore mode: a user's tools cost the lanes more than the demo's one
(ids drawn from schema patterns, arguments checked against richer schemas).

The line also says how the asks the lanes wrote for the planner served it (``search["edge_asks"]``:
the share of the asks taken that came from the lanes, asks written a row, the share never used):
asks written for nothing are lane CPU the ``all`` figure pays.

Linux only (``/proc``); elsewhere the line says it cannot measure.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from ..agents.seeded import seeded_agent
from ..simulation import simulate
from ..testing.seeded_rows import TOOLS
from .schema_line import CORPUS_DIR

__all__ = ["bench_driver", "format_driver_line", "cpu_by_role", "ROLES"]

# process title prefix -> role (Ray sets a worker's title to ``ray::<ActorClass>[.<method>()]``)
ROLES = {"ray::Driver": "driver", "ray::ReusableRolloutWorker": "rollout", "ray::RolloutWorker": "rollout",
         "ray::JudgeWorker": "judge", "ray::ParquetWriter": "parquet"}
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()      # after "pid (comm) ": state is field 3
    return (int(fields[11]) + int(fields[12])) / _TICK   # utime, stime (fields 14 and 15)


def _title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode("utf-8", "replace")
    except OSError:
        return ""


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def _descends(pid: int, root: int) -> bool:
    """Is ``root`` among ``pid``'s ancestors (a Ray started by ``root``: its raylet's workers)?"""
    for _ in range(64):
        parent = _parent(pid)
        if parent is None or parent <= 1:
            return False
        if parent == root:
            return True
        pid = parent
    return False


def cpu_by_role(root: int | None = None) -> dict[int, tuple[str, float]]:
    """``{pid: (role, cpu seconds)}`` of this machine's Ray workers that host a run's actors;
    with ``root``, only the processes descending from it (the Ray a bench started: other
    people's runs on a shared machine are not counted)."""
    out: dict[int, tuple[str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        title = _title(pid)
        role = next((r for prefix, r in ROLES.items() if title.startswith(prefix)), None)
        if role is None or (root is not None and not _descends(pid, root)):
            continue
        cpu = _cpu_seconds(pid)
        if cpu is not None:
            out[pid] = (role, cpu)
    return out


def _spent(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds each role spent between two readings (a process that appeared counts whole)."""
    spent: dict[str, float] = {}
    for pid, (role, cpu) in after.items():
        spent[role] = spent.get(role, 0.0) + cpu - (before[pid][1] if pid in before else 0.0)
    return spent


def bench_driver(rows: int = 30_000, mode: str = "explore", actors: int = 2, tools: str | None = None) -> dict:
    """Play ``rows`` rows of the no-delay agent with a checkpoint on ``actors`` rollout actors and
    return the CPU per landed row (µs) of the Driver, the rollout actors, the caller and all.
    ``tools``: a tool set of the repository's corpus (``"retail"``: ``tests/data/tools_retail.json``)
    instead of the demo's one tool (a user's tools cost the lanes more: ids drawn from schema
    patterns, arguments checked against richer schemas)."""
    if not Path("/proc/self/stat").exists():
        return {"mode": mode, "rows": 0, "error": "no /proc: the driver line measures on Linux only"}
    tool_set = TOOLS
    if tools is not None:
        path = CORPUS_DIR / f"tools_{tools}.json"
        if not path.is_file():
            return {"mode": mode, "rows": 0, "tools": tools, "error": f"corpus not found ({path})"}
        tool_set = json.loads(path.read_text())
    knobs = {"ray": {"rollout_actors": actors}, "progress_every_s": 3600.0, "progress_every_rows": 10**6}
    with tempfile.TemporaryDirectory(prefix="wai-bench-driver-") as folder:
        simulate(seeded_agent(tool_set), tools=tool_set, simulator=False, budget=200, seed=1, mode=mode,
                 checkpoint=os.path.join(folder, "warm.jsonl"), advanced=knobs)     # Driver and actors up
        # this process's Ray (started by the first simulate) only; all of them when it joined one
        root = os.getpid() if any(r == "driver" for r, _ in cpu_by_role(os.getpid()).values()) else None
        before, caller0, t0 = cpu_by_role(root), time.process_time(), time.monotonic()
        data = simulate(seeded_agent(tool_set), tools=tool_set, simulator=False, budget=rows, seed=2, mode=mode,
                        checkpoint=os.path.join(folder, "run.jsonl"), advanced=knobs)
        wall, caller = time.monotonic() - t0, time.process_time() - caller0
        spent = _spent(before, cpu_by_role(root))
    landed = max(1, len(data))
    per_row = {role: seconds / landed * 1e6 for role, seconds in spent.items()}
    per_row["caller"] = caller / landed * 1e6
    return {"mode": mode, "rows": len(data), "actors": actors, "tools": tools, "wall_s": wall,
            "rows_s": len(data) / wall,
            "us_per_row": per_row, "all_us": sum(per_row.values()),
            "ceiling_rows_s": 1e6 / per_row["driver"] if per_row.get("driver") else None,
            "edge_asks": data.search.get("edge_asks")}


def format_driver_line(r: dict) -> str:
    if r.get("error"):
        return f"driver         {r['mode']}{' (' + r['tools'] + ' tools)' if r.get('tools') else ''}: {r['error']}"
    us = r["us_per_row"]
    parts = ", ".join(f"{role} {us[role]:,.0f}" for role in ("driver", "rollout", "parquet", "judge", "caller")
                      if role in us)
    ceiling = f"{r['ceiling_rows_s']:,.0f}" if r["ceiling_rows_s"] else "n/a"
    agent = "no-delay agent" + (f" on the {r['tools']} tools" if r.get("tools") else "")
    line = (f"driver         {r['mode']}, {agent}, {r['rows']:,} rows, checkpoint, {r['actors']} rollout actors: "
            f"CPU per landed row (us) {parts}, all {r['all_us']:,.0f} (targets: Driver <= 100, all <= 500); "
            f"{r['rows_s']:,.0f} rows/s wall; one Driver's ceiling ~{ceiling} rows/s")
    edge = r.get("edge_asks")
    if edge and edge.get("written"):    # asks the lanes wrote for the planner (driver/edge_writing.py)
        per_row = edge["written"] / max(1, r["rows"])
        line += (f"; asks from the lanes {edge['hit_rate']:.1%} of those taken, {per_row:.2f} written a row, "
                 f"{edge['unused'] / edge['written']:.1%} of them unused")
    return line
