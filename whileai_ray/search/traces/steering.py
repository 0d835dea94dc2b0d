"""How ``traces=`` steers a run: the strategy, the cells it aims at, and the near-copy guard.

``strategy`` (``simulate(strategy=...)``), resolved by :func:`plan_traces`:

* ``"auto"`` / ``"trace"`` with traces: the grid is built over the tools, tool conditions and
  world states the traces show (``TraceSet.regions``) instead of the whole space; the other axes
  (stance, history, rule) keep their full range. Fault cells the traces show are kept (a failure
  no grid mode names, ``Error: ...`` text or a 500, keeps all of them: :func:`widen_generic_faults`),
  and when the caller set no ``fault_rate`` the run's fault rate is the share of traces that met a
  fault (``search["trace_mining"]["fault_traces"]`` of ``traces``).
* ``"targeted"``: a share ``steering_weight`` (``advanced['steering_weight']``, 0.7 by default)
  of the new situations come from those trace cells and the rest from the whole grid
  (:class:`SteeredPicker`, delivered exactly, not in expectation);
* ``"broad"``: the whole grid; traces only guard against near-copies;
* no traces: the whole grid (a cold start), ``"no traces -> broad exploration"``.

In every case a generated ask that near-copies a trace's ask (``situations/near_copy.py``:
word 3-shingle Jaccard >= 0.5) is refused when it is written, before any budget is spent on it,
so held-out traces stay out of training; rows in the trace regions carry ``steering``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core.columns import State
from ...core.rng import stable_hash
from ...core.tool_outcome import GENERIC_FAULT
from ...situations.covering import fold_fault_cells, pairwise_cells
from ...situations.grid import cell_key
from ...situations.near_copy import NEAR_COPY_JACCARD, SHINGLE_WORDS, NearCopyGuard
from ...situations.traces import read_traces
from ..cell_picker import CellPicker

if TYPE_CHECKING:
    from ...config.arguments import RunConfig   # type-only: config sits above search

__all__ = ["SteeredPicker", "TracePlan", "plan_traces", "DEFAULT_STEERING_WEIGHT", "in_region", "make_picker"]

DEFAULT_STEERING_WEIGHT = 0.7
BACKGROUND_INSTANCE_OFFSET = 500_000_000      # the whole-grid picker's instances never meet the aimed ones


class SteeredPicker:
    """Two cell pickers, the trace cells and the whole grid, mixed at ``weight`` (the same
    interface as ``CellPicker``: ``pick``, ``opened``, ``picks``, ``hard_picks``)."""

    def __init__(self, aimed: list, background: list, seed: int, hard_share: float, weight: float):
        self.aimed = CellPicker(aimed, seed, hard_share)
        self.background = CellPicker(background, seed + 1, hard_share) if background else None
        self.weight = float(weight)
        self._debt = 0.0
        self.targeted = 0
        self.background_picks = 0

    @property
    def cells(self) -> list:
        return self.aimed.cells + (self.background.cells if self.background else [])

    @property
    def opened(self) -> list:
        return self.aimed.opened + (self.background.opened if self.background else [])

    @property
    def picks(self) -> int:
        return self.aimed.picks + (self.background.picks if self.background else 0)

    @property
    def hard_picks(self) -> int:
        return self.aimed.hard_picks + (self.background.hard_picks if self.background else 0)

    def pick(self, faulted: bool | None = None) -> tuple[dict, int]:
        index, instance = self.pick_index(faulted)
        return self.cells[index], instance

    def pick_index(self, faulted: bool | None = None) -> tuple[int, int]:
        """``(index in cells, instance)``; a whole-grid cell's index follows the aimed cells and its
        instance is offset, so its wording never meets an aimed one (and is written again the same)."""
        self._debt += self.weight
        if self._debt >= 0.5 or self.background is None:
            self._debt -= 1.0
            self.targeted += 1
            return self.aimed.pick_index(faulted)
        self.background_picks += 1
        index, instance = self.background.pick_index(faulted)
        return len(self.aimed.cells) + index, instance + BACKGROUND_INSTANCE_OFFSET

    # ------------------------------------------------------------------ snapshot
    def state(self) -> State:
        out = State(meta={"debt": self._debt, "targeted": self.targeted, "background_picks": self.background_picks})
        out.nest("aimed", self.aimed.state())
        if self.background is not None:
            out.nest("background", self.background.state())
        return out

    def load_state(self, state: State) -> None:
        m = state.meta
        if ("background" in m) != (self.background is not None):
            raise ValueError("snapshot and this run disagree on the trace picker's background grid")
        self.aimed.load_state(state.part("aimed"))
        if self.background is not None:
            self.background.load_state(state.part("background"))
        self._debt, self.targeted, self.background_picks = (float(m["debt"]), int(m["targeted"]),
                                                            int(m["background_picks"]))


def make_picker(cells: list, settings):
    """The planner's cell picker: a ``CellPicker`` over ``cells``, or, when ``traces=`` resolved to
    "targeted" (``settings.aimed_cells``), a :class:`SteeredPicker` mixing the trace cells with the
    rest of the grid at ``settings.steering_weight``."""
    if not settings.aimed_cells:
        return CellPicker(cells, settings.seed, settings.hard_share)
    aimed = {cell_key(c) for c in settings.aimed_cells}
    return SteeredPicker(settings.aimed_cells, [c for c in cells if cell_key(c) not in aimed], settings.seed,
                         settings.hard_share, settings.steering_weight)


@dataclass
class TracePlan:
    strategy: dict                          # search["strategy"]
    cells: list                             # what the tracker plans (the union for "targeted")
    aimed_cells: list | None = None         # "targeted": the trace cells for the SteeredPicker
    steering_weight: float = 0.0
    regions: dict = field(default_factory=dict)
    guard: NearCopyGuard | None = None
    fault_rate: float | None = None         # the traces' fault share, when the caller set none
    mining: dict = field(default_factory=dict)
    key: str = ""                           # enters the plan fingerprint (an exact resume needs the same traces)
    count: int = 0

    def fault_rate_or(self, default: float) -> float:
        """The caller's fault_rate (``default``), unless the traces set the run's fault share."""
        return default if self.fault_rate is None else self.fault_rate


def in_region(dims: dict, regions: dict) -> bool:
    if not dims or dims.get("origin") == "realized" or not regions:
        return False
    return all(dims.get(axis) in values for axis, values in regions.items())


def widen_generic_faults(regions: dict, traces, axes: dict) -> dict:
    """Traces whose tools failed in a way no grid mode names (``Error: order not found``, a 500, a
    traceback: ``core/tool_outcome.py``'s ``"error"``) aim at every fault cell of the grid: the
    world cannot replay that exact failure, but each of its fault modes is a failed call the
    agent must handle, so those cells stay in the plan instead of being read as success."""
    if not any(GENERIC_FAULT in t.conditions for t in traces.traces):
        return regions
    shown = {c for t in traces.traces for c in t.conditions}
    keep = [v for v in axes.get("tool_condition", ()) if v != "success" or v in shown]
    return {**regions, "tool_condition": keep} if keep else regions


def _broad(requested: str, reason: str, cells: list) -> TracePlan:
    return TracePlan(strategy={"requested": requested, "resolved": "broad", "reason": reason,
                               "steering_weight": {"requested": None, "applied": 0.0, "source": "none"}},
                     cells=cells)


def plan_traces(cfg: RunConfig, axes: dict, cells: list, keep_fault_cells: bool) -> TracePlan:
    """The run's :class:`TracePlan` (reads ``cfg.traces``; ValueError before any budget when they
    hold no usable trace)."""
    requested = cfg.strategy
    if cfg.traces is None:
        return _broad(requested, "no traces -> broad exploration", cells)
    traces = read_traces(cfg.traces)
    regions = widen_generic_faults(traces.regions(axes), traces, axes)
    guard = NearCopyGuard(traces.asks, NEAR_COPY_JACCARD)
    weight_set = cfg.advanced.steering_weight
    n = len(traces.traces)
    faulty = sum(1 for t in traces.traces if t.conditions - {"success"})
    mining = {**traces.summary(axes), "fault_traces": faulty}      # traces with at least one failed tool call
    plan = TracePlan(strategy={}, cells=cells, regions=regions, guard=guard, mining=mining, count=n,
                     fault_rate=None if cfg.fault_rate_set else round(faulty / n, 4),
                     key=stable_hash("traces-v1", sorted(traces.asks), regions, requested, weight_set)[:16])
    shown = ", ".join(f"{len(v)} {axis}" for axis, v in regions.items()) or "no grid region"
    if requested == "broad" or not regions:
        why = ("strategy='broad': the whole grid; traces only guard against near-copies" if requested == "broad"
               else "the traces show no tool, condition or world state of this grid -> broad exploration")
        plan.strategy = _broad(requested, why, cells).strategy
        plan.fault_rate = None
        return plan
    aimed = pairwise_cells({**axes, **regions})
    if requested == "targeted" or (requested == "auto" and weight_set is not None):
        weight = DEFAULT_STEERING_WEIGHT if weight_set is None else min(1.0, float(weight_set))
        keys = {cell_key(c) for c in aimed}
        plan.aimed_cells, plan.steering_weight = aimed, weight
        plan.cells = aimed + [c for c in cells if cell_key(c) not in keys]
        plan.strategy = {"requested": requested, "resolved": "targeted",
                         "reason": f"traces -> {weight:.0%} of new situations aimed at what they show ({shown}), "
                                   "the rest from the whole grid",
                         "steering_weight": {"requested": weight_set, "applied": weight,
                                             "source": "advanced" if weight_set is not None else "default"}}
        return plan
    plan.cells = aimed if (keep_fault_cells or cfg.mode == "rl" or regions.get("tool_condition")) \
        else fold_fault_cells(aimed)
    plan.steering_weight = 1.0
    plan.strategy = {"requested": requested, "resolved": "trace",
                     "reason": f"traces -> the grid aims at what they show ({shown}) instead of the whole space",
                     "steering_weight": {"requested": weight_set, "applied": 1.0, "source": "strategy"}}
    return plan


def leakage_summary(plan: TracePlan, dropped_at_writing: int, dropped_rows: int) -> dict:
    """``search["trace_leakage"]``: how near-copies of traces are measured and how many were dropped."""
    return {"measure": f"Jaccard of normalized word {SHINGLE_WORDS}-shingles of the ask",
            "threshold": NEAR_COPY_JACCARD,
            "traces": plan.count, "dropped_at_writing": int(dropped_at_writing), "dropped_rows": int(dropped_rows)}
