"""``whileai-ray bench``: the speed figures the issues quote, measured end to end.

Each line runs a real ``simulate()`` on the local Ray (started once for all lines):

* latency-bound: the seeded agent behind a 50 ms sleep at concurrency 32, 2,000 rows;
  rows/s against the ideal concurrency/latency = 640 rows/s. ``steady`` is the slope of rows
  landed against time (``steady_rate``: what the pipe sustains); ``wall`` includes actor start-up.
* warm second run (``bench/warm.py``): two 1,000-row runs of the 50 ms agent in one process, the
  second on the first one's Driver and rollout actors; wall rate vs C/L and time to first row.
* CPU-bound: the seeded agent with no delay, 20,000 explore rows; rows/s and the caller's
  peak RSS.
* metrics: the CPU-bound line with Ray metrics off and on (alternating pairs, best of each),
  and the recorder's own CPU time for that many rows (runtime/metrics/bench.py).
* resume exact / plan snapshot: a 19,000-row run with a checkpoint, then the same call with a
  20,000 budget: time to the first new row, the planner snapshot's size as a share of the
  checkpoint's, and the longest pause a snapshot put on the driver's loop (target <= 5%, <= 50 ms).
* async: an ``async def`` agent awaiting 1 s at concurrency 1,000, 4,000 rows; steady (the refill
  rate once the first 1,000 landed) and wall against the ideal 1,000 rows/s (``bench/async_line.py``).
* schema (``bench/schema_line.py``): the seeded agent on three domains of real tool schemas; the
  share of success calls that validate, refused invalid calls, rows/s; template write() cost.
* micro: per-call costs of the pure parts (``bench/micro.py``), each beside its target.
* chaos (``bench/chaos.py``): kills, poison units, corrupt sidecars and a second writer against
  one run; rows lost and rows duplicated, target 0 and 0. Then (``bench/chaos_lanes.py``) calls
  that never return (seconds from the last row to the return) and an OOM-killed actor (rows
  landed against the budget, lanes replaced).

``whileai-ray bench --only async,cpu`` runs some lines (names in :data:`LINES`).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
import time

import numpy as np

from ..agents.seeded import seeded_agent
from ..simulation import simulate
from ..store.checkpoint.jsonl import JsonlCheckpoint
from ..testing.seeded_rows import TOOLS
from ..testing.server import start_server
from .async_line import bench_async, format_async_line
from .chaos import bench_chaos
from .chaos import format_line as chaos_line
from .chaos_lanes import chaos_lane_lines
from .chaos_names import bench_two_names
from .chaos_names import format_line as names_line
from .micro import micro_lines
from .search import bench_selection, format_line
from .shared_storage import bench_shared_storage
from .shared_storage import format_line as shared_line
from .sleepy import SleepyAgent
from .schema_line import bench_schema
from .schema_line import format_line as schema_line
from .warm import bench_warm
from .warm import format_line as warm_line


def steady_rate(seconds) -> float:
    """Rows per second while the pipe is full: the least-squares slope of rows landed against
    landing time (NaN under two rows, or when every row landed at one instant).

    Rows land in bursts: a lane answers a chunk at once, so a 100 ms agent's rows come back 32
    at a time every 200 ms (``runtime/driver/chunk_sizing.py``). ``(rows - 1) / (last - first)``
    counted the whole first burst as landed in no time and read high by up to one burst over the
    run: a 1-node run of the ``nodes`` line read 162 rows/s against its ideal of 160, a 3-node run
    (three lanes whose bursts interleave) ~1% high, so their ratio read ~3% low. The slope reads a
    staircase of equal bursts at exactly their rate (its steps' midpoints lie on a line of that
    slope), and an even stream at its rate too."""
    ts = np.sort(np.asarray(seconds, dtype=np.float64))
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return float("nan")
    t = ts - ts.mean()
    count = np.arange(len(ts), dtype=np.float64)
    return float((t * (count - count.mean())).sum() / (t * t).sum())


def _steady_rate(data) -> float:
    return steady_rate(data.row_seconds)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_latency(rows: int = 2000, concurrency: int = 32, latency_s: float = 0.05, reproducible=True) -> dict:
    agent = SleepyAgent(TOOLS, latency_s)
    t0 = time.monotonic()
    data = simulate(agent, tools=TOOLS, simulator=False, budget=rows, concurrency=concurrency,
                    seed=0, reproducible=reproducible, advanced={"progress_every_s": 3600.0,
                                                                 "progress_every_rows": 10**6})
    wall = time.monotonic() - t0
    ideal = concurrency / latency_s
    steady = _steady_rate(data)
    return {"rows": len(data), "wall_rows_s": len(data) / wall, "steady_rows_s": steady, "ideal": ideal,
            "ratio": steady / ideal, "wall_ratio": len(data) / wall / ideal, "stopped": data.stopped_because}


def bench_cpu(rows: int = 20000, concurrency: int = 32, metrics: bool = True) -> dict:
    t0 = time.monotonic()
    data = simulate(seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=rows, concurrency=concurrency,
                    seed=0, advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6,
                                      "metrics": metrics})
    wall = time.monotonic() - t0
    return {"rows": len(data), "rows_s": len(data) / wall, "peak_rss_mb": _rss_mb(),
            "distinct_prompts": data.report()["unique_prompts"], "stopped": data.stopped_because}


def _line_latency(quick: bool, out) -> None:
    n_lat = 500 if quick else 2000
    lat = bench_latency(rows=n_lat)
    out(f"latency-bound  50ms agent C=32 {lat['rows']} rows: steady {lat['steady_rows_s']:.0f} rows/s, "
        f"wall {lat['wall_rows_s']:.0f} rows/s, ideal C/L {lat['ideal']:.0f} rows/s, "
        f"ratio {lat['ratio']:.0%} (wall {lat['wall_ratio']:.0%}), stopped {lat['stopped']}")
    out(warm_line(bench_warm()))
    lat2 = bench_latency(rows=n_lat, reproducible=False)
    out(f"latency-bound  reproducible=False: steady {lat2['steady_rows_s']:.0f} rows/s vs reproducible=True "
        f"{lat['steady_rows_s']:.0f} rows/s ({(lat2['steady_rows_s'] - lat['steady_rows_s']) / lat2['steady_rows_s']:+.1%} apart)")


def _line_cpu(quick: bool, out) -> None:
    n_cpu = 2000 if quick else 20000
    cpu = bench_cpu(rows=n_cpu)
    out(f"cpu-bound      no-delay agent {cpu['rows']} rows: {cpu['rows_s']:.0f} rows/s, caller peak RSS "
        f"{cpu['peak_rss_mb']:.0f} MB, {cpu['distinct_prompts']} distinct prompts, stopped {cpu['stopped']}")


def _line_metrics(quick: bool, out) -> None:
    out(format_metrics_line(bench_metrics(rows=2000 if quick else 20000, pairs=1 if quick else 2)))


def _line_model(quick: bool, out) -> None:
    model = bench_model(rows=300 if quick else 1000)
    out(f"model-backed   scripted server 200ms/call C=256 {model['rows']} rows ({model['calls_per_row']:.2f} calls/row): "
        f"steady {model['steady_rows_s']:.0f} rows/s, wall {model['wall_rows_s']:.0f} rows/s, ideal "
        f"{model['ideal']:.0f} rows/s, ratio {model['ratio']:.0%}")


def _line_async(quick: bool, out) -> None:
    out(format_async_line(bench_async(rows=2000 if quick else 4000)))


def _line_selection(quick: bool, out) -> None:
    out(format_line(bench_selection()))


def _line_micro(quick: bool, out) -> None:
    for line in micro_lines():
        out(line)


def _line_judge(quick: bool, out) -> None:
    judge = bench_judge(rows=500 if quick else 2000)
    out(f"judge overlap  200ms grader, {judge['rows']} rows, no-delay agent, {judge['judge_slots']} judge slots: "
        f"run {judge['wall_s']:.1f}s vs judge pool alone {judge['judge_alone_s']:.1f}s "
        f"= {judge['ratio']:.2f}x (target < 1.3x)")


def _line_resume(quick: bool, out) -> None:
    res = bench_resume(rows_on_disk=20_000 if quick else 100_000)
    out(f"resume         {res['rows_on_disk']} rows on disk: first new row after {res['first_new_row_s']:.2f}s "
        f"(target < 5s), loaded {res['resumed']} rows")
    ex = bench_resume_exact(rows=4000 if quick else 20_000)
    out(f"resume exact   {ex['on_disk']}-row run resumed to {ex['rows']} with the same arguments ({ex['mode']}): "
        f"first new row after {ex['first_new_row_s']:.2f}s, planner restored from the snapshot after round "
        f"{ex['from_round']} in {ex['restore_s']:.2f}s ({ex['snapshots']} written by the first run)")
    out(f"plan snapshot  {ex['on_disk']} rows: {ex['plan_mb']:.1f} MB = {ex['plan_share']:.1%} of the "
        f"{ex['checkpoint_mb']:.0f} MB checkpoint (target <= 5%), longest loop pause per snapshot "
        f"{ex['pause_ms']:.1f} ms wall / {ex['pause_cpu_ms']:.1f} ms CPU (target <= 50 ms)")


def _line_chaos(quick: bool, out) -> None:
    out(chaos_line(bench_chaos(rows=600 if quick else 1500)))
    out(names_line(bench_two_names(rows=150 if quick else 300)))    # one checkpoint, two names (chaos_names.py)
    for line in chaos_lane_lines(quick):       # hung calls, an OOM-killed actor (bench/chaos_lanes.py)
        out(line)


def _line_nodes(quick: bool, out) -> None:
    nodes = bench_nodes(seconds_per_run=2.0 if quick else 4.0)
    out(f"nodes          100ms agent, 16 slots per node: 1 node {nodes[1]['steady_rows_s']:.0f} rows/s, 3 nodes "
        f"{nodes[3]['steady_rows_s']:.0f} rows/s ({nodes[3]['nodes_used']} nodes used) = {nodes['speedup']:.2f}x "
        f"(target >= 2.9x; ideal per node {nodes['ideal_per_node']:.0f} rows/s)")


def _line_shared(quick: bool, out) -> None:
    out(shared_line(bench_shared_storage(rows=600 if quick else 3000)))


def _line_schema(quick: bool, out) -> None:
    out(schema_line(bench_schema(rows=150 if quick else 300)))   # real tool schemas (bench/schema_line.py)


def _line_viewer(quick: bool, out) -> None:
    from .viewer_line import bench_viewer, format_line as viewer_line   # (starts chromium: only when asked)
    out(viewer_line(bench_viewer(rows=20_000 if quick else 100_000)))


def _line_driver(quick: bool, out) -> None:
    from .driver_line import bench_driver, format_driver_line
    for mode in ("explore", "rl"):
        out(format_driver_line(bench_driver(rows=3000 if quick else 30_000, mode=mode)))
    # a user's tools (the 13-tool retail set): what their worlds cost the lanes
    out(format_driver_line(bench_driver(rows=2000 if quick else 10_000, mode="explore", tools="retail")))


# name -> line, in the order a full bench prints them (``whileai-ray bench --only async,cpu``)
LINES = {"latency": _line_latency, "cpu": _line_cpu, "driver": _line_driver, "metrics": _line_metrics,
         "model": _line_model,
         "async": _line_async, "selection": _line_selection, "micro": _line_micro, "judge": _line_judge,
         "resume": _line_resume, "chaos": _line_chaos, "nodes": _line_nodes,
         "shared": _line_shared, "schema": _line_schema, "viewer": _line_viewer}


def check_only(only) -> list[str]:
    """The line names ``--only`` asked for, in the order given; ValueError naming the lines for
    an unknown one (before Ray starts)."""
    names = list(LINES) if not only else list(only)
    unknown = [n for n in names if n not in LINES]
    if unknown:
        raise ValueError(f"bench --only: unknown line(s) {', '.join(unknown)}; the lines are {', '.join(LINES)}")
    return names


def run_bench(quick: bool = False, out=print, only=None) -> int:
    """Print every line (or the ``only`` ones, names from :data:`LINES`) on a local Ray."""
    names = check_only(only)
    from ..runtime.cluster import ensure_ray   # lazy: ray, once the bench starts
    t0 = time.monotonic()
    ensure_ray()
    out(f"ray ready in {time.monotonic() - t0:.1f}s")
    for name in names:
        LINES[name](quick, out)
    return 0


def bench_metrics(rows: int = 20000, pairs: int = 2) -> dict:
    """The CPU-bound line with Ray metrics off and on, in alternating pairs (off, on, off, on) so
    a machine that slows down or warms up mid-bench weighs on both sides; best of each side."""
    off, on = [], []
    for _ in range(pairs):
        off.append(bench_cpu(rows=rows, metrics=False)["rows_s"])
        on.append(bench_cpu(rows=rows, metrics=True)["rows_s"])
    best_off, best_on = max(off), max(on)
    from ..runtime.metrics.bench import recorder_cpu_seconds
    recorder_s = recorder_cpu_seconds(rows)
    return {"rows": rows, "off": off, "on": on, "best_off": best_off, "best_on": best_on,
            "cost": (best_off - best_on) / best_off, "recorder_s": recorder_s,
            "recorder_share": recorder_s / (rows / best_off)}


def format_metrics_line(m: dict) -> str:
    return (f"metrics        cpu-bound {m['rows']} rows, best of {len(m['on'])}: metrics on {m['best_on']:.0f} "
            f"rows/s, off {m['best_off']:.0f} rows/s, cost {m['cost']:+.1%} (target within 3%; runs on "
            f"{', '.join(f'{v:.0f}' for v in m['on'])}, off {', '.join(f'{v:.0f}' for v in m['off'])}); "
            f"the recorder's own CPU {m['recorder_s']:.2f}s = {m['recorder_share']:.1%} of the run")


def bench_judge(rows: int = 2000, judge_latency_s: float = 0.2, judge_slots: int = 32) -> dict:
    """A 200 ms grader on a no-delay agent: grading overlaps the rollouts, so the run should take
    little more than the judge pool needs on its own (rows * latency / slots)."""

    def slow_grader(row):
        time.sleep(judge_latency_s)
        return 0.0 if row.get("seeded") else 1.0

    t0 = time.monotonic()
    data = simulate(seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=rows, grader=slow_grader,
                    seed=0, advanced={"judge_concurrency": judge_slots, "progress_every_s": 3600.0,
                                      "progress_every_rows": 10**6})
    wall = time.monotonic() - t0
    alone = rows * judge_latency_s / judge_slots
    return {"rows": len(data), "wall_s": wall, "judge_alone_s": alone, "ratio": wall / alone,
            "judge_slots": judge_slots}


def bench_resume(rows_on_disk: int = 100_000) -> dict:
    """Time from the call to the first newly landed row when resuming a large checkpoint."""

    folder = tempfile.mkdtemp(prefix="wai-bench-resume-")
    try:
        path = f"{folder}/ck.jsonl"
        agent = seeded_agent(TOOLS)
        simulate(agent, tools=TOOLS, simulator=False, budget=1000, seed=0, checkpoint=path,
                 advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6})
        lines = open(path, encoding="utf-8").read().splitlines()
        from ..store.checkpoint.meta import read_sidecar
        from ..store.checkpoint.jsonl import HEADER_KEY
        header, body = read_sidecar(path, HEADER_KEY), [json.loads(x) for x in lines]
        assert header is not None, f"{path}: the run just written has no header sidecar"
        for leftover in (path, path + ".keys", path + ".meta.json"):
            os.remove(leftover)
        shutil.rmtree(f"{folder}/ck.parquet", ignore_errors=True)
        # a 100,000-row checkpoint as a run writes it (batches through JsonlCheckpoint)
        with JsonlCheckpoint(path, header["fingerprint"]) as ck:
            for start in range(0, rows_on_disk, 1000):
                batch = []
                for i in range(start, min(rows_on_disk, start + 1000)):
                    row = dict(body[i % len(body)])
                    row["prompt"] = f"{row['prompt']} (copy {i})"
                    row["scenario_id"] = f"{row['scenario_id']}-{i}"
                    batch.append(row)
                ck.append(batch)
        data = simulate(agent, tools=TOOLS, simulator=False, budget=rows_on_disk + 200, seed=1, checkpoint=path,
                        advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0})
        first = {"t": data.search["timings"]["first_row_s"]}
        return {"rows_on_disk": rows_on_disk, "first_new_row_s": first.get("t", float("nan")),
                "resumed": data.search["rollouts"]["resumed"]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_resume_exact(rows: int = 20_000) -> dict:
    """An exact resume (same arguments): a run of 95% of ``rows`` with a checkpoint, then the same
    call with ``budget=rows``. The planner continues from the last snapshot the first run wrote
    and replays only the rounds after it; time to the first new row."""

    folder = tempfile.mkdtemp(prefix="wai-bench-resume-exact-")
    adv = {"progress_every_s": 3600.0, "progress_every_rows": 10**6}
    try:
        path = f"{folder}/ck.jsonl"
        agent = seeded_agent(TOOLS)
        first = simulate(agent, tools=TOOLS, simulator=False, budget=rows * 95 // 100, seed=0, checkpoint=path,
                         advanced=adv)
        plan, ck = os.path.getsize(path + ".plan"), os.path.getsize(path)
        snaps = first.search["plan_snapshots"]
        data = simulate(agent, tools=TOOLS, simulator=False, budget=rows, seed=0, checkpoint=path, advanced=adv)
        return {"rows": rows, "on_disk": len(first), "first_new_row_s": data.search["timings"]["first_row_s"],
                "snapshots": snaps["written"], "from_round": data.search["plan_snapshots"]["resumed_from_round"],
                "restore_s": data.search["plan_snapshots"]["restore_s"], "mode": data.search["resume"]["mode"],
                "plan_mb": plan / 1e6, "checkpoint_mb": ck / 1e6, "plan_share": plan / ck,
                "pause_ms": snaps["longest_pause_ms"], "pause_cpu_ms": snaps["longest_pause_cpu_ms"]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_model(rows: int = 1000, concurrency: int = 256, latency_ms: int = 200) -> dict:
    """1,000 rollouts against the scripted OpenAI-compatible server (200 ms a call) at C=256.

    One rollout here is one model call (``avg_turns=1``, and the scripted model answers the
    opening without a tool call when asked to), so the ideal is C / latency rows/s.
    """
    host, port, stop = start_server(port=0, seed=0, latency_ms=latency_ms, ask_rate=0.0, model="bench")
    try:
        t0 = time.monotonic()
        data = simulate(f"vllm:bench@http://{host}:{port}/v1", tools=TOOLS, simulator=False, budget=rows,
                        concurrency=concurrency, avg_turns=1, max_turns=1, seed=0,
                        advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6})
        wall = time.monotonic() - t0
        calls = stop.server.requests
    finally:
        stop()
    steady = _steady_rate(data)
    per_row_calls = calls / max(1, len(data))
    ideal = concurrency / (latency_ms / 1000.0) / per_row_calls
    return {"rows": len(data), "steady_rows_s": steady, "wall_rows_s": len(data) / wall, "ideal": ideal,
            "ratio": steady / ideal, "calls_per_row": per_row_calls}


def bench_nodes(per_node: int = 16, latency_s: float = 0.1, seconds_per_run: float = 4.0) -> dict:
    """Latency-bound throughput on 1 vs 3 simulated nodes, with a fixed concurrency per node:
    the engine should scale with the nodes it gets."""
    from ..runtime.jobs.bench_nodes import simulated_nodes   # lazy: ray, only for this line
    per_nodes: dict[int, dict[str, float]] = {}
    with simulated_nodes(workers=2):
        agent = SleepyAgent(TOOLS, latency_s)
        for nodes in (1, 3):
            rows = int(per_node * nodes / latency_s * seconds_per_run)
            data = simulate(agent, tools=TOOLS, simulator=False, budget=rows, concurrency=per_node * nodes,
                            seed=0, advanced={"ray": {"rollout_actors": nodes, "concurrency_per_actor": per_node},
                                              "progress_every_s": 3600.0, "progress_every_rows": 10**6})
            per_nodes[nodes] = {"rows": len(data), "steady_rows_s": _steady_rate(data),
                                "nodes_used": len(data.report()["placement"]["rows_by_node"])}
    return {**per_nodes, "speedup": per_nodes[3]["steady_rows_s"] / per_nodes[1]["steady_rows_s"],
            "ideal_per_node": per_node / latency_s}
