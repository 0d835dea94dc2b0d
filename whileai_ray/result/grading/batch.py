"""Grading, ranking and labelling a result whose rows are on disk, one batch at a time.

An Arrow-backed result (``row_store.py``) cannot be changed in place: its rows are decoded
from files. Every action that changes rows is a *batch function* ``fn(rows)`` that edits a
batch of row dicts, run over the whole result by one of two paths:

* in-process (``store.update``): each row group is decoded, changed and written to a new spill
  folder that then replaces the old one; memory holds one row group;
* on the cluster, once the result has ``advanced={"cluster_grade_rows": ...}`` rows or more:
  Ray Data ``map_batches`` over the result's Parquet files (``runtime/data/grading.py``,
  reached through the ``Cluster`` the result was given, ``result/cluster.py``; a result without
  one, built by hand, grades in-process). The batch function is built by a picklable factory
  once per actor, Ray Data's convention for callable classes: ``GraderBatch`` builds a grader
  *class* (``data.grade(MyGrader)``) once per actor, ``JudgeBatch`` carries the judge.

The trust check (``trust=``) needs every graded row's reward before it can stamp its summary
on them. A result without gold labels has a summary that does not depend on the rewards, so
it is stamped in the same pass; one with labels is graded, checked (only its labelled rows are
read back), then stamped in a second pass.
"""
from __future__ import annotations

import inspect
import logging
import os
from collections import Counter
from functools import partial
from numbers import Real

from ...config.advanced import KNOBS
from ...score.grading import fresh_scoring_run_id, grade_batch
from ...score.judges.contract import apply_verdict, judge_name
from ...score.judges.labels import apply_labels, label_plan, trust_check
from ...score.judges.llm_judge import judge_rows
from ...score.rank import RankTally
from ..cluster import Cluster, cluster_of
from ..row_store import parent_of, row_store, rows_table

__all__ = ["GraderBatch", "JudgeBatch", "grade_stored", "grade_llm_stored", "llm_grade_stored",
           "rank_stored", "attach_labels_stored", "apply_llm_verdicts", "cluster_threshold", "built_grader",
           "stamp_trust"]

_NO_STAMP = object()


def cluster_threshold(data=None) -> int:
    """Rows from which a result is graded on the cluster: the run's ``advanced["cluster_grade_rows"]``;
    for a path or a loaded run, ``WHILEAI_RAY_CLUSTER_GRADE_ROWS`` when set, else the default."""
    given = getattr(data, "_cluster_grade_rows", None)
    return int(given or os.environ.get("WHILEAI_RAY_CLUSTER_GRADE_ROWS") or KNOBS["cluster_grade_rows"][1])


def built_grader(grader):
    """A grader class (Ray Data's callable-class form) is built; anything else is used as is."""
    return grader() if inspect.isclass(grader) else grader


def stamp_trust(rows, summary) -> None:
    """Put the trust summary on each row's ``judge_meta``."""
    for row in rows:
        meta = row.get("judge_meta") if isinstance(row.get("judge_meta"), dict) else {}
        row["judge_meta"] = {**meta, "trust": summary}


class GraderBatch:
    """``data.grade(grader)`` for one batch; built once per actor on the cluster."""

    def __init__(self, grader, name: str, run_id: str, concurrency: int, stamp=_NO_STAMP):
        self.grader = built_grader(grader)
        self.name, self.run_id, self.concurrency, self.stamp = name, run_id, concurrency, stamp

    def __call__(self, rows: list) -> None:
        grade_batch(rows, self.grader, self.name, self.run_id, self.concurrency)
        if self.stamp is not _NO_STAMP:
            stamp_trust(rows, self.stamp)


def apply_llm_verdicts(rows: list, verdicts: list, judge, run_id: str) -> None:
    """What ``grade_llm`` writes on each judged row (a previous reward kept as ``qwen_reward``)."""
    for row, verdict in zip(rows, verdicts):
        previous = row.get("reward")
        if isinstance(previous, Real) and not isinstance(previous, bool) and "qwen_reward" not in row:
            row["qwen_reward"] = previous
        apply_verdict(row, verdict, judge.name, run_id)
        row["lineage"]["judge_version"] = judge.version
        row["judge_meta"] = dict(verdict["judge_meta"])


class JudgeBatch:
    """``grade_llm`` for one batch: the first ``limit`` rows of the pass (all when None) are judged."""

    def __init__(self, judge, concurrency: int, run_id: str, limit: int | None = None, stamp=_NO_STAMP):
        self.judge, self.concurrency, self.run_id, self.stamp = judge, concurrency, run_id, stamp
        self.left = limit

    def __call__(self, rows: list) -> None:
        target = rows if self.left is None else rows[:max(0, self.left)]
        if self.left is not None:
            self.left -= len(target)
        if not target:
            return
        apply_llm_verdicts(target, judge_rows(self.judge, target, self.concurrency), self.judge, self.run_id)
        if self.stamp is not _NO_STAMP:
            stamp_trust(target, self.stamp)


def _advisory(judge, concurrency: int, rows: list) -> None:
    for row, verdict in zip(rows, judge_rows(judge, rows, concurrency)):
        row["llm_reward"] = verdict["reward"] if verdict["judge_status"] == "ok" else None
        row["llm_reason"] = verdict["reason"]


# ------------------------------------------------------------------ running a pass
def _run(data, store, make_fn, user_code=(), cluster: Cluster | None = None) -> None:
    """``make_fn()`` over every batch: on ``cluster`` past the threshold, else in-process."""
    if cluster is not None and len(store) >= cluster_threshold(data):
        files, owner = cluster.map_row_batches(store.rows.files, make_fn, rows_table, parent=parent_of(store.rows),
                                               user_code=tuple(user_code))
        store.swap_in(files, owner)
    else:
        store.update(make_fn())


def _gold_positions(store, first: int | None = None) -> list:
    gold = store.facts(["gold"]).column(0).to_pylist()
    return [i for i, g in enumerate(gold[:first] if first is not None else gold) if g]


def _quiet_summary(trust: str):
    """The trust summary of rows without gold labels (it does not depend on their rewards),
    computed without its log line: that is written once, after the pass."""
    if trust == "off":
        return None
    log = logging.getLogger("whileai_ray.trust")
    was, log.disabled = log.disabled, True
    try:
        return trust_check([], "warn")
    finally:
        log.disabled = was


def _stamp_first(n: int, summary):
    left = [n]

    def fn(rows):
        take = rows[:max(0, left[0])]
        left[0] -= len(take)
        stamp_trust(take, summary)
    return fn


def _graded_then_trusted(data, store, make, trust: str, user_code=(), first: int | None = None,
                         cluster: Cluster | None = None):
    """Run ``make(stamp)`` over the rows, then the trust check; see the module docstring."""
    gold = _gold_positions(store, first)
    stamp = _quiet_summary(trust) if not gold and trust != "require" else _NO_STAMP
    _run(data, store, make(stamp), user_code, cluster)
    if not gold:
        return trust_check([], trust)
    summary = trust_check([store[i] for i in gold], trust)
    store.update(_stamp_first(len(store) if first is None else first, summary))
    return summary


# ------------------------------------------------------------------ the actions
def grade_stored(data, grader, concurrency: int, trust: str) -> None:
    """``data.grade(grader)`` on an Arrow-backed result."""
    store = row_store(data.trajectories)
    name, run_id = judge_name(grader), fresh_scoring_run_id()
    make = lambda stamp: partial(GraderBatch, grader, name, run_id, concurrency, stamp)  # noqa: E731
    _graded_then_trusted(data, store, make, trust, user_code=(grader,), cluster=cluster_of(data))


def grade_llm_stored(source, judge, concurrency: int, limit: int | None, trust: str,
                     cluster: Cluster | None = None):
    """``grade_llm`` on rows on disk: ``(statuses, rewards, trust summary)`` of the judged rows;
    on ``cluster`` (a run's own when None) past the threshold, unless ``limit`` is given."""
    cluster = cluster if cluster is not None else cluster_of(source)
    store = row_store(getattr(source, "trajectories", source))
    n = len(store) if limit is None else min(limit, len(store))
    run_id = fresh_scoring_run_id()
    make = lambda stamp: partial(JudgeBatch, judge, concurrency, run_id, limit, stamp)  # noqa: E731
    summary = _graded_then_trusted(source, store, make, trust, user_code=(), first=n,
                                   cluster=cluster if limit is None else None)
    facts = store.facts(["judge_status", "pa_value"]).slice(0, n)
    statuses = Counter(s or "ok" for s in facts.column("judge_status").to_pylist())
    rewards = Counter(_whole(v) for s, v in zip(facts.column("judge_status").to_pylist(),
                                                facts.column("pa_value").to_pylist()) if (s or "ok") == "ok")
    return statuses, rewards, summary


def _whole(value):
    return int(value) if isinstance(value, float) and value.is_integer() else value


def llm_grade_stored(data, judge, concurrency: int) -> None:
    """``llm_grade`` (advisory ``llm_reward``) on an Arrow-backed result, in-process."""
    row_store(data.trajectories).update(partial(_advisory, judge, concurrency))


def rank_stored(source, min_quality=None) -> dict:
    """``rank`` on rows on disk: scored a row group at a time while they are rewritten."""
    tally = RankTally(min_quality)
    row_store(getattr(source, "trajectories", source)).update(tally.add)
    return tally.summary()


def attach_labels_stored(data, labels, kind: str, annotator, replace: bool) -> dict:
    """``attach_labels`` on an Arrow-backed result: which rows get labels is found in one pass,
    then those rows are changed while the result is rewritten."""
    store = row_store(data.trajectories)
    plan, counts = label_plan(store.rows, labels, kind, annotator)
    pos, ties = [0], [0]

    def fn(rows):
        for row in rows:
            entries = plan.get(pos[0])
            if entries is not None:
                ties[0] += apply_labels(row, entries, replace)
            pos[0] += 1
    if plan:
        store.update(fn)
    counts["ties"] = ties[0]
    return counts
