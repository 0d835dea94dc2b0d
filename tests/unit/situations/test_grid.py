"""The coverage grid: axes from tools and policy, dimensions= validation, pairwise cells."""

import pytest

from whileai_ray.situations.grid import (
    AXES, CONDITION_FAULT_MODE, HARD_TIERS, HISTORIES, STANCE_TIER, STANCES, TOOL_CONDITIONS,
    WORLD_STATES, all_pairs, build_axes, cell_key, pairs_in, pairwise_cells, policy_clauses,
    tier_of, tool_names, validate_dimensions,
)
from whileai_ray.testing.seeded_rows import TOOLS

FIVE = TOOLS + [{"name": n, "parameters": {"type": "object", "properties": {"order_id": {}}}}
                for n in ("cancel_order", "refund_payment", "change_address", "send_receipt")]
POLICY = ("You are a support agent for an online shop.\n"
          "- Never cancel an order that has already shipped.\n"
          "- Always verify the customer's email before changing anything.\n"
          "Refunds over $100 require a manager.")


def test_axes_from_one_tool_match_the_reference_grid():
    axes = build_axes(TOOLS)
    assert tuple(axes) == AXES
    assert axes["tool"] == ["lookup_order", "unrelated", "multi_tool"]
    assert axes["rule"] == ["unspecified"]
    assert axes["stance"] == list(STANCES) and len(STANCES) == 10
    assert axes["world_state"] == list(WORLD_STATES)
    # a bare string parameter has no rule an ask could break: no invalid_arguments cells (issue 29)
    assert axes["tool_condition"] == [c for c in TOOL_CONDITIONS if c != "invalid_arguments"]
    assert axes["history"] == list(HISTORIES)
    ruled = [{"name": "book", "parameters": {"properties": {"cabin": {"type": "string", "enum": ["economy"]}}}}]
    assert build_axes(ruled)["tool_condition"] == list(TOOL_CONDITIONS)


def test_world_state_axis_needs_a_key_like_parameter():
    no_key = [{"name": "get_weather", "parameters": {"properties": {"city": {"type": "string"}}}}]
    assert build_axes(no_key)["world_state"] == ["unspecified"]
    camel = [{"name": "getOrder", "parameters": {"properties": {"orderId": {}}}}]
    assert build_axes(camel)["world_state"] == list(WORLD_STATES)


def test_tool_names_reads_both_schema_forms_and_dedupes():
    assert tool_names(FIVE + [{"name": "lookup_order"}]) == [
        "lookup_order", "cancel_order", "refund_payment", "change_address", "send_receipt"]
    assert build_axes(FIVE)["tool"][-2:] == ["unrelated", "multi_tool"]


def test_policy_clauses_keep_rules_only_and_report_the_total():
    clauses, total = policy_clauses(POLICY)
    assert clauses == ["Never cancel an order that has already shipped.",
                       "Always verify the customer's email before changing anything.",
                       "Refunds over $100 require a manager."]
    assert total == 3
    long_policy = " ".join(f"You must follow rule number {i}." for i in range(20))
    clauses, total = policy_clauses(long_policy)
    assert len(clauses) == 16 and total == 20
    assert policy_clauses("") == ([], 0)
    assert build_axes(TOOLS, POLICY)["rule"] == ["unspecified"] + policy_clauses(POLICY)[0]


def test_stance_tiers_follow_the_reference_map():
    assert tier_of("ordinary") == tier_of(None) == "ordinary"
    assert {s for s in STANCES if STANCE_TIER[s] == "ordinary"} == {
        "ordinary", "hurried", "retry", "mistaken", "exploratory"}
    assert tier_of("unsure") == tier_of("vague") == tier_of("underspecified") == "ambiguous"
    assert tier_of("conflicting") == tier_of("policy-push") == "boundary"
    assert tier_of("malicious") == tier_of("forbidden") == "adversarial"
    assert HARD_TIERS == ("ambiguous", "boundary", "adversarial")
    assert CONDITION_FAULT_MODE["malformed_result"] == "malformed"


@pytest.mark.parametrize("bad", [[], {}, "stance", None, [("stance", ["boundary"])]])
def test_dimensions_must_be_a_non_empty_dict(bad):
    with pytest.raises(ValueError, match="non-empty dict of axis -> list"):
        validate_dimensions(bad)


def test_tier_is_not_an_axis_and_says_to_use_stance():
    with pytest.raises(ValueError, match="'tier' is not a coverage axis; tiers go through the stance"):
        validate_dimensions({"tier": ["adversarial"]})


def test_unknown_axis_lists_the_axes():
    with pytest.raises(ValueError, match="unknown axis 'mood'.*tool, rule, stance, world_state"):
        validate_dimensions({"mood": ["happy"]})


def test_unknown_stance_lists_known_stances():
    with pytest.raises(ValueError, match="unknown value 'grumpy'.*ordinary, ambiguous, boundary"):
        validate_dimensions({"stance": ["boundary", "grumpy"]})


def test_unknown_tool_condition_lists_valid_ones():
    with pytest.raises(ValueError, match="names no fault mode.*success, timeout, malformed_result"):
        validate_dimensions({"tool_condition": ["exploded"]})


def test_empty_value_list_and_unknown_tool_are_rejected():
    with pytest.raises(ValueError, match=r"dimensions\['history'\] must be a non-empty list"):
        validate_dimensions({"history": []})
    with pytest.raises(ValueError, match="Valid tool values: lookup_order, unrelated, multi_tool"):
        validate_dimensions({"tool": ["delete_everything"]}, TOOLS)


def test_dimensions_are_normalized():
    dims = validate_dimensions({"stance": "Malicious", "tool_condition": ["malformed", "stale", "timeout"],
                                "world_state": ["entity_missing"], "history": ["repeat_visit", "fresh"]})
    assert dims == {"stance": ["malicious"],
                    "tool_condition": ["malformed_result", "stale_result", "timeout"],
                    "world_state": ["entity missing"], "history": ["repeat visit", "fresh"]}


def test_pinning_one_axis_keeps_the_others():
    axes = build_axes(TOOLS, dimensions={"stance": ["adversarial", "boundary"]})
    assert axes["stance"] == ["adversarial", "boundary"]
    assert axes["tool"] == ["lookup_order", "unrelated", "multi_tool"]
    assert axes["world_state"] == list(WORLD_STATES)
    cells = pairwise_cells(axes)
    assert {c["stance"] for c in cells} == {"adversarial", "boundary"}
    assert all(tier_of(c["stance"]) in HARD_TIERS for c in cells)


@pytest.mark.parametrize("tools,policy", [(TOOLS, ""), (FIVE, ""), (TOOLS, POLICY), (FIVE, POLICY)])
def test_pairwise_cells_cover_every_pair(tools, policy):
    axes = build_axes(tools, policy)
    cells = pairwise_cells(axes)
    assert all_pairs(axes) <= pairs_in(cells)
    assert all(tuple(c) == AXES for c in cells)
    assert all(c[a] in axes[a] for c in cells for a in AXES)


def test_pairwise_grid_is_small_and_deterministic():   # its speed: the bench's micro lines
    axes = build_axes(TOOLS)
    cells = pairwise_cells(axes)
    assert 60 <= len(cells) <= 70          # the product is 4,500; the reference has 62
    assert cells == pairwise_cells(build_axes(TOOLS))
    ordinary = sum(tier_of(c["stance"]) == "ordinary" for c in cells)
    assert 0.4 <= ordinary / len(cells) <= 0.6
    assert len(pairwise_cells(build_axes(FIVE))) <= 80


def test_each_clause_owns_a_block_and_adding_one_keeps_the_old_cells():
    base = pairwise_cells(build_axes(TOOLS))
    with_policy = pairwise_cells(build_axes(TOOLS, POLICY))
    assert with_policy[:len(base)] == base
    for clause in policy_clauses(POLICY)[0]:
        block = [c for c in with_policy if c["rule"] == clause]
        assert len(block) == 10
        assert {c["stance"] for c in block} == set(STANCES)
    assert len(with_policy) == len(base) + 30


def test_cell_key_is_canonical():
    a = {"tool": "lookup_order", "stance": "boundary"}
    b = {"stance": "boundary", "tool": "lookup_order"}
    assert cell_key(a) == cell_key(b) == '{"stance": "boundary", "tool": "lookup_order"}'


def test_bad_axis_values_in_pairwise_cells():
    with pytest.raises(ValueError, match="axis 'stance' has no values"):
        pairwise_cells({"tool": ["a"], "stance": []})
