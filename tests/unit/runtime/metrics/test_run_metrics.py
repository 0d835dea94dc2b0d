"""The pure parts of the metrics recorder (no Ray): what one landed batch adds, and that the
no-op recorder answers every call the real one does (so call sites never branch on it)."""
import inspect
import sys

from whileai_ray.runtime.metrics.recorder import NoMetrics, RunMetrics, batch_counts, run_metrics


def test_a_batch_counts_rows_per_node_verdicts_and_reported_usage():
    rows = [
        {"_node": "n1", "reward": 1.0, "judge_status": "ok", "usage": {"input_tokens": 10, "output_tokens": 3}},
        {"_node": "n1", "reward": 0.0, "judge_status": "ok", "usage": {"input_tokens": 5, "output_tokens": 2,
                                                                         "cost": 0.25}},
        {"_node": "n2", "reward": None, "judge_status": "error"},           # a judge failure: not graded
        {"_node": "n2", "reward": True, "judge_status": "ok"},             # a bool is not a reward
        {"reward": 0.7, "judge_status": "ok"},
    ]
    c = batch_counts(rows)
    assert c["by_node"] == {"n1": 2, "n2": 2, "?": 1}
    assert (c["graded"], c["passed"]) == (3, 2)
    assert (c["tokens_in"], c["tokens_out"], c["cost"]) == (15, 5, 0.25)


def test_metrics_off_is_a_no_op_with_the_same_calls_and_imports_no_ray():
    public = {n for n, f in inspect.getmembers(RunMetrics, inspect.isfunction) if not n.startswith("_")}
    assert public <= {n for n, _ in inspect.getmembers(NoMetrics, inspect.isfunction)}
    for name in public:
        assert list(inspect.signature(getattr(RunMetrics, name)).parameters) == \
            list(inspect.signature(getattr(NoMetrics, name)).parameters), name
    off = run_metrics(None)
    assert isinstance(off, NoMetrics) and not off.enabled
    off.landed([{"_node": "n"}]); off.inflight(1, 2, 3); off.causes({"agent_error": 1}, {})
    off.rollout_seconds([0.1]); off.judge_seconds([0.1]); off.finish({}, {})
    assert "ray" not in sys.modules or not sys.modules["ray"].is_initialized()
