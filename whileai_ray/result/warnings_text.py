"""The plain-words notes a run leaves in ``data.warnings`` (each names the call that changes
it), the Python ``UserWarning``s it raises, and the ``degraded`` tokens.

Each note is a ``RunWarning`` (``core/run_warning.py``): the sentence, a code, and whether it is
listed in ``data.warnings``, raised when ``simulate()`` returns, or both.
"""
from __future__ import annotations

from ..core.run_warning import RunWarning
from ..core.usage import usage_warning

TEMPLATE_WRITER = "template_writer"     # dropped once an LLM writer or pinned tasks wrote the asks
RUBRIC_UNUSED = "rubric_unused"         # rubric= without grade=True


def rubric_unused_note(cfg) -> str | None:
    """rubric= is read only by the LLM judge of grade=True: said, never ignored silently."""
    if not cfg.rubric or cfg.grade is True:
        return None
    how = {False: "grade=False", "conduct": "grade='conduct'"}.get(cfg.grade, f"grade={cfg.grade!r}")
    if cfg.grader is not None:
        how += " with a grader= callable, which does not read it"
    return (f"rubric= was given but this run did not grade with it ({how}): the rubric is read by the LLM "
            "judge of grade=True; pass grade=True to grade against it in the loop, or data.grade(rubric=...) "
            "afterwards")


_POISON_HINTS = {
    "worker_crashed": "worker crashed: the agent killed the process playing it (os._exit, a segfault or an OOM "
                      "kill in native code); each such rollout was played twice, the second time alone",
    "unserializable_result": "unserializable result: the agent returned a value no row can hold (a circular "
                             "or thousands-deep dict)",
    "rollout_failed": "rollout failed: building the row raised; search['poison'] has the counts",
}


def _poison_hint(lost_by: dict) -> str:
    said = [_POISON_HINTS[k] for k in _POISON_HINTS if lost_by.get(k)]
    return ("; " + "; ".join(said)) if said else ""


def run_warnings(data, cfg, stats, seeds, dropped, fault_rate, tally) -> tuple[list[RunWarning], list[str]]:
    """``(warnings, degraded)`` for a finished run; ``stats`` is the planner's ``PlannerStats``,
    ``tally`` the rows' counts (``report_tally.ReportTally``), never the rows themselves."""
    n = tally.n
    out: list[RunWarning] = []
    degraded: list[str] = []
    if not seeds and not dropped and cfg.tasks is None:
        out.append(RunWarning(
            f"simulator=False wrote these {stats.situations} situations from a generic template that knows "
            "only your tool names and policy; pass seeds= or use an LLM simulator before reading the scores.",
            TEMPLATE_WRITER))
    if dropped:
        total = len(seeds) + len(dropped)
        out.append(RunWarning(f"budget={cfg.budget} covers {len(seeds)} of {total} seeds at repeats={cfg.repeats}; "
                              f"raise budget to {total * cfg.repeats}+ or drop seeds", "seeds_dropped"))
    lost, rerolled = stats.lost, stats.rerolled
    if stats.timed_out:
        out.append(RunWarning(f"{stats.timed_out} agent call(s) timed out after {cfg.timeout:g} s and were re-rolled "
                              "or dropped; scale-to-zero servers need 2-3 min to wake; raise timeout= or warm the "
                              "endpoint", "timed_out"))
    if lost:
        why = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in stats.lost_by.items() if v)
        out.append(RunWarning(f"{lost} rollout(s) of {n + lost} asked for never became rows ({why}), so every rate is "
                              "over the survivors and the missing ones are not random; fix per reason; see "
                              "report()['rollouts_lost_by']" + _poison_hint(stats.lost_by), "rollouts_lost"))
        degraded.append("rollouts_lost")
    if data.stopped_because == "empty_replies":
        out.append(RunWarning(f"no rows: the agent returned an empty reply on all {lost + rerolled} rollouts; return "
                              "{'final_text': ..., 'steps': [...]} from your agent", "empty_replies"))
    if data.stopped_because == "time_budget" and n == 0:
        out.append(RunWarning(f"no rows: time_budget={cfg.time_budget:g} s ran out before the first rollout landed "
                              "(the clock counts from the call, the start of the run's Ray actors included); raise "
                              "time_budget=", "time_budget_no_rows"))
    if data.stopped_because == "agent_failed":
        out.append(RunWarning(f"no rows: the agent failed on all {lost + rerolled} rollouts; see "
                              "search['first_agent_error'] and fix the agent before spending more budget",
                              "agent_failed"))
        degraded.append("agent_errors")
    if rerolled > n and n > 0:
        out.append(RunWarning(
            f"{rerolled} rollouts were re-rolled against {n} rows landed; most calls never became rows; fix: "
            f"raise timeout= (now {cfg.timeout:g} s; {stats.timed_out} were call timeouts) or fix the "
            "agent errors in search['first_agent_error']", "mostly_rerolled", raised=True))
    if cfg.hard_share_set and n >= 20:
        hard = tally.hard
        realized = hard / n
        if cfg.hard_share - realized > 0.10:
            out.append(RunWarning(f"hard_share={cfg.hard_share:g} asked, {realized:.2f} drawn ({hard} of {n} rows from "
                                  "the hard tiers); open asks and stance-less cells count as ordinary; pin "
                                  "dimensions={'stance': [...]} for an all-hard set", "hard_share_short"))
    if cfg.tools and n and not tally.any_tools_used:
        out.append(RunWarning(f"0 of {n} rollouts called a tool; the agent never used the declared tools",
                              "no_tool_calls"))
        degraded.append("no_tool_calls")
    if cfg.fault_rate_set and n >= 20:
        share = tally.faulted / n
        asked = min(1.0, float(cfg.fault_rate))
        if abs(share - asked) > 0.05:
            out.append(RunWarning(f"fault_rate={cfg.fault_rate:g} asked but {share:.0%} of rows carry a fault; "
                                  "compare report()['delivered'] with report()['requested']", "fault_rate_off",
                                  listed=False, raised=True))
    if getattr(tally, "usage_unread", 0):     # once per run, however many rows (core/usage.py)
        out.append(RunWarning(usage_warning(tally.usage_unread, n, tally.usage_note), "usage_unread"))
    unused = rubric_unused_note(cfg)
    if unused:       # listed only: the UserWarning was raised when the run started
        out.append(RunWarning(unused, RUBRIC_UNUSED))
    for note in cfg.notes:
        out.append(RunWarning(note, "config_note", listed=False, raised=True))
    return out, degraded
