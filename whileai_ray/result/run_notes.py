"""What a finished run adds to its SimulationData beyond the report: resume and replay notes
(rows settled from disk, planner snapshots, poison units, pinned tasks, eval runs) and the
notes of the models it talked to (writer fallbacks, simulated-user turns).

``result`` is the run's ``RunResult`` (``runtime/run_result.py``, named for type checking only);
every note is a ``RunWarning`` with a code, and a note a later fact makes obsolete (the template
writer's, once tasks or an LLM wrote the asks) is removed by its code."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.run_warning import RunWarning, drop
from ..situations.llm_writer import fallback_note
from ..store.plan_snapshot_file import snapshot_path
from .progress import logger
from .warnings_text import TEMPLATE_WRITER

if TYPE_CHECKING:
    from ..runtime.run_result import RunResult

__all__ = ["add_resume_and_replay_notes", "add_role_notes"]


def add_resume_and_replay_notes(data, cfg, result: RunResult, pinned_info, results: list[RunResult]) -> None:
    resumed = result.resumed_count
    ro = data.search["rollouts"]
    ro["resumed"] = resumed
    ro["landed"] = len(data.trajectories) - resumed
    data.coverage["resumed"] = resumed
    resume = result.resume
    if result.chunk_retry.get("suspected"):      # chunks that failed as a whole: who was tried alone, who was lost
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
                                         "restore_s": resume.get("snapshot_restore_s", 0.0)}
        if resume.get("snapshot_ignored"):
            data.warnings.append(RunWarning(
                f"the planner snapshot {snapshot_path(cfg.checkpoint)} {resume['snapshot_ignored']}; this resume "
                "replayed its plan from the seed instead (same rows, slower start)", "snapshot_ignored"))
        for problem in resume.get("snapshot_errors", ()):
            data.warnings.append(RunWarning(f"planner snapshot beside {cfg.checkpoint}: {problem}", "snapshot_error"))
    if resume.get("loaded"):
        line = (f"resumed {resume['loaded']} rows from {cfg.checkpoint}: {resume['matched']} matched this run's "
                f"plan ({resume['mode']} replay")
        if resume.get("snapshot_round") is not None:
            line += f", continued from the planner snapshot after round {resume['snapshot_round']}"
        line += ")"
        if resume["mode"] == "exact" and resume["unmatched"]:
            line += (f"; {resume['unmatched']} rows on disk are not part of this run and were left out "
                     "(they stay in the file)")
            data.warnings.append(RunWarning(line, "resume_left_out"))
        logger.info(line)
        data.search["resume"] = resume
    if cfg.tasks is not None and pinned_info is not None:
        ran = {r["prompt"] for r in data.trajectories}
        data.search["pinned_tasks"] = {"prompts": pinned_info["prompts"], "tasks": pinned_info["tasks"],
                                       "ran": len(ran), "missing": []}
        drop(data.warnings, TEMPLATE_WRITER)         # the tasks wrote the asks, not the template
    if cfg.runs > 1:
        data.search["eval_runs"] = {"runs": cfg.runs, "per_run": [
            {"rows": len(r.rows), "stopped_because": r.stopped_because} for r in results]}
        data.coverage["runs"] = cfg.runs


def add_role_notes(data, cfg, roles, results: list[RunResult] = ()) -> None:
    for token in roles.degraded:
        if token not in data.degraded:
            data.degraded.append(token)
    data.warnings.extend(roles.warnings)
    if roles.writer is not None:
        drop(data.warnings, TEMPLATE_WRITER)         # an LLM wrote the asks, not the template
        data.writer_model = data.coverage["writer_model"] = data.coverage["simulator"] = roles.writer.name
        # the driver's copy of the writer did the writing: its counts come back with each result
        stats = [r.writer for r in results if r.writer] or [roles.writer.stats()]
        total = {k: sum(s[k] for s in stats) for k in ("written", "errors", "prefetched", "requests")}
        by: dict = {}
        for s in stats:
            for reason, n in s["by"].items():
                by[reason] = by.get(reason, 0) + n
        data.search["writer_errors"] = {"errors": total["errors"], "by": by}
        data.search["writer"] = {**total, "by": by}
        note = fallback_note(roles.writer.name, total["written"], total["errors"], by)
        if note:
            data.warnings.append(RunWarning(note, "writer_fallback"))
    if roles.agent is not None:
        rows = data.trajectories
        data.user_model = roles.user.model if roles.user is not None else None
        data.coverage["agent_model"] = roles.agent.model
        data.coverage["user_model"] = data.user_model
        asked = [r for r in rows if r.get("_ended_on_question")]
        data.search["ended_on_question"] = {
            "share": round(len(asked) / len(rows), 4) if rows else 0.0, "n": len(rows),
            "user_left": sum(1 for r in asked if r.get("ended_by") == "user_left")}
        turns = [r.get("_user_turns", 0) for r in rows]
        data.coverage["delivered"]["mean_user_turns"] = round(sum(turns) / len(turns), 3) if turns else 0.0
