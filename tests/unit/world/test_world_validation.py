"""The mock world refuses what a real API refuses, and holds the records its situations name
(issue 29, items 2-3): one refusal test per schema keyword, ids that resolve, lists of ids read
element by element, an empty optional string, a tool with no record."""
import json
from pathlib import Path

import pytest

import whileai_ray as wai
from whileai_ray.agents.play_callable import play_callable_unit
from whileai_ray.agents.seeded import seeded_agent
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.score.row_facts import row_facts
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.world.context import RolloutContext, activate

DATA = Path(__file__).resolve().parents[2] / "data"
RETAIL = json.loads((DATA / "tools_retail.json").read_text())
AIRLINE = json.loads((DATA / "tools_airline.json").read_text())
SUPPORT = json.loads((DATA / "tools_support.json").read_text())


def _tool(name, props, required=(), **extra):
    params = {"type": "object", "properties": props, "required": list(required), **extra}
    return {"type": "function", "function": {"name": name, "parameters": params}}


ITEM = {"type": "object", "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["sku", "qty"], "additionalProperties": False}
KEYWORD_TOOLS = [
    _tool("book_trip", {
        "cabin": {"type": "string", "enum": ["economy", "business"]},
        "bags": {"type": "integer", "minimum": 0, "maximum": 3},
        "amount": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1000},
        "code": {"type": "string", "minLength": 3, "maxLength": 5},
        "flight": {"type": "string", "pattern": r"^HAT\d{3}$"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "email": {"type": "string", "format": "email"},
        "upload": {"type": "string", "format": "uuid"},
        "items": {"type": "array", "minItems": 1, "maxItems": 2, "items": ITEM},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    "required": ["city"]},
        "pay": {"oneOf": [{"type": "object", "properties": {"card": {"type": "string"}}, "required": ["card"]},
                          {"type": "object", "properties": {"gift": {"type": "string"}}, "required": ["gift"]}]},
        "who": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "email"}]},
        "kind": {"const": "trip"},
        "note": {"type": ["string", "null"]},
        "passenger": {"$ref": "#/$defs/passenger"},
    }, ["cabin"], additionalProperties=False,
        **{"$defs": {"passenger": {"type": "object", "properties": {"dob": {"type": "string", "format": "date"}},
                                   "required": ["dob"]}}}),
]
OK = {"cabin": "economy", "bags": 1, "amount": 10.5, "code": "ABCD", "flight": "HAT123", "day": "2025-03-04",
      "at": "2025-03-04T10:00:00Z", "email": "a.b@example.com", "upload": "123e4567-e89b-42d3-a456-426614174000",
      "items": [{"sku": "S1", "qty": 2}], "address": {"city": "Lyon"}, "pay": {"card": "c1"}, "who": 7,
      "kind": "trip", "note": None, "passenger": {"dob": "1990-01-02"}}
BAD = {
    "enum": {"cabin": "first"},
    "minimum": {"bags": -1},
    "maximum": {"bags": 4},
    "exclusiveMinimum": {"amount": 0},
    "exclusiveMaximum": {"amount": 1000},
    "minLength": {"code": "AB"},
    "maxLength": {"code": "ABCDEF"},
    "pattern": {"flight": "HA123"},
    "format-date": {"day": "04/03/2025"},
    "format-date-time": {"at": "tomorrow morning"},
    "format-email": {"email": "not an email"},
    "format-uuid": {"upload": "1234"},
    "minItems": {"items": []},
    "maxItems": {"items": [{"sku": "a", "qty": 1}] * 3},
    "items-object": {"items": ["S1"]},
    "items-nested-bound": {"items": [{"sku": "S1", "qty": 0}]},
    "nested-required": {"address": {"zip": "12345"}},
    "required": "drop cabin",
    "oneOf-none": {"pay": {"cash": 1}},
    "oneOf-both": {"pay": {"card": "c", "gift": "g"}},
    "anyOf": {"who": "not an email"},
    "additionalProperties": {"surprise": 1},
    "const": {"kind": "cruise"},
    "type-list": {"note": 5},
    "type": {"bags": "two"},
    "ref": {"passenger": {"dob": "yesterday"}},
}


@pytest.mark.parametrize("keyword", list(BAD))
def test_arguments_that_break_a_keyword_are_refused(keyword):
    valid = wai.world(KEYWORD_TOOLS).call("book_trip", OK)
    assert valid["status"] not in ("invalid_arguments", "rejected"), valid
    args = dict(OK)
    if BAD[keyword] == "drop cabin":
        del args["cabin"]
    else:
        args.update(BAD[keyword])
    ans = wai.world(KEYWORD_TOOLS).call("book_trip", args)
    assert ans["status"] == "invalid_arguments", (keyword, ans)
    assert ans["errors"] and all(set(e) >= {"path", "message"} for e in ans["errors"])
    assert "data" not in ans and "id" not in ans


def test_refusal_names_the_path_and_the_draft_follows_schema():
    ans = wai.world(KEYWORD_TOOLS).call("book_trip", {**OK, "items": [{"sku": "S1", "qty": 0}]})
    assert ans["errors"][0]["path"] == "items/0/qty" and "minimum" in ans["errors"][0]["message"]
    # draft 7's "dependencies" binds under $schema draft-07; 2020-12 knows no such keyword
    props = {"a": {"type": "string"}, "b": {"type": "string"}}
    d7 = _tool("t", props, dependencies={"a": ["b"]}, **{"$schema": "http://json-schema.org/draft-07/schema#"})
    d2020 = _tool("t", props, dependencies={"a": ["b"]})
    assert wai.world([d7]).call("t", {"a": "x"})["status"] == "invalid_arguments"
    assert wai.world([d2020]).call("t", {"a": "x"})["status"] != "invalid_arguments"


def test_the_refusal_is_counted_and_never_reaches_execute():
    seen = []
    ctx = RolloutContext(tools=KEYWORD_TOOLS, seed=1, scenario_id="sc-x", rollout_index=0,
                         execute=lambda tool, args: seen.append(args) or {"status": "ok"},
                         faults={"*": {"mode": "invalid_arguments", "rate": 1.0}})
    w = wai.World(KEYWORD_TOOLS)
    with activate(ctx):
        bad = w.call("book_trip", {"cabin": "first"})
        good = w.call("book_trip", {"cabin": "economy"})
    assert bad["status"] == "invalid_arguments" and good["status"] == "ok" and seen == [{"cabin": "economy"}]
    assert ctx.calls == [{"tool": "book_trip", "status": "invalid_arguments", "fault": "invalid_arguments"},
                         {"tool": "book_trip", "status": "ok", "fault": None}]
    row = {"steps": [{"tool": "book_trip", "arguments": {"cabin": "first"}, "result": bad},
                     {"tool": "book_trip", "arguments": {"cabin": "economy"}, "result": good}]}
    assert row_facts([row])["invalid_calls"] == [1]


def _ctx(tools, sid="sc-1", seed=5, **kw):
    return RolloutContext(tools=tools, seed=seed, scenario_id=sid, rollout_index=0, **kw)


def test_a_lookups_ids_are_usable_in_the_next_call():
    w = wai.World(RETAIL, options={"exists_share": 0.0})       # only the ids the world holds exist
    for sid in ("sc-1", "sc-2", "sc-3"):
        with activate(_ctx(RETAIL, sid)):
            order = w.entities.pool(5, sid, "order")[0]
            got = w.call("get_order_details", {"order_id": order})
            assert got["status"] == "ok", got
            user = w.call("get_user_details", {"user_id": got["data"]["user_id"]})
            assert user["status"] == "ok", user
            items = got["data"]["item_ids"]
            assert isinstance(items, list) and len(items) == 2
            ex = w.call("exchange_delivered_order_items", {"order_id": order, "item_ids": items,
                                                           "new_item_ids": items[:1],
                                                           "payment_method_id": got["data"]["payment_method_id"]})
            assert ex["status"] == "ok", ex


def test_lists_of_ids_resolve_element_by_element():
    w = wai.World(RETAIL, options={"exists_share": 0.0})
    with activate(_ctx(RETAIL)):
        order, items = w.entities.pool(5, "sc-1", "order")[0], list(w.entities.pool(5, "sc-1", "item")[:2])
        args = {"order_id": order, "item_ids": items, "new_item_ids": items, "payment_method_id":
                w.entities.pool(5, "sc-1", "payment_method")[0]}
        assert w.call("exchange_delivered_order_items", args)["status"] == "ok"
        stranger = "1234567890"
        ans = w.call("exchange_delivered_order_items", {**args, "item_ids": [items[0], stranger]})
        assert ans == {"status": "not_found", "missing": [stranger]}


def test_an_empty_optional_string_is_not_a_placeholder():
    tools = [_tool("apply_discount", {"order_id": {"type": "string"}, "coupon_code": {"type": "string"}},
                   ["order_id"])]
    with activate(_ctx(tools, world_state="entity exists")):
        ans = wai.World(tools).call("apply_discount", {"order_id": "ORD-12345", "coupon_code": ""})
    assert ans["status"] == "ok", ans
    assert wai.World(tools).call("apply_discount", {"order_id": ""})["status"] == "rejected"


def test_a_tool_with_no_record_gets_a_plain_ack():
    for tools, name, args in ((RETAIL, "think", {"thought": "the user wants a refund"}),
                              (AIRLINE, "transfer_to_human_agents", {"summary": "wants to cancel a flight"})):
        ans = wai.world(tools).call(name, args)
        assert ans == {"status": "ok", "data": {"acknowledged": True, "tool": name}}


def test_the_ids_a_situation_names_are_ones_the_world_holds():
    w = wai.World(SUPPORT, options={"exists_share": 0.0})
    writer = TemplateWriter(SUPPORT, "", seed=9)
    cell = {"tool": "get_ticket", "rule": "unspecified", "stance": "ordinary", "world_state": "unknown",
            "tool_condition": "success", "history": "fresh"}
    for i in range(20):
        s = writer.write(cell, i)
        assert s.ref_ids and s.ref_ids[0].lower() in s.prompt.lower() and s.ref_ids[0] != "TCK-00421"
        with activate(_ctx(SUPPORT, s.scenario_id, seed=9)):
            assert w.call("get_ticket", {"ticket_id": s.ref_ids[0]})["status"] == "ok"
        missing = writer.write({**cell, "world_state": "entity missing"}, i)
        with activate(_ctx(SUPPORT, missing.scenario_id, seed=9, world_state="entity missing")):
            assert w.call("get_ticket", {"ticket_id": missing.ref_ids[0]})["status"] == "not_found"


def test_the_seeded_agent_plays_valid_calls_and_labelled_broken_ones():
    meta = RunMeta(run_id="r", seed=4, tools=AIRLINE, system_prompt="", model_version="seeded_agent")
    writer, agent = TemplateWriter(AIRLINE, "", seed=4), seeded_agent(AIRLINE, seed=0)
    base = {"rule": "unspecified", "stance": "ordinary", "world_state": "unknown", "history": "fresh"}
    for name in [t["function"]["name"] for t in AIRLINE]:
        for i in range(3):
            ok = writer.write({**base, "tool": name, "tool_condition": "success"}, i)
            row = play_callable_unit(agent, Unit(run_id="r", situation=ok, rollout_index=0), meta)
            step = row["steps"][0]
            assert step["tool"] == name and step["result"]["status"] not in ("invalid_arguments", "rejected"), step
            bad = writer.write({**base, "tool": name, "tool_condition": "invalid_arguments"}, i)
            assert set(bad.extra["broken"]) == {"keyword", "path"}
            row = play_callable_unit(agent, Unit(run_id="r", situation=bad, rollout_index=0,
                                                 faults={"*": {"mode": "invalid_arguments", "rate": 1.0}}), meta)
            assert row["steps"][0]["result"]["status"] == "invalid_arguments"
            assert row["privileged"]["hidden_state"]["broken_arguments"] == bad.extra["broken"]
            assert row["_fault_fired"] is True


def test_flat_schemas_are_refused_exactly_as_jsonschema_would():
    import jsonschema
    params = {"type": "object", "properties": {"s": {"type": "string"}, "i": {"type": "integer"},
                                               "n": {"type": "number"}, "b": {"type": "boolean"}},
              "required": ["s"], "additionalProperties": False}
    tools = [_tool("flat", params["properties"], ["s"], additionalProperties=False)]
    check = jsonschema.Draft202012Validator(params)
    cases = [{"s": "x"}, {"s": 1}, {}, {"s": "x", "i": 1.0}, {"s": "x", "i": True}, {"s": "x", "n": 2},
             {"s": "x", "n": "2"}, {"s": "x", "b": 0}, {"s": "x", "zz": 1}, {"s": "x", "i": 2, "n": 0.5, "b": False}]
    for args in cases:
        refused = wai.world(tools).call("flat", args)["status"] == "invalid_arguments"
        assert refused == (not check.is_valid(args)), args


def test_a_schema_that_points_outside_itself_refuses_nothing_and_fetches_nothing():
    for ref in ("https://example.com/schemas/thing.json", "#/$defs/missing"):
        tools = [_tool("note_down", {"thought": {"$ref": ref}})]
        assert wai.world(tools).call("note_down", {"thought": 1}) == \
            {"status": "ok", "data": {"acknowledged": True, "tool": "note_down"}}


def test_a_failure_mutation_keeps_its_parents_world_and_call():
    meta = RunMeta(run_id="r", seed=4, tools=RETAIL, system_prompt="", model_version="seeded_agent")
    writer, agent = TemplateWriter(RETAIL, "", seed=4), seeded_agent(RETAIL, seed=0)
    base = {"rule": "unspecified", "stance": "ordinary", "world_state": "unknown", "history": "fresh"}
    w = wai.World(RETAIL, options={"exists_share": 0.0})
    for i in range(4):
        bad = writer.write({**base, "tool": "return_delivered_order_items", "tool_condition": "invalid_arguments"}, i)
        child = writer.mutate(bad, i)
        assert child.extra["broken"] == bad.extra["broken"] and child.extra["world_of"] == bad.scenario_id
        row = play_callable_unit(agent, Unit(run_id="r", situation=child, rollout_index=0,
                                             faults={"*": {"mode": "invalid_arguments", "rate": 1.0}}), meta)
        assert row["steps"][0]["result"]["status"] == "invalid_arguments"
        ok = writer.write({**base, "tool": "get_order_details", "tool_condition": "success"}, i)
        child = writer.mutate(ok, i)
        assert child.scenario_id != ok.scenario_id
        row = play_callable_unit(agent, Unit(run_id="r", situation=child, rollout_index=0), meta)
        assert row["steps"][0]["result"]["status"] == "ok"      # the parent's order, found in its world
        with activate(_ctx(RETAIL, child.scenario_id, seed=4, unit=Unit(run_id="r", situation=child))):
            assert w.call("get_order_details", {"order_id": ok.ref_ids[0]})["status"] == "ok"
