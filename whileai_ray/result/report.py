"""The run's summary: ``report()`` (coverage), ``search`` (how the budget was spent),
``warnings`` (what to check before trusting a number). Pure functions over the rows' counts
(``report_tally.py``: Arrow compute over their fact columns, the same for a list or a run on
disk) and the planner's stats.

What the run hands back is a ``RunResult`` (``runtime/run_result.py``), read by field; this
module names it for type checking only (the result layer never imports the runtime).
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..core.defaults import LOST_REASONS, REROLL_REASONS
from ..core.run_warning import listed
from ..situations.grid import all_pairs, cell_key, pairs_in
from .report_tally import DICTIONARY_COLUMNS, REPORT_COLUMNS, ReportTally, report_tally
from .data import Later
from .invalid_calls import invalid_calls_report
from .row_store import row_store
from .warnings_text import run_warnings

if TYPE_CHECKING:
    from ..config.arguments import RunConfig
    from ..core.run_warning import RunWarning
    from ..runtime.run_result import RunResult

REASONS = LOST_REASONS


def _tier_mix(tally, cfg) -> dict:
    n = tally.n
    return {"hard_share_requested": cfg.hard_share, "hard_share_realized": round(tally.hard / n, 4) if n else None,
            "counts": dict(sorted(tally.tier_counts.items())), "rows": n}


def run_tally(data, facts=None) -> ReportTally:
    """The run's ``ReportTally``: Arrow compute over its rows' fact columns (``facts``: those
    columns already read, from the spill its list was decoded from)."""
    return report_tally(facts if facts is not None else row_store(data.trajectories).facts(REPORT_COLUMNS, DICTIONARY_COLUMNS))


# the arguments the docs say are "None unless you set it" (simulate.md, concurrency ... max_turns)
UNSET_IS_NONE = ("concurrency", "seed", "sampling", "temperature", "timeout", "logprobs", "fault_rate",
                 "max_turns", "avg_turns")


def asked_and_resolved(cfg, fault_rate: float) -> dict:
    """What the caller asked (each of :data:`UNSET_IS_NONE` None unless set, as the docs show it)
    and, apart, what the run resolved it to (``resolved``: the 300 s timeout, the mode's fault
    rate, the default concurrency and seed)."""
    resolved = {"concurrency": cfg.concurrency, "seed": cfg.seed, "sampling": cfg.sampling,
                "temperature": cfg.temperature, "timeout": cfg.timeout, "logprobs": cfg.logprobs,
                "fault_rate": fault_rate, "max_turns": cfg.max_turns, "avg_turns": cfg.avg_turns}
    was_set = {"timeout": cfg.timeout_set, "fault_rate": cfg.fault_rate_set}
    asked = {name: resolved[name] if was_set.get(name, name in cfg.explicit) else None for name in UNSET_IS_NONE}
    return {**asked, "resolved": resolved}


def build_report(data, cfg: RunConfig, result: RunResult, *, axes, cells, seeds, dropped, fault_rate, run_id,
                 t_start, facts=None) -> tuple[list[RunWarning], ReportTally]:
    """Fill ``data``'s report, search figures and warnings; return every note of the run (those
    raised as ``UserWarning`` included: ``core/run_warning.raised``) and the rows' tally (for
    the notes ``simulate()`` adds). ``facts``: the rows' report columns when already read (``run_tally``)."""
    tally = run_tally(data, facts)
    stats = result.planner
    n = tally.n
    tool_names = [t.get("function", t).get("name") for t in cfg.tools]
    planned = {cell_key(c) for c in cells}
    cell_counts = tally.cell_counts
    per_cell = tally.per_cell
    copies_needed = cfg.advanced.copies_needed
    min_copies = min((per_cell.get(k, 0) for k in planned), default=0)
    seen_cells = [c for c in cells if per_cell.get(cell_key(c))]
    pairs_planned = pairs_in(cells) if cells else all_pairs(axes)
    pairs_cov = pairs_in(seen_cells) & pairs_planned
    faulted_rows = tally.faulted
    fired = tally.fired
    # the three agent reasons always (zeros included, as the docs say); timed_out and poison causes when they occur
    lost_by = {k: stats.lost_by.get(k, 0) for k in REASONS if k in REROLL_REASONS or stats.lost_by.get(k, 0)}
    elapsed = time.monotonic() - t_start
    tier_mix = _tier_mix(tally, cfg)
    stance_mix = tally.stance_counts
    requested_rows = max(0, cfg.budget)
    if cfg.situations is not None:
        requested_rows = min(requested_rows, cfg.situations * cfg.phrasings * cfg.repeats)
    tools_report = tally.tools_report(tool_names)
    knobs = {k: v for k, v in cfg.advanced.as_dict().items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    coverage = {
        "rows": n, "unique_prompts": tally.unique_prompts,
        "unique_scenario_ids": tally.unique_scenario_ids,
        "unique_signatures": tally.unique_signatures,
        "unique_cells": len(per_cell), "unique_shapes": len(tally.shape_counts),
        "budget": requested_rows if cfg.situations is None else max(0, cfg.budget),
        "stopped_because": data.stopped_because,
        "saturation": bool(planned) and min_copies >= copies_needed,
        "min_cell_copies": min_copies,
        "pairwise": {"pairs_planned": len(pairs_planned), "pairs_covered": len(pairs_cov),
                     "fraction": round(len(pairs_cov) / len(pairs_planned), 4) if pairs_planned else 1.0},
        "copies_needed": copies_needed, "unique": cfg.unique_situations,
        "unique_situations": cfg.unique_situations, "repeats": cfg.repeats, "knobs": knobs,
        "patience": cfg.patience, "user_temperature": None, "world": dict(cfg.advanced.world or {}),
        "world_note": world_note(cfg),
        "hard_share": cfg.hard_share, "runs": cfg.runs,
        "budget_per_run": max(0, cfg.budget), "strategy": cfg.strategy, "time_budget": cfg.time_budget,
        "reproducible": cfg.reproducible, "dimensions": cfg.dimensions,
        "arm_weights": {}, "tasks": 0, "traces": 0, "seeds": len(seeds) + len(dropped),
        "grader": getattr(cfg.grader, "__name__", None) if cfg.grader else None,
        "grade": cfg.grade, "llm_grade": cfg.llm_grade, "simulator": "template",
        "writer_model": "template", "agent_model": data_model(data.trajectories), "user_model": None,
        **asked_and_resolved(cfg, fault_rate),
        "mode": cfg.mode, "repeat_policy": cfg.repeat_policy, "until": cfg.until,
        "requested": {"fault_rate": cfg.fault_rate if cfg.fault_rate_set else None,
                      "avg_turns": cfg.avg_turns, "stance": (cfg.dimensions or {}).get("stance")},
        "delivered": {"rows": n, "fault_share": round(faulted_rows / n, 4) if n else 0.0,
                      "fault_fired_share": round(fired / n, 4) if n else 0.0,
                      "invalid_calls": invalid_calls_report(data.trajectories),
                      "tier_mix": tier_mix["counts"], "stance_mix": dict(sorted(stance_mix.items()))},
        "rollouts_requested": requested_rows, "rollouts_completed": n,
        "rollouts_lost": sum(lost_by.values()), "rollouts_lost_by": lost_by, "rollouts_over_cap": 0,
        "n_situations": stats.situations, "requests_per_situation": cfg.phrasings,
        "rollouts_per_request": cfg.repeats, "tools": tools_report,
        "dead_tools": [], "run_id": run_id,
        "placement": {"rollout_actors": result.n_actors, "rows_by_node": result.node_rows,
                      "actor_nodes": result.actor_nodes, "chunks_reissued": result.chunks_reissued,
                      "pool": result.pool, "warm": dict(result.warm)},
    }
    rollouts = {"rows": n, "cap": max(0, cfg.budget), "landed": n, "resumed": 0,
                "rerolled": stats.rerolled,
                "rerolled_by": {k: v for k, v in stats.rerolled_by.items() if v},
                "timed_out": stats.timed_out, "lost": sum(lost_by.values()),
                "lost_by": {k: v for k, v in lost_by.items() if v},
                "situations": stats.situations, "elapsed_s": round(elapsed, 1)}
    search: dict = {
        "cell_counts": dict(cell_counts), "shape_counts": dict(tally.shape_counts),
        "region_counts": dict(tally.region_counts),
        "arm_counts": stats.arm_counts, "allocator": stats.allocator, "mode": cfg.mode,
        "repeat_policy": cfg.repeat_policy, "n_req": cfg.phrasings, "k": cfg.repeats,
        "min_cell_copies": min_copies, "copies_needed": copies_needed,
        "mutation_aims": stats.mutation_aims, "failure_criteria": stats.failure_criteria, "rollouts": rollouts,
        "strategy": {"requested": cfg.strategy, "resolved": "broad", "reason": "no traces -> broad exploration"},
        "tier_mix": tier_mix,
    }
    if cfg.repeat_policy in ("successive", "adaptive") and cfg.repeats > 1:
        search["groups"] = stats.groups
    if seeds or dropped:
        search["seeds_dropped"] = list(dropped)
    if result.clock:
        search["clock"] = result.clock           # how a time_budget stop landed (search/planner/clock.py)
    if result.stuck_units:
        search["stuck_units"] = result.stuck_units
    if stats.agent_errors:
        search["agent_errors"] = stats.agent_errors
        if result.errors:
            search["first_agent_error"] = result.errors[0]
    keys = stats.coverage_keys or {}
    for key in ("saturation", "predicted_to_saturation", "predicted_remaining"):
        if key in keys:
            coverage[key] = keys[key]
    coverage["arm_weights"] = stats.arm_initial
    search["arm_weights"] = stats.arm_weights
    search["arms"] = stats.arms
    search["uncovered_shapes"] = stats.uncovered_shapes
    search["family_cap"] = stats.family_cap
    search["copy_deficit"] = stats.copy_deficit
    edge = (result.writer or {}).get("edge_asks")
    if edge:        # how many asks the lanes wrote and the planner took: timing, not the run's content,
        search["edge_asks"] = edge          # so beside the timings, never in the report two equal runs share
    data.coverage = coverage
    data.search = search
    data.arm_weights = dict(search["arm_weights"])
    data.elapsed_seconds = elapsed
    data.rows_per_second = n / elapsed if elapsed > 0 else 0.0
    data.first_row_seconds = result.first_row_s or 0.0
    data.row_seconds = list(tally.row_seconds)
    data.rollout_seconds = result.elapsed_s
    data.unique_prompts = coverage["unique_prompts"]
    data.unique_behavior_signatures = coverage["unique_signatures"]
    data.budget = max(0, cfg.budget)
    data.mode, data.repeat_policy = cfg.mode, cfg.repeat_policy
    data.n_situations = cfg.situations
    data.requests_per_situation, data.rollouts_per_request = cfg.phrasings, cfg.repeats
    data.unique_situations = cfg.unique_situations
    data.allocator = stats.allocator
    data.writer_model = "template"
    data.declared_tools = set(tool_names)
    data.system_prompt, data.tools = cfg.system_prompt, cfg.tools
    import hashlib          # keyed like every row's lineage.system_prompt_sha
    data.system_prompts = {hashlib.sha256((cfg.system_prompt or "").encode()).hexdigest()[:16]: cfg.system_prompt}
    data.coverage_curve = list(stats.coverage_curve or [])
    resume = result.resume
    _measured(data, cfg, stats, resume.get("loaded", 0) if resume.get("mode") == "precount" else 0, axes,
              data.trajectories)
    data.stages = ["agent ingestion", "generated candidate with arm provenance", "world/fault instantiated",
                   "model rollout", "full tool trajectory", "behavior signature", "row stored"]
    notes, degraded = run_warnings(data, cfg, stats, seeds, dropped, fault_rate, tally)
    data.warnings = listed(notes)
    data.degraded = degraded
    return notes, tally


def world_note(cfg: RunConfig) -> str:
    """Who answered the tool calls, in plain words (``report()["world_note"]``)."""
    if cfg.execute is not None:
        name = getattr(cfg.execute, "__name__", None) or type(cfg.execute).__name__
        return (f"execute={name} answered every tool call; scheduled faults were applied first, so a "
                "faulted call never reached it")
    from ..world.options import world_options
    opts = world_options(cfg.advanced.world or None)
    return (f"the mock world answered every tool call (record-shaped answers; a named id exists with "
            f"probability {opts.exists_share:g}, faults scheduled per situation); pass execute= to answer "
            "tool calls against your own system")


MEASURE_ROWS = 20_000     # rows on disk past this: the search's account reads an even sample of them


def _measured(data, cfg, stats, precounted_prompts: int, axes, rows) -> None:
    """The timing fields, the scene brief and the search's account of itself (search/explain.py);
    ``stats`` is the planner's ``PlannerStats``. Rows on disk past ``MEASURE_ROWS`` are read
    as an even sample of that many for the duplicate rate, the axis gaps and the user's think
    counts (``search["measured_on"]`` says so); the grader's counts read every row, and only
    when a row was judged (the ``judge_status`` fact says)."""
    from ..score.grader_summary import arm_yield, grader_summary
    from ..search import explain
    writer_s = float(stats.writer_seconds or 0.0)
    data.scenario_generation_seconds = round(writer_s, 6)
    data.embedding_selection_seconds = round(max(0.0, float(stats.decide_seconds or 0.0) - writer_s), 6)
    t0 = time.perf_counter()
    data.scene_brief = explain.scene_brief(cfg.tools, cfg.system_prompt, axes or {})
    data.scene_brief_seconds = round(time.perf_counter() - t0, 6)
    every = rows
    if hasattr(rows, "sample") and len(rows) > MEASURE_ROWS:
        rows = rows.sample(MEASURE_ROWS)
        data.search["measured_on"] = {"rows": len(rows), "of": len(every), "sampled": True}
    if rows is every and isinstance(rows, list):     # in memory: worked out when first read
        data.semantic_duplicate_rate = Later(lambda: explain.duplicate_rate(r.get("prompt") for r in every))
    else:
        data.semantic_duplicate_rate = explain.duplicate_rate(r.get("prompt") for r in rows)
    data.embedder_name = "minhash-word-unigram-bigram-k32"    # the selector's novelty index (novelty.py)
    search = data.search
    search["avoid"] = explain.avoid(stats, precounted_prompts, stats.trace_near_copies)
    search["underexplored"] = explain.underexplored(rows, axes or {})
    search["axis_gaps"] = explain.axis_gaps(rows, axes or {})
    search["plateau_batches"] = explain.plateau_batches(data.coverage_curve)
    turns = sum(int(r.get("_user_turns") or 0) for r in rows)
    stripped = sum((r.get("_user_think") or {}).get("stripped", 0) for r in rows)
    unclosed = sum((r.get("_user_think") or {}).get("unclosed", 0) for r in rows)
    search["user_think"] = {"user_turns": turns, "stripped": stripped, "unclosed": unclosed,
                            "stripped_share": round(stripped / turns, 4) if turns else 0.0,
                            "unclosed_share": round(unclosed / turns, 4) if turns else 0.0}
    if hasattr(every, "sample"):          # rows on disk: the judge_status fact says, no row decoded
        status = row_store(every).facts(["judge_status"]).column(0)
        judged = status.null_count < len(status)
    else:
        judged = any(r.get("judge_status") is not None for r in every)
    if judged:
        name = next((r["judge_name"] for r in every if r.get("judge_name")), None)
        search["grader"] = grader_summary(every, name, in_loop=True)
        data.arm_yield = arm_yield(every)


def data_model(rows) -> str | None:
    return rows[0].get("model_version") if len(rows) else None
