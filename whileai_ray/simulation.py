"""simulate(): arguments -> RunConfig -> a job on Ray -> SimulationData.

This module stays thin: validation lives in ``config``, the plan in ``search``, the writer in
``situations``, the distributed loop in ``runtime``, the summary in ``report``.
"""
from __future__ import annotations

import math
import time
import warnings as _warnings
from functools import partial
from typing import Any, Callable

from .config import resolve_config
from .data import SimulationData
from .grading import fresh_scoring_run_id
from .score.judging import judge_name
from .progress import ProgressReporter
from .report import build_report
from .roles import resolve_roles
from .search.planner import PlanSettings, Planner
from .situations.grid import build_axes, pairwise_cells, validate_dimensions
from .situations.template_writer import TemplateWriter
from .store.plan_snapshot import snapshot_path
from .unit import RunMeta

DEFAULT_FAULT_RATE = {"rl": 0.5}          # other modes: 0.1 (see resolve_fault_rate)
ROLLOUT_ACTOR_SLOTS = 64                  # concurrent rollouts per rollout actor by default
ASYNC_ACTOR_SLOTS = 2048                  # an async agent: rollouts are tasks on one loop, not threads
CLASS_BUILD_S = 600.0                     # how long a class's __init__ (a model load) may take per actor


def simulate(agent: Any = None, *, spec: Any = None, tools: list[dict] | None = None,
             system_prompt: str | None = None, budget: int | None = 1000,
             time_budget: float | None = None, until: str = "compute", mode: str = "explore",
             situations: int | None = None, requests_per_situation: int | None = None,
             rollouts_per_request: int | None = None, unique_situations: bool = False,
             reproducible: bool | None = None, grade: bool | str = False, llm_grade: bool = False,
             traces: Any = None, grader: Any = None, rubric: str | None = None,
             strategy: str = "auto", seeds: list | None = None, scaffold: str | None = None,
             execute: Callable | None = None, output: str | None = None, tasks: Any = None,
             runs: int = 1, checkpoint: str | None = None,
             on_progress: Callable[[dict], None] | None = None, advanced: dict | None = None,
             repeats: int | None = None, phrasings: int | None = None,
             repeat_policy: str | None = None, concurrency: int | None = None,
             simulator: Any = None, user_model: Any = None, backend: Any = None,
             seed: int | None = None, sampling: dict | None = None, max_turns: int | None = None,
             avg_turns: float | None = None, fault_rate: float | None = None,
             temperature: float | None = None, timeout: float | None = None,
             logprobs: bool | None = None, hard_share: float | None = None,
             patience: str | None = None, **passed: Any) -> SimulationData:
    """Generate situations for an agent, roll them out, and return the rows.

    ``agent`` is a callable ``message -> {"steps": [...], "final_text": str}`` (or a backend
    spec): a function (run in a rollout actor's threads), an ``async def`` function (awaited on
    the actor's event loop) or a class (built once per rollout actor with
    ``advanced["agent_args"/"agent_kwargs"]``, then called per rollout); see ``agents/forms.py``.
    Every other argument is keyword-only and documented in the seeds' ``simulate.md``. Nothing
    is spent before every argument has been checked.
    """
    explicit = {k: v for k, v in locals().items() if k not in ("agent", "passed")}
    cfg = resolve_config(agent, explicit, passed)
    keep_fault_cells = isinstance(advanced, dict) and advanced.get("prefer_success") is False
    dims = validate_dimensions(cfg.dimensions, cfg.tools) if cfg.dimensions else None
    roles = resolve_roles(cfg)              # every endpoint checked before any budget is spent
    return _run(cfg, dims, roles, keep_fault_cells)


def resolve_fault_rate(cfg) -> float:
    if cfg.fault_rate_set and cfg.fault_rate is not None:
        return min(1.0, max(0.0, float(cfg.fault_rate)))
    return DEFAULT_FAULT_RATE.get(cfg.mode, 0.1)


def agent_model_version(cfg, roles=None) -> str:
    if cfg.advanced.get("model_version"):
        return str(cfg.advanced["model_version"])
    if roles is not None and roles.agent is not None:
        return roles.agent.model or "model"
    agent = cfg.agent
    while isinstance(agent, partial):       # functools.partial(MyAgent, ...): named by MyAgent
        agent = agent.func
    name = getattr(agent, "__name__", None)
    return name if isinstance(name, str) and name else "callable-agent"


def _seeds_that_fit(cfg, k) -> tuple[list, list]:
    seeds = list(cfg.seeds) + list(cfg.advanced.get("seed_prompts") or []) + \
        list(cfg.advanced.get("extra_situations") or [])
    if not seeds or cfg.budget <= 0:
        return seeds, []
    covered = max(0, cfg.budget // max(1, k))
    return seeds[:covered], seeds[covered:]


def plan_fingerprint(cfg, settings) -> str:
    """What decides the plan: a resumed run with the same fingerprint replays it exactly."""
    from .rng import stable_hash
    pinned = [(sit.scenario_id, sit.prompt) for sit, _ in settings.pinned]
    return stable_hash("plan-v1", cfg.seed, cfg.mode, settings.n, settings.k, settings.repeat_policy,
                       settings.hard_share, settings.fault_rate, settings.situations, settings.round_size,
                       settings.probe, settings.seeds, cfg.dimensions, cfg.system_prompt, pinned,
                       cfg.advanced.get("lag"), cfg.reproducible)[:16]


def _run(cfg, dims, roles, keep_fault_cells: bool = False) -> SimulationData:
    from .runtime.run import new_run_id

    t_start = time.monotonic()
    run_id = cfg.advanced.get("run_id") or new_run_id()
    axes = build_axes(cfg.tools, cfg.system_prompt, dims)
    cells = pairwise_cells(axes)
    if cfg.mode != "rl" and not keep_fault_cells:
        from .situations.covering import fold_fault_cells
        cells = fold_fault_cells(cells)          # advanced={"prefer_success": False} keeps them
    pinned, k, pinned_info = [], cfg.repeats, None
    if cfg.tasks is not None:
        from .search.tasks import build_tasks
        pinned, source_k, pinned_info = build_tasks(cfg.tasks)
        k = cfg.repeats if cfg.repeats_set else source_k
    seeds, dropped = _seeds_that_fit(cfg, k)
    results, datas = [], []
    for eval_run in range(cfg.runs):
        settings = _settings(cfg, run_id, seeds, k, pinned, eval_run, axes, roles.writer is not None)
        result = _run_once(cfg, settings, cells, run_id, eval_run, roles)
        results.append(result)
        if eval_run == 0 and cfg.runs > 1 and not pinned:
            from .search.tasks import build_tasks
            pinned, _, pinned_info = build_tasks(result["rows"])
            seeds = []
    rows = []
    for eval_run, result in enumerate(results):
        for r in result["rows"]:
            if cfg.runs > 1:
                lineage = r.setdefault("lineage", {})
                lineage["eval_run"] = eval_run
                if eval_run > 0:
                    lineage["replayed"] = True
                    lineage["replayed_from_run"] = 0
            rows.append(r)
    if cfg.tasks is not None:
        for r in rows:
            r.setdefault("lineage", {})["replayed"] = True
    result = _merge_results(results)
    data = SimulationData(trajectories=rows, stopped_because=result["stopped_because"])
    _k_cfg = cfg if k == cfg.repeats else _with_repeats(cfg, k)
    build_report(data, _k_cfg, result, axes=axes, cells=cells, seeds=seeds, dropped=dropped,
                 fault_rate=resolve_fault_rate(cfg), run_id=run_id, t_start=t_start)
    _add_resume_and_replay_notes(data, cfg, result, pinned_info, results)
    first = results[0]
    data.search["timings"] = {
        "driver_start_s": round(first["driver_started_at"] - t_start, 3),
        "first_row_s": round(first["driver_started_at"] - t_start + (first.get("first_row_s") or 0.0), 3),
        "elapsed_s": round(time.monotonic() - t_start, 3)}
    _add_role_notes(data, cfg, roles, results)
    for w in data.warnings:
        from .progress import logger
        logger.warning(w)
    for w in data.search.pop("_user_warnings", []):
        _warnings.warn(w, UserWarning, stacklevel=3)
    if cfg.llm_grade:
        data.llm_grade()
    if cfg.output:
        from .store.parquet import write_parquet
        data.save(cfg.output, meta=True)
        write_parquet(list(data.rows), _parquet_path(cfg.output))
    return data


def _with_repeats(cfg, k):
    import dataclasses
    return dataclasses.replace(cfg, repeats=k)


def _parquet_path(output: str) -> str:
    return (output[:-6] if output.endswith(".jsonl") else output) + ".parquet"


def _settings(cfg, run_id, seeds, k, pinned, eval_run, axes=None, llm_writer=False) -> PlanSettings:
    knobs = cfg.advanced
    situations_cap = cfg.situations
    if situations_cap is not None and seeds:
        situations_cap = max(situations_cap, len(seeds))
    return PlanSettings(
        run_id=run_id, seed=cfg.seed, budget=max(0, cfg.budget), round_size=knobs["round_size"],
        n=cfg.phrasings, k=k, repeat_policy="fixed" if pinned else cfg.repeat_policy,
        situations=None if pinned else situations_cap, hard_share=cfg.hard_share,
        fault_rate=resolve_fault_rate(cfg), probe=knobs["probe"], seeds=[] if pinned else seeds,
        mutate=knobs.get("mutate_failures", True) is not False and not pinned,
        mutate_graded=knobs.get("mutate_graded_failures") is not False,
        dead_agent_errors=knobs["dead_agent_errors"], eval_run=eval_run, pinned=list(pinned),
        tools=cfg.tools, axes=axes or {}, until=cfg.until, arm_weights=knobs.get("arm_weights"),
        llm_writer=llm_writer, family_cap=knobs["family_cap"], copies_needed=knobs["copies_needed"])


def _run_once(cfg, settings, cells, run_id, eval_run, roles) -> dict:
    from .runtime.run import execute_job
    knobs = cfg.advanced
    sampling, model = cfg.sampling, None
    if roles.agent is not None:
        from .agents.model_unit import ModelSettings
        sampling = {"temperature": cfg.temperature if cfg.temperature is not None else 0.8,
                    "max_tokens": cfg.agent_max_tokens, "model": roles.agent.model, **(cfg.sampling or {})}
        model = ModelSettings(roles.agent, roles.user, max_turns=cfg.max_turns, avg_turns=cfg.avg_turns,
                              temperature=sampling["temperature"], max_tokens=sampling["max_tokens"],
                              timeout=cfg.timeout, logprobs=cfg.logprobs or False, patience=cfg.patience,
                              tool_choice=knobs.get("tool_choice"),
                              min_user_turns=knobs.get("min_user_turns"))
    meta = RunMeta(run_id=run_id, seed=cfg.seed, tools=cfg.tools, system_prompt=cfg.system_prompt,
                   model_version=agent_model_version(cfg, roles), sampling=sampling,
                   world_options=dict(knobs.get("world") or {}), agent_timeout=cfg.timeout)
    grader = cfg.grader
    if cfg.grade == "conduct":
        from .score.conduct import conduct_grader
        grader = conduct_grader
    elif cfg.grade is True and grader is None:
        grader = roles.judge
    from .agents.backends import configured_ray_options
    from .agents.forms import bind_class_form, is_async_callable, is_class_form
    agent, execute = cfg.agent, cfg.execute
    if cfg.agent_kind == "callable":        # a class: its constructor arguments travel with it
        agent = bind_class_form(agent, knobs.get("agent_args", ()), knobs.get("agent_kwargs"))
    execute = bind_class_form(execute, knobs.get("execute_args", ()), knobs.get("execute_kwargs"))
    if cfg.grader is not None and grader is cfg.grader:
        grader = bind_class_form(grader, knobs.get("grader_args", ()), knobs.get("grader_kwargs"))
    ray_opts = {**configured_ray_options(), **(knobs.get("ray") or {})}
    per_actor = int(ray_opts.pop("concurrency_per_actor", 0) or 0)
    n_actors = int(ray_opts.pop("rollout_actors", 0) or 0)
    slots = ASYNC_ACTOR_SLOTS if cfg.agent_kind == "callable" and is_async_callable(agent) else ROLLOUT_ACTOR_SLOTS
    if not n_actors:
        n_actors = max(1, math.ceil(cfg.concurrency / (per_actor or slots)))
    if not per_actor:
        per_actor = max(1, math.ceil(cfg.concurrency / n_actors))
    plan_fp = plan_fingerprint(cfg, settings)
    job = {
        "run_id": run_id if eval_run == 0 else f"{run_id}_r{eval_run}", "cap": max(0, cfg.budget),
        "make_planner": partial(_make_planner, settings, cfg.tools, cfg.system_prompt, cfg.seed, cells,
                                roles.writer),
        "model": model,
        "make_sink": partial(_make_sink, cfg, plan_fp, roles) if cfg.checkpoint else None,
        "plan_fingerprint": plan_fp,
        "agent": agent, "meta": meta, "execute": execute, "grader": grader,
        "start_timeout_s": 60.0 + (CLASS_BUILD_S if any(map(is_class_form, (agent, execute, grader))) else 0.0),
        "per_actor_concurrency": per_actor, "n_actors": n_actors,
        "chunk_size": knobs["chunk_size"], "lag": knobs["lag"], "reproducible": cfg.reproducible,
        "concurrency": cfg.concurrency, "time_budget": cfg.time_budget, "timeout": cfg.timeout,
        "judge_timeout": knobs.get("judge_timeout") or None, "ray": ray_opts,
        "judge_concurrency": knobs["judge_concurrency"], "judge_actors": int(ray_opts.pop("judge_actors", 1)),
        "judge_name": judge_name(grader) if grader is not None else None,
        "scoring_run_id": fresh_scoring_run_id() if grader is not None else None,
        "label_source": "conduct" if cfg.grade == "conduct" else None,
        "stream_path": cfg.output if cfg.runs == 1 else None,
        # planner snapshots (store/plan_snapshot.py): reproducible runs with a checkpoint and a
        # stateless (template) situation writer
        "snapshot": (str(snapshot_path(cfg.checkpoint)) if cfg.checkpoint and cfg.reproducible
                     and roles.writer is None and knobs["plan_snapshot_s"] > 0 else None),
        "snapshot_every_s": knobs["plan_snapshot_s"],
    }
    reporter = ProgressReporter(cfg.on_progress, every_rows=knobs["progress_every_rows"],
                                every_s=knobs["progress_every_s"])
    last = {}

    def on_snapshot(snap):
        last.update(snap)
        reporter.update(snap)

    result = execute_job(job, on_snapshot)
    rows = result["rows"]
    resume = result.get("resume") or {}
    if resume.get("mode") == "precount":
        for r in result["leftover_rows"]:
            r = dict(r)
            r["lineage"] = {**(r.get("lineage") or {}), "resumed": True}
            r["_ordinal"] = len(rows) + 10**9
            r["_key"] = [run_id, r.get("scenario_id"), 0, r.get("rollout_index", 0), eval_run]
            rows.append(r)
    cut = {tuple(g) for g in result["planner"]["group_cut"]}
    if cut and settings.k > 1:
        for r in rows:
            if (r.get("scenario_id"), r["_key"][2]) in cut:
                r["group_cut"] = True
    resumed = sum(1 for r in rows if (r.get("lineage") or {}).get("resumed"))
    final = {**last, "rows": len(rows), "landed": len(rows) - resumed, "resumed": resumed, "inflight": 0,
             "cap": max(0, cfg.budget), "elapsed_s": round(result["elapsed_s"], 1)}
    reporter.emit(final)
    result["resumed_count"] = resumed
    return result


def _merge_results(results: list) -> dict:
    if len(results) == 1:
        return results[0]
    merged = dict(results[-1])
    merged["rows"] = [r for res in results for r in res["rows"]]
    p = {k: v for k, v in results[0]["planner"].items()}
    for res in results[1:]:
        q = res["planner"]
        for key in ("landed", "scheduled", "timed_out", "agent_errors", "situations"):
            p[key] = p[key] + q[key]
        for key in ("rerolled_by", "lost_by"):
            p[key] = {r: p[key].get(r, 0) + q[key].get(r, 0) for r in set(p[key]) | set(q[key])}
    merged["planner"] = p
    merged["resumed_count"] = sum(r.get("resumed_count", 0) for r in results)
    merged["node_rows"] = {}
    for res in results:
        for node, n in res["node_rows"].items():
            merged["node_rows"][node] = merged["node_rows"].get(node, 0) + n
    merged["stopped_because"] = results[0]["stopped_because"]
    return merged


def _add_resume_and_replay_notes(data, cfg, result, pinned_info, results) -> None:
    resumed = result.get("resumed_count", 0)
    ro = data.search["rollouts"]
    ro["resumed"] = resumed
    ro["landed"] = len(data.trajectories) - resumed
    data.coverage["resumed"] = resumed
    resume = result.get("resume") or {}
    if cfg.checkpoint:
        data.search["plan_snapshots"] = {"written": resume.get("snapshots_written", 0),
                                         "resumed_from_round": resume.get("snapshot_round")}
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
        from .progress import logger
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


def _make_planner(settings, tools, system_prompt, seed, cells, writer=None, **overrides):
    import dataclasses
    if overrides:
        settings = dataclasses.replace(settings, **overrides)
    writer = writer or TemplateWriter(tools, system_prompt, seed)
    return Planner(settings, writer, cells)


def _add_role_notes(data, cfg, roles, results=()) -> None:
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
        from .situations.llm_writer import fallback_note
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


def _make_sink(cfg, plan_fp, roles=None):
    from .store.fingerprint import fingerprint
    from .store.jsonl import JsonlCheckpoint
    from .store.sink import CheckpointSink
    fp = fingerprint(cfg.tools, cfg.system_prompt, agent_model_version(cfg, roles))
    fp["plan"] = plan_fp
    return CheckpointSink(JsonlCheckpoint(cfg.checkpoint, fp))
