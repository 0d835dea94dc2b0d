"""Which arguments make a unit what it is: the part of a checkpoint's fingerprint a resume must match.

A resume continues the run that wrote the checkpoint, or it is refused (``store/checkpoint/fingerprint.py``
names what differs). Rows of two setups under one file would mix two experiments: pass@1 taken
over two agents, rewards of two graders side by side, faults drawn under two seeds. So the
header records, beside tools, system prompt and the agent's name, every argument that changes
what a unit *is* (how it is drawn, played or scored), and only those:

==================  =======================================================================
``agent_code``      the agent: its code and closure constants (``core/code_identity.py``), a
                    class and its constructor arguments, or a model (name, URL without secrets)
``grader``          ``grader=``'s code, ``grade="conduct"``, or the LLM judge (model, rubric)
``execute``         ``execute=``'s code: the world that answers the tools
``seed``            every draw of the run (situations, faults, world state)
``mode``            ``"explore"`` / ``"rl"``: repeats, repeat policy, fault rate
``fault_rate``      the share of scheduled tool faults, as resolved (mode's default included)
``repeats``         k, rollouts of one wording (a unit's ``rollout_index``)
``phrasings``       n, wordings of one situation
``tasks``           the pinned task set of ``tasks=`` (its prompts), None without it
``simulator``       the situation writer (template, or its model and URL) and its completions
``user_model``      the simulated person's model (model-backed agents)
``sampling``        ``sampling=``, ``temperature``, and a model agent's turns, patience,
                    scaffold, logprobs and tool choice
``world``           ``advanced={"world": {...}}``: the mock world's options
==================  =======================================================================

Everything else may change on a resume, because it says how far or how fast a run goes, not what
its units are: ``budget`` (the main use of a resume: a larger budget continues), ``time_budget``,
``until``, ``situations``, ``seeds``, ``traces``, ``dimensions``, ``hard_share`` (which units
are drawn, not what one is: a changed plan resumes by counting the rows on disk, ``store/checkpoint/resume.py``),
``concurrency``, ``timeout``, ``on_progress``, ``output``, ``runs``, ``reproducible`` and the
engine's ``advanced`` knobs. A header written before this record existed lacks it and resumes.

Only plain data comes out (ints, strings, floats, hex digests): the dict travels to the Driver
in place of the callables it describes (issue 28, item 8).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.code_identity import code_digest, data_digest, redact_url

if TYPE_CHECKING:
    from .arguments import RunConfig

__all__ = ["run_identity", "UNIT_ARGUMENTS"]

UNIT_ARGUMENTS = ("agent_code", "grader", "execute", "seed", "mode", "fault_rate", "repeats", "phrasings",
                  "tasks", "simulator", "user_model", "sampling", "world")


def _backend(backend: Any) -> Any:
    """A model endpoint as data: its model, its URL (no userinfo, query or port) and provider."""
    if backend is None:
        return None
    urls = getattr(backend, "base_urls", None)
    return {"model": getattr(backend, "model", None), "provider": getattr(backend, "provider", None),
            "base_url": redact_url(getattr(backend, "base_url", "")),
            "replicas": sorted({redact_url(u) for u in urls}) if isinstance(urls, (list, tuple)) else None}


def _grader(cfg, grader: Any, judge: Any) -> str | None:
    if grader is None:
        return None
    if cfg.grade == "conduct":
        return "conduct"
    if grader is judge:                    # grade=True: the LLM judge of this run, by what decides a verdict
        return data_digest({"judge": getattr(judge, "name", None), "rubric_sha": getattr(judge, "rubric_sha", None),
                            "backend": _backend(getattr(judge, "backend", None))})
    return code_digest(grader)


def run_identity(cfg: RunConfig, settings, roles, *, agent: Any, grader: Any, execute: Any, sampling: Any,
                 model: Any = None) -> dict:
    """The unit-defining arguments of one evaluation run (see the module doc) as plain data.

    ``agent``/``grader``/``execute``: the callables the run plays (class forms bound to their
    constructor arguments); ``sampling``: the run's recorded sampling dict; ``model``: the
    ``ModelSettings`` of a model-backed agent (None for a callable)."""
    agent_code: str | None
    if roles.agent is not None:
        agent_code = data_digest({"model": _backend(roles.agent), "scaffold": cfg.scaffold or ""})
    else:
        agent_code = code_digest(agent)
    play = None
    if model is not None:
        play = {name: getattr(model, name, None) for name in
                ("max_turns", "avg_turns", "temperature", "max_tokens", "logprobs", "patience", "tool_choice",
                 "min_user_turns", "user_temperature")}
    writer = roles.writer
    simulator = "template" if writer is None else data_digest(
        {"writer": _backend(getattr(writer, "backend", None)),
         "completions_per_request": getattr(writer, "completions_per_request", None),
         "temperature": getattr(writer, "temperature", None)})
    user = roles.user if roles.agent is not None else None
    pinned = [(sit.scenario_id, sit.prompt) for sit, _ in settings.pinned] if cfg.tasks is not None else None
    return {
        "agent_code": agent_code,
        "grader": _grader(cfg, grader, roles.judge),
        "execute": code_digest(execute),
        "seed": cfg.seed,
        "mode": cfg.mode,
        "fault_rate": float(settings.fault_rate),
        "repeats": int(settings.k),
        "phrasings": int(settings.n),
        "tasks": data_digest(pinned) if pinned is not None else None,
        "simulator": simulator,
        "user_model": data_digest(_backend(user)) if user is not None else None,
        "sampling": data_digest({"sampling": sampling, "play": play}),
        "world": data_digest(dict(cfg.advanced.world or {})),
    }
