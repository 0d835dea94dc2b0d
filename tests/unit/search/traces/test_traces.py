"""traces=: reading production traces (rows and OpenAI chat format), the regions they show, the
near-copy measure, and how the plan aims at them (pure logic, no Ray)."""
from __future__ import annotations

import json

import pytest

from whileai_ray.config.arguments import SIMULATE_PARAMS, resolve_config
from whileai_ray.search.planner.outcome import Outcome
from whileai_ray.search.planner.settings import PlanSettings
from whileai_ray.search.planner.planner import Planner
from whileai_ray.search.traces.steering import SteeredPicker, plan_traces
from whileai_ray.situations.covering import pairwise_cells
from whileai_ray.situations.grid import build_axes
from whileai_ray.situations.near_copy import NEAR_COPY_JACCARD, NearCopyGuard, jaccard, shingles
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.situations.traces import read_traces

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}
    for n in ("lookup_order", "cancel_order")]


def chat(i, status, tool="lookup_order"):
    return {"messages": [
        {"role": "system", "content": "You help customers."},
        {"role": "user", "content": f"Where is my order ORD-{4000 + i}? It is late."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": tool, "arguments": json.dumps({"order_id": f"ORD-{4000 + i}"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": json.dumps({"status": status})},
        {"role": "assistant", "content": "Here is what I found."}], "tools": TOOLS}


def cfg_of(**kw):
    explicit = {k: v for k, v in kw.items() if k in SIMULATE_PARAMS}
    explicit.setdefault("tools", TOOLS)
    return resolve_config(lambda m: {"steps": [], "final_text": "ok"}, explicit,
                          {k: v for k, v in kw.items() if k not in SIMULATE_PARAMS})


def test_openai_chat_traces_from_a_jsonl_file_map_onto_the_grid(tmp_path):
    path = tmp_path / "prod.jsonl"
    lines = [json.dumps(chat(i, s)) for i, s in enumerate(["timeout", "not_found", "ok", "permission_denied"])]
    path.write_text("\n".join(lines[:2] + ["{not json", ""] + lines[2:]) + "\n")
    ts = read_traces(str(path))
    assert [t.form for t in ts.traces] == ["chat"] * 4 and ts.bad == 1
    assert ts.traces[0].ask == "Where is my order ORD-4000? It is late." and ts.traces[0].tools == ["lookup_order"]
    axes = build_axes(TOOLS, "")
    regions = ts.regions(axes)
    assert regions == {"tool": ["lookup_order"], "tool_condition": ["success", "timeout", "permission_denied"],
                       "world_state": ["entity exists", "entity missing"]}
    summary = ts.summary(axes)
    assert summary["traces"] == 4 and summary["tool_conditions"]["timeout"] == 1 and summary["forms"] == {"chat": 4}


def test_rows_are_traces_too_and_their_own_dimensions_win():
    row = {"prompt": "cancel ORD-9", "steps": [{"tool": "cancel_order", "arguments": {"order_id": "ORD-9"},
                                                "result": {"status": "already_done"}}],
           "final_text": "done", "scenario_dimensions": {"tool": "cancel_order", "tool_condition": "stale_result",
                                                         "world_state": "duplicate entity"}, "reward": 0}
    t = read_traces([row, {"no": "ask"}]).traces[0]
    assert t.tools == ["cancel_order"] and t.reward == 0.0
    assert t.conditions == {"success", "stale_result"}
    assert t.world_states == {"entity already acted on", "duplicate entity"}


def test_a_trace_file_is_data_and_an_empty_one_is_refused(tmp_path):
    sneaky = tmp_path / "t.jsonl"
    sneaky.write_text(json.dumps({"prompt": "__import__('os').system('touch pwned')", "steps": []}) + "\n")
    ts = read_traces(str(sneaky))
    assert ts.traces[0].ask.startswith("__import__") and not (tmp_path / "pwned").exists()
    empty = tmp_path / "e.jsonl"
    empty.write_text('{"messages": [{"role": "system", "content": "x"}]}\n')
    with pytest.raises(ValueError, match="traces= holds no trace with a user ask"):
        read_traces(str(empty))
    with pytest.raises(ValueError, match="names no file"):
        read_traces(str(tmp_path / "missing.jsonl"))


def test_the_near_copy_measure_is_word_3_shingle_jaccard_at_one_half():
    trace = "Where is my order ORD-1234?"
    assert NEAR_COPY_JACCARD == 0.5
    assert jaccard(shingles(trace), shingles("where is my order ord 1234")) == 1.0
    guard = NearCopyGuard([trace, "Please cancel the subscription on account 77 today"])
    hit, score, at = guard.near("Hi, where is my order ORD-1234? Thanks!")
    assert hit and score == pytest.approx(4 / 6) and at == 0
    miss, score, _ = guard.near("Can someone check an order for me? It is ORD-1234 and it never arrived")
    assert not miss and score < 0.3
    assert guard.checked == 2 and guard.hits == 1


def test_the_steered_picker_delivers_its_share_exactly():
    axes = build_axes(TOOLS, "")
    aimed = pairwise_cells({**axes, "tool": ["lookup_order"], "tool_condition": ["timeout"]})
    rest = pairwise_cells(axes)
    picker = SteeredPicker(aimed, rest, seed=0, hard_share=0.4, weight=0.7)
    picks = [picker.pick(None) for _ in range(100)]
    assert picker.targeted == 70 and picker.background_picks == 30 and picker.picks == 100
    aimed_picks = [c for c, i in picks if i < 500_000_000]
    assert len(aimed_picks) == 70 and all(c["tool"] == "lookup_order" for c in aimed_picks)


def test_strategies_resolve_and_aim_the_grid():
    axes = build_axes(TOOLS, "")
    cells = pairwise_cells(axes)
    traces = [chat(i, s) for i, s in enumerate(["timeout", "ok", "timeout", "ok"])]
    auto = plan_traces(cfg_of(traces=traces), axes, cells, False)
    assert auto.strategy["resolved"] == "trace" and auto.aimed_cells is None
    assert {c["tool"] for c in auto.cells} == {"lookup_order"}
    assert {c["tool_condition"] for c in auto.cells} == {"success", "timeout"}
    assert auto.fault_rate == 0.5                                       # half the traces met a fault
    assert plan_traces(cfg_of(traces=traces, fault_rate=0.2), axes, cells, False).fault_rate is None
    targeted = plan_traces(cfg_of(traces=traces, strategy="targeted"), axes, cells, False)
    assert targeted.strategy["resolved"] == "targeted" and targeted.steering_weight == 0.7
    assert len(targeted.cells) > len(targeted.aimed_cells)
    weighted = plan_traces(cfg_of(traces=traces, strategy="targeted", advanced={"steering_weight": 0.4}),
                           axes, cells, False)
    assert weighted.steering_weight == 0.4 and weighted.strategy["steering_weight"]["source"] == "advanced"
    broad = plan_traces(cfg_of(traces=traces, strategy="broad"), axes, cells, False)
    assert broad.strategy["resolved"] == "broad" and broad.cells == cells and broad.guard is not None
    cold = plan_traces(cfg_of(), axes, cells, False)
    assert cold.strategy["reason"] == "no traces -> broad exploration" and cold.guard is None


def test_the_planner_never_draws_a_near_copy_of_a_trace():
    axes = build_axes(TOOLS, "")
    cells = pairwise_cells(axes)
    writer = TemplateWriter(TOOLS, "", 0)
    plain = Planner(PlanSettings(run_id="r", seed=0, budget=40, tools=TOOLS, axes=axes), TemplateWriter(TOOLS, "", 0),
                    cells)
    held_out = [u.prompt for r in range(8) for u in plain.decide(r)]     # what an unguarded run would ask
    guard = NearCopyGuard(held_out)
    planner = Planner(PlanSettings(run_id="r", seed=0, budget=40, tools=TOOLS, axes=axes, trace_guard=guard),
                      writer, cells)
    units = [u for r in range(8) for u in planner.decide(r)]       # rounds of 4, 4, 8, 8, 16
    assert len(units) == 40 and planner.trace_near_copies > 0
    for u in units:
        assert guard.best(u.prompt)[0] < NEAR_COPY_JACCARD
    planner.observe([Outcome(unit=u, row={"prompt": u.prompt, "tools_used": [], "scenario_dimensions": {}},
                             label="x") for u in units])


def test_run_judges_scored_data_feeds_traces_directly():
    """simulation_data.md: run_judge's output "feeds export_dataset and simulate(traces=...) directly"."""
    import whileai_ray as wai
    rows = [{"prompt": f"Where is my order ORD-{500 + i}? It never came.", "final_text": "Found it.",
             "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{500 + i}"},
                        "result": {"status": "timeout" if i % 2 else "ok"}}], "schema_version": "1"}
            for i in range(4)]
    scored = wai.run_judge(rows, lambda row: {"reward": 1, "reason": "ok"}, run_id="score_traces")
    axes = build_axes(TOOLS, "")
    cells = pairwise_cells(axes)
    by_scored = plan_traces(cfg_of(traces=scored), axes, cells, False)
    by_rows = plan_traces(cfg_of(traces=rows), axes, cells, False)
    assert by_scored.count == 4 and by_scored.strategy == by_rows.strategy
    assert by_scored.regions == by_rows.regions == {"tool": ["lookup_order"], "tool_condition": ["success", "timeout"],
                                                    "world_state": by_rows.regions["world_state"]}
    assert [t.reward for t in read_traces(scored).traces] == [1.0] * 4
