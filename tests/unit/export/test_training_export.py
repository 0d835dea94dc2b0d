"""Training export: OpenAI chat records with tools, the round-trip gate, JSONL/Parquet, sft_rows."""
import json

import pytest

from whileai_ray.core.rows import conversation
from whileai_ray.export import (read_training_file, record_to_conversation, roundtrip_check, select, sft_rows,
                                training_records, training_set, validate_record)
from whileai_ray.testing.seeded_rows import META, SYSTEM, TOOLS, played


ROWS = played()


def test_an_rl_selection_exports_valid_openai_records_that_reload_to_the_same_conversations(tmp_path):
    sel = select(ROWS, mode="rl", run_meta=META)
    report = sel.export(tmp_path / "train.jsonl")
    records = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    assert report["n"] == len(records) == len(sel) and report["format"] == "openai"
    assert report["tool_call_roundtrip"]["passed"] and report["tool_call_roundtrip"]["tool_calls"] > 0
    assert report["groups"] == sel.report["groups"] and report["selection"] is sel.report
    assert report["privileged_leaks"] == 0 and report["privileged_checked"] == len(sel)
    assert report["rewards"]["pass"] + report["rewards"]["fail"] == len(sel)
    for record, row in zip(records, sel):
        assert validate_record(record) == []
        msgs = record["messages"]
        assert msgs[0] == {"role": "system", "content": SYSTEM} and msgs[1]["role"] == "user"
        assert record["loss_mask"] == [int(m["role"] == "assistant") for m in msgs]
        assert record["tools"] == TOOLS and record["group_id"] == row["group_id"]
        assert record["reward"] == row["reward"]
        call = msgs[2]["tool_calls"][0]
        assert call["id"] == "call_0000" and call["type"] == "function"
        assert isinstance(call["function"]["arguments"], str)
        assert json.loads(call["function"]["arguments"]) == row["steps"][0]["arguments"]
        assert msgs[3] == {"role": "tool", "tool_call_id": "call_0000", "content": msgs[3]["content"]}
        assert record_to_conversation(record) == conversation(row)


def test_parquet_export_holds_the_same_records_as_jsonl(tmp_path):
    a = training_set(ROWS, SYSTEM, TOOLS, output=str(tmp_path / "t.jsonl"))
    b = training_set(ROWS, SYSTEM, TOOLS, output=str(tmp_path / "t.parquet"))
    assert a["n"] == b["n"] > 0 and b["path"].endswith("t.parquet")
    assert read_training_file(tmp_path / "t.parquet") == read_training_file(tmp_path / "t.jsonl")
    assert a["selection"]["mode"] is None and a["selection"]["kept"] == a["n"]
    assert a["mask_mode"] == "assistant" and a["with_tools"] is True


def test_training_set_without_output_writes_nothing_and_reports(tmp_path):
    report = training_set(ROWS, SYSTEM, TOOLS, target=3)
    assert report["n"] == 3 and report["path"] is None and report["selection"]["dropped"]["target"] > 0
    assert not list(tmp_path.iterdir())


def _row(steps, final="done"):
    return {"prompt": "Check ORD-1 for me", "steps": steps, "final_text": final, "reward": 1, "judge_status": "ok"}


def test_the_roundtrip_gate_drops_undeclared_tools_and_bad_arguments():
    good = _row([{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"}, "result": {"status": "ok"}}])
    rows = [good,
            _row([{"tool": "delete_everything", "arguments": {}, "result": {}}]),
            _row([{"tool": "lookup_order", "arguments": {}, "result": {"status": "rejected"}}]),
            _row([{"tool": "lookup_order", "arguments": {"order_id": 7}, "result": {}}]),
            _row([{"tool": "lookup_order", "arguments": "{not json", "result": {}}])]
    check = roundtrip_check(training_records(rows, "", TOOLS), TOOLS, rows)
    assert check["bad"] == [1, 2, 3, 4] and check["failed"] == 4 and not check["passed"]
    text = " ".join(check["errors"])
    assert "not a declared tool" in text and "missing required argument 'order_id'" in text
    assert "declared string" in text and "not valid JSON" in text
    from whileai_ray.export import export_training
    report = export_training(rows, None, "", TOOLS)
    assert report["n"] == 1 and report["tool_call_roundtrip"]["failed"] == 4
    assert export_training(rows, None, "", TOOLS, validate=False)["n"] == 5


def test_bare_tool_schemas_are_exported_in_wire_form_and_multi_step_ids_count_up():
    bare = [{"name": "lookup_order", "parameters": TOOLS[0]["function"]["parameters"]}]
    steps = [{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"}, "result": {"status": "timeout"}},
             {"user": "try again"},
             {"tool": "lookup_order", "arguments": {"order_id": "ORD-1"}, "result": {"status": "ok"}}]
    rec = training_records([_row(steps)], "", bare)[0]
    assert rec["tools"] == TOOLS and "system" not in [m["role"] for m in rec["messages"]]
    ids = [c["id"] for m in rec["messages"] for c in m.get("tool_calls", ())]
    assert ids == ["call_0000", "call_0001"]
    assert [m.get("tool_call_id") for m in rec["messages"] if m["role"] == "tool"] == ids
    assert record_to_conversation(rec) == conversation(_row(steps))
    assert validate_record({"messages": [{"role": "tool", "tool_call_id": "x", "content": "1"}]})


def test_sft_rows_lists_graded_failures_with_their_tool_trace():
    out = sft_rows(ROWS)
    fails = [r for r in ROWS if r["reward"] < 1]
    assert len(out) == len(fails) > 0
    first = out[0]
    assert set(first) == {"prompt", "rejected_response", "chosen_response", "tool_trace", "reward", "reason", "arm"}
    assert first["chosen_response"] is None and first["rejected_response"] == fails[0]["final_text"]
    assert first["tool_trace"][0]["tool"] == "lookup_order"
    everything = sft_rows(ROWS, failures_only=False)
    assert len(everything) == len(ROWS)
    assert all(r["chosen_response"] for r in everything if r["reward"] == 1)
    with pytest.raises(TypeError, match="failures_only"):
        sft_rows(ROWS, failures_only="yes")
