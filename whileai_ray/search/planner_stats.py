"""What the planner reports at the end of a run: coverage, arms, groups, counters, as a dict.

``simulate()`` and ``report()`` read these keys to build the report; the driver actor returns
them with the rows. (A typed record is the next step; the keys are the contract for now.)
"""
from __future__ import annotations

from .planner import Planner

__all__ = ["planner_stats"]


def planner_stats(p: Planner, stopped_because=None) -> dict:
    """The planner's end-of-run figures, as plain data (the driver returns them to ``simulate()``)."""
    return {
        "coverage_keys": p.tracker.report_keys(), "coverage_curve": p.tracker.finish(stopped_because,
                                                                                     p.bandit.weights()),
        "arm_weights": p.bandit.weights(), "arm_initial": dict(p.bandit.initial), "arms": p.bandit.stats(),
        "uncovered_shapes": p.shapes.uncovered() if p.shapes else [], "family_cap": p.family.stats(),
        "copy_deficit": p.tracker.copy_deficit(), "failure_criteria": dict(p.failure_criteria),
        "landed": p.landed, "scheduled": p.scheduled, "rerolled_by": dict(p.rerolled_by),
        "lost_by": dict(p.lost_by), "timed_out": p.timed_out, "agent_errors": p.agent_errors,
        "situations": p.situations_opened, "groups": p.book.stats(),
        "group_cut": [list(g) for g in p.book.groups if p.book.cut(g)] if p.book.adaptive or p.book.k > 1 else [],
        "allocator": dict(p.allocator), "mutation_aims": p.mutation_aims, "arm_counts": dict(p.arm_counts),
        "hard_picks": p.picker.hard_picks if p.picker else 0, "picks": p.picker.picks if p.picker else 0,
        "faulted_situations": p.faulted_situations, "seeds_left": list(p.seeds_left),
        "cell_opened": list(p.picker.opened) if p.picker else [],
        "decide_seconds": p.decide_seconds, "writer_seconds": getattr(p.writer, "seconds", 0.0),
        "trace_near_copies": getattr(p, "trace_near_copies", 0),
    }
