"""``whileai-ray bench --scale``: a result too large to hold, its rows on disk.

A million-row result is built the way a run spills one (``SpillWriter`` with the fact columns,
a row group at a time): the seeded agent's rows, copied with a distinct task per four rows
(250,000 tasks of k=4). Then, on that Arrow-backed SimulationData:

* ``pass_at``: Arrow compute over the fact columns (target < 5 s for 1,000,000 rows);
* the report tally (what ``report()``, ``search`` and the warnings are built from);
* iterating every row: seconds, and how far the resident memory rose above where it started
  (sampled every 10,000 rows): one row group at a time, not the rows;
* ``select(mode="rl")`` over every row, and ``save()`` streamed to JSONL.

Optionally (``ray=True``) a spilled run end to end: ``simulate()`` of ``run_rows`` rows with
``spill_rows`` far below it, the caller's peak RSS against the same run kept in memory.
"""
from __future__ import annotations

import os
import resource
import tempfile
import time

from ..result.data import SimulationData
from ..result.report import run_tally
from ..result.row_store import new_writer
from ..store.parquet.arrow_rows import ArrowRows
from ..store.parquet.spill import OwnedFolder
from ..testing.seeded_rows import SYSTEM, TOOLS, played

__all__ = ["run_scale_bench", "spilled_result", "arrow_of_every_row"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_mb() -> float:
    """Resident memory now (Linux /proc), else the peak so far."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE / 1024**2
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def spilled_result(n_rows: int, k: int = 4, parent: str | None = None) -> tuple[SimulationData, float]:
    """An Arrow-backed SimulationData of ``n_rows`` graded seeded rows, ``k`` per task, and the
    seconds the spill took to write."""
    base = played(50, k)
    owner = OwnedFolder(parent=parent)
    writer = new_writer(owner.path)
    t0 = time.perf_counter()
    batch: list = []
    for i in range(n_rows):
        src = base[i % len(base)]
        task = i // k
        row = dict(src, scenario_id=f"{src['scenario_id']}-{task}", prompt=f"{src['prompt']} (case {task})",
                   rollout_index=i % k)
        batch.append(row)
        if len(batch) == 4096:
            writer.append(batch)
            batch = []
    writer.append(batch)
    rows = ArrowRows(writer.close(), owner=owner)
    seconds = time.perf_counter() - t0
    return SimulationData(trajectories=rows, system_prompt=SYSTEM, tools=TOOLS, mode="rl",
                          rollouts_per_request=k), seconds


def _timed(fn):
    """``(result, wall seconds, CPU seconds of this process)``: on a shared machine the CPU time
    is the figure a busy neighbour does not inflate."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _load() -> str:
    try:
        return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unknown"


_WALK = """
import json, resource, sys, time
from whileai_ray.result.data import SimulationData
from whileai_ray.store.parquet.arrow_rows import ArrowRows
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * {page} / 1024**2
data = SimulationData(trajectories=ArrowRows(json.loads(sys.argv[1])))
data.trajectories[0]
start, t0, n = rss(), time.perf_counter(), 0
for row in data.trajectories:
    n += 1
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"rows": n, "seconds": seconds, "start_mb": start, "peak_mb": peak}}))
"""


def walk_every_row(files) -> dict:
    """Iterate every row in a fresh process: its resident memory once the files are open, its
    peak while every row is decoded in turn, and the seconds it took (``ru_maxrss``: Linux)."""
    import json
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", _WALK.format(page=_PAGE), json.dumps(list(files))],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


_ARROW = """
import json, resource, sys, time
from whileai_ray.result.data import SimulationData
from whileai_ray.store.parquet.arrow_rows import ArrowRows
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * {page} / 1024**2
data = SimulationData(trajectories=ArrowRows(json.loads(sys.argv[1])))
data.to_arrow_reader()                       # pyarrow's one-time imports
start, t0, c0 = rss(), time.perf_counter(), time.process_time()
table = data.to_arrow()
seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"rows": table.num_rows, "seconds": seconds, "cpu": cpu, "start_mb": start, "peak_mb": peak,
                  "table_mb": table.nbytes / 1024**2}}))
"""


def arrow_of_every_row(files) -> dict:
    """``data.to_arrow()`` of a spilled result in a fresh process: seconds (wall, CPU), resident
    memory once the files are open, the peak, and the table's own Arrow bytes."""
    import json
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", _ARROW.format(page=_PAGE), json.dumps(list(files))],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def bench_spilled_run(run_rows: int = 20_000, spill_rows: int = 2_000) -> dict:
    """The caller's peak RSS of a spilled run; each run in a fresh process so peaks do not mix."""
    import json
    import subprocess
    import sys
    code = ("import json, resource, whileai_ray as wai; from whileai_ray.testing.seeded_rows import TOOLS; "
            "import sys; n, spill = int(sys.argv[1]), int(sys.argv[2]); "
            "d = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, seed=0, budget=n, "
            "advanced={'spill_rows': spill, 'progress_every_s': 3600.0, 'progress_every_rows': 10**6}); "
            "print(json.dumps({'rows': len(d), 'rss': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "
            "'arrow': type(d.trajectories).__name__ == 'ArrowRows', 'rate': d.rows_per_second}))")
    out = {}
    for label, spill in (("spilled", spill_rows), ("in_memory", 10**9)):
        res = subprocess.run([sys.executable, "-c", code, str(run_rows), str(spill)], capture_output=True, text=True,
                             check=True)
        out[label] = json.loads(res.stdout.strip().splitlines()[-1])
    return out


def run_scale_bench(rows: int = 1_000_000, out=print, ray: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="wai-bench-scale-") as tmp:
        rss0 = _rss_mb()
        data, write_s = spilled_result(rows, parent=tmp)
        spilled = data.trajectories
        assert isinstance(spilled, ArrowRows)              # spilled_result's rows live in Parquet files
        out(f"scale spill     {rows:,} rows written as a run spills them: {write_s:.1f}s "
            f"({rows / write_s:,.0f} rows/s), {sum(os.path.getsize(f) for f in spilled.files) / 1024**2:,.0f} MB "
            f"on disk, RSS {_rss_mb() - rss0:+.0f} MB")
        out(f"scale machine   {_load()} (wall times stretch with the load; CPU seconds do not)")
        data.pass_at                                       # first call: pyarrow's one-time imports
        pa, wall, cpu = min((_timed(lambda: data.pass_at) for _ in range(3)), key=lambda r: r[1])
        out(f"scale pass_at   {rows:,} rows, {pa.n_groups:,} tasks, Arrow compute over the fact columns: "
            f"{wall:.2f}s wall, {cpu:.2f}s CPU (target < 5s); {pa}")
        tally, wall, cpu = min((_timed(lambda: run_tally(data)) for _ in range(3)), key=lambda r: r[1])
        out(f"scale report    tally of {tally.n:,} rows (prompts, cells, shapes, tools, faults): "
            f"{wall:.2f}s wall, {cpu:.2f}s CPU")
        walk = walk_every_row(spilled.files)
        out(f"scale iterate   every row of {walk['rows']:,} decoded in turn, in a fresh process: "
            f"{walk['seconds']:.1f}s ({walk['rows'] / walk['seconds']:,.0f} rows/s); resident memory "
            f"{walk['start_mb']:.0f} MB with the files open, peak {walk['peak_mb']:.0f} MB "
            f"(+{walk['peak_mb'] - walk['start_mb']:.0f} MB: one row group at a time; the rows as dicts would "
            f"take ~{rows * 14 / 1024:,.0f} MB)")
        arrow = arrow_of_every_row(spilled.files)
        out(f"scale to_arrow  data.to_arrow() of {arrow['rows']:,} spilled rows, in a fresh process: "
            f"{arrow['seconds']:.1f}s wall, {arrow['cpu']:.1f}s CPU ({arrow['rows'] / arrow['seconds']:,.0f} rows/s); "
            f"resident memory {arrow['start_mb']:.0f} MB with the files open, peak {arrow['peak_mb']:.0f} MB, of "
            f"which the table's Arrow buffers {arrow['table_mb']:.0f} MB (rows decoded a row group at a time)")
        t0 = time.perf_counter()
        sel = data.select(mode="rl", target=1000)
        out(f"scale select    select(mode='rl') over {rows:,} rows: {time.perf_counter() - t0:.1f}s, kept "
            f"{sel.report['kept']}")
        t0 = time.perf_counter()
        rss1 = _rss_mb()
        data.save(os.path.join(tmp, "all.jsonl"))
        out(f"scale save      {rows:,} rows streamed to JSONL: {time.perf_counter() - t0:.1f}s, "
            f"RSS {_rss_mb() - rss1:+.0f} MB")
        del data
    if ray:
        run = bench_spilled_run()
        s, m = run["spilled"], run["in_memory"]
        out(f"scale run       simulate() {s['rows']:,} rows, no-delay agent: caller peak RSS {s['rss']:.0f} MB "
            f"spilled (Arrow-backed: {s['arrow']}) vs {m['rss']:.0f} MB in memory; "
            f"{s['rate']:.0f} vs {m['rate']:.0f} rows/s")
    return 0
