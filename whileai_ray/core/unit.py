"""Work units: the keyed piece of work a rollout actor plays.

The key ``(run_id, scenario_id, phrasing_index, rollout_index, eval_run)`` names a row.
``attempt`` counts re-rolls of one key; it is part of the draw (a re-roll is a new draw)
but not of the key (a key lands at most once). ``group`` is the planner's bookkeeping (which
wording, by id, the unit belongs to); it is no part of the key or the draw.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .identity import unit_key

if TYPE_CHECKING:                 # a type only: core imports nothing of ours above it
    from ..situations.situation import Situation


@dataclass(slots=True)
class Unit:
    run_id: str
    situation: Situation
    rollout_index: int = 0
    eval_run: int = 0
    attempt: int = 0
    faults: dict | None = None        # fault plan, e.g. {"*": {"mode": "timeout", "rate": 1.0}}
    seed: int = 0
    ordinal: int = 0                  # position in the run's schedule (deterministic)
    group: int = -1                   # the planner's id of the wording this unit plays (its group)

    def __reduce__(self) -> tuple:
        # its class and its fields in order: what crosses to a lane per unit (``messages.pack_units``)
        return (Unit, (self.run_id, self.situation, self.rollout_index, self.eval_run, self.attempt, self.faults,
                       self.seed, self.ordinal, self.group))

    @property
    def key(self) -> tuple:
        s = self.situation
        return unit_key(self.run_id, s.scenario_id, s.phrasing_index, self.rollout_index, self.eval_run)

    @property
    def prompt(self) -> str:
        return self.situation.prompt

    def draw_key(self) -> tuple:
        """What seeds this unit's private generator: the key without run_id, plus the attempt.

        run_id is left out so that two runs with the same seed draw the same rows.
        """
        s = self.situation
        return (s.scenario_id, s.prompt, s.phrasing_index, self.rollout_index, self.eval_run, self.attempt)


@dataclass(slots=True)
class RunMeta:
    """What every row of a run shares; travels once to each rollout actor."""
    run_id: str
    seed: int = 0
    tools: list = field(default_factory=list)
    system_prompt: str = ""
    model_version: str = "callable-agent"
    sampling: dict | None = None
    world_options: dict = field(default_factory=dict)
    agent_timeout: float | None = None
    scaffold: str = ""                # generation-only guidance for a model-backed agent (simulate(scaffold=))

    def agent_system_prompt(self) -> str:
        """What a model-backed agent is told: the policy, then the scaffold. Rows, exports and the
        judge keep the plain policy (``system_prompt``); only the rollout sees the scaffold."""
        if not self.scaffold:
            return self.system_prompt
        return f"{self.system_prompt}\n\n{self.scaffold}" if self.system_prompt else self.scaffold
