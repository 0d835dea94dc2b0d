"""Small contract details the seed docs and the reference sheet fix (no Ray): the mock world's
options are checked up front, pass_at's note agrees with its counts, compare_runs' defaults."""
from __future__ import annotations

import inspect

import pytest

from whileai_ray.config.arguments import SIMULATE_PARAMS, resolve_config
from whileai_ray.score.compare import compare_runs
from whileai_ray.score.pass_at.estimate import pass_at

TOOLS = [{"type": "function", "function": {
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                   "required": ["order_id"]}}}]


def call(**kwargs):
    explicit = {k: v for k, v in kwargs.items() if k in SIMULATE_PARAMS}
    passed = {k: v for k, v in kwargs.items() if k not in SIMULATE_PARAMS}
    explicit.setdefault("tools", TOOLS)
    return resolve_config(lambda m: {"steps": [], "final_text": "ok"}, explicit, passed)


# ---- item 6: advanced={"world": ...} is validated with every other argument -------------------

def test_an_unknown_world_option_is_refused_before_the_run():
    with pytest.raises(ValueError) as info:
        call(advanced={"world": {"nope": 1}})
    message = str(info.value)
    assert "'nope'" in message and "exists_share" in message      # names the key and lists the fields


def test_a_bad_world_value_is_refused_and_a_good_one_passes():
    with pytest.raises(ValueError, match="exists_share"):
        call(advanced={"world": {"exists_share": 3}})
    cfg = call(advanced={"world": {"exists_share": 0.2}})
    assert cfg.advanced.world == {"exists_share": 0.2}


# ---- item 9: pass_at's count and its note agree on uneven groups -------------------------------

def test_unanimous_short_groups_are_counted_apart_from_the_groups_at_k():
    rows = []
    for t in range(19):                       # 19 groups of 4 with a split
        rows += [{"scenario_id": f"full{t}", "reward": r} for r in (1, 0, 1, 1)]
    for t in range(6):                        # 6 unanimous groups cut at 2
        rows += [{"scenario_id": f"short{t}", "reward": 1}, {"scenario_id": f"short{t}", "reward": 1}]
    for t in range(3):                        # 3 groups of 5 (dynamic sampling went past k)
        rows += [{"scenario_id": f"long{t}", "reward": r} for r in (1, 0, 0, 1, 1)]
    pa = pass_at(rows, k=4, unanimous_short=True)
    assert pa.n_groups_at_k == 22 and pa.n_groups_imputed == 6 and pa.n_groups == 28
    assert "the 22 group(s) with at least 4" in pa.note
    assert "6 unanimous group(s) cut short" in pa.note
    assert "25 group" not in pa.note and "28 group(s) with at least" not in pa.note


# ---- item 12: compare_runs' signature and default metric are the reference's -------------------

def test_compare_runs_defaults_to_pass_at_1_with_the_reference_signature():
    sig = inspect.signature(compare_runs)
    params = sig.parameters
    assert list(params)[:2] == ["a", "b"]
    assert params["metric"].kind is inspect.Parameter.KEYWORD_ONLY and params["metric"].default == "pass_at_1"
    assert params["n_boot"].default == 2000 and params["seed"].default == 0
    assert params["min_paired"].default == 5 and params["level"].default == 0.95
    a = [{"scenario_id": f"t{i}", "reward": 0.4} for i in range(8)]     # a non-binary reward:
    b = [{"scenario_id": f"t{i}", "reward": 0.6} for i in range(8)]     # no pass_at_1 value
    out = compare_runs(a, b)
    assert out["metric"] == "pass_at_1" and out["verdict"] == "insufficient_data"
    assert compare_runs(a, b, metric="reward")["delta"] == pytest.approx(0.2)


def test_compare_runs_needs_min_paired_tasks_for_an_interval():
    a = [{"scenario_id": f"t{i}", "reward": i % 2} for i in range(4)]
    b = [{"scenario_id": f"t{i}", "reward": 1} for i in range(4)]
    assert compare_runs(a, b)["ci95"] is None                       # 4 paired < min_paired=5
    assert "fewer than 5 paired tasks" in compare_runs(a, b)["note"]
    assert compare_runs(a, b, min_paired=3)["ci95"] is not None
    few = compare_runs(a, b, min_paired=3, n_boot=200)
    assert few["ci95"] is not None and few["n_used"] == 4
