"""Coverage as rows land: unique counts, cell copies, pairwise coverage, the curve and ``until=``.

:class:`CoverageTracker` is fed every landed row (``observe(row)``, O(1) per row) and keeps:
the distinct prompts, scenario ids, behaviour signatures, grid cells and action shapes seen;
rows per planned cell (so ``min_cell_copies`` and saturation are O(1) to read); the value
pairs the seen cells cover; and the yield per arm since the last :meth:`take_yields` (what
:class:`~whileai_ray.search.arms.ArmBandit.update` consumes). Every ``every`` rows it appends
a point to :attr:`curve` (the ``coverage_curve`` of the result).

``until=`` decides when coverage, not the budget, ends the run:

* ``compute`` (default): never stops early; the budget (or the writer) ends it;
* ``saturation``: stop once every planned cell has ``copies_needed`` rows;
* ``first``: stop once every planned cell has at least one row;
* ``budget_only``: like ``compute``, and the run also ignores writer exhaustion: it keeps
  reopening cells until the budget is spent (:func:`ignores_exhaustion`).

Both early stops report ``stopped_because="saturation"`` (reference 4.6).

The distinct prompts, scenario ids and signatures are kept as 64-bit digests
(:class:`~whileai_ray.search.columns.DigestSet`), not as the strings: only their count and
membership are ever read. ``state()`` / ``load_state()`` carry the tracker across a planner
snapshot (the curve as an append-only log of JSON lines, the per-cell counts as a column).
"""
from __future__ import annotations

import json
import math

import numpy as np

from ..situations.covering import all_pairs, pairs_in
from ..situations.grid import cell_key
from ..core.columns import Column, DigestSet, State, digest, prompt_digest
from .targeting import action_shape

__all__ = ["UNTIL", "validate_until", "ignores_exhaustion", "CoverageTracker", "row_marks", "Marks"]

Marks = tuple   # (scenario id digest, signature digest or None, cell key or None, action shape): ``row_marks``

UNTIL = ("compute", "saturation", "first", "budget_only")


def validate_until(until) -> str:
    """Return ``until`` if valid, else raise the reference's ValueError."""
    if until not in UNTIL:
        raise ValueError(f"until= must be compute, saturation, first, or budget_only; got {until!r}")
    return until


def ignores_exhaustion(until: str) -> bool:
    """True when the run should keep drawing asks after the writer's pool runs dry."""
    return until == "budget_only"


def _cell_of(row: dict) -> str | None:
    dims = row.get("scenario_dimensions")
    if not dims or dims.get("origin") == "realized":
        return None
    return cell_key(dims)


def row_marks(row: dict) -> Marks:
    """What ``CoverageTracker.observe`` (and ``ShapeTargets.observe``) compute of a row: its
    scenario id's and signature's digests, its grid cell's key and its action shape. A pure
    function of the row, so the rollout lane that built the row computes it
    (``RolloutResult.marks``) and the Driver, the run's one serial process, only counts."""
    sig = row.get("behavior_signature")
    return (digest(row.get("scenario_id")), None if sig is None else digest(sig), _cell_of(row),
            action_shape(row.get("tools_used")))


class CoverageTracker:
    """Per-row coverage bookkeeping; see the module docstring."""

    def __init__(self, planned_cells=(), axes: dict | None = None, copies_needed: int = 5, every: int = 50):
        if isinstance(copies_needed, bool) or not isinstance(copies_needed, int) or copies_needed < 1:
            raise ValueError(f"copies_needed must be an int >= 1; got {copies_needed!r}")
        self.copies_needed = copies_needed
        self.every = max(1, int(every))
        self.planned = {cell_key(c) if isinstance(c, dict) else str(c): 0 for c in planned_cells}
        self._below_needed = len(self.planned)       # planned cells with < copies_needed rows
        self._empty = len(self.planned)              # planned cells with no row
        cells = [c for c in planned_cells if isinstance(c, dict)]
        # the pairs the plan covers: every pair of the axes, or (when fault cells were folded
        # into success cells, the explore default) the pairs of the cells actually planned
        self.pairs_planned = (pairs_in(cells) if cells else all_pairs(axes)) if axes else set()
        self.pairs_covered: set = set()
        self._pairs_sorted: list | None = None
        self._pair_index: dict = {}              # planned pair -> its index in _pair_order()
        self._pair_order()                       # sorted once here, not in a snapshot's pause
        self.rows = 0
        # the planner derives the prompts for its snapshot (state(row_sets=False)); the scenario
        # ids are logged as they come (a million of them cannot be derived again in a second)
        self.prompts = DigestSet(logged=False)
        self.scenario_ids = DigestSet()
        self.signatures = DigestSet()
        self.cells: dict[str, int] = {}
        self.shapes: dict[str, int] = {}
        # the curve lives as JSON lines (a point every ``every`` rows: ~700 bytes a point as dicts,
        # ~200 as text), decoded into ``_curve`` when first asked for (the end of the run)
        self._curve: list[dict] | None = None
        self._yields: dict[str, list[int]] = {}
        self._batch_rows = 0
        self._batch_fresh = 0
        self._novelties: list[float] = []
        self._curve_log = Column(np.uint8)       # the curve as JSON lines (what a snapshot keeps)
        self._curve_logged = 0                   # points in it

    # ------------------------------------------------------------------ feeding
    def observe(self, row: dict, arm_weights: dict | None = None, prompt_key: int | None = None,
                marks: Marks | None = None) -> tuple[bool, bool]:
        """Count one landed row; returns ``(new_signature, new_cell)``.

        ``arm_weights`` (the bandit's current weights) goes into a curve point if this row
        completes one. ``prompt_key``: ``prompt_digest(row["prompt"])`` when the caller knows it
        (the planner keeps each wording's). ``marks``: ``row_marks(row)``, when its lane made them.
        """
        self.rows += 1
        if prompt_key is None:
            prompt = row.get("prompt")
            prompt_key = prompt_digest(prompt) if isinstance(prompt, str) else digest(prompt)
        fresh = self.prompts.add(prompt_key)
        scenario, sig, key, shape = marks if marks is not None else row_marks(row)
        self.scenario_ids.add(scenario)
        new_sig = sig is not None and self.signatures.add(sig)
        new_cell = False
        if key is not None:
            n = self.cells.get(key, 0)
            self.cells[key] = n + 1
            new_cell = n == 0
            if new_cell and self.pairs_planned:
                self.pairs_covered |= pairs_in([row["scenario_dimensions"]]) & self.pairs_planned
            if key in self.planned:
                self.planned[key] = n + 1
                if n == 0:
                    self._empty -= 1
                if n + 1 == self.copies_needed:
                    self._below_needed -= 1
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        y = self._yields.setdefault(row.get("arm") or "structured", [0, 0, 0])
        y[0] += 1; y[1] += new_sig; y[2] += new_cell
        self._batch_rows += 1
        self._batch_fresh += fresh
        if self.rows % self.every == 0:
            self._point(arm_weights)
        return new_sig, new_cell

    def note_selection(self, novelties) -> None:
        """Record the novelty scores of a selected batch (for ``mean_batch_novelty``)."""
        self._novelties.extend(float(x) for x in novelties)

    def take_yields(self) -> dict[str, tuple[int, int, int]]:
        """``{arm: (rows, new_signatures, new_cells)}`` since the last call, then reset."""
        out = {a: (v[0], v[1], v[2]) for a, v in sorted(self._yields.items())}
        self._yields = {}
        return out

    # ------------------------------------------------------------------ reading
    def _point(self, arm_weights=None, stopped_because: str | None = None) -> None:
        point = {"n_rows": self.rows, "unique_prompts": len(self.prompts),
                 "unique_scenario_ids": len(self.scenario_ids),
                 "unique_behavior_signatures": len(self.signatures), "unique_cells": len(self.cells),
                 "unique_action_shapes": len(self.shapes), "arm_weights": dict(arm_weights or {}),
                 "batch_fresh_rate": round(self._batch_fresh / self._batch_rows, 4) if self._batch_rows else None,
                 "mean_batch_novelty": (round(math.fsum(self._novelties) / len(self._novelties), 4)
                                        if self._novelties else None)}
        if stopped_because is not None:
            point["stopped_because"] = stopped_because
        self._curve_log.extend(np.frombuffer((json.dumps(point) + "\n").encode(), np.uint8))
        self._curve_logged += 1
        if self._curve is not None:
            self._curve.append(point)
        self._batch_rows = self._batch_fresh = 0
        self._novelties = []

    def finish(self, stopped_because: str | None, arm_weights: dict | None = None) -> list[dict]:
        """Close the curve: a last point carrying ``stopped_because``; returns the curve."""
        if self.curve and self.curve[-1]["n_rows"] == self.rows:
            self.curve[-1]["stopped_because"] = stopped_because
        else:
            self._point(arm_weights, stopped_because)
        return self.curve

    @property
    def curve(self) -> list[dict]:
        """The coverage curve: a point every ``every`` rows (kept as JSON lines while the run goes,
        decoded when first asked for: the end of the run)."""
        if self._curve is None:
            text = self._curve_log.view().tobytes().decode()
            self._curve = [json.loads(line) for line in text.splitlines()]
        return self._curve

    @property
    def min_cell_copies(self) -> int:
        return min(self.planned.values(), default=0)

    def saturated(self, copies_needed: int | None = None) -> bool:
        """Every planned cell has at least ``copies_needed`` rows (default: the tracker's)."""
        if not self.planned:
            return False
        if copies_needed is None or copies_needed == self.copies_needed:
            return self._below_needed == 0
        if copies_needed <= 1:
            return self._empty == 0
        return self.min_cell_copies >= copies_needed

    def stop_reason(self, until: str) -> str | None:
        """``"saturation"`` when ``until`` says coverage is done, else None (O(1))."""
        if until == "saturation":
            return "saturation" if self.saturated() else None
        if until == "first":
            return "saturation" if self.saturated(1) else None
        return None

    def copy_deficit(self) -> int:
        """Rows still missing before every planned cell has ``copies_needed`` (O(cells))."""
        return sum(max(0, self.copies_needed - n) for n in self.planned.values())

    def pairwise(self) -> dict:
        planned = len(self.pairs_planned)
        return {"pairs_planned": planned, "pairs_covered": len(self.pairs_covered),
                "fraction": round(len(self.pairs_covered) / planned, 4) if planned else 1.0}

    def report_keys(self) -> dict:
        """The coverage keys of ``report()`` this tracker owns, in the reference's order."""
        deficit = self.copy_deficit()
        return {"unique_prompts": len(self.prompts), "unique_scenario_ids": len(self.scenario_ids),
                "unique_signatures": len(self.signatures), "unique_cells": len(self.cells),
                "unique_shapes": len(self.shapes), "saturation": self.saturated(),
                "predicted_to_saturation": self.rows + deficit if self.planned else None,
                "predicted_remaining": deficit if self.planned else None,
                "min_cell_copies": self.min_cell_copies, "pairwise": self.pairwise(),
                "copies_needed": self.copies_needed}

    # ------------------------------------------------------------------ snapshot
    def _pair_order(self) -> list:
        """The planned pairs in a fixed order (their index is what a snapshot keeps)."""
        if self._pairs_sorted is None:
            self._pairs_sorted = sorted(self.pairs_planned, key=repr)
            self._pair_index = {pair: i for i, pair in enumerate(self._pairs_sorted)}
        return self._pairs_sorted

    def state(self, row_sets: bool = True) -> State:
        """Counters whole; digests, curve and covered pairs as logs; planned-cell counts as a table.
        ``row_sets=False`` leaves out the prompts of the rows (the planner keeps which rows landed
        and derives them: ``load_state(..., prompts=)``); the scenario ids are always a log."""
        extra = [[k, n] for k, n in self.cells.items() if k not in self.planned]
        covered = []
        if self.pairs_covered:
            self._pair_order()
            covered = sorted(self._pair_index[pair] for pair in self.pairs_covered)
        return State(
            meta={"rows": self.rows, "below_needed": self._below_needed, "empty": self._empty,
                  "batch_rows": self._batch_rows, "batch_fresh": self._batch_fresh,
                  "novelties": list(self._novelties), "yields": sorted(self._yields.items()),
                  "shapes": list(self.shapes.items()), "cells_extra": extra, "points": self._curve_logged},
            logs={"signatures": _log(self.signatures), "curve": self._curve_log.view(),
                  "scenario_log": _log(self.scenario_ids),
                  **({"prompts": self.prompts.sorted(), "scenario_ids": self.scenario_ids.sorted()}
                     if row_sets else {})},
            tables={"planned": np.asarray(list(self.planned.values()), dtype=np.int64),
                    "pairs": np.asarray(covered, dtype=np.int64)})

    def load_state(self, state: State, prompts=None, scenario_ids=None) -> None:
        """Continue from :meth:`state` (on a tracker made with the same cells, axes and copies);
        ``prompts`` / ``scenario_ids``: the digests, when the state was taken without them."""
        m = state.meta
        planned = state.array("planned", np.int64)
        if len(planned) != len(self.planned):
            raise ValueError(f"snapshot tracker plans {len(planned)} cells, this run {len(self.planned)}")
        self.planned = dict(zip(self.planned, planned.tolist()))
        self.cells = {k: n for k, n in self.planned.items() if n}
        self.cells.update((str(k), int(n)) for k, n in m["cells_extra"])
        order = self._pair_order()
        pairs = state.array("pairs", np.int64)
        if len(pairs) and (int(pairs.min()) < 0 or int(pairs.max()) >= len(order)):
            raise ValueError("snapshot tracker covers pairs this run does not plan")
        self.pairs_covered = {order[i] for i in pairs.tolist()}
        self.prompts = DigestSet.of(state.array("prompts", np.uint64) if prompts is None else prompts, logged=False)
        if scenario_ids is None and "scenario_log" in state.logs:
            self.scenario_ids = DigestSet.of(state.array("scenario_log", np.uint64))
        else:                                   # a snapshot from before the log (first seen first)
            self.scenario_ids = DigestSet.of(state.array("scenario_ids", np.uint64) if scenario_ids is None
                                             else scenario_ids)
        self.signatures = DigestSet.of(state.array("signatures", np.uint64))
        curve = state.array("curve", np.uint8)
        points = int(np.count_nonzero(curve == 10))       # one JSON line a point (decoded when asked for)
        if points != int(m["points"]) or (len(curve) and curve[-1] != 10):
            raise ValueError("snapshot coverage curve is incomplete")
        self._curve = None
        self._curve_log, self._curve_logged = Column.of(curve, np.uint8), points
        self.rows, self._below_needed, self._empty = int(m["rows"]), int(m["below_needed"]), int(m["empty"])
        self._batch_rows, self._batch_fresh = int(m["batch_rows"]), int(m["batch_fresh"])
        self._novelties = [float(x) for x in m["novelties"]]
        self._yields = {str(a): [int(x) for x in v] for a, v in m["yields"]}
        self.shapes = {str(k): int(n) for k, n in m["shapes"]}


def _log(digests: DigestSet) -> np.ndarray:
    """The first-seen order of a digest set the tracker keeps logged (signatures, scenario ids)."""
    assert digests.log is not None, "the tracker's signature and scenario sets are built logged"
    return digests.log.view()
