"""The planner's plans did not move when its hot path was made cheaper (issue 32).

Each case builds the planner as ``simulate()`` and the Driver do (``build`` below: the
checked arguments, the grid, ``PlanSettings``, ``PlannerRecipe``, the template writer), decides
and observes 3,000 units with scripted verdicts (re-rolls, mutation of faulted and graded
failures, repeat policies), and digests every unit: key, prompt, dims, faults, arm, selection
reason (with its novelty score), the rest of its situation, and the MinHash sketch of its prompt.
The digests were first computed on commit 50aa2a8, before those speed-ups. They moved once, on
purpose, when novelty came to be decided per round (search/round_novelty.py, issue 32: the archive
is frozen while a round decides, a candidate is scored against it and, exactly, against the round's
own picks so far; the round's picks are archived when it ends), which changes novelty scores and so
some choices; they were re-pinned then (branch h-roundnov), after checking that the plan is the
same on repeated builds, at any decide-call boundaries and with edge asks in time, late or lost
(test_planner_edge_asks.py, test_planner_round_novelty.py). From there on any move in any
situation, in their order, in a novelty score or in a family decision changes them: a speed-up
must not.
"""
import hashlib
import json

import pytest

from whileai_ray.config.arguments import resolve_config
from whileai_ray.config.run_plan import plan_settings, seeds_that_fit
from whileai_ray.core.columns import prompt_digest
from whileai_ray.search.novelty import sketch
from whileai_ray.search.planner.outcome import Outcome
from whileai_ray.search.planner.planner import Planner
from whileai_ray.search.planner.settings import PlannerRecipe
from whileai_ray.search.traces.steering import plan_traces
from whileai_ray.situations.covering import fold_fault_cells
from whileai_ray.situations.grid import build_axes, pairwise_cells, validate_dimensions
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.testing.seeded_rows import TOOLS


def _agent(message):                     # never called: the planner only plans
    return {"steps": [], "final_text": ""}


def build(mode: str = "explore", **kw) -> Planner:
    explicit = {"tools": TOOLS, "mode": mode, "budget": kw.pop("budget", 1_000_000), **kw}
    cfg = resolve_config(_agent, explicit, {})
    dims = validate_dimensions(cfg.dimensions, cfg.tools) if cfg.dimensions else None
    axes = build_axes(cfg.tools, cfg.system_prompt, dims)
    cells = pairwise_cells(axes)
    if cfg.mode != "rl":
        cells = fold_fault_cells(cells)
    traces = plan_traces(cfg, axes, cells, False)
    seeds, _ = seeds_that_fit(cfg, cfg.repeats)
    settings = plan_settings(cfg, "run-x", seeds, cfg.repeats, [], 0, axes, False, traces)
    recipe = PlannerRecipe(settings, cfg.tools, cfg.system_prompt, cfg.seed, traces.cells, None)
    writer = recipe.writer or TemplateWriter(recipe.tools, recipe.system_prompt, recipe.seed)
    return Planner(recipe.settings, writer, recipe.cells)


def plan_digest(mode: str = "explore", units: int = 3000, **kw) -> tuple[str, int]:
    """``(sha256 hex of every decided unit, units decided)``."""
    p = build(mode, **kw)
    h = hashlib.sha256()
    done = 0
    for r in range(100_000):
        if done >= units or p.stop_reason():
            break
        out = []
        for u in p.decide(r):
            sit = u.situation
            sk = sketch(sit.prompt)
            h.update(json.dumps([u.key, sit.scenario_id, sit.prompt, sit.phrasing_index, sit.dims, sit.tier,
                                 sit.tags, sit.ask_family, sit.world_state, sit.reference, sit.ref_ids, sit.arm,
                                 sit.writer_model, sit.selection_reason, sit.parent_failure_id, sit.extra,
                                 u.faults, u.rollout_index, u.attempt, u.group, u.ordinal, u.seed],
                                sort_keys=True, default=str).encode("utf-8", "surrogatepass"))
            h.update(sk.tobytes())
            done += 1
            d = prompt_digest(sit.prompt) ^ u.rollout_index
            lost = d % 23 == 0 and u.attempt == 0
            row = None if lost else {"prompt": sit.prompt, "tools_used": ["lookup_order"], "arm": sit.arm,
                                     "scenario_dimensions": sit.dims, "behavior_signature": "x",
                                     "run_id": u.run_id, "scenario_id": sit.scenario_id,
                                     "rollout_index": u.rollout_index, "eval_run": u.eval_run}
            out.append(Outcome(unit=u, row=row, unusable="agent_error" if lost else None,
                               label=None if lost else (d >> 3) % 2, fault_parent=bool(u.faults) and d % 3 == 0,
                               graded_failure=d % 7 == 0))
        p.observe(out)
    return h.hexdigest(), done


SEEDS = ["Cancel order A-1 for me please.", "¿Dónde está mi pedido 42? 😀", "refund refund refund $5"]
CASES = {
    "explore": ({"mode": "explore"},
                "600fd083eff2c3f927b9904a3ff1ffe16dac9c4e4b32737266d1026d2ff36479"),
    "rl": ({"mode": "rl"},
           "466aef9f0f79e57f57a08d2ec74479ed35c48cc1f450d00b46c8123a4680f514"),
    "explore_faults": ({"mode": "explore", "fault_rate": 0.6, "seed": 7},
                       "55b9710ee38e0ce8683a896357a7977f60b5b6b8a9e5d13449d992f22ee374c6"),
    "sft_phrasings": ({"mode": "sft", "seed": 3},
                      "25d3affd69628caa71f0e02aea3e3e4f2044769dd5585313469b7c6687438f71"),
    "adaptive_seeds": ({"mode": "adaptive", "seed": 11, "seeds": SEEDS},
                       "d31ed612acd00988e072b788526e2e605cbad97ce95adfa7f9cab205eeb80434"),
    "rl_seed5": ({"mode": "rl", "seed": 5, "fault_rate": 0.2},
                 "bb954754362075207748239131808941d59b0d31b69a79802a5fd7c77fb9fad3"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_plan_is_the_one_pinned_when_novelty_became_per_round(case):
    kwargs, expected = CASES[case]
    got, units = plan_digest(units=3000, **kwargs)
    assert units == 3000
    assert got == expected, f"{case}: the planner's units moved"
