"""The Situation: one worded ask, ready to be played.

A *situation* is a world (a grid cell plus a concrete instance: which record, which id,
which details); a *phrasing* is one wording of it; a *repeat* is one rollout of a wording.
The writer produces Situations; the planner turns them into keyed work units.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Situation:
    scenario_id: str                 # "sc-<10 hex>" for grid situations, "probe_<6 hex>" otherwise
    prompt: str                      # the opening user message, tags realized in the text
    phrasing_index: int = 0
    dims: dict = field(default_factory=dict)   # scenario_dimensions: the 6 grid axes, or {} (realized later)
    tier: str = "ordinary"           # ordinary / ambiguous / boundary / adversarial
    tags: dict = field(default_factory=dict)   # realized conversation tags: texture, length, tone, ask, ...
    ask_family: str = "tool"         # tool / general / vague
    world_state: str | None = None   # None when the cell says unspecified / unknown
    reference: str = ""              # expected outcome (privileged: never shown to the agent)
    ref_ids: list = field(default_factory=list)  # reference ids that appear in the prompt
    arm: str = "structured"          # structured / open_ended / behavior_targeted / failure_mutation / llm_guided
    writer_model: str = "template"   # template / seed / <model>
    selection_reason: str = ""
    parent_failure_id: str | None = None
    extra: dict = field(default_factory=dict)  # anything else the writer wants to carry

    @property
    def intent_known(self) -> bool:
        return self.ask_family != "vague"

    @property
    def tool_known(self) -> bool:
        tool = self.dims.get("tool")
        return self.ask_family == "tool" and tool not in (None, "unrelated", "multi_tool")

    def __reduce__(self) -> tuple:
        # pickled as its class and its fields in order (a Ray message to a lane, ``messages.pack_units``):
        # ~3x faster both ways than a slotted dataclass's default (a dict of its slots, names and all)
        return (Situation, (self.scenario_id, self.prompt, self.phrasing_index, self.dims, self.tier, self.tags,
                            self.ask_family, self.world_state, self.reference, self.ref_ids, self.arm,
                            self.writer_model, self.selection_reason, self.parent_failure_id, self.extra))

    def to_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}

    @classmethod
    def from_dict(cls, d: dict) -> "Situation":
        return cls(**{k: v for k, v in d.items() if k in cls.__slots__})
