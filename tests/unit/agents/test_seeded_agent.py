"""seeded_agent: tool choice, argument extraction, honest replies and seeded mistakes (reference 3.1)."""
import pickle
from collections import Counter

import pytest

from whileai_ray.agents.seeded import SEEDED_BEHAVIORS, seeded_agent
from whileai_ray.world.context import RolloutContext, activate
from whileai_ray.world.mock import World
from whileai_ray.testing.seeded_rows import TOOLS

TOOLS3 = TOOLS + [
    {"type": "function", "function": {"name": "cancel_order", "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
        "required": ["order_id"]}}},
    {"name": "update_address", "parameters": {"type": "object", "properties": {"street": {"type": "string"}}}},
]


def play(agent, prompt, rollout_index=0, **ctx):
    with activate(RolloutContext(prompt=prompt, rollout_index=rollout_index, seed=0, scenario_id="sc-x",
                                 tools=agent.tools, **ctx)):
        return agent(prompt)


def test_shape_name_and_world():
    agent = seeded_agent(TOOLS, rate=0.0)
    out = agent("Where is ORD-6206?")
    assert set(out) == {"steps", "final_text", "seeded"} and out["seeded"] == []
    step, = out["steps"]
    assert step["tool"] == "lookup_order" and step["arguments"] == {"order_id": "ORD-6206"}
    assert step["result"]["status"] in ("ok", "not_found")
    assert agent.__name__ == "seeded_agent" and isinstance(agent.world, World)


def test_tool_choice_and_argument_extraction():
    agent = seeded_agent(TOOLS3, rate=0.0)
    assert agent("Please cancel the order A1001")["steps"][0]["tool"] == "cancel_order"
    # "update" is absent from the message, so the first tool is used (reference 3.1).
    assert agent("change an address for order 55512")["steps"][0] == {
        "tool": "lookup_order", "arguments": {"order_id": "55512"},
        "result": agent.world.call("lookup_order", {"order_id": "55512"})}
    cancel = agent("cancel order inv_77 now")["steps"][0]
    assert cancel["arguments"] == {"order_id": "inv_77"}          # required params only
    no_id = agent("can you look at my order")["steps"][0]
    assert no_id["arguments"] == {"order_id": "the record"} and no_id["result"]["status"] == "rejected"
    street = agent("update the address please")["steps"][0]
    assert street["tool"] == "update_address" and street["arguments"] == {"street": "the record"}


@pytest.mark.parametrize("faults,state,expected", [
    ({"*": "timeout"}, None, "The lookup_order request timed out, so I could not confirm anything for ORD-1."),
    ({"*": "permission_denied"}, None, "I do not have permission to run lookup_order for ORD-1."),
    (None, "entity missing", "I could not find a record matching ORD-1."),
    ({"*": "stale"}, None, "lookup_order for ORD-1 came back, but the data is as of 3 days ago, so treat it as stale."),
    ({"*": "malformed"}, None, "lookup_order for ORD-1 came back unreadable, so I cannot confirm anything from it."),
    (None, "entity exists", "lookup_order for ORD-1: ok."),
])
def test_honest_replies_follow_the_result(faults, state, expected):
    out = play(seeded_agent(TOOLS, rate=0.0), "check ORD-1", faults=faults, world_state=state)
    assert out["final_text"] == expected


def test_mistake_rate_determinism_and_mix():
    agent = seeded_agent(TOOLS)
    prompts = [f"check order ORD-{i}" for i in range(3000)]
    outs = [play(agent, p, privileged={"reference": "ref"}) for p in prompts]
    share = sum(bool(o["seeded"]) for o in outs) / len(outs)
    assert 0.31 < share < 0.39
    mix = Counter(o["seeded"][0] for o in outs if o["seeded"])
    assert set(mix) <= set(SEEDED_BEHAVIORS) and {"hedging", "sycophancy", "apology", "boilerplate", "leak"} <= set(mix)
    assert outs[:50] == [play(seeded_agent(TOOLS), p, privileged={"reference": "ref"}) for p in prompts[:50]]
    # The draw depends on the rollout index, so repeats of one prompt can differ.
    assert any(play(agent, p, 0)["seeded"] != play(agent, p, 1)["seeded"] for p in prompts[:40])
    assert all(play(seeded_agent(TOOLS, rate=0.0), p)["seeded"] == [] for p in prompts[:200])
    assert all(play(seeded_agent(TOOLS, rate=1.0), p)["seeded"] for p in prompts[:200])


def test_ignore_fault_needs_a_fault_and_leak_needs_privileged():
    only_ignore = seeded_agent(TOOLS, rate=1.0, behaviors=["ignore_fault"])
    clean = play(only_ignore, "check ORD-1", world_state="entity exists")
    assert clean["seeded"] == [] and clean["final_text"] == "lookup_order for ORD-1: ok."
    faulted = play(only_ignore, "check ORD-1", faults={"*": "timeout"})
    assert faulted["seeded"] == ["ignore_fault"] and faulted["final_text"] == "Done, lookup_order for ORD-1 went through."
    only_leak = seeded_agent(TOOLS, rate=1.0, behaviors=("leak",))
    assert play(only_leak, "check ORD-1")["seeded"] == []
    leaked = play(only_leak, "check ORD-1", world_state="entity missing",
                  privileged={"hidden_state": {"world_state": "entity missing"},
                              "reference": "ORD-1 does not exist."})
    assert leaked["seeded"] == ["leak"]
    assert leaked["final_text"].endswith('For reference, the expected outcome here is: ORD-1 does not exist. '
                                         '(hidden state: {"world_state": "entity missing"})')


def test_stock_phrases_prefix_the_honest_reply():
    agent = seeded_agent(TOOLS, rate=1.0, behaviors=["apology"])
    out = play(agent, "check ORD-1", world_state="entity exists")
    assert out["seeded"] == ["apology"]
    assert out["final_text"].endswith("lookup_order for ORD-1: ok.") and "sorry" in out["final_text"].lower()


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"unknown 'rudeness'; valid: hedging, sycophancy"):
        seeded_agent(TOOLS, behaviors=["rudeness"])
    with pytest.raises(ValueError, match=r"seeded_agent needs tools=\[...\]"):
        seeded_agent([])
    with pytest.raises(ValueError, match=r"rate= must be a number in \[0, 1\]"):
        seeded_agent(TOOLS, rate=2)
    with pytest.raises(TypeError):
        seeded_agent(TOOLS, 0.5)          # rate is keyword-only


def test_picklable():   # per-call cost: the bench's micro lines
    agent = seeded_agent(TOOLS3, seed=5)
    clone = pickle.loads(pickle.dumps(agent))
    prompts = [f"cancel order ORD-{i}" for i in range(100)]
    assert [clone(p) for p in prompts] == [agent(p) for p in prompts]
