"""wai.run_judge and wai.evaluate: judge rollouts that exist (no Ray, nothing rolled out)."""
from __future__ import annotations

import json
import time

import pytest

import whileai_ray as wai


def rows(n=6):
    out = []
    for i in range(n):
        out.append({"prompt": f"Where is order ORD-{100 + i}?", "steps": [], "scenario_id": f"sc-{i:02d}",
                    "final_text": "Sorry, I cannot find it." if i % 3 == 0 else f"ORD-{100 + i} shipped.",
                    "schema_version": "1", "lineage": {"system_prompt_sha": "x"}})
    return out


def judge(row):
    return {"reward": 0 if "Sorry" in row["final_text"] else 1, "reason": "checked the reply",
            "markers": {"polite": True}}


def test_run_judge_grades_copies_and_pins_the_scoring_run_id():
    src = rows()
    scored = wai.run_judge(src, judge, run_id="score_nightly_42", version="rubric-v3", judge_name="strict",
                           source="nightly")
    assert isinstance(scored, wai.ScoredData) and scored.scoring_run_id == "score_nightly_42"
    out = scored.rows()
    assert [r["reward"] for r in out] == [0, 1, 1, 0, 1, 1]
    for r in out:
        assert r["lineage"]["scoring_run_id"] == "score_nightly_42"
        assert r["lineage"]["judge_version"] == "rubric-v3" and r["lineage"]["source"] == "nightly"
        assert r["judge_name"] == "strict" and r["judge_status"] == "ok" and r["markers"] == {"polite": 1}
    assert all("reward" not in r for r in src)                    # the source rows are untouched
    again = wai.run_judge(src, judge, run_id="score_nightly_42")
    assert [r["lineage"]["scoring_run_id"] for r in again.rows()] == ["score_nightly_42"] * 6
    fresh = wai.run_judge(src, judge)
    assert fresh.scoring_run_id.startswith("score_") and fresh.scoring_run_id != "score_nightly_42"


def test_run_judge_marks_failures_per_row_and_maps_a_scale():
    def flaky(row):
        if row["scenario_id"] == "sc-01":
            raise RuntimeError("judge crashed")
        if row["scenario_id"] == "sc-02":
            time.sleep(2)
        return 4
    scored = wai.run_judge(rows(3), flaky, scale=(1, 5), timeout=0.5, concurrency=3)
    by = {r["scenario_id"]: r for r in scored.rows()}
    assert by["sc-00"]["reward"] == 0.75 and by["sc-00"]["judge_status"] == "ok"
    assert by["sc-01"]["judge_status"] == "error" and "reward" not in by["sc-01"]
    assert by["sc-02"]["judge_status"] == "timeout" and "reward" not in by["sc-02"]
    assert scored.statuses == {"error": 1, "ok": 1, "timeout": 1}


def test_run_judge_reads_a_jsonl_path_and_refuses_bad_arguments(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows(4)))
    scored = wai.run_judge(str(path), judge)
    assert len(scored.rows()) == 4
    with pytest.raises(TypeError, match="needs a judge"):
        wai.run_judge(rows(), None)
    with pytest.raises(ValueError, match="run_id="):
        wai.run_judge(rows(), judge, run_id="")
    with pytest.raises(ValueError, match="scale="):
        wai.run_judge(rows(), judge, scale=(5, 1))
    with pytest.raises(TypeError, match="rows="):
        wai.run_judge(42, judge)


def test_evaluate_reports_which_asks_of_a_fixed_list_ran():
    src = rows(4)
    asks = [src[0]["prompt"], "  where IS order   ord-101? ", "Cancel ORD-999 please"]
    scored = wai.evaluate(src, judge, eval_set=asks)
    cov = scored.eval_coverage
    assert set(cov) == {"eval_set", "covered", "missing"}
    assert cov["eval_set"] == asks and cov["covered"] == asks[:2] and cov["missing"] == [asks[2]]
    assert scored.eval_scores == {asks[0]: 0.0, asks[1]: 1.0}
    assert any("1 of 3 asks of eval_set never ran" in w for w in scored.warnings)
    assert [r["reward"] for r in scored.rows()] == [0, 1, 1, 0]      # every row judged, none rolled out
    assert all(r["lineage"]["source"] == "evaluate" for r in scored.rows())
    plain = wai.evaluate(src, grader=lambda r: 1.0, run_id="score_fixed")
    assert plain.eval_coverage is None and plain.scoring_run_id == "score_fixed"


def test_evaluate_needs_rows_and_a_judge():
    asks = ["Where is order ORD-100?"]
    with pytest.raises(TypeError, match="needs rows"):
        wai.evaluate(eval_set=asks)
    with pytest.raises(TypeError, match="needs a judge"):
        wai.evaluate(rows(), eval_set=asks)
    with pytest.raises(ValueError, match="not both"):
        wai.evaluate(rows(), judge, grader=judge)
    with pytest.raises(ValueError, match="eval_set item 0"):
        wai.evaluate(rows(), judge, eval_set=[""])


def test_run_judge_with_a_rubric_and_a_model_endpoint(server):
    url, handler = server(model="judge-7b")
    scored = wai.run_judge(rows(3), "The reply must state the order's status.", model=f"vllm:judge-7b@{url}",
                           run_id="score_llm")
    out = scored.rows()
    assert [r["reward"] for r in out] == [0, 1, 1]                # the scripted judge fails "sorry" replies
    assert all(r["judge_meta"]["model"] == "judge-7b" for r in out)
    assert out[0]["lineage"]["judge_version"].startswith("judge-7b@")
    assert handler.requests >= 4                                  # GET /models, then one verdict per row
