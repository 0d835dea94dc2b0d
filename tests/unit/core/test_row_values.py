"""Issue 28 items 3 and 9 (pure parts): a row's values take one normal form where the row is
built, the one its checkpoint line reads back as; ``usage`` lands in the documented names; the
metrics and the fact columns never raise on what an agent returned."""
import dataclasses
import datetime
import decimal
import enum
import json
import sys

import numpy as np
import pytest
from openai.types import CompletionUsage
from openai.types.responses import ResponseUsage

from whileai_ray.agents.row_builder import build_row
from whileai_ray.core.rows import export_row, stored_row
from whileai_ray.core.strict_json import dumps
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.score.row_facts import facts_table, row_facts
from whileai_ray.runtime.metrics.recorder import batch_counts
from whileai_ray.situations.situation import Situation
from whileai_ray.testing.seeded_rows import TOOLS

META = RunMeta(run_id="run1", seed=7, tools=TOOLS, model_version="agent")


def unit(prompt="Check ORD-6206 please."):
    s = Situation(scenario_id="sc-75101365dd", prompt=prompt, dims={"tool": "lookup_order", "stance": "ordinary"})
    return Unit(run_id="run1", situation=s, rollout_index=0, faults=None, seed=0)


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    when: datetime.date


ODD = {"when": datetime.datetime(2026, 1, 2, 3, 4, 5), "day": datetime.date(2026, 1, 2),
       "count": np.int64(7), "score": np.float32(0.5), "flag": np.bool_(False), "vec": np.arange(3),
       "raw": b"bytes", "bad": b"\xff", "tags": {"b", "a"}, "pair": (1, (2, 3)), "nan": float("nan"),
       "inf": float("inf"), "dec": decimal.Decimal("0.25"), "color": Color.RED, "point": Point(1, datetime.date(2026, 1, 2)),
       1: "int key", 2.5: "float key", None: "none key", (1, 2): "tuple key", "cut": "a\ud800b"}


def read_back(row):
    """The row as its checkpoint line reads back (the stored form, through the one encoder)."""
    return json.loads(dumps(stored_row(row)))


def test_a_built_row_equals_the_row_its_checkpoint_line_reads_back():
    traj = {"steps": [{"tool": "lookup_order", "arguments": {"order_id": np.str_("A-1")}, "result": dict(ODD)}],
            "final_text": "reply cut \ud83d", "seeded": ("x",)}
    row = build_row(unit(), traj, META)
    assert stored_row(row) == read_back(row)
    result = row["steps"][0]["result"]
    assert result["when"] == "2026-01-02T03:04:05" and result["day"] == "2026-01-02"
    assert result["count"] == 7 and type(result["count"]) is int and result["score"] == 0.5
    assert result["flag"] is False and result["vec"] == [0, 1, 2] and result["raw"] == "bytes"
    assert result["tags"] == ["a", "b"] and result["pair"] == [1, [2, 3]] and result["dec"] == 0.25
    assert result["nan"] is None and result["inf"] is None and result["color"] == "red"
    assert result["point"] == {"x": 1, "when": "2026-01-02"} and result["cut"] == "a\ufffdb"
    assert result["1"] == "int key" and result["2.5"] == "float key" and result["null"] == "none key"
    assert result["[1,2]"] == "tuple key" and row["seeded"] == ["x"]
    assert row["final_text"] == "reply cut \ufffd"
    assert row["json_repairs"] == {"steps.0.result.bad": "bytes not UTF-8", "steps.0.result.nan": "NaN",
                                   "steps.0.result.inf": "Infinity", "steps.0.result.cut": "lone surrogate",
                                   "final_text": "lone surrogate"}
    # the rebuilt conversation reads the normal values too, and the exported row is plain JSON
    assert '"when": "2026-01-02T03:04:05"' in row["messages"][2]["content"]
    assert json.loads(json.dumps(export_row(row))) == export_row(row)
    "".join(json.dumps(export_row(row), ensure_ascii=False)).encode("utf-8")     # no lone surrogate left


def test_plain_values_are_kept_as_the_same_objects():
    from whileai_ray.core.row_values import json_value
    steps = [{"tool": "lookup_order", "arguments": {"order_id": "A-1"}, "result": {"status": "ok", "n": 1.5}}]
    value, repairs = json_value({"steps": steps, "final_text": "ok"})
    assert value["steps"] is steps and repairs == {}


def test_every_odd_value_encodes_as_its_normal_form_and_a_circular_one_raises():
    from whileai_ray.core.row_values import json_value
    for v in list(ODD.values()) + [ODD, {(1, 2): {frozenset((2, 1)): 3}}, [1, "x", None], {3, "a"}]:
        normal, _ = json_value(v)
        assert json.loads(dumps(normal)) == normal
        back = json.loads(dumps(v))
        if isinstance(back, dict):
            back.pop("json_repairs", None)     # the encoder notes its repairs beside a dict's values
        assert back == normal, v
    # circular and too-deep values still raise as the encoder does (the rollout is lost as unserializable)
    loop = {"status": "ok"}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular reference"):
        build_row(unit(), {"steps": [{"tool": "t", "result": loop}], "final_text": "x"}, META)
    deep = cur = {}
    for _ in range(sys.getrecursionlimit() + 100):
        cur["x"] = {}
        cur = cur["x"]
    with pytest.raises(RecursionError):
        build_row(unit(), {"steps": [{"tool": "t", "result": deep}], "final_text": "x"}, META)


def test_a_dict_keyed_by_tuples_is_written_not_refused():
    assert json.loads(dumps({(1, 2): "x", "ok": datetime.date(2026, 1, 2)})) == {"[1,2]": "x", "ok": "2026-01-02"}


def test_a_tool_named_by_a_number_keeps_its_facts_and_its_row():
    row = build_row(unit(), {"steps": [{"tool": 123, "arguments": {}, "result": {"status": "ok"}},
                                       {"tool": "lookup_order", "result": {"status": "ok"}}],
                             "final_text": "done"}, META)
    assert row["tools_used"] == [123, "lookup_order"] and read_back(row)["tools_used"] == [123, "lookup_order"]
    facts = row_facts([read_back(row), row])
    assert facts["shape"] == ["123|lookup_order"] * 2 and facts["step_tools"] == [["123", "lookup_order"]] * 2
    assert facts_table([read_back(row)]).num_rows == 1


# -- usage ------------------------------------------------------------------------------------------
def usage_of(usage):
    return build_row(unit(), {"steps": [], "final_text": "ok", "usage": usage}, META)["usage"]


def test_sdk_usage_objects_land_in_the_documented_names():
    assert usage_of(CompletionUsage(prompt_tokens=11, completion_tokens=5, total_tokens=16)) == \
        {"input_tokens": 11, "output_tokens": 5, "total_tokens": 16}
    responses = usage_of(ResponseUsage(input_tokens=7, output_tokens=3, total_tokens=10,
                                       input_tokens_details={"cached_tokens": 2, "cache_write_tokens": 0},
                                       output_tokens_details={"reasoning_tokens": 1}))
    assert responses == {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
                         "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 1}}
    assert usage_of({"prompt_tokens": np.int64(4), "completion_tokens": "2", "cost": "0.002"}) == \
        {"input_tokens": 4, "output_tokens": 2, "cost": 0.002}
    assert usage_of({"input_tokens": 3, "prompt_tokens": 9}) == {"input_tokens": 3, "prompt_tokens": 9}


def test_usage_no_metric_can_read_is_kept_as_data_with_a_reason():
    from whileai_ray.core.usage import usage_problem
    assert usage_of("lots") == "lots" and "not a dict" in usage_problem("lots")
    assert usage_of({"cost": "cheap", "input_tokens": 1}) == {"input_tokens": 1, "cost": "cheap"}
    assert "cost" in usage_problem(usage_of({"cost": "cheap"}))
    assert usage_of([1, 2]) == [1, 2] and usage_problem([1, 2])
    assert usage_problem(usage_of(CompletionUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2))) is None
    assert usage_problem(None) is None


def test_metrics_count_what_they_can_read_and_never_raise():
    rows = [{"usage": {"input_tokens": 10, "output_tokens": 3, "cost": 0.5}},
            {"usage": CompletionUsage(prompt_tokens=1, completion_tokens=1, total_tokens=2)},   # not built here
            {"usage": {"cost": "0.002", "input_tokens": "5"}}, {"usage": {"cost": "cheap"}},
            {"usage": {"input_tokens": -4, "output_tokens": float("nan"), "cost": float("inf")}},
            {"usage": "lots"}, {"usage": [1, 2]}, {"usage": {"input_tokens": True}}]
    c = batch_counts(rows)
    assert (c["tokens_in"], c["tokens_out"]) == (15, 3) and c["cost"] == pytest.approx(0.502)


def test_a_typed_reply_reads_as_its_fields_and_bytes_as_text():
    import pydantic
    from whileai_ray.agents.callable import normalize_trajectory

    class Step(pydantic.BaseModel):
        tool: str
        arguments: dict
        result: dict

    class Reply(pydantic.BaseModel):
        final_text: str
        steps: list[Step]
        usage: CompletionUsage

    reply = Reply(final_text="Shipped.", steps=[Step(tool="lookup_order", arguments={"order_id": "A-1"},
                                                      result={"status": "ok"})],
                  usage=CompletionUsage(prompt_tokens=2, completion_tokens=1, total_tokens=3))
    row = build_row(unit(), normalize_trajectory(reply), META)
    assert row["final_text"] == "Shipped." and row["tools_used"] == ["lookup_order"]
    assert row["usage"] == {"input_tokens": 2, "output_tokens": 1, "total_tokens": 3}
    assert normalize_trajectory(b"plain reply")["final_text"] == "plain reply"
    assert normalize_trajectory({"final_text": "caf\xc3\xa9".encode("latin-1")})["final_text"] == "café"


def test_an_async_agent_s_rows_take_the_same_normal_form():
    import asyncio
    from whileai_ray.agents.play_callable import play_async_unit

    async def agent(message):
        return {"steps": [{"tool": "lookup_order", "arguments": {}, "result": dict(ODD)}], "final_text": "ok \ud800",
                "usage": CompletionUsage(prompt_tokens=2, completion_tokens=1, total_tokens=3)}
    row = asyncio.run(play_async_unit(agent, unit(), META, timeout=10))
    assert stored_row(row) == read_back(row) and row["final_text"] == "ok \ufffd"
    assert row["usage"] == {"input_tokens": 2, "output_tokens": 1, "total_tokens": 3}
