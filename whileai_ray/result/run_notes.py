"""What a finished run adds to its SimulationData beyond the report: resume and replay notes
(rows settled from disk, planner snapshots, poison units, pinned tasks, eval runs). The notes of
the roles it talked to (agent, writer, judge, simulated person) are ``role_notes.py``'s.

``result`` is the run's ``RunResult`` (``runtime/run_result.py``, named for type checking only);
every note is a ``RunWarning`` with a code, and a note a later fact makes obsolete (the template
writer's, once tasks or an LLM wrote the asks) is removed by its code."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..core.run_warning import RunWarning, drop
from ..search.tasks import UNFAITHFUL
from ..store.snapshots.file import snapshot_path
from .progress.run_log import announce
from .warnings_text import TEMPLATE_WRITER

if TYPE_CHECKING:
    from ..runtime.run_result import RunResult

__all__ = ["add_resume_and_replay_notes"]


def add_resume_and_replay_notes(data, cfg, result: RunResult, pinned_info, results: list[RunResult],
                                tally) -> None:
    """``tally``: the rows' counts (``report_tally.ReportTally``); the rows are not read again."""
    resumed = result.resumed_count
    ro = data.search["rollouts"]
    ro["resumed"] = resumed
    ro["landed"] = tally.n - resumed
    data.coverage["resumed"] = resumed
    resume = result.resume
    if result.chunk_retry.get("suspected") or result.chunk_retry.get("lanes_replaced"):   # chunks that failed as a
        # whole: who was tried alone, who was lost, which lanes died (and how)
        data.search["poison"] = result.chunk_retry
    for note in result.checkpoint_warnings:      # repairs made while opening it (issue 11)
        if note not in data.warnings:
            data.warnings.append(RunWarning(note, "checkpoint_repaired"))
    if cfg.checkpoint:
        data.search["plan_snapshots"] = {"written": resume.get("snapshots_written", 0),
                                         "resumed_from_round": resume.get("snapshot_round"),
                                         "bytes": resume.get("snapshot_bytes", 0),
                                         "longest_pause_ms": resume.get("snapshot_pause_max_ms", 0.0),
                                         "longest_pause_cpu_ms": resume.get("snapshot_pause_cpu_max_ms", 0.0),
                                         "restore_s": resume.get("snapshot_restore_s", 0.0),
                                         "continued": resume.get("snapshot_continued", False)}
        if resume.get("snapshot_ignored"):
            data.warnings.append(RunWarning(
                f"the planner snapshot {snapshot_path(cfg.checkpoint)} {resume['snapshot_ignored']}; this resume "
                "replayed its plan from the seed instead (same rows, slower start)", "snapshot_ignored"))
        for problem in resume.get("snapshot_errors", ()):
            data.warnings.append(RunWarning(f"planner snapshot beside {cfg.checkpoint}: {problem}", "snapshot_error"))
    if resume.get("loaded"):
        line = f"resumed {resume['loaded']} rows from {cfg.checkpoint}: "
        if resume["mode"] == "exact":
            line += f"{resume['matched']} matched this run's plan (exact replay"
        else:
            line += (f"they count toward the budget and stay in the result (the plan was drawn anew, not "
                     f"replayed: {resume['matched']} of them matched it")
        if resume.get("snapshot_round") is not None:
            line += f", continued from the planner snapshot after round {resume['snapshot_round']}"
        line += ")"
        if resume["mode"] == "exact" and resume["unmatched"]:
            line += (f"; {resume['unmatched']} rows on disk are not part of this run and were left out "
                     "(they stay in the file)")
            data.warnings.append(RunWarning(line, "resume_left_out"))
        announce(logging.INFO, line)
        data.search["resume"] = resume
    if cfg.tasks is not None and pinned_info is not None:
        data.search["pinned_tasks"] = {"prompts": pinned_info["prompts"], "tasks": pinned_info["tasks"],
                                       "ran": tally.unique_prompts, "missing": []}
        drop(data.warnings, TEMPLATE_WRITER)         # the tasks wrote the asks, not the template
        if pinned_info.get("unfaithful"):
            data.warnings.append(RunWarning(UNFAITHFUL, "tasks_unfaithful"))
    if cfg.runs > 1:
        data.search["eval_runs"] = {"runs": cfg.runs, "per_run": [
            {"rows": r.row_count, "stopped_because": r.stopped_because} for r in results]}
        data.coverage["runs"] = cfg.runs
