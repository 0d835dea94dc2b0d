"""``whileai-ray bench``: the speed figures the issues quote, measured end to end.

Each line runs a real ``simulate()`` on the local Ray (started once for all lines):

* latency-bound: the seeded agent behind a 50 ms sleep at concurrency 32, 2,000 rows;
  rows/s against the ideal concurrency/latency = 640 rows/s. ``steady`` counts rows between
  the first and the last landing (what the pipe sustains); ``wall`` includes actor start-up.
* CPU-bound: the seeded agent with no delay, 20,000 explore rows; rows/s and the caller's
  peak RSS.
* async: an ``async def`` agent awaiting 1 s at concurrency 1,000 (``bench_async.py``).

``whileai-ray bench --only async,cpu`` runs some lines (names in :data:`LINES`).
"""
from __future__ import annotations

import resource
import time

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]


class SleepyAgent:
    """The seeded agent behind a fixed sleep (a stand-in for a model with latency L)."""

    def __init__(self, tools, latency_s: float):
        from .agents.seeded import seeded_agent
        self.inner = seeded_agent(tools)
        self.latency_s = latency_s
        self.__name__ = "seeded_agent"

    def __call__(self, message):
        time.sleep(self.latency_s)
        return self.inner(message)


def _steady_rate(data) -> float:
    ts = sorted(data.row_seconds)
    if len(ts) < 2 or ts[-1] <= ts[0]:
        return float("nan")
    return (len(ts) - 1) / (ts[-1] - ts[0])


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_latency(rows: int = 2000, concurrency: int = 32, latency_s: float = 0.05, reproducible=True) -> dict:
    from . import simulate
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


def bench_cpu(rows: int = 20000, concurrency: int = 32) -> dict:
    from . import seeded_agent, simulate
    t0 = time.monotonic()
    data = simulate(seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=rows, concurrency=concurrency,
                    seed=0, advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6})
    wall = time.monotonic() - t0
    return {"rows": len(data), "rows_s": len(data) / wall, "peak_rss_mb": _rss_mb(),
            "distinct_prompts": data.report()["unique_prompts"], "stopped": data.stopped_because}


def _line_latency(quick: bool, out) -> None:
    n_lat = 500 if quick else 2000
    lat = bench_latency(rows=n_lat)
    out(f"latency-bound  50ms agent C=32 {lat['rows']} rows: steady {lat['steady_rows_s']:.0f} rows/s, "
        f"wall {lat['wall_rows_s']:.0f} rows/s, ideal C/L {lat['ideal']:.0f} rows/s, "
        f"ratio {lat['ratio']:.0%} (wall {lat['wall_ratio']:.0%}), stopped {lat['stopped']}")
    lat2 = bench_latency(rows=n_lat, reproducible=False)
    out(f"latency-bound  reproducible=False: steady {lat2['steady_rows_s']:.0f} rows/s vs reproducible=True "
        f"{lat['steady_rows_s']:.0f} rows/s ({(lat2['steady_rows_s'] - lat['steady_rows_s']) / lat2['steady_rows_s']:+.1%} apart)")


def _line_cpu(quick: bool, out) -> None:
    n_cpu = 2000 if quick else 20000
    cpu = bench_cpu(rows=n_cpu)
    out(f"cpu-bound      no-delay agent {cpu['rows']} rows: {cpu['rows_s']:.0f} rows/s, caller peak RSS "
        f"{cpu['peak_rss_mb']:.0f} MB, {cpu['distinct_prompts']} distinct prompts, stopped {cpu['stopped']}")


def _line_model(quick: bool, out) -> None:
    model = bench_model(rows=300 if quick else 1000)
    out(f"model-backed   scripted server 200ms/call C=256 {model['rows']} rows ({model['calls_per_row']:.2f} calls/row): "
        f"steady {model['steady_rows_s']:.0f} rows/s, wall {model['wall_rows_s']:.0f} rows/s, ideal "
        f"{model['ideal']:.0f} rows/s, ratio {model['ratio']:.0%}")


def _line_async(quick: bool, out) -> None:
    from .bench_async import bench_async, format_async_line
    out(format_async_line(bench_async(rows=2000 if quick else 4000)))


def _line_selection(quick: bool, out) -> None:
    from .bench_search import bench_selection, format_line
    out(format_line(bench_selection()))


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
        f"{ex['from_round']} ({ex['snapshots']} written by the first run)")


def _line_nodes(quick: bool, out) -> None:
    from .runtime.bench_nodes import bench_nodes
    nodes = bench_nodes(seconds_per_run=2.0 if quick else 4.0)
    out(f"nodes          100ms agent, 16 slots per node: 1 node {nodes[1]['steady_rows_s']:.0f} rows/s, 3 nodes "
        f"{nodes[3]['steady_rows_s']:.0f} rows/s ({nodes[3]['nodes_used']} nodes used) = {nodes['speedup']:.2f}x "
        f"(target >= 2.7x; ideal per node {nodes['ideal_per_node']:.0f} rows/s)")


# name -> line, in the order a full bench prints them (``whileai-ray bench --only async,cpu``)
LINES = {"latency": _line_latency, "cpu": _line_cpu, "model": _line_model, "async": _line_async,
         "selection": _line_selection, "judge": _line_judge, "resume": _line_resume, "nodes": _line_nodes}


def run_bench(quick: bool = False, out=print, only=None) -> int:
    """Print every line (or the ``only`` ones, names from :data:`LINES`) on a local Ray."""
    names = list(LINES) if not only else list(only)
    unknown = [n for n in names if n not in LINES]
    if unknown:
        raise ValueError(f"bench --only: unknown line(s) {unknown}; the lines are {', '.join(LINES)}")
    from .runtime.cluster import ensure_ray
    t0 = time.monotonic()
    ensure_ray()
    out(f"ray ready in {time.monotonic() - t0:.1f}s")
    for name in names:
        LINES[name](quick, out)
    return 0


def bench_judge(rows: int = 2000, judge_latency_s: float = 0.2, judge_slots: int = 32) -> dict:
    """A 200 ms grader on a no-delay agent: grading overlaps the rollouts, so the run should take
    little more than the judge pool needs on its own (rows * latency / slots)."""
    from . import seeded_agent, simulate

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
    import json
    import os
    import shutil
    import tempfile

    from . import seeded_agent, simulate
    from .store.jsonl import JsonlCheckpoint
    folder = tempfile.mkdtemp(prefix="wai-bench-resume-")
    try:
        path = f"{folder}/ck.jsonl"
        agent = seeded_agent(TOOLS)
        simulate(agent, tools=TOOLS, simulator=False, budget=1000, seed=0, checkpoint=path,
                 advanced={"progress_every_s": 3600.0, "progress_every_rows": 10**6})
        lines = open(path, encoding="utf-8").read().splitlines()
        header, body = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
        for leftover in (path, path + ".keys"):
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
    import shutil
    import tempfile

    from . import seeded_agent, simulate
    folder = tempfile.mkdtemp(prefix="wai-bench-resume-exact-")
    adv = {"progress_every_s": 3600.0, "progress_every_rows": 10**6}
    try:
        path = f"{folder}/ck.jsonl"
        agent = seeded_agent(TOOLS)
        first = simulate(agent, tools=TOOLS, simulator=False, budget=rows * 95 // 100, seed=0, checkpoint=path,
                         advanced=adv)
        data = simulate(agent, tools=TOOLS, simulator=False, budget=rows, seed=0, checkpoint=path, advanced=adv)
        return {"rows": rows, "on_disk": len(first), "first_new_row_s": data.search["timings"]["first_row_s"],
                "snapshots": first.search["plan_snapshots"]["written"],
                "from_round": data.search["plan_snapshots"]["resumed_from_round"],
                "mode": data.search["resume"]["mode"]}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def bench_model(rows: int = 1000, concurrency: int = 256, latency_ms: int = 200) -> dict:
    """1,000 rollouts against the scripted OpenAI-compatible server (200 ms a call) at C=256.

    One rollout here is one model call (``avg_turns=1``, and the scripted model answers the
    opening without a tool call when asked to), so the ideal is C / latency rows/s.
    """
    from . import simulate
    from .testing.server import start_server
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
