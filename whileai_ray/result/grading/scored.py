"""ScoredData: what ``data.grade(judge=...)`` returns -- graded copies, the run untouched.

``trajectories`` are full internal copies of the run's rows (they still carry ``privileged``)
with the judge's verdict on each: ``reward`` (None when the judge failed on that row -- marked
by ``judge_status``, never coerced to 0), ``reason``, ``judge_status``, ``judge_name``,
``markers``, ``judge_meta`` and the ``lineage`` stamp (``scoring_run_id``, ``judge``,
``judge_version`` when a version was given). ``rows`` / ``rows()`` is the exported, scrubbed
form (like ``SimulationData.rows``); ``pass_at`` reads through; ``save(path)`` writes the rows
as JSONL; ``compare_judges(judges)`` grades these rows with other judges. ``wai.evaluate(rows,
judge, eval_set=asks)`` also fills ``eval_coverage`` (which asks of a fixed list ran) and
``eval_scores``.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.defaults import JUDGE_FLOORS
from ...score.judge_compare import compare_judges
from ..html.report import write_report
from ...core.rows import stored_row
from ...score.pass_at.estimate import pass_at_of_tally
from ...store.run_files import write_rows
from ..rows_view import RowsView

if TYPE_CHECKING:
    from ..cluster import Cluster
    from ..row_store import Trajectories

__all__ = ["ScoredData"]


@dataclass
class ScoredData(RowsView):
    trajectories: Trajectories = field(default_factory=list)   # a list, or ArrowRows when graded on disk
    judge_name: str = "judge"
    scoring_run_id: str = ""
    judge_version: str | None = None
    system_prompt: str = ""
    tools: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    eval_coverage: dict | None = None      # evaluate(eval_set=...): {"eval_set", "covered", "missing"}
    eval_scores: dict | None = None        # evaluate(eval_set=...): covered ask -> mean reward
    # the response cache while grading (agents/response_cache.py): {"path", "hits", "misses", "by_role"}
    cache: dict | None = None
    _rows_cache: Any = field(default=None, repr=False, compare=False)
    _cluster: Cluster | None = field(default=None, repr=False, compare=False)   # its source's (result/cluster.py)


    @property
    def statuses(self) -> dict:
        """How many rows each ``judge_status`` holds (``ok``, ``error``, ...)."""
        return dict(sorted(Counter(t.get("judge_status") or "ok" for t in self.trajectories).items()))

    @property
    def pass_at(self):
        return pass_at_of_tally(self._pass_tally())

    def save(self, path) -> str:
        """Write the scored rows atomically (JSONL, or Parquet for a ``.parquet`` path; never over
        a checkpoint); return the path."""
        return write_rows((stored_row(t) for t in self.trajectories), os.fspath(path))

    def compare_judges(self, judges, gold: str = "gold_reward", allow_model_gold: bool = False,
                       concurrency: int = 8, floors=JUDGE_FLOORS):
        return compare_judges(self.trajectories, judges, gold, allow_model_gold=allow_model_gold,
                              concurrency=concurrency, policy=self.system_prompt, tools=self.tools,
                              floors=floors)

    def to_html(self, path, baseline=None, *, max_rows: int = 1000, labels=None) -> str:
        """Write these graded rows as one self-contained HTML report; see ``SimulationData.to_html``."""
        runs = [self] if baseline is None else [baseline, self]
        if labels is None and baseline is not None:
            labels = ["baseline", "this run"]
        return write_report(path, runs, labels, max_rows=max_rows)

    def __repr__(self) -> str:
        return (f"ScoredData({len(self.trajectories)} rows, judge={self.judge_name!r}, "
                f"statuses={self.statuses})")
