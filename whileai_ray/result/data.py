"""SimulationData: what ``simulate()`` returns, and what you can do with it next.

``rows()`` gives one exported row per rollout (privileged fields scrubbed, None values
dropped); ``trajectories`` keeps the internal rows (with the privileged block, for
``leak_report`` and graders that may look). ``report()`` is the run's coverage summary,
``search`` how the budget was spent, ``warnings`` what to look at before trusting a number,
``pass_at`` the pass rates with their intervals once rows are graded.

Small runs keep ``trajectories`` as a list in memory. A run past ``advanced={"spill_rows": ...}``
rows keeps them on disk instead (``row_store.py``: Parquet files, decoded when used, removed
when this object goes unless saved): every method works the same and streams, holding about
one row group at a time; ``pass_at`` and the summaries are Arrow compute over fact columns.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.rows import stored_row
from ..core.strict_json import dumps
from ..score.pass_at.estimate import pass_at_of_tally
from ..store.atomic import atomic_path
from ..store.run_files import refuse_run_file, write_rows
from .actions import RunActions
from .html.report import write_report
from .row_store import is_arrow, row_store
from .html.notebook import html_view
from .rows_view import RowsView

if TYPE_CHECKING:
    from .cluster import Cluster
    from .row_store import Trajectories


@dataclass(repr=False)
class SimulationData(RowsView, RunActions):
    trajectories: Trajectories = field(default_factory=list)   # a list, or ArrowRows past spill_rows
    arm_yield: dict = field(default_factory=dict)
    stopped_because: str = "budget"
    declared_tools: set = field(default_factory=set)
    stages: list = field(default_factory=list)
    scaffold_chars: int = 0
    degraded: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    semantic: bool = False
    profile: Any = None                     # result.profile.AgentProfile: the agent as exports see it
    embedder_name: str = ""
    elapsed_seconds: float = 0.0
    rows_per_second: float = 0.0
    arm_weights: dict = field(default_factory=dict)
    scenario_generation_seconds: float = 0.0
    embedding_selection_seconds: float = 0.0
    rollout_seconds: float = 0.0
    row_seconds: list = field(default_factory=list)
    unique_prompts: int = 0
    scene_brief: str = ""                   # what every situation is written from (search/explain.py)
    scene_brief_seconds: float = 0.0
    first_row_seconds: float = 0.0
    semantic_duplicate_rate: float | None = None   # lexical near-copies among distinct prompts (read on demand)
    unique_behavior_signatures: int = 0
    coverage_curve: list = field(default_factory=list)
    coverage: dict = field(default_factory=dict)
    search: dict = field(default_factory=dict)
    budget: int = 0
    path: str = ""
    mode: str = "explore"
    repeat_policy: str = "none"
    n_situations: int | None = None
    requests_per_situation: int = 1
    rollouts_per_request: int = 1
    unique_situations: bool = False
    allocator: dict = field(default_factory=dict)
    writer_model: str = ""
    user_model: str | None = None
    system_prompts: dict = field(default_factory=dict)
    system_prompt: str = ""
    tools: list = field(default_factory=list)
    _rows_cache: Any = field(default=None, repr=False, compare=False)
    _duplicate_rate: Any = field(default=None, init=False, repr=False, compare=False)
    # rows from which grade() runs on the cluster (advanced={"cluster_grade_rows": ...}); None: the default
    _cluster_grade_rows: int | None = field(default=None, repr=False, compare=False)
    # where large grading and to_ray_dataset() run (result/cluster.py): given by simulate() and
    # wai.load; None (built by hand) grades in-process
    _cluster: Cluster | None = field(default=None, repr=False, compare=False)


    def __repr__(self) -> str:
        return (f"SimulationData({len(self.trajectories)} rows, stopped_because={self.stopped_because!r}, "
                f"mode={self.mode!r}, warnings={len(self.warnings)})")

    # ---------------------------------------------------------------- report
    def report(self) -> dict:
        """Run-level coverage summary (a copy of ``coverage``)."""
        return copy.deepcopy(self.coverage)

    @property
    def judge_model(self) -> str | None:
        if is_arrow(self.trajectories):
            import pyarrow.compute as pc
            models = pc.drop_null(row_store(self.trajectories).facts(["judge_model"]).column(0))
            return models[0].as_py() if len(models) else None
        for t in self.trajectories:
            jm = t.get("judge_meta")
            if isinstance(jm, dict) and jm.get("model"):
                return jm["model"]
        return None

    @property
    def metadata(self) -> dict:
        """Where the run's situations came from: the strategy and what ``traces=`` steered."""
        strategy = self.search.get("strategy") or {}
        mining = self.search.get("trace_mining") or {}
        return {"strategy": strategy.get("resolved", "broad"), "trace_count": int(self.coverage.get("traces") or 0),
                "trace_regions": mining.get("regions", {}),
                "applied_steering_weight": (strategy.get("steering_weight") or {}).get("applied", 0.0),
                "targeted_rows": mining.get("steered_rows", 0),
                "background_rows": mining.get("background_rows", len(self.trajectories)),
                "writer_model": self.writer_model, "user_model": self.user_model, "judge_model": self.judge_model}

    @property
    def pass_at(self):
        if self.repeat_policy in ("successive", "adaptive") and self.rollouts_per_request > 1:
            return pass_at_of_tally(self._pass_tally(), k=self.rollouts_per_request, unanimous_short=True)
        return pass_at_of_tally(self._pass_tally())

    # ------------------------------------------------------------------ save
    def save(self, path: str, meta: bool = False) -> str:
        """Write the rows atomically (``path.tmp`` then rename); ``meta=True`` adds the
        ``<stem>.meta.json`` sidecar. Returns the path.

        Each line is the row as ``rows()`` shows it plus its ``privileged`` block (the expected
        outcome and hidden state a ``tasks=`` replay needs; ``rows()`` and every training export
        strip it). A ``.parquet`` path (or a Parquet file) gets Parquet; the checkpoint this data
        was loaded from is rewritten as a checkpoint (header, key index, Parquet side kept in
        step); any other checkpoint, and a checkpoint's own files (sidecars, its Parquet copy), are
        refused before anything is written (``store/run_files.py``)."""
        path = os.fspath(path)
        if meta:
            refuse_run_file(meta_path(path), "save(path=..., meta=True)")
        # a generator: an Arrow-backed run is written a row group at a time
        write_rows((stored_row(t) for t in self.trajectories), path, source=self.path or None)
        self.path = path
        if meta:
            _write_json_atomic(meta_path(path), self.meta_dict())
        return path

    def meta_dict(self) -> dict:
        try:
            pa = self.pass_at.to_dict()
        except Exception:
            pa = None
        return {
            "schema_version": "1", "system_prompt": self.system_prompt, "system_prompts": self.system_prompts,
            "tools": self.tools, "stopped_because": self.stopped_because, "coverage": self.coverage,
            "pass_at": pa, "coverage_curve": self.coverage_curve, "arm_weights": self.arm_weights,
            "arm_yield": self.arm_yield, "search": self.search, "budget": self.budget,
            "elapsed_seconds": self.elapsed_seconds,
            "timings": {"scenario_generation_seconds": self.scenario_generation_seconds,
                        "embedding_selection_seconds": self.embedding_selection_seconds,
                        "rollout_seconds": self.rollout_seconds, "first_row_seconds": self.first_row_seconds,
                        "scene_brief_seconds": self.scene_brief_seconds},
            "profile": self.profile.to_dict() if self.profile is not None else None,
            "scene_brief": self.scene_brief, "semantic_duplicate_rate": self.semantic_duplicate_rate,
            "writer_model": self.writer_model, "user_model": self.user_model, "judge_model": self.judge_model,
            "degraded": self.degraded, "warnings": self.warnings, "stages": self.stages,
            "mode": self.mode, "repeat_policy": self.repeat_policy,
            "rollouts_per_request": self.rollouts_per_request,
            "requests_per_situation": self.requests_per_situation,
        }

    def _repr_html_(self) -> str:
        return html_view(self)

    def to_html(self, path, baseline=None, *, max_rows: int = 1000, labels=None) -> str:
        """Write this run as one self-contained HTML report (summary, pass rates with intervals,
        coverage curve, failures by cell, tool, fault and arm, re-roll and loss causes, a row
        browser) and return the path. ``baseline=`` (another run) puts it beside this one with
        the paired delta. Opens offline: nothing in it is fetched. See ``result/html/report.py``."""
        refuse_run_file(path, "to_html(path=...)")      # never onto a checkpoint or its own files
        runs = [self] if baseline is None else [baseline, self]
        if labels is None and baseline is not None:
            labels = ["baseline", "this run"]
        return write_report(path, runs, labels, max_rows=max_rows)


class Later:
    """A value worked out when it is first read: ``SimulationData.semantic_duplicate_rate`` is
    ``Later(fn)`` after a run, ``fn()`` once someone looks (MinHash over every prompt: ~60 ms a
    thousand rows, which a notebook running many small simulations would otherwise pay each time)."""
    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn


def _duplicate_rate(self) -> float | None:
    value = self._duplicate_rate
    if isinstance(value, Later):
        value = self._duplicate_rate = value.fn()
    return value


def _set_duplicate_rate(self, value) -> None:
    self._duplicate_rate = value


# a field of the constructor, read through a property: the value, or a Later worked out on first read
# (mypy types the attribute as the field's value, not as a property set after the class is made)
SimulationData.semantic_duplicate_rate = property(  # type: ignore[assignment]
    _duplicate_rate, _set_duplicate_rate, doc="Share of distinct prompts that near-copy an earlier one.")


def meta_path(path: str) -> str:
    return (path[:-6] if path.endswith(".jsonl") else path) + ".meta.json"


def _write_json_atomic(path: str, obj: dict) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(dumps(obj, indent=1), encoding="ascii")
