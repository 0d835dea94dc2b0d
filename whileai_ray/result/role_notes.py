"""What a run's roles did, written onto its SimulationData after the run.

The agent (its ``profile``, the ``scaffold=`` that reached it or was ignored), the situation
writer (counts, fallbacks, the structured-output dialect its endpoint spoke), the judge (its
dialect, read from the verdicts' ``judge_meta``), the simulated person (model, temperature,
turns, questions it left on) -- each a few lines of ``warnings``, ``coverage`` and ``search``.
Every note is a ``RunWarning`` with a code (``core/run_warning.py``); ``results`` are the run's
``RunResult``s (named for type checking only: the result layer never imports the runtime).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..core.run_warning import RunWarning, drop
from ..situations.llm_writer import fallback_note
from .warnings_text import TEMPLATE_WRITER

if TYPE_CHECKING:
    from ..config.arguments import RunConfig
    from ..runtime.run_result import RunResult

__all__ = ["add_role_notes", "scaffold_note", "note_dialect"]


def scaffold_note(data, cfg, roles) -> None:
    """scaffold= reaches a model-backed agent's system prompt (and an LLM writer's); a callable
    agent never sees it, which ``warnings`` says. ``scaffold_chars`` counts what was applied."""
    if not cfg.scaffold:
        return
    data.scaffold_chars = len(cfg.scaffold) if (roles.agent is not None or roles.writer is not None) else 0
    if roles.agent is None:
        data.warnings.append(RunWarning(
            "scaffold= was ignored for the agent: it is generation-only guidance appended to a model-backed "
            "agent's system prompt, and this agent is a Python callable"
            + (" (the situation writer still read it)" if roles.writer is not None else "")
            + "; put the guidance in your agent's own prompt instead", "scaffold_ignored"))


def note_dialect(data, role: str, url: str, dialect) -> None:
    """search["structured_output"][role]: the dialect the endpoint spoke (agents/structured.py);
    "none" (free text, parsed leniently) is also said in ``warnings``."""
    from ..agents.structured import dialect_note
    data.search.setdefault("structured_output", {})[role] = dialect
    note = dialect_note(role, url, dialect)
    if note and note not in data.warnings:
        data.warnings.append(RunWarning(note, f"{role}_free_text"))


def add_role_notes(data, cfg: RunConfig, roles, results: Sequence[RunResult] = (), *, model_version: str = "",
                   tally=None) -> None:
    """What the run's roles did, on the result: the agent's profile, the scaffold, the writer's
    counts and dialect, the judge's dialect, the models and the simulated person's figures.
    ``tally``: the rows' Arrow tally (``report_tally.py``), read instead of the rows when given."""
    from .profile import profile_of
    scaffold_note(data, cfg, roles)
    data.profile = profile_of(cfg, model_version, roles.agent is not None,
                              len(cfg.scaffold or "") if roles.agent is not None else 0)
    for token in roles.degraded:
        if token not in data.degraded:
            data.degraded.append(token)
    data.warnings.extend(roles.warnings)
    if roles.writer is not None:
        drop(data.warnings, TEMPLATE_WRITER)         # an LLM wrote the asks, not the template
        data.writer_model = data.coverage["writer_model"] = data.coverage["simulator"] = roles.writer.name
        # the driver's copy of the writer did the writing: its counts come back with each result
        stats = [r.writer for r in results if r.writer] or [roles.writer.stats()]
        total = {k: sum(s[k] for s in stats) for k in ("written", "errors", "prefetched", "requests")}
        by: dict = {}
        for s in stats:
            for reason, n in s["by"].items():
                by[reason] = by.get(reason, 0) + n
        data.search["writer_errors"] = {"errors": total["errors"], "by": by}
        dialect = next((st.get("structured_output") for st in stats if st.get("structured_output")), None)
        data.search["writer"] = {**total, "by": by, "structured_output": dialect}
        note_dialect(data, "writer", roles.writer.backend.base_url, dialect)
        note = fallback_note(roles.writer.name, total["written"], total["errors"], by)
        if note:
            data.warnings.append(RunWarning(note, "writer_fallback"))
    judged = [t["judge_meta"].get("structured_output") for t in data.trajectories
              if isinstance(t.get("judge_meta"), dict) and "structured_output" in t["judge_meta"]] \
        if getattr(roles.judge, "backend", None) is not None else []       # a model judge's dialect
    if judged:
        note_dialect(data, "judge", roles.judge.backend.base_url, next((d for d in judged if d), judged[0]))
    if roles.agent is not None:
        rows = data.trajectories
        data.user_model = roles.user.model if roles.user is not None else None
        data.coverage["agent_model"] = roles.agent.model
        data.coverage["user_model"] = data.user_model
        if roles.user is not None:         # the simulated person sampled at this temperature
            from ..agents.user_sim import USER_TEMPERATURE
            temp = cfg.advanced.user_temperature
            data.coverage["user_temperature"] = USER_TEMPERATURE if temp is None else float(temp)
        if tally is not None:
            n, asked, left, turns = tally.n, tally.ended_on_question, tally.user_left, tally.user_turns_sum
        else:
            n = len(rows)
            asked = sum(1 for r in rows if r.get("_ended_on_question"))
            left = sum(1 for r in rows if r.get("_ended_on_question") and r.get("ended_by") == "user_left")
            turns = sum(r.get("_user_turns", 0) for r in rows)
        data.search["ended_on_question"] = {"share": round(asked / n, 4) if n else 0.0, "n": n, "user_left": left}
        data.coverage["delivered"]["mean_user_turns"] = round(turns / n, 3) if n else 0.0
