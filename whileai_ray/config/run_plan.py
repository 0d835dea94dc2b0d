"""What a run's plan is made of, from its checked arguments: the planner's settings, the plan's
fingerprint, the seeds the budget can pay for, the fault rate a mode resolves to, and the lineage
stamp every row of an evaluation run carries. Plain functions of the ``RunConfig`` (no Ray): the
runtime receives their results as data. Split from ``simulation.py``, which runs the plan.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.rng import stable_hash
from ..search.planner.settings import PlanSettings

if TYPE_CHECKING:
    from .arguments import RunConfig

__all__ = ["DEFAULT_FAULT_RATE", "resolve_fault_rate", "seeds_that_fit", "plan_fingerprint", "lineage",
           "plan_settings"]

DEFAULT_FAULT_RATE = {"rl": 0.5}          # other modes: 0.1 (see resolve_fault_rate)


def resolve_fault_rate(cfg) -> float:
    if cfg.fault_rate_set and cfg.fault_rate is not None:
        return min(1.0, max(0.0, float(cfg.fault_rate)))
    return DEFAULT_FAULT_RATE.get(cfg.mode, 0.1)


def seeds_that_fit(cfg: RunConfig, k) -> tuple[list, list]:
    seeds = list(cfg.seeds) + list(cfg.advanced.seed_prompts or []) + \
        list(cfg.advanced.extra_situations or [])
    if not seeds or cfg.budget <= 0:
        return seeds, []
    covered = max(0, cfg.budget // max(1, k))
    return seeds[:covered], seeds[covered:]


def plan_fingerprint(cfg: RunConfig, settings) -> str:
    """What decides the plan: a resumed run with the same fingerprint replays it exactly."""
    pinned: list[object] = [(sit.scenario_id, sit.prompt) for sit, _ in settings.pinned]
    if settings.pinned_k:                      # a runs= replay's per-ask counts (absent before: same hash)
        pinned = [pinned, list(settings.pinned_k)]
    return stable_hash("plan-v2", cfg.seed, cfg.mode, settings.n, settings.k, settings.repeat_policy,
                       settings.hard_share, settings.fault_rate, settings.situations, settings.round_size,
                       settings.probe, settings.seeds, cfg.dimensions, cfg.system_prompt, pinned,
                       cfg.advanced.lag, cfg.reproducible, settings.traces_key)[:16]


def lineage(cfg, eval_run: int) -> dict | None:
    """What every row of this evaluation run is stamped with (``lineage``), or None."""
    stamp: dict = {}
    if cfg.runs > 1:
        stamp["eval_run"] = eval_run
        if eval_run > 0:
            stamp.update(replayed=True, replayed_from_run=0)
    if cfg.tasks is not None:
        stamp["replayed"] = True
    return stamp or None


def plan_settings(cfg: RunConfig, run_id, seeds, k, pinned, eval_run, axes=None, llm_writer=False, traces=None,
              pinned_k=()) -> PlanSettings:
    knobs = cfg.advanced
    situations_cap = cfg.situations
    if situations_cap is not None and seeds:
        situations_cap = max(situations_cap, len(seeds))
    return PlanSettings(
        run_id=run_id, seed=cfg.seed, budget=max(0, cfg.budget), round_size=knobs.round_size,
        n=cfg.phrasings, k=k, repeat_policy="fixed" if pinned else cfg.repeat_policy,
        situations=None if pinned else situations_cap, hard_share=cfg.hard_share,
        fault_rate=traces.fault_rate_or(resolve_fault_rate(cfg)), probe=knobs.probe, seeds=[] if pinned else seeds,
        mutate=knobs.mutate_failures is not False and not pinned,
        mutate_graded=knobs.mutate_graded_failures is not False,
        dead_agent_errors=knobs.dead_agent_errors, eval_run=eval_run, pinned=list(pinned), pinned_k=list(pinned_k),
        tools=cfg.tools, axes=axes or {}, until=cfg.until, arm_weights=knobs.arm_weights,
        llm_writer=llm_writer, family_cap=knobs.family_cap, copies_needed=knobs.copies_needed,
        trace_guard=traces.guard if traces is not None else None,
        aimed_cells=traces.aimed_cells if traces is not None else None,
        steering_weight=traces.steering_weight if traces is not None else 0.0,
        traces_key=traces.key if traces is not None else "")
