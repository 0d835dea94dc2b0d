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
from .grading import apply_loop_verdicts, fresh_scoring_run_id
from .progress import ProgressReporter
from .report import build_report
from .roles import check_online_roles
from .search.planner import PlanSettings, Planner
from .situations.grid import build_axes, pairwise_cells, validate_dimensions
from .situations.template_writer import TemplateWriter
from .unit import RunMeta

DEFAULT_FAULT_RATE = {"rl": 0.5}          # other modes: 0.1 (see resolve_fault_rate)
ROLLOUT_ACTOR_SLOTS = 64                  # concurrent rollouts per rollout actor by default


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
    spec); every other argument is keyword-only and documented in the seeds'
    ``simulate.md``. Nothing is spent before every argument has been checked.
    """
    explicit = {k: v for k, v in locals().items() if k not in ("agent", "passed")}
    cfg = resolve_config(agent, explicit, passed)
    check_online_roles(cfg)
    dims = validate_dimensions(cfg.dimensions, cfg.tools) if cfg.dimensions else None
    return _run(cfg, dims)


def resolve_fault_rate(cfg) -> float:
    if cfg.fault_rate_set and cfg.fault_rate is not None:
        return min(1.0, max(0.0, float(cfg.fault_rate)))
    return DEFAULT_FAULT_RATE.get(cfg.mode, 0.1)


def agent_model_version(cfg) -> str:
    if cfg.advanced.get("model_version"):
        return str(cfg.advanced["model_version"])
    name = getattr(cfg.agent, "__name__", None)
    return name if isinstance(name, str) and name else "callable-agent"


def _seeds_that_fit(cfg) -> tuple[list, list]:
    seeds = list(cfg.seeds) + list(cfg.advanced.get("seed_prompts") or []) + \
        list(cfg.advanced.get("extra_situations") or [])
    if not seeds or cfg.budget <= 0:
        return seeds, []
    covered = max(0, cfg.budget // max(1, cfg.repeats))
    return seeds[:covered], seeds[covered:]


def _run(cfg, dims) -> SimulationData:
    from .runtime.run import execute_job, new_run_id

    t_start = time.monotonic()
    run_id = new_run_id()
    axes = build_axes(cfg.tools, cfg.system_prompt, dims)
    cells = pairwise_cells(axes)
    seeds, dropped = _seeds_that_fit(cfg)
    situations_cap = cfg.situations
    if situations_cap is not None and seeds:
        situations_cap = max(situations_cap, len(seeds))
    knobs = cfg.advanced
    settings = PlanSettings(
        run_id=run_id, seed=cfg.seed, budget=max(0, cfg.budget), round_size=knobs["round_size"],
        n=cfg.phrasings, k=cfg.repeats, repeat_policy=cfg.repeat_policy, situations=situations_cap,
        hard_share=cfg.hard_share, fault_rate=resolve_fault_rate(cfg), probe=knobs["probe"],
        seeds=seeds, mutate=knobs.get("mutate_failures", True) is not False,
        dead_agent_errors=knobs["dead_agent_errors"])
    meta = RunMeta(run_id=run_id, seed=cfg.seed, tools=cfg.tools, system_prompt=cfg.system_prompt,
                   model_version=agent_model_version(cfg), sampling=cfg.sampling,
                   world_options=dict(knobs.get("world") or {}), agent_timeout=cfg.timeout)
    grader = cfg.grader
    if cfg.grade == "conduct":
        from .score.conduct import conduct_grader
        grader = conduct_grader
    ray_opts = dict(knobs.get("ray") or {})
    per_actor = int(ray_opts.pop("concurrency_per_actor", 0) or 0)
    n_actors = int(ray_opts.pop("rollout_actors", 0) or 0)
    if not n_actors:
        n_actors = max(1, math.ceil(cfg.concurrency / (per_actor or ROLLOUT_ACTOR_SLOTS)))
    if not per_actor:
        per_actor = max(1, math.ceil(cfg.concurrency / n_actors))
    job = {
        "run_id": run_id, "cap": max(0, cfg.budget),
        "make_planner": partial(_make_planner, settings, cfg.tools, cfg.system_prompt, cfg.seed, cells),
        "make_sink": partial(_make_sink, cfg) if cfg.checkpoint else None,
        "agent": cfg.agent, "meta": meta, "execute": cfg.execute, "grader": grader,
        "per_actor_concurrency": per_actor, "n_actors": n_actors,
        "chunk_size": knobs["chunk_size"], "lag": knobs["lag"], "reproducible": cfg.reproducible,
        "concurrency": cfg.concurrency, "time_budget": cfg.time_budget, "timeout": cfg.timeout,
        "judge_timeout": knobs.get("judge_timeout"), "ray": ray_opts,
    }
    reporter = ProgressReporter(cfg.on_progress, every_rows=knobs["progress_every_rows"],
                                every_s=knobs["progress_every_s"])
    last = {}

    def on_snapshot(snap):
        last.update(snap)
        reporter.update(snap)

    result = execute_job(job, on_snapshot)
    rows = result["rows"]
    scoring_run_id = None
    if grader is not None:
        scoring_run_id = fresh_scoring_run_id()
        apply_loop_verdicts(rows, grader, scoring_run_id)
        if cfg.grade == "conduct":
            for r in rows:
                r["label_source"] = "conduct"
    cut = {tuple(g) for g in result["planner"]["group_cut"]}
    if cut and cfg.repeats > 1:
        for r in rows:
            if (r.get("scenario_id"), r["_key"][2]) in cut:
                r["group_cut"] = True
    data = SimulationData(trajectories=rows, stopped_because=result["stopped_because"])
    build_report(data, cfg, result, axes=axes, cells=cells, seeds=seeds, dropped=dropped,
                 fault_rate=settings.fault_rate, run_id=run_id, t_start=t_start)
    final = {**last, "rows": len(rows), "landed": len(rows), "inflight": 0,
             "elapsed_s": round(time.monotonic() - t_start, 1)}
    if final.get("cap") is None:
        final["cap"] = max(0, cfg.budget)
    reporter.emit(final)
    for w in data.warnings:
        from .progress import logger
        logger.warning(w)
    for w in data.search.get("_user_warnings", []):
        _warnings.warn(w, UserWarning, stacklevel=3)
    data.search.pop("_user_warnings", None)
    if cfg.output:
        data.save(cfg.output, meta=True)
    return data


def _make_planner(settings, tools, system_prompt, seed, cells):
    writer = TemplateWriter(tools, system_prompt, seed)
    return Planner(settings, writer, cells)


def _make_sink(cfg):
    from .store.fingerprint import fingerprint
    from .store.jsonl import JsonlCheckpoint
    from .store.sink import CheckpointSink
    return CheckpointSink(JsonlCheckpoint(cfg.checkpoint, fingerprint(cfg.tools, cfg.system_prompt,
                                                                      agent_model_version(cfg))))
