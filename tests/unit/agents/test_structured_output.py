"""Schema-constrained verdicts and asks: each endpoint's dialect is learned once and recorded
(scripted server in each dialect, real openai client, no Ray)."""
from __future__ import annotations

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import OpenAI
from whileai_ray.agents.structured import DIALECTS
from whileai_ray.score.judges.llm_judge import Judge, judge_rows
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.llm_writer import LLMWriter

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
CELLS = pairwise_cells(build_axes(TOOLS, ""))


def rows(n=6):
    return [{"prompt": f"Where is ORD-{i}?", "steps": [], "schema_version": "1",
             "final_text": "Sorry, I cannot." if i % 2 else f"ORD-{i} shipped."} for i in range(n)]


def formats(handler):
    out = []
    for req in handler.recent:
        fmt = req.get("response_format")
        out.append(None if fmt is None else (fmt["type"], "schema" in fmt or "json_schema" in fmt))
    return out


@pytest.mark.parametrize("dialect, learned, first_tries", [
    ("json_schema", "json_schema", [("json_schema", True)]),
    ("llama_cpp", "json_object_schema", [("json_schema", True), ("json_schema", True), ("json_object", True)]),
    ("none", "none", [("json_schema", True), ("json_object", True), None]),
])
def test_the_judge_learns_the_dialect_once_and_records_it(server, dialect, learned, first_tries):
    DIALECTS.clear()
    url, handler = server(model="judge-m", dialect=dialect)
    judge = Judge("The reply states the order status.", base_url=url)
    verdicts = judge_rows(judge, rows(6), concurrency=3)
    assert [v["reward"] for v in verdicts] == [1, 0, 1, 0, 1, 0]          # every verdict parsed
    assert {v["judge_meta"]["structured_output"] for v in verdicts} == {learned}
    sent = formats(handler)
    assert sent[:len(first_tries)] == first_tries                        # the negotiation, once
    rest = sent[len(first_tries):]
    assert len(rest) == 5 and len(set(rest)) == 1 and rest[0] == first_tries[-1]
    assert judge.dialect == learned
    again = judge(rows(1)[0])                                            # the sync path reuses it
    assert again["judge_meta"]["structured_output"] == learned and formats(handler)[-1] == first_tries[-1]


def test_grade_llm_reports_the_dialect_and_says_when_there_is_none(server):
    DIALECTS.clear()
    url, _ = server(model="plain", dialect="none")
    report = wai.grade_llm(rows(4), base_url=url, rubric="States the status.")
    assert report["structured_output"] == "none" and report["graded"] == 4
    assert any("accepts no schema-constrained output" in w for w in report["warnings"])
    url2, _ = server(model="strict", dialect="json_schema")
    report2 = wai.grade_llm(rows(4), base_url=url2, rubric="States the status.")
    assert report2["structured_output"] == "json_schema"
    assert not any("schema-constrained" in w for w in report2["warnings"])


@pytest.mark.parametrize("dialect, learned", [("llama_cpp", "json_object_schema"), ("json_schema", "json_schema"),
                                              ("none", "none")])
def test_the_writer_asks_for_schema_constrained_asks(server, dialect, learned):
    DIALECTS.clear()
    url, handler = server(model="writer-m", dialect=dialect)
    with LLMWriter(OpenAI("writer-m", url), TOOLS, "", seed=1) as writer:
        sits = writer.write_batch([(CELLS[i], i, 0) for i in range(8)])
        stats = writer.stats()
    assert writer.writer_errors == 0 and all(s.arm == "llm_guided" for s in sits)
    assert stats["structured_output"] == learned == writer.dialect
    asks = [r for r in handler.recent if r.get("response_format")]
    if learned != "none":
        schema = (asks[-1]["response_format"].get("json_schema") or {}).get("schema") or \
            asks[-1]["response_format"].get("schema")
        assert schema["required"] == ["message"] and "goal" in schema["properties"]
        assert all(s.extra.get("writer_goal") for s in sits)                # the hidden field came back
