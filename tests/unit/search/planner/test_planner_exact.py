"""The planner's plans did not move when its hot path was made cheaper (issue 32).

Each case builds the planner as ``simulate()`` and the Driver do (``build`` below: the
checked arguments, the grid, ``PlanSettings``, ``PlannerRecipe``, the template writer), decides
and observes 3,000 units with scripted verdicts (re-rolls, mutation of faulted and graded
failures, repeat policies), and digests every unit: key, prompt, dims, faults, arm, selection
reason (with its novelty score), the rest of its situation, and the MinHash sketch of its prompt.
The digests were computed on commit 50aa2a8, before the change: any move in any situation, in
their order, in a novelty score or in a family decision changes them.
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
                "6fdca833ec39c729e1c38a876ad1a9aed3191d928f8fffab9aa0007bef20588b"),
    "rl": ({"mode": "rl"},
           "73b009da419087ffca9ce27bffdc365203043899a2231dab3d70596e69ae48f1"),
    "explore_faults": ({"mode": "explore", "fault_rate": 0.6, "seed": 7},
                       "f2048c95f50c7600d4b417f00ce2b4971b224cc5d29d6fe4e6c1e039b51f09e5"),
    "sft_phrasings": ({"mode": "sft", "seed": 3},
                      "b478a511493609d1d01adc112caa5549e7bde8461ab495039bfbde738e451972"),
    "adaptive_seeds": ({"mode": "adaptive", "seed": 11, "seeds": SEEDS},
                       "c67de0c653059fa614750abcab93bafe96c4d2fb325960ddc4a8a8199314b409"),
    "rl_seed5": ({"mode": "rl", "seed": 5, "fault_rate": 0.2},
                 "d3831847007358dae1404be02de0178a8e9591af086367f5491d953cb4ada431"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_plan_is_the_one_commit_50aa2a8_made(case):
    kwargs, expected = CASES[case]
    got, units = plan_digest(units=3000, **kwargs)
    assert units == 3000
    assert got == expected, f"{case}: the planner's units moved"
