"""The models a run talks to, resolved and checked before any budget is spent.

The agent (a backend object or spec string), the situation writer (``simulator=``), the
simulated user (``user_model=``, the agent's own model by default) and the LLM judge
(``grade=True`` / ``llm_grade=True``) each speak to an OpenAI-compatible endpoint. A role that
is needed and not configured, a missing key or an unreachable URL stops the run here with a
RuntimeError that says what to set; a key written into a URL shows as ``***`` in it
(``backends.redact``: the messages of the writer, the judge and the replicas pass through it too).
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..agents.backends import OpenAI, parse_spec, preflight, redact, resolve_role
from ..agents.response_cache import cache_spec
from ..agents.routing import MultiEndpoint
from ..core.run_warning import RunWarning
from ..score.judges.llm_judge import Judge, make_run_judge
from ..situations.llm_writer import LLMWriter, resolve_writer

if TYPE_CHECKING:
    from .arguments import RunConfig


@dataclass
class Roles:
    agent: OpenAI | MultiEndpoint | None = None    # set when the agent is model-backed
    user: OpenAI | MultiEndpoint | None = None     # the simulated user's backend (None: template answers)
    writer: LLMWriter | None = None                # None for the offline template writer
    judge: Judge | None = None
    degraded: list[str] = field(default_factory=list)
    warnings: list[RunWarning] = field(default_factory=list)   # notes for data.warnings


def _preflight(backend, what: str):
    try:
        return asyncio.run(preflight(backend))
    except RuntimeError as exc:
        raise RuntimeError(redact(f"{what}: {exc}")) from None


def resolve_roles(cfg: RunConfig) -> Roles:
    roles = Roles()
    configured = None
    if cfg.agent is None and cfg.backend is None and cfg.spec is None:
        configured = resolve_role("agent")       # wai.configure(agent=...): the model played when agent= is unset
    if cfg.agent_kind in ("spec", "backend") or (cfg.agent is None and (cfg.backend or cfg.spec or configured)):
        raw = cfg.agent if cfg.agent is not None else (cfg.backend or cfg.spec or configured)
        if isinstance(raw, MultiEndpoint):          # several servers (ModelServers): sticky per rollout
            try:
                roles.agent = asyncio.run(raw.preflight())
            except RuntimeError as exc:
                raise RuntimeError(redact(f"agent=: {exc}")) from None
        else:
            roles.agent = _preflight(parse_spec(raw, argument="agent"), "agent=")
        user = resolve_role("user_model", cfg.user_model)
        roles.user = _preflight(user, "user_model=") if user is not None else roles.agent
        if roles.user == roles.agent:
            roles.degraded.append("same_model")
            roles.warnings.append(RunWarning(f"The agent model ({roles.agent.model}) also played the user. Pass "
                                             "user_model= to use a different model.", "same_model_user"))
    elif cfg.agent is None:
        raise ValueError("simulate() needs an agent: a callable message -> {'steps', 'final_text'}, a backend "
                         "(wai.OpenAI(...)) or a spec string ('vllm:<model>@<url>'), or a model set once with "
                         "wai.configure(agent=...)")
    if cfg.simulator is not False:
        backend = resolve_writer(cfg.simulator, roles.agent)
        if backend is not None:
            writer = LLMWriter(backend, cfg.tools, cfg.system_prompt, cfg.seed,
                               completions_per_request=cfg.advanced.completions_per_request,
                               scaffold=cfg.scaffold)
            try:
                writer.check()
            except RuntimeError as exc:
                raise RuntimeError(redact(str(exc))) from None
            writer.response_cache = cache_spec(cfg.advanced.cache, cfg.advanced.cache_agent_sampled)
            roles.writer = writer
            if roles.agent is not None and backend.model == roles.agent.model:
                if "same_model" not in roles.degraded:
                    roles.degraded.append("same_model")
                roles.warnings.append(RunWarning(f"The agent model ({roles.agent.model}) also wrote the "
                                                 "situations. Pass simulator= to use a different writer.",
                                                 "same_model_writer"))
    if cfg.grade is True or cfg.llm_grade:
        arg = "grade=True" if cfg.grade is True else "llm_grade=True"
        if resolve_role("judge") is None:
            raise RuntimeError(
                f"{arg} grades with an LLM judge over an OpenAI-compatible endpoint, and none is "
                "configured: set WHILEAI_JUDGE (e.g. 'vllm:<model>@http://host:8000/v1'), call "
                "wai.configure(judge=...), or grade offline with grader=<callable> or grade='conduct'")
        try:
            judge = roles.judge = make_run_judge(cfg.rubric, policy=cfg.system_prompt, tools=cfg.tools)
            judge.check()
            judge.response_cache = cache_spec(cfg.advanced.cache, cfg.advanced.cache_agent_sampled)
        except RuntimeError as exc:
            raise RuntimeError(redact(f"{arg}: {exc}")) from None
    return roles
