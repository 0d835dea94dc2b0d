"""RunResult: what one run hands back to ``simulate()``, as one typed record.

The Driver builds it when its loop stops (``driver/run.py``); the caller's side adds when the
Driver started (``caller/run.py``). The rows are where the Driver's spool left them
(``store/row_spool.py``): ``rows`` for a small run, else ``spilled`` says which Parquet files in
which temporary folder hold them (the caller adopts the folder); ``row_count`` either way. ``simulate()`` and
``result/report.py`` read its fields by name (the report imports it for type checking only: the
result layer never imports the runtime).

``runs=N`` plays N evaluation runs; :func:`merge_results` reports them as one (its rows are
read from each run's own result, never merged here): the planner's counters summed (``PlannerStats.plus``), rows per node summed, and the first run's
stop reason.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..core.progress import Poll
from ..search.planner.stats import PlannerStats
from ..store.row_spool import SpilledRows

__all__ = ["RunResult", "merge_results"]


@dataclass(frozen=True)
class RunResult:
    rows: list                                  # landed and resumed rows, in schedule order (a small run)
    stopped_because: str | None
    elapsed_s: float                            # the Driver's loop, start to stop
    planner: PlannerStats
    first_row_s: float | None = None            # from the Driver's start to its first landed row
    last_row_s: float | None = None             # ... and to its last
    spilled: SpilledRows | None = None          # a large run: where its rows are, in the same order
    row_count: int = 0                          # rows in ``rows`` or ``spilled``
    resume: dict = field(default_factory=dict)  # ResumeIndex.summary() + PlanSnapshots.summary()
    node_rows: dict = field(default_factory=dict)        # node id -> rows played there
    errors: list = field(default_factory=list)  # the first agent errors and chunk failures, as text
    chunks_reissued: int = 0
    chunk_retry: dict = field(default_factory=dict)      # poison rollouts: ChunkRetry.stats()
    checkpoint_warnings: list = field(default_factory=list)   # repairs made while opening the checkpoint
    orphan_cleared: dict | None = None          # an orphaned Driver that held the checkpoint, waited for
    abandoned: int = 0                          # units still in flight when the run stopped
    pool: str = "actors"                        # where rollouts ran: "actors" or "caller"
    n_actors: int = 0                           # rollout lanes (the caller's pool counts as one)
    actor_nodes: list = field(default_factory=list)
    stuck_units: dict = field(default_factory=dict)      # unit key -> seconds in flight past the watchdog
    writer: dict | None = None                  # the situation writer's counts (an LLM writer)
    clock: dict | None = None                   # how a time_budget stop landed: RunClock.summary() (search/planner/clock.py)
    driver_started_at: float = 0.0              # caller's monotonic clock when the Driver was started
    resumed_count: int = 0                      # rows settled from the checkpoint (leftovers included)
    data_plane: dict | None = None              # shared storage: bytes through the Driver (pools/dataplane.py)
    warm: dict = field(default_factory=dict)    # Driver and rollout actors started or reused (driver/actor.py)
    rows_head: int = 0                          # of ``rows``: the head rows that lead it, then the rest
    rows_shipped: int = 0                       # released rows left out of ``rows``: the caller has them (polls)
    last_poll: Poll | None = None               # the Driver's progress answer as the run ended (the last line's counts)
    kept_at: str | None = None                  # stopped because the caller was gone, no checkpoint: where its rows are
    spool_edge_rows: int = 0                    # landed rows spooled with their lane's row_json text (driver/landing.py)
    spool_slim_rows: int = 0                    # of those, rows that crossed slim (pools/slim_results.py)


def merge_results(results: list[RunResult]) -> RunResult:
    """Several evaluation runs as one result (see the module doc)."""
    if len(results) == 1:
        return results[0]
    planner = results[0].planner
    node_rows: dict = {}
    for res in results[1:]:
        planner = planner.plus(res.planner)
    for res in results:
        for node, n in res.node_rows.items():
            node_rows[node] = node_rows.get(node, 0) + n
    return dataclasses.replace(
        results[-1], rows=[], spilled=None, row_count=sum(res.row_count for res in results), planner=planner,
        node_rows=node_rows, resumed_count=sum(res.resumed_count for res in results),
        stopped_because=results[0].stopped_because)
