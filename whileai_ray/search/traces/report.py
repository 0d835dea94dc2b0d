"""What a run with ``traces=`` reports, and the last guard against trace leakage.

* :func:`drop_trace_copies`: any landed row whose ask near-copies a trace (``near_copy.py``) is
  dropped from the result -- the planner already refuses such asks when they are written, so
  this only catches a fallback ask that slipped through; seeds and ``tasks=`` replays are the
  caller's own asks and are kept;
* :func:`apply_trace_plan`: ``search["strategy"]``, ``search["trace_mining"]`` (what the traces
  show), ``search["trace_leakage"]`` (the measure, the threshold, how many asks were dropped),
  ``report()["traces"]``, ``steering`` on the rows in the trace regions, and the docs' caveat as
  a warning when no grader is in the loop: traces reproduce world-visible situations only.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from ...core.run_warning import RunWarning
from .steering import in_region, leakage_summary

__all__ = ["drop_trace_copies", "apply_trace_plan", "WORDING_CAVEAT"]

WORDING_CAVEAT = (
    "traces= aimed the grid at the tools, faults and world states the traces show; a failure that lives in "
    "how a reply is worded (an unsupported claim, an estimate not labelled as one, two questions where one "
    "was asked for) has no world-visible trigger, so traces alone cannot aim at it and this run does not "
    "claim to reach it: pass grader= (or grade=True) to steer by verdicts")


_Rows = TypeVar("_Rows", bound=Iterable[dict])    # a list of rows, or the Arrow-backed rows of a spill

def drop_trace_copies(rows: _Rows, traces) -> tuple[_Rows | list[dict], int]:
    guard = getattr(traces, "guard", None)
    if guard is None or not len(guard):
        return rows, 0
    kept, dropped = [], 0
    for row in rows:
        own = row.get("writer_model") == "seed" or (row.get("lineage") or {}).get("replayed")
        if not own and guard.best(row.get("prompt") or "")[0] >= guard.threshold:
            dropped += 1
            continue
        kept.append(row)
    return kept, dropped


def apply_trace_plan(data, cfg, traces, leaked: int) -> None:
    if traces is None:
        return
    data.search["strategy"] = traces.strategy
    if not traces.count:
        return
    at_writing = int((data.search.get("avoid") or {}).get("trace_near_copies", 0))
    data.coverage["traces"] = traces.count
    data.search["trace_mining"] = {**traces.mining, "regions": traces.regions}
    data.search["trace_leakage"] = leakage_summary(traces, at_writing, leaked)
    resolved = traces.strategy.get("resolved")
    steered = 0
    if resolved in ("trace", "targeted"):
        weight = traces.steering_weight
        for row in data.trajectories:
            if in_region(row.get("scenario_dimensions") or {}, traces.regions):
                row["steering"] = {"origin": resolved, "weight": weight}
                steered += 1
        data._touch()
    data.search["trace_mining"]["steered_rows"] = steered
    data.search["trace_mining"]["background_rows"] = len(data.trajectories) - steered
    if leaked:
        data.degraded.append("trace_leakage_dropped")
        data.warnings.append(RunWarning(f"{leaked} row(s) near-copied a trace's ask and were dropped after landing "
                                        "(see search['trace_leakage']); held-out traces stay out of the rows",
                                        "trace_leakage_dropped"))
    if resolved in ("trace", "targeted") and cfg.grader is None and cfg.grade is False:
        data.warnings.append(RunWarning(WORDING_CAVEAT, "trace_wording_caveat"))
