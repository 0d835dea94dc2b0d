"""What a finished run adds to its SimulationData beyond the report: resume and replay notes
(rows settled from disk, planner snapshots, poison units, pinned tasks, eval runs) and the
notes of the models it talked to (writer fallbacks, simulated-user turns)."""
from __future__ import annotations

from ..situations.llm_writer import fallback_note
from ..store.plan_snapshot_file import snapshot_path
from .progress import logger

__all__ = ["add_resume_and_replay_notes", "add_role_notes"]


def add_resume_and_replay_notes(data, cfg, result, pinned_info, results) -> None:
    resumed = result.get("resumed_count", 0)
    ro = data.search["rollouts"]
    ro["resumed"] = resumed
    ro["landed"] = len(data.trajectories) - resumed
    data.coverage["resumed"] = resumed
    resume = result.get("resume") or {}
    retry = result.get("chunk_retry") or {}
    if retry.get("suspected"):                   # chunks that failed as a whole: who was tried alone, who was lost
        data.search["poison"] = retry
    for note in result.get("checkpoint_warnings") or ():    # repairs made while opening it (issue 11)
        if note not in data.warnings:
            data.warnings.append(note)
    if cfg.checkpoint:
        data.search["plan_snapshots"] = {"written": resume.get("snapshots_written", 0),
                                         "resumed_from_round": resume.get("snapshot_round"),
                                         "bytes": resume.get("snapshot_bytes", 0),
                                         "longest_pause_ms": resume.get("snapshot_pause_max_ms", 0.0),
                                         "longest_pause_cpu_ms": resume.get("snapshot_pause_cpu_max_ms", 0.0),
                                         "restore_s": resume.get("snapshot_restore_s", 0.0)}
        if resume.get("snapshot_ignored"):
            data.warnings.append(f"the planner snapshot {snapshot_path(cfg.checkpoint)} {resume['snapshot_ignored']}; "
                                 "this resume replayed its plan from the seed instead (same rows, slower start)")
        for problem in resume.get("snapshot_errors", ()):
            data.warnings.append(f"planner snapshot beside {cfg.checkpoint}: {problem}")
    if resume.get("loaded"):
        line = (f"resumed {resume['loaded']} rows from {cfg.checkpoint}: {resume['matched']} matched this run's "
                f"plan ({resume['mode']} replay")
        if resume.get("snapshot_round") is not None:
            line += f", continued from the planner snapshot after round {resume['snapshot_round']}"
        line += ")"
        if resume["mode"] == "exact" and resume["unmatched"]:
            line += (f"; {resume['unmatched']} rows on disk are not part of this run and were left out "
                     "(they stay in the file)")
            data.warnings.append(line)
        logger.info(line)
        data.search["resume"] = resume
    if cfg.tasks is not None and pinned_info is not None:
        ran = {r["prompt"] for r in data.trajectories}
        data.search["pinned_tasks"] = {"prompts": pinned_info["prompts"], "tasks": pinned_info["tasks"],
                                       "ran": len(ran), "missing": []}
        data.warnings[:] = [w for w in data.warnings if not w.startswith("simulator=False wrote")]
    if cfg.runs > 1:
        data.search["eval_runs"] = {"runs": cfg.runs, "per_run": [
            {"rows": len(r["rows"]), "stopped_because": r["stopped_because"]} for r in results]}
        data.coverage["runs"] = cfg.runs


def add_role_notes(data, cfg, roles, results=()) -> None:
    for token in roles.degraded:
        if token not in data.degraded:
            data.degraded.append(token)
    data.warnings.extend(roles.warnings)
    if roles.writer is not None:
        data.warnings[:] = [w for w in data.warnings if not w.startswith("simulator=False wrote")]
        data.writer_model = data.coverage["writer_model"] = data.coverage["simulator"] = roles.writer.name
        # the driver's copy of the writer did the writing: its counts come back with each result
        stats = [r["writer"] for r in results if r.get("writer")] or [roles.writer.stats()]
        total = {k: sum(s[k] for s in stats) for k in ("written", "errors", "prefetched", "requests")}
        by: dict = {}
        for s in stats:
            for reason, n in s["by"].items():
                by[reason] = by.get(reason, 0) + n
        data.search["writer_errors"] = {"errors": total["errors"], "by": by}
        data.search["writer"] = {**total, "by": by}
        note = fallback_note(roles.writer.name, total["written"], total["errors"], by)
        if note:
            data.warnings.append(note)
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
