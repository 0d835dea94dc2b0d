"""Playing a unit against a callable agent, row building, export, conversation and signatures."""
import json

from whileai_ray.agents.callable import agent_error, normalize_trajectory, unusable_reason
from whileai_ray.agents.play_callable import play_callable_unit
from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.agents.signature import behavior_signature
from whileai_ray.situations.situation import Situation
from whileai_ray.agents.row_builder import build_row
from whileai_ray.core.rows import conversation, export_row
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.world.current import current_rollout
from whileai_ray.testing.seeded_rows import TOOLS

CELL = {"tool": "lookup_order", "rule": "unspecified", "stance": "conflicting", "world_state": "entity missing",
        "tool_condition": "timeout", "history": "contradicts_earlier"}
KEYS_1_1 = ["prompt", "messages", "steps", "final_text", "scenario_id", "tier", "ask_family", "intent_known",
            "tool_known", "rollout_index", "model_version", "policy_version", "writer_model", "schema_version",
            "scenario_dimensions", "arm", "behavior_signature", "lineage", "seed", "selection_reason",
            "finish_reason", "tools_used"]


def unit(prompt="Check ORD-6206 please.", dims=None, faults=None, world_state=None, index=0, **sit):
    s = Situation(scenario_id="sc-75101365dd", prompt=prompt, dims=dict(CELL) if dims is None else dims,
                  world_state=world_state, **sit)
    return Unit(run_id="run1", situation=s, rollout_index=index, faults=faults, seed=0)


META = RunMeta(run_id="run1", seed=7, tools=TOOLS, model_version="seeded_agent")


def test_seeded_row_has_the_reference_keys_in_order():
    u = unit(faults={"*": {"mode": "timeout", "rate": 1.0}}, world_state="entity missing", tier="boundary",
             reference="ORD-6206 does not exist.", tags={"texture": "clipped", "length": "short prompt"})
    row = play_callable_unit(seeded_agent(TOOLS, rate=0.0), u, META)
    assert list(row)[:len(KEYS_1_1)] == KEYS_1_1
    assert row["steps"][0]["result"] == {"status": "timeout", "error": "request timed out"}
    assert row["policy_version"] == "seeded_agent@e3b0c44298fc1c14" and row["schema_version"] == "1"
    assert row["lineage"] == {"system_prompt_sha": "e3b0c44298fc1c14", "system_prompt_head": "",
                              "system_prompt_chars": 0}
    assert row["seed"] == 7 and row["tools_used"] == ["lookup_order"] and row["seeded"] == []
    assert row["finish_reason"] == "stop" and row["scenario_dimensions"] == CELL and row["tier"] == "boundary"
    assert row["world_state"] == "entity missing" and row["faults"] == {"*": {"mode": "timeout", "rate": 1.0}}
    assert row["texture"] == "clipped" and row["length"] == "short prompt" and row["stance"] == "conflicting"
    assert row["privileged"] == {"hidden_state": {"world_state": "entity missing", "tool_condition": "timeout",
                                                  "faults": {"*": {"mode": "timeout", "rate": 1.0}},
                                                  "history": "contradicts_earlier"},
                                 "reference": "ORD-6206 does not exist."}
    assert row["_key"] == ["run1", "sc-75101365dd", 0, 0, 0] and row["_fault_fired"] is True
    assert row["_unusable"] is None and row["_error"] is None
    assert len(row["behavior_signature"]) == 12 and int(row["behavior_signature"], 16) >= 0


def test_optional_keys_are_absent_when_they_do_not_apply():
    row = play_callable_unit(seeded_agent(TOOLS, rate=0.0), unit(dims={**CELL, "stance": "ordinary"}), META)
    for key in ("world_state", "faults", "stance", "parent_failure_id", "sampling", "texture"):
        assert key not in row, key
    assert row["_fault_fired"] is False
    meta = RunMeta(run_id="r", seed=0, tools=TOOLS, system_prompt="Be brief. " * 30, model_version="m",
                   sampling={"temperature": 0.2})
    row = play_callable_unit(lambda m: "hi", unit(parent_failure_id="parent ask"), meta)
    assert row["sampling"] == {"temperature": 0.2} and row["parent_failure_id"] == "parent ask"
    assert row["lineage"]["system_prompt_chars"] == 300 and len(row["lineage"]["system_prompt_head"]) == 120
    assert row["policy_version"].startswith("m@") and "seeded" not in row


def test_realized_dimensions_for_situations_without_a_cell():
    agent = seeded_agent(TOOLS, rate=0.0)
    faulted = play_callable_unit(agent, unit(dims={}, faults={"*": "stale"}), META)
    assert faulted["scenario_dimensions"] == {"tool": "lookup_order", "tool_condition": "stale", "origin": "realized"}
    missing = play_callable_unit(agent, unit(dims={}, world_state="entity missing"), META)
    assert missing["scenario_dimensions"]["tool_condition"] == "not_found"
    fine = play_callable_unit(agent, unit(dims={}, world_state="entity exists"), META)
    assert fine["scenario_dimensions"]["tool_condition"] == "success"
    chat = play_callable_unit(lambda m: "Hello!", unit(dims={}), META)
    assert chat["scenario_dimensions"] == {"tool": "unrelated", "tool_condition": "success", "origin": "realized"}


def test_the_agent_sees_its_rollout_and_the_world_applies_execute():
    seen = {}

    def agent(message):
        seen.update(prompt=current_rollout.prompt, index=current_rollout.rollout_index, seed=current_rollout.seed,
                    sid=current_rollout.scenario_id, faults=current_rollout.faults,
                    state=current_rollout.world_state, privileged=current_rollout.privileged)
        result = current_rollout.call("lookup_order", {"order_id": "ORD-6206"})
        return {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "ORD-6206"}, "result": result}],
                "final_text": f"status {result['status']}"}

    def execute(tool, arguments):
        return {"status": "ok", "data": {"from": "execute", "index": current_rollout.rollout_index}}

    row = play_callable_unit(agent, unit(index=3, world_state="entity missing", reference="gone"), META, execute)
    assert seen["prompt"] == "Check ORD-6206 please." and seen["index"] == 3 and seen["seed"] == 7
    assert seen["sid"] == "sc-75101365dd" and seen["faults"] is None and seen["state"] == "entity missing"
    assert seen["privileged"]["reference"] == "gone"
    assert row["steps"][0]["result"]["data"] == {"from": "execute", "index": 3}
    faulted = play_callable_unit(agent, unit(faults={"*": "permission_denied"}), META, execute)
    assert faulted["final_text"] == "status permission_denied" and faulted["_fault_fired"] is True
    assert current_rollout.prompt is None


def test_agent_failures_become_unusable_rows():
    def boom(message):
        raise ValueError("boom")
    row = play_callable_unit(boom, unit(), META)
    assert row["final_text"] == "<agent error: ValueError: boom>" and row["finish_reason"] == "error"
    assert row["_unusable"] == "agent_error" and row["_error"] == "ValueError: boom" and row["steps"] == []
    assert play_callable_unit(lambda m: None, unit(), META)["_unusable"] == "empty_reply"
    assert play_callable_unit(lambda m: 42, unit(), META)["final_text"] == "42"
    wrong = play_callable_unit(lambda m: {"answer": 1, "text": "x"}, unit(), META)
    assert wrong["_unusable"] == "agent_error"
    assert "agent returned keys ['answer', 'text'] instead of steps and final_text" in wrong["final_text"]
    markup = play_callable_unit(lambda m: '<tool_call>{"name": "lookup_order", "arguments": {}}</tool_call>',
                                unit(), META)
    assert markup["_unusable"] == "tool_markup"

    async def async_agent(message):
        return {"steps": [], "final_text": f"async {current_rollout.rollout_index}"}
    assert play_callable_unit(async_agent, unit(index=2), META)["final_text"] == "async 2"
    timed = build_row(unit(), agent_error(TimeoutError("agent took longer than 5s"), timed_out=True), META)
    assert timed["_unusable"] == "agent_error" and timed["_timed_out"] is True


def test_normalize_and_unusable_reason_directly():
    assert normalize_trajectory("hi") == {"steps": [], "final_text": "hi"}
    kept = normalize_trajectory({"final_text": "ok", "seeded": ["apology"], "finish_reason": "length"})
    assert kept == {"final_text": "ok", "seeded": ["apology"], "finish_reason": "length", "steps": []}
    assert normalize_trajectory({"steps": "nope", "final_text": "x"})["finish_reason"] == "error"
    dumped = {"final_text": '{"type": "function", "function": {"name": "lookup_order"}}', "steps": []}
    assert unusable_reason(dumped) == "tool_markup"
    assert unusable_reason({"final_text": '{"name": "lookup_order", "arguments": {"order_id": 1}}'}) == "tool_markup"
    assert unusable_reason({"final_text": "Your order ORD-1 shipped.", "steps": []}) is None
    assert unusable_reason({"final_text": "   ", "steps": [{"tool": "t"}]}) == "empty_reply"


def test_finish_reasons():
    tool_step = {"tool": "lookup_order", "arguments": {"order_id": "A1"}, "result": {"status": "ok"}}
    assert build_row(unit(), {"steps": [tool_step], "final_text": ""}, META)["finish_reason"] == "tool"
    truncated = {"steps": [{"text": "and then", "truncated": True}], "final_text": "and then"}
    assert build_row(unit(), truncated, META)["finish_reason"] == "length"
    assert build_row(unit(), {"steps": [], "final_text": "x", "finish_reason": "length"}, META)["finish_reason"] == "length"


def test_conversation_rebuilds_the_chat():
    steps = [{"tool": "lookup_order", "arguments": {"order_id": "A1"}, "result": {"status": "ok", "data": {"id": 1}}},
             {"user": "and the other one?"}, {"text": "Let me check."}]
    msgs = conversation({"prompt": "check A1", "steps": steps, "final_text": "All good."})
    assert msgs == [
        {"role": "user", "content": "check A1"},
        {"role": "assistant", "content": "", "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]},
        {"role": "tool", "name": "lookup_order", "content": json.dumps({"status": "ok", "data": {"id": 1}})},
        {"role": "user", "content": "and the other one?"},
        {"role": "assistant", "content": "Let me check."},
        {"role": "assistant", "content": "All good."}]
    same = conversation({"prompt": "p", "steps": [{"text": "Done."}], "final_text": "Done."})
    assert same == [{"role": "user", "content": "p"}, {"role": "assistant", "content": "Done."}]


def test_export_row_strips_hidden_and_internal_keys():
    u = unit(reference="secret outcome", faults={"*": "timeout"})
    traj = {"steps": [{"tool": "lookup_order", "arguments": {"order_id": "A1"},
                       "result": {"status": "ok", "reference": "leaky", "data": {"rubric": 1, "id": 2}}}],
            "final_text": "done", "seeded": []}
    row = build_row(u, traj, META)
    row["reward"] = None
    out = export_row(row)
    assert "privileged" not in out and not [k for k in out if k.startswith("_")] and "reward" not in out
    assert out["steps"][0]["result"] == {"status": "ok", "data": {"id": 2}}
    assert "secret outcome" not in json.dumps(out)
    assert row["steps"][0]["result"]["reference"] == "leaky" and "privileged" in row   # input untouched
    assert out["faults"] == {"*": "timeout"} and out["seeded"] == []


def test_export_of_many_rows_drops_every_hidden_key():   # how fast: the bench's micro lines
    agent = seeded_agent(TOOLS)
    rows = [play_callable_unit(agent, unit(prompt=f"Check ORD-{i} please.", index=i % 4,
                                           tags={"texture": "typo"}, reference="r"), META) for i in range(2000)]
    exported = [export_row(r) for r in rows]
    assert len(exported) == 2000
    assert not any("privileged" in e or any(k.startswith("_") for k in e) for e in exported)


def test_behavior_signature_tracks_behaviour_not_wording():
    def step(ref, status):
        return [{"tool": "lookup_order", "arguments": {"order_id": ref}, "result": {"status": status}}]
    a = behavior_signature(step("ORD-1", "ok"), "lookup_order for ORD-1: ok.", "check ORD-1")
    b = behavior_signature(step("ORD-2", "ok"), "lookup_order for ORD-2: ok.", "check ORD-2")
    assert a == b and len(a) == 12
    assert a != behavior_signature(step("ORD-1", "not_found"), "lookup_order for ORD-1: ok.", "check ORD-1")
    assert a != behavior_signature(step("the record", "ok"), "lookup_order for ORD-1: ok.", "check ORD-1")
    assert a != behavior_signature(step("ORD-1", "ok"), "I cannot do that.", "check ORD-1")
    assert a != behavior_signature(step("ORD-1", "ok"), "word " * 40, "check ORD-1")
    assert behavior_signature([], "x " * 500) == behavior_signature([], "x " * 900)   # bucket caps at 12
