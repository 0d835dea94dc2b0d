"""The judge contract: every judge outcome maps to one verdict, and a failure is never a 0."""
import functools

import pytest

from whileai_ray.score.judges.contract import (apply_verdict, failed_markers, is_graded_failure, judge_name,
                                       new_scoring_run_id, normalize_judge_result)
from whileai_ray.score.pass_at.estimate import pass_at


@pytest.mark.parametrize("value, reward", [(1, 1), (0, 0), (0.25, 0.25), (True, 1), (False, 0), (1.0, 1.0)])
def test_numbers_and_bools_are_rewards(value, reward):
    v = normalize_judge_result(value)
    assert v["judge_status"] == "ok" and v["reward"] == reward and not isinstance(v["reward"], bool)


def test_dict_result_keeps_reason_markers_and_failure_class_and_drops_the_rest():
    v = normalize_judge_result({"score": 0, "reason": "wrong id", "markers": {"b": 0, "a": True},
                                "failure_class": "wrong_tool", "extra": 1})
    assert v == {"reward": 0, "reason": "wrong id", "markers": {"a": 1, "b": 0},
                 "failure_class": "wrong_tool", "judge_status": "ok"}


@pytest.mark.parametrize("value, status", [
    (1.5, "invalid_result"), (-0.1, "invalid_result"), (float("nan"), "invalid_result"),
    ({"reward": 2}, "invalid_result"), ("yes", "invalid_result"), ({"reward": "1"}, "invalid_result"),
    ({"reason": "fine"}, "missing_reward"), (None, "missing_reward"),
    (ValueError("bad row"), "error"), (TimeoutError("slow"), "timeout"),
])
def test_failures_are_unjudged_with_status(value, status):
    v = normalize_judge_result(value)
    assert v["judge_status"] == status and v["reward"] is None and v["reason"]


def test_exception_reason_names_type_and_message():
    assert normalize_judge_result(KeyError("final_text"))["reason"] == "KeyError: 'final_text'"
    assert normalize_judge_result(RuntimeError("boom"))["reason"] == "RuntimeError: boom"


def test_judge_names():
    def my_judge(row):
        return 1

    class Obj:
        name = "rubric-v2"

        def __call__(self, row):
            return 1

    class Bare:
        def __call__(self, row):
            return 1

    assert judge_name(my_judge) == "my_judge"
    assert judge_name(lambda row: 1) == "lambda_judge"
    assert judge_name(Obj()) == "rubric-v2"
    assert judge_name(Bare()) == "judge"
    assert judge_name(functools.partial(my_judge)) == "my_judge"


def test_apply_verdict_writes_row_and_lineage():
    row = {"scenario_id": "sc-1", "lineage": {"system_prompt_sha": "abc"}, "reason": "old"}
    apply_verdict(row, normalize_judge_result({"reward": 1, "markers": {"polite": 1}}), "j", "score_x")
    assert row["reward"] == 1 and row["judge_status"] == "ok" and row["judge_name"] == "j"
    assert row["reason"] is None and row["markers"] == {"polite": 1}
    assert row["lineage"] == {"system_prompt_sha": "abc", "scoring_run_id": "score_x", "source": "grade",
                              "judge": "j", "parent": "sc-1"}


def test_a_judge_error_is_never_a_zero_in_pass_at():
    rows = [{"scenario_id": f"s{i}", "reward": 1} for i in range(4)]
    for row in rows[:2]:
        apply_verdict(row, normalize_judge_result(RuntimeError("down")), "j", "score_1")
        assert row["reward"] is None and row["judge_status"] == "error"
    result = pass_at(rows)
    assert result.pass_at_1 == 1.0 and "the judge failed on 2 of 4 rows (error)" in result.note
    # a raw verdict that was never normalized is normalized on the way in
    apply_verdict(rows[2], 7, "j", "score_1")
    assert rows[2]["judge_status"] == "invalid_result" and rows[2]["reward"] is None


def test_graded_failure_and_failed_markers():
    assert is_graded_failure({"reward": 0, "judge_status": "ok"})
    assert not is_graded_failure({"reward": 1, "judge_status": "ok"})
    assert not is_graded_failure({"reward": None, "judge_status": "error"})
    assert is_graded_failure({"reward": 0.6}, threshold=0.7)
    assert failed_markers({"markers": {"tone": 1, "used_tool": 0, "cites_id": 0.2}}) == ["cites_id", "used_tool"]
    assert failed_markers({"reward": 1}) == []


def test_scoring_run_id_shape_and_determinism():
    a, b = new_scoring_run_id("run1", "j", 0), new_scoring_run_id("run1", "j", 1)
    assert a.startswith("score_") and len(a) == 18 and a != b and a == new_scoring_run_id("run1", "j", 0)
