"""RunMetrics: the one object through which a run feeds Ray's metrics (Prometheus, Grafana).

The driver, rollout and judge actors each hold one (``run_metrics(job["metrics"])``) and call
it at a few marked spots (``# metrics:`` in their code): once per landed batch, once per loop
turn, once per played or judged chunk; never once per row on the driver's hot path, so a run
with metrics on stays within a few per cent of one with them off (``whileai-ray bench``).
What each metric means is in ``metric_names.METRICS``; every series carries ``run_id`` and
``mode``. ``advanced={"metrics": False}`` gives ``NoMetrics``: the same methods, doing nothing.

Ray exports through the metrics agent on each node every ``metrics_report_interval_ms``
(10 s by default); counters of a finished run stay on the endpoint, gauges of a dead actor
age out after two report intervals, so a finished run's gauges are set to 0 before it ends.
"""
from __future__ import annotations

import logging

from ...core.usage import usage_number
from .names import METRICS, RUN_TAGS

_log = logging.getLogger(__name__)   # a child of whileai_ray.runtime: users tune or silence it by name

__all__ = ["RunMetrics", "NoMetrics", "run_metrics", "batch_counts", "PASS_AT"]

PASS_AT = 0.5            # a graded row passes at reward >= 0.5 (a graded failure is below it)
_OBJECTS: dict = {}      # metric name -> ray.util.metrics object, one per process


def _objects() -> dict:
    """The ``ray.util.metrics`` objects, made once per process (actors of two runs share them)."""
    if not _OBJECTS:
        from ray.util.metrics import Counter, Gauge, Histogram
        for m in METRICS:
            obj: Counter | Gauge | Histogram
            if m.kind == "counter":
                obj = Counter(m.name, m.description, tag_keys=m.tags)
            elif m.kind == "gauge":
                obj = Gauge(m.name, m.description, tag_keys=m.tags)
            else:
                obj = Histogram(m.name, m.description, boundaries=list(m.buckets), tag_keys=m.tags)
            _OBJECTS[m.name] = obj
    return _OBJECTS


def batch_counts(rows) -> dict:
    """What one batch of landed rows adds: rows per node, graded and passed rows, and the usage
    the agent's model reported (``usage.input_tokens`` / ``output_tokens`` / ``cost``)."""
    by_node: dict = {}
    graded = passed = 0
    tokens_in: float = 0            # usage text such as "3.5" counts as read (core/usage.py)
    tokens_out: float = 0
    cost = 0.0
    cache: dict = {}                 # (role, "hit" | "miss") -> lookups in the response cache
    for row in rows:
        node = row.get("_node") or "?"
        by_node[node] = by_node.get(node, 0) + 1
        reward = row.get("reward")
        if row.get("judge_status") == "ok" and isinstance(reward, (int, float)) and not isinstance(reward, bool):
            graded += 1
            passed += reward >= PASS_AT
        usage = row.get("usage")
        if usage and isinstance(usage, dict):      # built rows hold the documented form (core/usage.py);
            tokens_in += usage_number(usage.get("input_tokens")) or 0     # anything else counts as 0
            tokens_out += usage_number(usage.get("output_tokens")) or 0
            cost += usage_number(usage.get("cost")) or 0.0
        tally = row.get("_cache")
        if tally and isinstance(tally, dict):     # agents/play_model.py: the unit's cache lookups, by role
            for role, counts in tally.items():
                for outcome, n in (("hit", counts.get("hits")), ("miss", counts.get("misses"))):
                    if isinstance(n, int) and n > 0:
                        cache[(str(role), outcome)] = cache.get((str(role), outcome), 0) + n
    return {"by_node": by_node, "graded": graded, "passed": passed, "tokens_in": tokens_in,
            "tokens_out": tokens_out, "cost": cost, "cache": cache}


class NoMetrics:
    """Metrics off: every call is a no-op."""

    enabled = False

    def landed(self, rows) -> None: ...
    def inflight(self, n: int, queued: int, judging: int = 0) -> None: ...
    def rerolled(self, cause: str, n: int = 1) -> None: ...
    def lost(self, cause: str, n: int = 1) -> None: ...
    def causes(self, rerolled_by: dict, lost_by: dict) -> None: ...
    def rollout_seconds(self, seconds) -> None: ...
    def judge_seconds(self, seconds) -> None: ...
    def finish(self, rerolled_by: dict, lost_by: dict) -> None: ...


class RunMetrics(NoMetrics):
    """Metrics on, for one run: ``RunMetrics(run_id, mode)``."""

    enabled = True

    def __init__(self, run_id: str, mode: str):
        self.m = _objects()
        self.tags = dict(zip(RUN_TAGS, (str(run_id), str(mode))))
        self._node_tags: dict = {}
        self._causes: dict[str, dict] = {"whileai_rerolls": {}, "whileai_rollouts_lost": {}}
        self.graded = self.passed = 0

    # ------------------------------------------------------------ driver
    def landed(self, rows) -> None:
        """A batch of rows landed (called once per batch with the rows that landed in it). Never
        raises: a value no metric can take is left out, and watching a run never stops it."""
        if not rows:
            return
        try:
            self._landed(rows)
        except Exception as exc:
            _said_once(f"whileai_ray: metrics skipped a batch of {len(rows)} rows: {type(exc).__name__}: {exc}")

    def _landed(self, rows) -> None:
        c = batch_counts(rows)
        for node, n in c["by_node"].items():
            self.m["whileai_rows_landed"].inc(n, tags=self._node_tag(node))
        if c["graded"]:
            self.graded += c["graded"]
            self.passed += c["passed"]
            self.m["whileai_rows_graded"].inc(c["graded"], tags=self.tags)
            if c["passed"]:
                self.m["whileai_rows_passed"].inc(c["passed"], tags=self.tags)
            self.m["whileai_pass_rate"].set(self.passed / self.graded, tags=self.tags)
        for kind, n in (("input", c["tokens_in"]), ("output", c["tokens_out"])):
            if n:
                self.m["whileai_tokens"].inc(n, tags={**self.tags, "kind": kind})
        if c["cost"] > 0:
            self.m["whileai_cost"].inc(c["cost"], tags=self.tags)
        for (role, outcome), n in c["cache"].items():
            self.m["whileai_cache_lookups"].inc(n, tags={**self.tags, "role": role, "outcome": outcome})

    def inflight(self, n: int, queued: int, judging: int = 0) -> None:
        """The pipe's state: rollouts in flight, decided and waiting, and rows at the judges."""
        self.m["whileai_rollouts_inflight"].set(n, tags=self.tags)
        self.m["whileai_rollouts_queued"].set(queued, tags=self.tags)
        self.m["whileai_judge_queue"].set(judging, tags=self.tags)

    def rerolled(self, cause: str, n: int = 1) -> None:
        if n > 0:
            self.m["whileai_rerolls"].inc(n, tags={**self.tags, "cause": str(cause)})

    def lost(self, cause: str, n: int = 1) -> None:
        if n > 0:
            self.m["whileai_rollouts_lost"].inc(n, tags={**self.tags, "cause": str(cause)})

    def causes(self, rerolled_by: dict, lost_by: dict) -> None:
        """Catch up with the planner's running counts of re-rolls and losses by cause (only the
        growth since the last call is added), so the planner stays free of metrics."""
        for name, counts, add in (("whileai_rerolls", rerolled_by, self.rerolled),
                                  ("whileai_rollouts_lost", lost_by, self.lost)):
            seen = self._causes[name]
            for cause, total in counts.items():
                grown = total - seen.get(cause, 0)
                if grown > 0:
                    add(cause, grown)
                    seen[cause] = total

    def finish(self, rerolled_by: dict, lost_by: dict) -> None:
        """The run ended: last causes in, the pipe gauges back to 0."""
        self.causes(rerolled_by, lost_by)
        self.inflight(0, 0, 0)

    def _node_tag(self, node_id: str) -> dict:
        tags = self._node_tags.get(node_id)
        if tags is None:
            tags = self._node_tags[node_id] = {**self.tags, "node": _node_label(node_id)}
        return tags

    # ------------------------------------------------- rollout and judge actors
    def rollout_seconds(self, seconds) -> None:
        """Durations of the rollouts of one chunk (one call per chunk)."""
        h, tags = self.m["whileai_rollout_seconds"], self.tags
        for s in seconds:
            h.observe(s, tags=tags)

    def judge_seconds(self, seconds) -> None:
        """Durations of the verdicts of one chunk (one call per chunk)."""
        h, tags = self.m["whileai_judge_seconds"], self.tags
        for s in seconds:
            h.observe(s, tags=tags)


_SAID: set = set()


def _said_once(line: str) -> None:
    """Log ``line`` once per process (a metrics problem is worth one line, never a flood)."""
    if line not in _SAID and len(_SAID) < 100:
        _SAID.add(line)
        _log.warning(line)


def _node_label(node_id: str) -> str:
    """A node's address and the head of its id (what a person reads on a dashboard; nodes of one
    machine share an address); the id alone when Ray does not know the node."""
    try:
        import ray
        for n in ray.nodes():
            if n.get("NodeID") == node_id and n.get("NodeManagerAddress"):
                return f"{n['NodeManagerAddress']}/{node_id[:8]}"
    except Exception:
        pass
    return str(node_id)


def run_metrics(spec) -> NoMetrics:
    """``RunMetrics`` for a job's ``metrics`` entry (``{"run_id", "mode"}``), ``NoMetrics`` for None.

    A Ray that cannot make metric objects gives ``NoMetrics`` with one logged warning: watching a
    run must never stop it."""
    if not spec:
        return NoMetrics()
    try:
        return RunMetrics(spec["run_id"], spec.get("mode", "explore"))
    except Exception as exc:
        _log.warning("whileai_ray: metrics off for run %s: %s: %s", spec.get("run_id"), type(exc).__name__, exc)
        return NoMetrics()
