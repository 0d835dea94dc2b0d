"""AgentProfile: what a run knew about the agent it played (``SimulationData.profile``).

It is the agent as exports and evals see it: ``policy`` is the plain system prompt (a
``scaffold=`` never enters it: the scaffold is generation-only guidance), ``tools`` the
declared schemas, ``rules`` the policy clauses the grid's rule axis was built from, ``kind``
how it was played (``"callable"``: single turn in a thread; ``"model"``: multi-turn over an
OpenAI-compatible endpoint), ``model_version`` the tag rows carry, and ``scaffold_chars`` how
much scaffold the rollouts saw on top of the policy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["AgentProfile", "profile_of"]


@dataclass(frozen=True)
class AgentProfile:
    policy: str = ""
    tools: list = field(default_factory=list)
    tool_names: list = field(default_factory=list)
    rules: list = field(default_factory=list)
    kind: str = "callable"
    model_version: str = ""
    scaffold_chars: int = 0

    def to_dict(self) -> dict:
        return {"policy": self.policy, "tools": list(self.tools), "tool_names": list(self.tool_names),
                "rules": list(self.rules), "kind": self.kind, "model_version": self.model_version,
                "scaffold_chars": self.scaffold_chars}


def profile_of(cfg, model_version: str, model_backed: bool, scaffold_chars: int = 0) -> AgentProfile:
    """The profile of a resolved run config (``config.RunConfig``)."""
    from ..situations.grid import policy_clauses, tool_names
    rules, _ = policy_clauses(cfg.system_prompt or "")
    return AgentProfile(policy=cfg.system_prompt or "", tools=list(cfg.tools), tool_names=tool_names(cfg.tools),
                        rules=list(rules), kind="model" if model_backed else "callable",
                        model_version=model_version, scaffold_chars=scaffold_chars)
