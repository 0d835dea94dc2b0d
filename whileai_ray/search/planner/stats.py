"""PlannerStats: what the planner reports at the end of a run, as a typed record.

``Planner.stats(stopped_because)`` (``PlannerStatsReport``, a base of the planner) fills it from
the planner's own parts (coverage tracker, arm bandit, group book, cell picker); the Driver
returns it inside the ``RunResult``, and ``simulate()`` and ``result/report.py`` read its fields.
A field renamed here breaks at import and type-check time, not in the middle of a report.

Several evaluation runs (``runs=``) are reported as one: :meth:`PlannerStats.plus` adds the
counters of a later run to the first run's record; the figures that describe the search itself
(coverage, arms, groups) stay those of the first run.
"""
from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:                      # the planner's parts, named for the type checker only (no import cycle)
    from ...situations.timed_writer import TimedWriter
    from ..arms import ArmBandit
    from ..cell_picker import CellPicker
    from ..coverage import CoverageTracker
    from ..family_cap import FamilyCap
    from ..groups import GroupBook
    from ..targeting import ShapeTargets
    from ..traces.steering import SteeredPicker

__all__ = ["PlannerStats", "PlannerStatsReport"]

SUMMED = ("landed", "scheduled", "timed_out", "agent_errors", "situations", "decide_seconds", "writer_seconds",
          "trace_near_copies")
SUMMED_BY_REASON = ("rerolled_by", "lost_by")


class ReasonTotals:
    """``rerolled`` and ``lost``: the totals of ``rerolled_by`` / ``lost_by`` (a planner's, its stats')."""
    rerolled_by: dict[str, int]        # reason -> count (declared here, set by the class that uses this)
    lost_by: dict[str, int]

    @property
    def rerolled(self) -> int:
        return sum(self.rerolled_by.values())

    @property
    def lost(self) -> int:
        return sum(self.lost_by.values())


@dataclass(frozen=True)
class PlannerStats(ReasonTotals):
    landed: int = 0
    scheduled: int = 0
    timed_out: int = 0
    agent_errors: int = 0
    situations: int = 0
    rerolled_by: dict[str, int] = field(default_factory=dict)
    lost_by: dict[str, int] = field(default_factory=dict)
    coverage_keys: dict = field(default_factory=dict)
    coverage_curve: list = field(default_factory=list)
    arm_weights: dict = field(default_factory=dict)
    arm_initial: dict = field(default_factory=dict)
    arms: dict = field(default_factory=dict)
    arm_counts: dict = field(default_factory=dict)
    uncovered_shapes: list = field(default_factory=list)
    family_cap: dict = field(default_factory=dict)
    copy_deficit: int = 0
    failure_criteria: dict = field(default_factory=dict)
    groups: dict = field(default_factory=dict)
    group_cut: list = field(default_factory=list)      # [scenario_id, phrasing_index] of groups cut short
    allocator: dict = field(default_factory=dict)
    mutation_aims: dict = field(default_factory=dict)
    hard_picks: int = 0
    picks: int = 0
    faulted_situations: int = 0
    seeds_left: list = field(default_factory=list)
    cell_opened: list = field(default_factory=list)
    decide_seconds: float = 0.0       # deciding (writing + selecting asks): selection = this - writer_seconds
    writer_seconds: float = 0.0       # the situation writer's own time (situations/timed_writer.py)
    trace_near_copies: int = 0        # traces=: generated asks refused for near-copying a trace

    def plus(self, other: "PlannerStats") -> "PlannerStats":
        """This run's record with ``other``'s counters added (see the module doc)."""
        summed = {name: getattr(self, name) + getattr(other, name) for name in SUMMED}
        for name in SUMMED_BY_REASON:
            a, b = getattr(self, name), getattr(other, name)
            summed[name] = {r: a.get(r, 0) + b.get(r, 0) for r in [*a, *(r for r in b if r not in a)]}
        return dataclasses.replace(self, **summed)


class PlannerStatsReport(ReasonTotals):
    """The planner's ``stats()`` (a base of ``Planner``): the figures come from its own parts."""
    # what stats() reads: declared here for the type checker, set by Planner.__init__
    landed: int
    scheduled: int
    timed_out: int
    agent_errors: int
    situations_opened: int
    tracker: CoverageTracker
    bandit: ArmBandit
    arm_counts: dict[str, int]
    shapes: ShapeTargets | None
    family: FamilyCap
    failure_criteria: dict[str, int]
    book: GroupBook
    _group_key: Callable[[int], list]
    allocator: dict[str, int]
    mutation_aims: dict[str, dict[str, int]]
    picker: CellPicker | SteeredPicker | None
    faulted_situations: int
    seeds_left: deque[str]
    decide_seconds: float
    writer: TimedWriter
    trace_near_copies: int

    def stats(self, stopped_because: str | None = None) -> PlannerStats:
        """The end-of-run figures (called once, when the run stops: the coverage curve is closed)."""
        weights, picker, book = self.bandit.weights(), self.picker, self.book
        return PlannerStats(
            landed=self.landed, scheduled=self.scheduled, timed_out=self.timed_out,
            agent_errors=self.agent_errors, situations=self.situations_opened,
            rerolled_by=dict(self.rerolled_by), lost_by=dict(self.lost_by),
            coverage_keys=self.tracker.report_keys(), coverage_curve=self.tracker.finish(stopped_because, weights),
            arm_weights=weights, arm_initial=dict(self.bandit.initial), arms=self.bandit.stats(),
            arm_counts=dict(self.arm_counts), uncovered_shapes=self.shapes.uncovered() if self.shapes else [],
            family_cap=self.family.stats(), copy_deficit=self.tracker.copy_deficit(),
            failure_criteria=dict(self.failure_criteria), groups=book.stats(),
            group_cut=[self._group_key(g) for g in book.cut_groups()] if book.adaptive or book.k > 1 else [],
            allocator=dict(self.allocator), mutation_aims=self.mutation_aims,
            hard_picks=picker.hard_picks if picker else 0, picks=picker.picks if picker else 0,
            faulted_situations=self.faulted_situations, seeds_left=list(self.seeds_left),
            cell_opened=list(picker.opened) if picker else [],
            decide_seconds=self.decide_seconds, writer_seconds=getattr(self.writer, "seconds", 0.0),
            trace_near_copies=self.trace_near_copies)
