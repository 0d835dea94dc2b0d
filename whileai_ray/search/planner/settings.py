"""PlanSettings: everything the planner is told before a run (budget, rounds, repeats, seeds, ...).

Built by ``simulate()`` from the checked arguments; the planner reads it and never changes it.
It travels to the driver actor inside the planner.

``PlannerRecipe`` is what the runtime gets instead of a planner: these settings plus the grid's
cells, the tools and the situation writer, as plain data. The Driver builds its planner from
it (``runtime/driver/setup.py``), with a resume's overrides applied to the settings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...situations.near_copy import NearCopyGuard

__all__ = ["PlanSettings", "PlannerRecipe"]


@dataclass
class PlanSettings:
    run_id: str
    seed: int = 0
    budget: int = 1000
    round_size: int = 64
    n: int = 1
    k: int = 1
    repeat_policy: str = "none"
    situations: int | None = None
    hard_share: float = 0.4
    fault_rate: float = 0.1
    probe_share: float = 0.05
    probe: int = 2
    seeds: list = field(default_factory=list)
    mutate: bool = True
    mutate_graded: bool = True            # advanced={"mutate_graded_failures": False} turns it off
    novelty_candidates: int = 2           # structured asks drawn per slot; the most novel is kept
    dead_agent_errors: int = 16
    eval_run: int = 0
    pinned: list = field(default_factory=list)   # [(Situation, faults)]: replay these, generate nothing
    pinned_k: list = field(default_factory=list)  # runs= replays: each pinned ask's rollouts in run 0 (else k)
    tools: list = field(default_factory=list)
    axes: dict = field(default_factory=dict)
    until: str = "compute"
    arm_weights: dict | None = None               # advanced={"arm_weights": ...}: pinned, no reallocation
    llm_writer: bool = False
    family_cap: int = 3
    copies_needed: int = 5
    precounted: int = 0                           # rows on disk counted toward the budget up front
    avoid_prompt_shas: frozenset = frozenset()    # prompts already on disk (schema.prompt_sha): never drawn again
    trace_guard: NearCopyGuard | None = None                    # traces=: a NearCopyGuard; near-copies of a trace are never drawn
    aimed_cells: list | None = None               # strategy="targeted": the trace cells (search/traces/steering.py)
    steering_weight: float = 0.0
    traces_key: str = ""                          # what the traces changed in the plan (plan fingerprint)


@dataclass(frozen=True)
class PlannerRecipe:
    """What the Driver needs to build the run's planner (see the module docstring). ``writer``
    is the run's LLM situation writer, or None for the template writer built from ``tools``,
    ``system_prompt`` and ``seed``."""
    settings: PlanSettings
    tools: list
    system_prompt: str | None
    seed: int
    cells: list
    writer: Any = None
