"""compare_judges: agreement, Wilson interval, Cohen's kappa and the ranking, by hand."""
import math

import pytest

from whileai_ray.agents.backends import reset_configuration
from whileai_ray.score.judge_compare import compare_judges
from whileai_ray.score.judges.labels import attach_labels, cohen_kappa, judge_agreement
from whileai_ray.result.grading.scored import ScoredData
from whileai_ray.testing.server import start_server

# gold labels and one judge's calls on ten rows: tp=4, fn=1, fp=2, tn=3
GOLD = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
CALLS = [1, 1, 1, 1, 0, 1, 1, 0, 0, 0]


def rows_with_gold(gold, kind="human"):
    rows = [{"prompt": f"ask {i}", "steps": [], "final_text": f"reply {i}", "scenario_id": f"sc-{i}",
             "rollout_index": 0, "lineage": {"system_prompt_sha": "x"}, "call": c}
            for i, c in enumerate(CALLS * (len(gold) // len(CALLS)))]
    attach_labels(rows, dict(enumerate(gold)), kind=kind)
    return rows


def by_call(row):
    return {"reward": row["call"], "reason": "by the call column"}


def wilson_by_hand(k, n, z=1.96):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_kappa_and_agreement_equal_a_hand_computation():
    rows = rows_with_gold(GOLD)
    table = compare_judges(rows, {"calls": by_call})
    score = table["calls"]
    # observed 7/10; chance = P(judge 1) P(gold 1) + P(judge 0) P(gold 0) = .6*.5 + .4*.5 = .5
    assert score.n == 10 and score.agreement == pytest.approx(0.7)
    assert score.kappa == pytest.approx((0.7 - 0.5) / (1 - 0.5))
    assert score.ci95 == pytest.approx(wilson_by_hand(7, 10), abs=1e-4)
    assert score.ci95 == pytest.approx((0.3968, 0.8922), abs=1e-4)
    assert score.leak == pytest.approx(2 / 5) and score.miss == pytest.approx(1 / 5)
    assert score.confusion == {"tp": 4, "fp": 2, "fn": 1, "tn": 3}
    assert score.ok is False and score.unjudged == 0
    assert cohen_kappa(4, 2, 1, 3) == pytest.approx(0.4)
    assert cohen_kappa(5, 0, 0, 0) is None       # one class on both sides: undefined


def test_ranking_floors_and_untouched_originals():
    rows = rows_with_gold(GOLD * 3)
    before = [dict(r) for r in rows]

    def flaky(row):
        if row["prompt"] == "ask 0":
            raise RuntimeError("down")
        return row["call"]
    table = compare_judges(rows, [by_call, lambda r: int(r["scenario_id"][3:]) % 10 < 5, flaky])
    assert table.names[0] == "lambda_judge"       # kappa 1 first
    best = table.best
    assert best.name == "lambda_judge" and best.kappa == 1.0 and best.ok     # 30/30: Wilson lo 0.886
    assert table["flaky"].unjudged == 1 and table["flaky"].n == 29
    assert rows == before and "reward" not in rows[0]
    assert table["by_call"].rows[0]["judge_name"] == "by_call" and table["by_call"].rows[0]["reward"] == 1
    assert table["by_call"].rows[0]["gold_reward"] == 1
    text = str(table)
    lines = text.splitlines()
    assert lines[0] == ("compare_judges: 3 judges on 30 rows, gold=human, floors agreement>=0.80 "
                        "kappa>=0.60")
    assert lines[1].split() == ["judge", "agree", "95%", "CI", "kappa", "leak", "unsure", "unjudged",
                                "s/row", "ok"]
    assert lines[2].startswith("lambda_judge") and lines[2].endswith("yes")
    assert lines[-1] == "best: lambda_judge (kappa 1.00), clears both floors"
    assert table.to_dict()["best"] == "lambda_judge"


def test_the_judge_never_sees_gold():
    seen = []
    compare_judges(rows_with_gold(GOLD), {"peek": lambda r: seen.append(sorted(r)) or 1})
    assert all("gold_reward" not in keys and "gold_labels" not in keys for keys in seen)


def test_without_gold_cells_are_dashes_and_a_hint():
    rows = [{"prompt": "a", "steps": [], "final_text": "b"}]
    table = compare_judges(rows, {"one": lambda r: 1})
    assert table["one"].kappa is None and table["one"].agreement is None
    text = str(table)
    assert "one    -      -       -      -" in text and "attach_labels" in text


def test_model_gold_does_not_clear_floors_unless_allowed():
    rows = rows_with_gold([1] * 15 + [0] * 15, kind="model")
    right = lambda r: int(r["scenario_id"][3:]) < 15   # noqa: E731
    assert compare_judges(rows, {"j": right})["j"].ok is False
    assert compare_judges(rows, {"j": right}, allow_model_gold=True)["j"].ok is True
    assert judge_agreement([{"reward": True, "gold_reward": 1}])["n"] == 0     # booleans are no reward


def test_llm_judge_by_url_and_scored_data_method(monkeypatch):
    monkeypatch.delenv("WHILEAI_JUDGE", raising=False)
    reset_configuration()
    host, port, stop = start_server(port=0)
    try:
        rows = [{"prompt": "Where is ORD-1?", "steps": [], "final_text": "It shipped.", "scenario_id": "a"},
                {"prompt": "Where is ORD-2?", "steps": [], "final_text": "Sorry, I cannot.", "scenario_id": "b"}]
        attach_labels(rows, {0: 1, 1: 0})
        scored = ScoredData(trajectories=rows)
        table = scored.compare_judges({"scripted": f"http://{host}:{port}/v1"})
    finally:
        stop()
    score = table["scripted"]
    assert score.agreement == 1.0 and score.kappa == 1.0 and score.n == 2
    assert score.rows[0]["judge_meta"]["model"] == "scripted"
    with pytest.raises(ValueError, match="at least one judge"):
        compare_judges(rows, {})
    with pytest.raises(TypeError, match="callable"):
        compare_judges(rows, {"x": 5})
