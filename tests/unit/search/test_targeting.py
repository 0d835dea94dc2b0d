"""Behaviour-targeted asks: planned tool-call shapes, what is uncovered, and the asks that aim at it."""
import re

import pytest

from whileai_ray.search.targeting import NO_TOOL, ShapeTargets, action_shape, planned_shapes
from whileai_ray.testing.seeded_rows import TOOLS

TWO = TOOLS + [{"name": "cancel_order", "parameters": {"type": "object", "properties": {
    "order_id": {"type": "string"}}, "required": ["order_id"]}}]
ORD = re.compile(r"ORD-\d{4,5}")


def test_shape_keys_and_plan():
    assert action_shape(["lookup_order", "cancel_order"]) == "lookup_order|cancel_order"
    assert action_shape([]) == action_shape(None) == NO_TOOL
    assert ShapeTargets(TOOLS).planned == ["lookup_order", "lookup_order|lookup_order", NO_TOOL]
    assert planned_shapes(["a", "b"]) == ["a", "b", "a|a", "a|b", "b|a", "b|b", NO_TOOL]
    assert len(planned_shapes([f"t{i}" for i in range(9)])) == 9 + 36 + 1
    assert ShapeTargets([]).planned == [NO_TOOL]


def test_observe_and_uncovered():
    t = ShapeTargets(TWO)
    assert t.observe(["lookup_order"]) is True
    assert t.observe(["lookup_order"]) is False
    assert t.observe(["lookup_order", "lookup_order", "cancel_order"]) is True   # unplanned, still counted
    assert t.uncovered() == ["cancel_order", "lookup_order|lookup_order", "lookup_order|cancel_order",
                             "cancel_order|lookup_order", "cancel_order|cancel_order", NO_TOOL]
    assert t.stats()["shape_counts"] == {"lookup_order": 2, "lookup_order|lookup_order|cancel_order": 1}


def test_next_target_rotates_through_uncovered_shapes():
    t = ShapeTargets(TWO, seed=0)
    t.observe(["lookup_order"])
    aims = [t.next_target() for _ in range(12)]
    assert set(aims[:6]) == set(t.uncovered())        # every uncovered shape once before any twice
    assert set(aims[6:]) == set(t.uncovered())
    for shape in t.planned:
        t.observe(shape.split("|") if shape != NO_TOOL else [])
    assert t.next_target() is None
    again = ShapeTargets(TWO, seed=0)
    again.observe(["lookup_order"])
    assert [again.next_target() for _ in range(12)] == aims


def test_single_tool_ask_names_the_intent_and_an_id():
    t = ShapeTargets(TOOLS, seed=0)
    prompts = set()
    for i in range(20):
        prompt, ids, ref = t.ask("lookup_order", i)
        assert "check" in prompt and "order" in prompt
        assert len(ids) == 1 and ORD.fullmatch(ids[0]) and ids[0] in prompt
        assert "lookup_order" in ref
        prompts.add(prompt)
    assert len(prompts) >= 15
    assert t.ask("lookup_order", 3) == t.ask("lookup_order", 3)


def test_pair_ask_has_two_steps_on_two_records():
    t = ShapeTargets(TWO, seed=1)
    prompt, ids, ref = t.ask("lookup_order|lookup_order", 0)
    assert len(ids) == 2 and ids[0] != ids[1] and all(i in prompt for i in ids)
    prompt, ids, ref = t.ask("lookup_order|cancel_order", 4)
    assert prompt.index("check") < prompt.index("cancel")
    assert ref.index("lookup_order") < ref.index("cancel_order")


def test_no_tool_ask_and_bad_shape():
    t = ShapeTargets(TOOLS)
    prompt, ids, ref = t.ask(NO_TOOL, 0)
    assert ids == [] and not ORD.search(prompt) and "without calling" in ref
    with pytest.raises(ValueError, match="not a planned shape"):
        t.ask("refund_payment", 0)


def test_tools_without_a_key_still_get_an_ask():
    t = ShapeTargets([{"name": "list_products", "parameters": {"type": "object", "properties": {}}}])
    prompt, ids, _ = t.ask("list_products", 0)
    assert ids == [] and "list" in prompt and "product" in prompt


def test_situation_is_a_behavior_targeted_ask():
    t = ShapeTargets(TOOLS, seed=2)
    s = t.situation("lookup_order|lookup_order", 7)
    assert s.arm == "behavior_targeted" and s.selection_reason == "behavior_targeted"
    assert re.fullmatch(r"probe_[0-9a-f]{6}", s.scenario_id)
    assert s.dims == {} and s.extra["target_shape"] == "lookup_order|lookup_order"
    assert s.ref_ids and all(i in s.prompt for i in s.ref_ids)
    assert t.situation("lookup_order|lookup_order", 7) == s
    assert t.situation(NO_TOOL, 0).ask_family == "general"
