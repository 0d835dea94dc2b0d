"""Re-run noise (eval_variance, noise_band) and before/after comparison (compare_runs, delta_report)."""
import math
import random

import pytest

from whileai_ray.score.compare import compare_runs, delta_report
from whileai_ray.score.intervals import t_quantile
from whileai_ray.score.variance import eval_variance, noise_band


def run_rows(rates, runs=1, seed=0, n_tasks=15, prefix="s"):
    rng = random.Random(seed)
    return [{"scenario_id": f"{prefix}{t}", "reward": int(rng.random() < rates[t % len(rates)]),
             "final_text": "x", "lineage": {"eval_run": r}}
            for r in range(runs) for t in range(n_tasks)]


def test_noise_band_is_t_times_sqrt2_times_run_std():
    assert math.isclose(noise_band(0.02, df=2), t_quantile(0.975, 2) * math.sqrt(2) * 0.02)
    assert math.isclose(noise_band(0.02), 1.959964 * math.sqrt(2) * 0.02, rel_tol=1e-6)
    assert math.isclose(noise_band(0.02, n_a=3, n_b=3, df=4), t_quantile(0.975, 4) * 0.02 * math.sqrt(2 / 3))
    assert noise_band(None) is None
    with pytest.raises(ValueError, match="n_a must be an int >= 1"):
        noise_band(0.1, n_a=0)
    with pytest.raises(ValueError, match="run_std must be a number >= 0"):
        noise_band(-1)


def test_eval_variance_splits_one_row_list_by_eval_run():
    rows = run_rows([0.2, 0.5, 0.8, 0.6], runs=3, seed=4, n_tasks=40)
    report = eval_variance(rows)
    assert report.n_runs == 3 and report.runs == [0, 1, 2] and report.n_rows == [40, 40, 40]
    by_hand = [sum(r["reward"] for r in rows if r["lineage"]["eval_run"] == i) / 40 for i in range(3)]
    assert all(math.isclose(a, b) for a, b in zip(report.means, by_hand))
    mean = sum(by_hand) / 3
    std = math.sqrt(sum((m - mean) ** 2 for m in by_hand) / 2)
    assert math.isclose(report.run_std, std)
    assert math.isclose(report.noise_band, t_quantile(0.975, 2) * math.sqrt(2) * std)
    assert report.stability in ("stable", "noisy", "unstable")
    assert "noise band +/-" in str(report)


def test_eval_variance_several_runs_and_labels():
    base = run_rows([0.5], seed=1)
    same = eval_variance(base, [dict(r) for r in base], [dict(r) for r in base])
    assert same.stability == "deterministic" and same.run_std == 0 and same.noise_band == 0
    single = eval_variance(base)
    assert single.stability == "single_run" and single.run_std is None and "runs=3" in single.note
    by_seed = eval_variance(base + [dict(r, seed=7) for r in base], by="seed")
    assert by_seed.n_runs == 2
    assert eval_variance(base, base, metric="reward").metric == "reward"
    with pytest.raises(TypeError, match="eval_variance needs rows"):
        eval_variance()
    with pytest.raises(ValueError, match="metric must be one of"):
        eval_variance(base, metric="accuracy")


def test_compare_identical_runs_is_no_difference():
    rows = run_rows([0.75], seed=2)
    out = compare_runs(rows, [dict(r) for r in rows])
    assert set(out) == {"metric", "paired", "n_paired", "n_only_a", "n_only_b", "paired_share", "n_used",
                        "mean_a", "mean_b", "delta", "ci95", "level", "p_value", "verdict", "note"}
    assert out["paired"] and out["n_paired"] == 15 and out["delta"] == 0 and out["ci95"] == [0.0, 0.0]
    assert out["p_value"] == 1.0 and out["verdict"] == "no_difference_detected"


def test_compare_detects_a_real_change_and_counts_unpaired_tasks():
    a = run_rows([0.3], seed=1, n_tasks=40)
    b = [dict(r, reward=1) for r in a[:35]] + run_rows([1.0], n_tasks=3, prefix="new")
    out = compare_runs(a, b, metric="pass_at_1")
    assert out["n_paired"] == 35 and out["n_only_a"] == 5 and out["n_only_b"] == 3
    assert math.isclose(out["paired_share"], 35 / 43)
    assert out["verdict"] == "improved" and out["ci95"][0] > 0 and out["p_value"] < 0.01
    assert "dropped 5 only in a and 3 only in b" in out["note"]
    worse = compare_runs(b, a, metric="pass_at_1")
    assert worse["verdict"] == "regressed" and worse["delta"] < 0


def test_compare_without_shared_tasks_is_unpaired():
    a, b = run_rows([0.2], n_tasks=30, prefix="a"), run_rows([0.9], n_tasks=30, prefix="b", seed=3)
    out = compare_runs(a, b, metric="pass_at_1")
    assert not out["paired"] and out["n_used"] == 60 and out["verdict"] == "improved"
    assert "no shared tasks" in out["note"]


def test_delta_report_prints_no_difference_line():
    rows = [{"scenario_id": f"s{i}", "reward": int(i % 4 != 0), "lineage": {"eval_run": r}}
            for r in range(3) for i in range(16)]
    report = delta_report(rows, [dict(r) for r in rows])
    first = str(report).splitlines()[0]
    assert report.verdict == "NO DIFFERENCE"
    assert first == "NO DIFFERENCE: pass_at_1 0.750 -> 0.750 +0.000 [+0.000..+0.000] flat (16 paired)"
    assert report.noise_band == 0 and report.n_runs_before == 3


def test_delta_report_needs_reruns_to_call_a_change_real():
    before = run_rows([0.3], seed=5, n_tasks=40)
    after = [dict(r, reward=1) for r in before]
    single = delta_report(before, after)
    assert single.verdict == "UNCONFIRMED (IMPROVED)" and "runs=3" in str(single)
    rerun_b = run_rows([0.3], runs=3, seed=5, n_tasks=40)
    rerun_a = [dict(r, reward=1) for r in rerun_b]
    assert delta_report(rerun_b, rerun_a).verdict == "IMPROVED"


def test_delta_report_compares_shared_markers_and_flags_ceiling():
    before = [{"scenario_id": f"s{i}", "reward": 1, "markers": {"polite": 1, "cites_id": i % 2}} for i in range(20)]
    after = [{"scenario_id": f"s{i}", "reward": 1, "markers": {"polite": 0}} for i in range(20)]
    report = delta_report(before, after)
    assert list(report.markers) == ["polite"]
    assert "marker polite 1.000 -> 0.000 -1.000 [-1.000..-1.000] down (20 paired)" in str(report)
    assert any(n.startswith("ceiling: before is at 1.000") for n in report.notes)


def test_delta_report_with_too_few_tasks():
    rows = [{"scenario_id": "s0", "reward": 1}, {"scenario_id": "s1", "reward": 0}]
    assert delta_report(rows, rows).verdict == "TOO FEW TASKS"


def test_identical_runs_have_exactly_zero_spread():
    """0.675 three times: the float mean is not 0.675, and the spread came out 1.4e-16, 'stable'."""
    from whileai_ray.score.variance import eval_variance
    runs = [[{"scenario_id": f"s{i}", "prompt": f"p{i}", "reward": float(i % 40 < 27)} for i in range(40)]] * 3
    report = eval_variance(*runs)
    assert report.run_std == 0.0 and report.stability == "deterministic" and report.mean == 0.675
