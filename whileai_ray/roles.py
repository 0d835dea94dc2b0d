"""Checks, before any budget is spent, that every model a run needs is configured.

The situation writer, the judge and model-backed agents speak to OpenAI-compatible
endpoints. When one is needed and none is configured (argument, ``wai.configure(...)`` or
environment), the run stops here with a RuntimeError that says what to set.
"""
from __future__ import annotations


def _configured(role: str, value=None):
    from .agents.backends import resolve_role
    return resolve_role(role, value)


def check_online_roles(cfg) -> None:
    if cfg.agent_kind in ("spec", "backend"):
        raise NotImplementedError(
            "model-backed agents (a backend object or spec string in agent=) are not implemented in "
            "this build yet; pass a callable agent (message -> {'steps', 'final_text'}), e.g. "
            "wai.seeded_agent(TOOLS)")
    if cfg.simulator is None or cfg.simulator == "hosted" or (cfg.simulator not in (False,)):
        writer = _configured("simulator", None if cfg.simulator in (None, "hosted") else cfg.simulator)
        if writer is None:
            raise RuntimeError(
                "simulate() writes situations with an LLM by default (simulator='hosted'), and no writer "
                "endpoint is configured: set WHILEAI_SIMULATOR (e.g. 'vllm:<model>@http://host:8000/v1' or "
                "'openai:gpt-4.1-mini' with OPENAI_API_KEY), call wai.configure(simulator=...), or pass "
                "simulator=False for the offline template writer (no key needed)")
        raise NotImplementedError(
            f"the LLM situation writer ({writer!r}) is not implemented in this build yet; pass "
            "simulator=False for the offline template writer")
    if cfg.grade is True or cfg.llm_grade:
        arg = "grade=True" if cfg.grade is True else "llm_grade=True"
        judge = _configured("judge")
        if judge is None:
            raise RuntimeError(
                f"{arg} grades with an LLM judge over an OpenAI-compatible endpoint, and none is "
                "configured: set WHILEAI_JUDGE (e.g. 'vllm:<model>@http://host:8000/v1'), call "
                "wai.configure(judge=...), or grade offline with grader=<callable> or grade='conduct'")
        raise NotImplementedError(f"{arg} (the LLM judge) is not implemented in this build yet; "
                                  "pass grader=<callable> or grade='conduct'")
    if cfg.traces is not None:
        raise NotImplementedError("traces= is not implemented in this build yet")
