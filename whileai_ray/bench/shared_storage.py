"""The shared-storage bench line: on three simulated nodes with one shared folder, the bytes the
Driver receives from the rollout actors against the row bytes they write (issue 14 item 2).

With ``advanced={"shared_storage": True}`` the actors write each chunk's rows to shards beside
the checkpoint and answer the Driver with keys and outcomes only (``runtime/pools/dataplane.py``); the
run's ``search["data_plane"]`` counts both sides. Target: the Driver's share at most 5%. The same
run through the Driver is timed beside it (on one machine the shards cost a file write a chunk).
"""
from __future__ import annotations

import os
import tempfile
import time

from ..agents.seeded import seeded_agent
from ..simulation import simulate
from ..testing.seeded_rows import TOOLS

__all__ = ["bench_shared_storage", "format_line"]


def bench_shared_storage(rows: int = 3000) -> dict:
    from ..runtime.jobs.bench_nodes import simulated_nodes   # lazy: ray, only for this line
    with simulated_nodes(workers=2), tempfile.TemporaryDirectory(prefix="whileai-shared-") as shared:
        walls = {}
        for mode in ("driver", "shared"):     # the same run through the Driver first, for the wall times
            advanced = {"ray": {"rollout_actors": 3, "concurrency_per_actor": 16},
                        "progress_every_s": 3600.0, "progress_every_rows": 10**6}
            if mode == "shared":
                advanced["shared_storage"] = True
            t0 = time.monotonic()
            data = simulate(seeded_agent(TOOLS), tools=TOOLS, simulator=False, budget=rows, seed=0, concurrency=48,
                            checkpoint=os.path.join(shared, f"{mode}.jsonl"), advanced=advanced)
            walls[mode] = time.monotonic() - t0
        plane = data.search["data_plane"]
        return {**plane, "landed": len(data), "wall_s": walls["shared"], "driver_wall_s": walls["driver"],
                "nodes_used": len(data.report()["placement"]["rows_by_node"])}


def format_line(m: dict) -> str:
    return (f"3-node shared storage: bytes through the Driver / row bytes = "
            f"{m['driver_bytes'] / 1024:.0f} KB / {m['row_bytes'] / 1024**2:.1f} MB = {m['driver_share']:.1%} "
            f"(target <= 5%), {m['landed']} rows from {m['nodes_used']} nodes in {m['wall_s']:.1f}s "
            f"(through the Driver: {m['driver_wall_s']:.1f}s)")
