"""simulate(traces=...) end to end on a local Ray: the docs' forms (a JSONL path of production
traces in OpenAI chat format, or rows), strategy trace / targeted / broad, and held-out traces
kept out of the run."""
from __future__ import annotations

import json
from collections import Counter

import pytest

import whileai_ray as wai
from whileai_ray.situations.near_copy import NEAR_COPY_JACCARD, jaccard, shingles

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}
    for n in ("lookup_order", "cancel_order")]


def chat_trace(i, status):
    return {"messages": [
        {"role": "user", "content": f"Where is my order ORD-{4000 + i}? It is late."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": "lookup_order", "arguments": json.dumps({"order_id": f"ORD-{4000 + i}"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"status": status})},
        {"role": "assistant", "content": "It timed out." if status == "timeout" else "Found it."}]}


@pytest.fixture
def prod_jsonl(tmp_path):
    path = tmp_path / "production.jsonl"
    path.write_text("".join(json.dumps(chat_trace(i, ["timeout", "not_found", "ok"][i % 3])) + "\n"
                            for i in range(12)))
    return str(path)


def test_a_jsonl_path_of_chat_traces_aims_the_grid_at_what_they_show(ray_local, prod_jsonl):
    agent = wai.seeded_agent(TOOLS)
    data = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, budget=40, traces=prod_jsonl)
    rows = data.rows()
    assert len(rows) == 40
    strategy = data.search["strategy"]
    assert strategy["requested"] == "auto" and strategy["resolved"] == "trace"
    grid_rows = [r for r in rows if r["scenario_dimensions"].get("origin") != "realized"]
    assert {r["scenario_dimensions"]["tool"] for r in grid_rows} == {"lookup_order"}          # not cancel_order
    assert {r["scenario_dimensions"]["tool_condition"] for r in grid_rows} <= {"success", "timeout"}
    faulted = sum(1 for r in rows if r.get("faults"))
    assert abs(faulted - 40 * 4 / 12) <= 2                                   # the traces' fault share, 1 in 3
    mining = data.search["trace_mining"]
    assert mining["traces"] == 12 and mining["forms"] == {"chat": 12} and mining["tool_conditions"]["timeout"] == 4
    assert all(r["steering"] == {"origin": "trace", "weight": 1.0} for r in grid_rows)
    assert data.report()["traces"] == 12
    assert any("traces alone cannot aim at it" in w for w in data.warnings)             # no grader: the caveat


def test_targeted_mixes_trace_regions_with_the_whole_grid_and_a_grader_drops_the_caveat(ray_local, prod_jsonl):
    agent = wai.seeded_agent(TOOLS)
    data = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, budget=60, traces=prod_jsonl,
                        strategy="targeted", steering_weight=0.5, grader=lambda r: 0.0 if r["seeded"] else 1.0)
    assert data.search["strategy"]["resolved"] == "targeted"
    assert data.search["strategy"]["steering_weight"] == {"requested": 0.5, "applied": 0.5, "source": "advanced"}
    tools = Counter(r["scenario_dimensions"].get("tool") for r in data.rows())
    assert tools["lookup_order"] > 0 and (tools["cancel_order"] + tools["multi_tool"] + tools["unrelated"]) > 0
    steered = [r for r in data.rows() if r.get("steering")]
    assert steered and all(r["steering"]["origin"] == "targeted" for r in steered)
    assert not any("traces alone cannot aim at it" in w for w in data.warnings)


def test_held_out_traces_stay_out_of_the_run(ray_local):
    agent = wai.seeded_agent(TOOLS)
    held_out = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, budget=30)
    data = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, budget=30, traces=held_out.rows(),
                        strategy="broad")
    assert len(data.rows()) == 30 and data.search["strategy"]["resolved"] == "broad"
    sources = [shingles(r["prompt"]) for r in held_out.rows()]
    for row in data.rows():
        assert max(jaccard(shingles(row["prompt"]), s) for s in sources) < NEAR_COPY_JACCARD
    leak = data.search["trace_leakage"]
    assert leak["threshold"] == NEAR_COPY_JACCARD and "3-shingles" in leak["measure"]
    assert leak["dropped_at_writing"] >= 30 and leak["dropped_rows"] == 0     # the same seed asked them all again
    assert data.search["avoid"]["trace_near_copies"] == leak["dropped_at_writing"]


def test_bad_traces_stop_the_run_before_any_budget(ray_local, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"messages": []}\n')
    with pytest.raises(ValueError, match="traces="):
        wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, traces=str(empty))
    with pytest.raises(ValueError, match="strategy='trace' needs traces="):
        wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, strategy="trace")


def test_metadata_says_where_the_situations_came_from(ray_local, prod_jsonl):
    data = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, seed=1, budget=20, traces=prod_jsonl,
                        strategy="targeted")
    meta = data.metadata
    assert meta["strategy"] == "targeted" and meta["trace_count"] == 12 and meta["applied_steering_weight"] == 0.7
    assert meta["targeted_rows"] + meta["background_rows"] == 20 and meta["targeted_rows"] > 0
    assert meta["trace_regions"]["tool"] == ["lookup_order"] and meta["writer_model"] == "template"
    cold = wai.simulate(wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, seed=1, budget=5).metadata
    assert cold["strategy"] == "broad" and cold["trace_count"] == 0 and cold["targeted_rows"] == 0
