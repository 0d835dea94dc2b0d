"""The LLM judge and the grading paths, against the scripted OpenAI-compatible server (real HTTP)."""
import asyncio
import json
import logging

import pytest

from whileai_ray.agents.backends import configure, reset_configuration
from whileai_ray.result.data import SimulationData
from whileai_ray.result.grading.paths import grade_llm, grade_run, llm_grade
from whileai_ray.score.judges.llm_judge import make_run_judge
from whileai_ray.score.judges.prompt import evidence_text, judge_messages, parse_judge_reply
from whileai_ray.score.judges.labels import JudgeTrustError, attach_labels
from whileai_ray.score.judges.llm_judge import Judge, judge_rows
from whileai_ray.result.grading.scored import ScoredData
from whileai_ray.store.reader import load_rows, save_jsonl_atomic
from whileai_ray.testing.server import start_server
from whileai_ray.testing.seeded_rows import TOOLS


def good(i=1):
    return {"prompt": f"Where is order ORD-{i}?", "scenario_id": f"sc-{i}", "rollout_index": 0,
            "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                       "result": {"status": "ok", "data": {"status": "shipped"}}}],
            "final_text": f"Order ORD-{i} has shipped.", "lineage": {}}


def bad(i=2):
    return {"prompt": f"Where is order ORD-{i}?", "scenario_id": f"sc-{i}", "rollout_index": 0,
            "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                       "result": {"status": "timeout"}}],
            "final_text": "Sorry, I cannot reach the order system.", "lineage": {},
            "privileged": {"reference": "the order shipped on the fourth of May"}}


pytestmark = pytest.mark.usefixtures("clean_model_env")   # (tests/unit/conftest.py)


@pytest.fixture
def url():
    host, port, stop = start_server(port=0)
    yield f"http://{host}:{port}/v1"
    stop()


def test_no_endpoint_is_a_runtime_error_naming_the_fix():
    with pytest.raises(RuntimeError, match="WHILEAI_JUDGE") as err:
        Judge(rubric="The agent answers.")
    assert "configure(judge=" in str(err.value)
    rows = [good()]
    with pytest.raises(RuntimeError, match="WHILEAI_JUDGE"):
        grade_llm(rows)
    assert "reward" not in rows[0]      # nothing was graded or spent
    with pytest.raises(RuntimeError, match="WHILEAI_JUDGE"):
        make_run_judge("rubric")


def test_judge_grades_over_http_with_meta_and_one_sentence(url):
    judge = Judge(rubric="The agent reports the order status.", base_url=url)
    assert judge(good()) == {"reward": 1, "reason": "The final reply answers the ask with the tool's result.",
                             "judge_meta": {"model": "scripted", "payload_chars": 8000, "max_tokens": 120,
                                            "rubric_sha": judge.rubric_sha, "structured_output": "json_schema",
                                            "trust": None}}
    verdicts = judge_rows(judge, [good(), bad()], concurrency=4)
    assert [v["reward"] for v in verdicts] == [1, 0]
    assert [v["judge_status"] for v in verdicts] == ["ok", "ok"]
    assert verdicts[1]["reason"] == "The final reply says 'sorry', so the ask was not met."
    assert judge.version == f"scripted@{judge.rubric_sha}"


def test_configure_and_env_resolve_the_endpoint(url, monkeypatch):
    configure(judge=url)
    assert Judge().check().model == "scripted"
    reset_configuration()
    monkeypatch.setenv("WHILEAI_JUDGE", f"vllm:scripted@{url}")
    assert make_run_judge("r").backend.base_url == url


def test_judge_pickles_after_use(url):
    import pickle
    judge = Judge(rubric="r", base_url=url)
    assert judge(good())["reward"] == 1
    clone = pickle.loads(pickle.dumps(judge))
    assert clone(bad())["reward"] == 0 and clone.version == judge.version


def test_judge_rows_works_inside_a_running_loop(url):
    judge = Judge(base_url=url)

    async def inside():
        return judge_rows(judge, [good()])
    assert asyncio.run(inside())[0]["reward"] == 1


def test_grade_llm_on_a_row_list_in_place(url, caplog):
    rows = [good(1), bad(2), dict(good(3), reward=0.5)]
    with caplog.at_level(logging.WARNING):
        report = grade_llm(rows, base_url=url, tools=TOOLS)
    assert [r["reward"] for r in rows] == [1, 0, 1]
    assert rows[2]["qwen_reward"] == 0.5 and "qwen_reward" not in rows[0]
    assert all(r["judge_status"] == "ok" and r["reason"].endswith(".") for r in rows)
    assert set(rows[0]["judge_meta"]) == {"model", "payload_chars", "max_tokens", "rubric_sha", "structured_output",
                                          "trust"}
    assert rows[0]["judge_meta"]["trust"]["measured"] is False
    assert rows[0]["lineage"]["judge_version"] == report["judge_version"]
    assert report["graded"] == 3 and report["n0"] == 1 and report["n1"] == 2
    assert report["rubric"] == "conduct floor" and "conduct floor only" in report["note"]
    assert report["backend"] == f"openai:scripted@{url}"
    assert "path" not in report
    assert any("not measured" in w for w in report["warnings"])
    assert sum("trust check" in r.message for r in caplog.records) == 1


def test_grade_llm_rewrites_a_jsonl_path_unless_output(url, tmp_path):
    src = tmp_path / "rows.jsonl"
    save_jsonl_atomic([good(1), bad(2)], src)
    out = tmp_path / "graded.jsonl"
    report = grade_llm(str(src), base_url=url, output=str(out), limit=1)
    assert report["path"] == str(out) and report["graded"] == 1
    assert "reward" not in load_rows(src)[0][0]
    graded, _ = load_rows(out)
    assert graded[0]["reward"] == 1 and "reward" not in graded[1]
    grade_llm(str(src), base_url=url)
    assert [r["reward"] for r in load_rows(src)[0]] == [1, 0]


def test_grade_llm_parquet_path(url, tmp_path):
    from whileai_ray.store.parquet.folder import write_parquet
    src = tmp_path / "rows.parquet"
    write_parquet([good(1), bad(2)], src)
    report = grade_llm(str(src), base_url=url)
    assert report["path"] == str(src)
    assert [r["reward"] for r in load_rows(src)[0]] == [1, 0]


def test_server_errors_leave_rows_unjudged_not_zero(tmp_path):
    host, port, stop = start_server(port=0, error_rate=1.0)
    try:
        rows = [good(1)]
        report = grade_llm(rows, base_url=f"http://{host}:{port}/v1", trust="off")
    finally:
        stop()
    assert rows[0]["reward"] is None and rows[0]["judge_status"] == "error"
    assert report["graded"] == 0 and report["unjudged"] == 1
    assert "unjudged" in report["warnings"][0]


def test_api_key_reaches_the_server():
    host, port, stop = start_server(port=0, require_key="sekrit")
    try:
        with pytest.raises(RuntimeError, match="refused the key"):
            Judge(base_url=f"http://{host}:{port}/v1").check()
        assert Judge(base_url=f"http://{host}:{port}/v1", api_key="sekrit")(good())["reward"] == 1
    finally:
        stop()


def run_data(rows):
    return SimulationData(trajectories=rows, system_prompt="You help with orders.", tools=TOOLS)


def test_grade_run_paths(url, tmp_path):
    configure(judge=url)
    data = run_data([good(1), bad(2)])
    report = grade_run(data, rubric="Report the status.", path=str(tmp_path / "g.jsonl"))
    assert report["rubric"] == "Report the status." and "note" not in report
    assert [r["reward"] for r in data.rows] == [1, 0]
    assert load_rows(tmp_path / "g.jsonl")[0][1]["reward"] == 0

    fresh = run_data([good(1), bad(2)])
    scored = grade_run(fresh, judge=lambda row: {"reward": 1, "reason": "fine"}, version="v7")
    assert isinstance(scored, ScoredData)
    assert "reward" not in fresh.trajectories[0]
    assert [r["reward"] for r in scored.rows] == [1, 1]
    assert scored.trajectories[0]["lineage"]["judge_version"] == "v7"
    assert "privileged" in scored.trajectories[1] and "privileged" not in scored.rows[1]

    again = grade_run(run_data([good(1)]), lambda row: 0.0)
    assert again.trajectories[0]["reward"] == 0.0 and again.trajectories[0]["judge_meta"]["trust"]["n"] == 0

    via_judge = run_data([good(1), bad(2)])
    grade_run(via_judge, Judge(base_url=url))
    assert [r["reward"] for r in via_judge.rows] == [1, 0]


def test_judge_path_marks_failures_and_scales():
    data = run_data([good(1), bad(2)])

    def rating(row):
        if "Sorry" in row["final_text"]:
            raise RuntimeError("boom")
        return 8
    scored = grade_run(data, judge=rating, scale=(0, 10))
    assert scored.trajectories[0]["reward"] == 0.8
    assert scored.trajectories[1]["reward"] is None and scored.trajectories[1]["judge_status"] == "error"


def test_llm_grade_is_advisory(url):
    configure(judge=url)
    rows = [dict(good(1), reward=0), bad(2)]
    assert llm_grade(rows) is rows
    assert [r["llm_reward"] for r in rows] == [1, 0] and rows[0]["reward"] == 0
    assert "reward" not in rows[1] and rows[1]["llm_reason"].startswith("The final reply")


def test_trust_modes(url):
    configure(judge=url)
    with pytest.raises(ValueError, match="trust="):
        grade_llm([good()], trust="bogus")
    with pytest.raises(JudgeTrustError, match="not measured"):
        grade_llm([good()], trust="require")
    rows = [good(i) if i % 2 else bad(i) for i in range(40)]
    attach_labels(rows, {i: i % 2 for i in range(40)}, kind="human")
    report = grade_llm(rows, trust="require")
    assert report["trust"]["ok"] and report["trust"]["kappa"] == 1.0
    assert rows[0]["judge_meta"]["trust"]["n"] == 40


def test_prompt_says_what_it_grades_and_caps_payload():
    row = bad(2)
    floor = judge_messages(row)[0]["content"]
    assert floor.startswith("You are the judge") and "conduct floor only" in floor
    ruled = judge_messages(row, rubric="Quote the ship date.", tools=TOOLS, policy="Be brief.")
    assert "RUBRIC:\nQuote the ship date." in ruled[0]["content"]
    assert "lookup_order(order_id)" in ruled[1]["content"] and "Be brief." in ruled[1]["content"]
    assert "fourth of May" not in ruled[1]["content"]
    assert "fourth of May" in evidence_text(row, use_privileged=True)
    long = dict(row, prompt="x" * 20000)
    text = evidence_text(long, payload_chars=1000)
    assert len(text) <= 1000 and text.endswith("Sorry, I cannot reach the order system.")


@pytest.mark.parametrize("reply, reward", [
    ('{"reward": 1, "reason": "Good. Extra sentence."}', 1),
    ('```json\n{"score": 0, "reason": "Bad."}\n```', 0),
    ('Verdict: {"reward": "pass", "reason": "ok"}', 1),
    ('reward: 0, reason: "it failed"', 0),
    ("FAIL - the agent invented a date", 0),
    ("I cannot decide.", None),
    ('{"reward": 0.5, "reason": "half"}', None),
])
def test_parse_judge_reply(reply, reward):
    parsed = parse_judge_reply(reply)
    assert parsed["reward"] == reward
    if reward is not None:
        assert parsed["reason"] and "Extra" not in parsed["reason"]


def test_unreadable_reply_is_invalid_not_zero(url):
    judge = Judge(base_url=url).check()
    verdict = judge.verdict_of("no idea")
    assert verdict["reward"] is None and verdict["judge_status"] == "invalid_result"
    assert json.loads(json.dumps(verdict))["judge_meta"]["model"] == "scripted"


def test_bad_arguments():
    with pytest.raises(ValueError, match="payload_chars"):
        Judge(base_url="http://127.0.0.1:9/v1", payload_chars=10)
    with pytest.raises(TypeError, match="rubric"):
        Judge(rubric=5, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(TypeError, match="source"):
        grade_llm(42, base_url="http://127.0.0.1:9/v1")
