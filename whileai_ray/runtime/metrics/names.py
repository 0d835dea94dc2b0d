"""The metrics a run exports, by name: what each one counts, its kind and its tags.

One table, read by two things: ``metrics.RunMetrics`` (which makes the ``ray.util.metrics``
objects from it) and the Grafana dashboard in ``cluster/grafana/`` (a unit test checks that
every series the dashboard queries is one this table defines). Plain data, no Ray, so the
test runs without a cluster.

Ray exports a metric ``whileai_x`` as ``ray_whileai_x`` on every node's Prometheus endpoint,
with ``_total`` after a counter's name and ``_bucket`` / ``_sum`` / ``_count`` after a
histogram's; ``prometheus_series`` spells those names. Every series carries ``run_id`` and
``mode`` so two runs on one cluster stay apart.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetricSpec", "METRICS", "RUN_TAGS", "LATENCY_BUCKETS_S", "prometheus_series", "spec"]

RUN_TAGS = ("run_id", "mode")
# seconds: a no-delay callable plays in ~1 ms, a model call takes seconds, a slow judge minutes
LATENCY_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                     60.0, 120.0, 300.0)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str                       # "counter" | "gauge" | "histogram"
    description: str
    tags: tuple = RUN_TAGS
    buckets: tuple = ()


METRICS: tuple[MetricSpec, ...] = (
    MetricSpec("whileai_rows_landed", "counter",
               "Rows landed (written to the result and the checkpoint), by the node that played them.",
               RUN_TAGS + ("node",)),
    MetricSpec("whileai_rollouts_inflight", "gauge", "Rollouts sent to rollout actors and not yet back."),
    MetricSpec("whileai_rollouts_queued", "gauge", "Rollouts decided and waiting for a rollout slot."),
    MetricSpec("whileai_rerolls", "counter",
               "Rollouts played again, by cause (agent_error, empty_reply, tool_markup).",
               RUN_TAGS + ("cause",)),
    MetricSpec("whileai_rollouts_lost", "counter",
               "Rollouts given up after their re-rolls, by cause.", RUN_TAGS + ("cause",)),
    MetricSpec("whileai_rollout_seconds", "histogram",
               "Seconds one rollout took on its rollout actor (every attempt, re-rolled ones too).",
               buckets=LATENCY_BUCKETS_S),
    MetricSpec("whileai_judge_seconds", "histogram", "Seconds one verdict took on its judge actor.",
               buckets=LATENCY_BUCKETS_S),
    MetricSpec("whileai_judge_queue", "gauge", "Rows sent to judge actors and not yet graded."),
    MetricSpec("whileai_rows_graded", "counter", "Rows with a verdict from the judge (judge_status ok)."),
    MetricSpec("whileai_rows_passed", "counter", "Graded rows that passed (reward >= 0.5)."),
    MetricSpec("whileai_pass_rate", "gauge", "Share of the graded rows so far that passed."),
    MetricSpec("whileai_tokens", "counter",
               "Tokens the agent's model reported in its usage, by kind (input, output).",
               RUN_TAGS + ("kind",)),
    MetricSpec("whileai_cost", "counter",
               "Cost the agent's endpoint reported in its usage (usage.cost, in its own currency)."),
    MetricSpec("whileai_cache_lookups", "counter",
               "Model requests of the landed rows looked up in the response cache (advanced['cache']), "
               "by role (agent, user) and outcome (hit: no model call; miss: the model was called).",
               RUN_TAGS + ("role", "outcome")),
)
_BY_NAME = {m.name: m for m in METRICS}


def spec(name: str) -> MetricSpec:
    return _BY_NAME[name]


def prometheus_series(m: MetricSpec) -> tuple[str, ...]:
    """The series names Prometheus shows for ``m`` (Ray adds the ``ray_`` prefix)."""
    base = "ray_" + m.name
    if m.kind == "counter":
        return (base + "_total",)
    if m.kind == "histogram":
        return (base + "_bucket", base + "_sum", base + "_count")
    return (base,)
