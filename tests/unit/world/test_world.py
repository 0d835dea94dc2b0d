"""The mock world, fault injection, world options and the current_rollout thread-local."""
import pickle
import threading

import pytest

from whileai_ray.world.context import RolloutContext, activate
from whileai_ray.world.current import current_rollout
from whileai_ray.world.faults import FAULT_MODES, fault_answer, scheduled_fault
from whileai_ray.world.mock import World, world
from whileai_ray.world.options import WorldOptions, world_options
from whileai_ray.testing.seeded_rows import TOOLS

MORE = TOOLS + [
    {"name": "cancel_order", "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                             "required": ["order_id"]}},
    {"name": "create_ticket", "parameters": {"type": "object", "properties": {"subject": {"type": "string"}},
                                              "required": ["subject"]}},
    {"name": "delete_ticket", "parameters": {"type": "object", "properties": {"ticket_id": {"type": "string"}},
                                              "required": ["ticket_id"]}},
    {"name": "search_orders", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
    {"name": "calculator", "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}},
]


def ctx_for(**kw):
    kw.setdefault("tools", MORE)
    kw.setdefault("seed", 0)
    kw.setdefault("scenario_id", "sc-test")
    kw.setdefault("rollout_index", 0)
    return RolloutContext(**kw)


def test_unknown_tool_is_an_error_answer():
    assert world(TOOLS).call("drop_tables", {}) == {"status": "error", "reason": "unknown_tool",
                                                      "tool": "drop_tables"}


def test_outside_a_rollout_there_are_no_faults_or_state():
    w = World(TOOLS)
    assert w.faults is None and w.world_state is None
    assert current_rollout.prompt is None and current_rollout.rollout_index is None
    assert current_rollout.faults is None and current_rollout.active is False
    with pytest.raises(RuntimeError, match="only inside a rollout"):
        current_rollout.call("lookup_order", {"order_id": "A1"})
    with pytest.raises(AttributeError, match="no attribute 'bogus'"):
        current_rollout.bogus


def test_records_are_deterministic_and_exist_at_the_configured_share():
    w = World(TOOLS, seed=3)
    first = [w.call("lookup_order", {"order_id": f"ORD-{i}"}) for i in range(2000)]
    again = [World(TOOLS, seed=3).call("lookup_order", {"order_id": f"ORD-{i}"}) for i in range(2000)]
    other = [World(TOOLS, seed=4).call("lookup_order", {"order_id": f"ORD-{i}"}) for i in range(2000)]
    assert first == again and first != other
    share = sum(r["status"] == "ok" for r in first) / len(first)
    assert 0.66 < share < 0.74
    ok = next(r for r in first if r["status"] == "ok")
    assert list(ok["data"]) == ["id", "name", "status", "owner", "updated_at", "order_id", "ref"]
    assert 1000 <= ok["data"]["id"] < 90000 and ok["data"]["name"].endswith(" order")
    assert 2022 <= int(ok["data"]["updated_at"][:4]) <= 2026
    missing = next(r for r in first if r["status"] != "ok")
    assert missing["status"] == "not_found" and missing["missing"][0].startswith("ORD-")


def test_world_state_decides_existence():
    w = World(MORE)
    ids = [f"ORD-{i}" for i in range(200)]
    with activate(ctx_for(world_state="entity exists")):
        assert all(w.call("lookup_order", {"order_id": i})["status"] == "ok" for i in ids)
    with activate(ctx_for(world_state="entity missing")):
        answers = [w.call("lookup_order", {"order_id": i}) for i in ids]
        assert all(a == {"status": "not_found", "missing": [i]} for a, i in zip(answers, ids))
    with activate(ctx_for(world_state="entity already acted on")):
        assert w.call("cancel_order", {"order_id": "ORD-1"}) == {"status": "already_done",
                                                                   "reason": "already_acted_on"}
        read = w.call("lookup_order", {"order_id": "ORD-1"})
        assert read["status"] == "ok" and read["data"]["status"] == "completed"


def test_missing_and_placeholder_arguments_are_rejected():
    w = World(MORE)
    missing = w.call("lookup_order", {})         # a missing required parameter breaks the schema
    assert missing["status"] == "invalid_arguments" and missing["fields"] == ["order_id"]
    for value in ("the record", "<id>", "", "unknown", "{order_id}", "your order"):
        ans = w.call("lookup_order", {"order_id": value})
        assert ans["status"] == "rejected" and ans["reason"] == "placeholder_argument", value
        assert ans["fields"] == ["order_id"] and "ask the person" in ans["hint"]
    assert w.call("lookup_order", '{"order_id": "ORD-9"}')["status"] in ("ok", "not_found")
    assert w.call("lookup_order", "not json")["reason"] == "invalid_arguments"


def test_create_delete_search_and_calculator_within_one_rollout():
    w = World(MORE)
    with activate(ctx_for(world_state="entity exists")) as ctx:
        created = w.call("create_ticket", {"subject": "printer on fire"})
        assert created["status"] == "created" and created["subject"] == "printer on fire"
        assert w.call("delete_ticket", {"ticket_id": "TCK-55"})["status"] == "deleted"
        assert w.call("lookup_order", {"order_id": "TCK-55"}) == {"status": "not_found", "missing": ["TCK-55"]}
        assert w.call("delete_ticket", {"ticket_id": "TCK-55"})["status"] == "already_done"
        hits = w.call("search_orders", {"query": "late shipments"})
        assert hits["status"] == "ok" and 1 <= hits["data"]["count"] < 6
        assert len(hits["data"]["results"]) == hits["data"]["count"]
        assert [c["status"] for c in ctx.calls] == ["created", "deleted", "not_found", "already_done", "ok"]
    with activate(ctx_for(world_state="entity exists")):     # a new rollout forgets the deletion
        assert w.call("lookup_order", {"order_id": "TCK-55"})["status"] == "ok"
    assert w.call("calculator", {"expression": "2 + 3 * (4 - 1)"})["data"]["result"] == 11
    assert w.call("calculator", {"expression": "__import__('os')"})["reason"] == "invalid_expression"


def test_each_fault_mode_answers_as_documented():
    w = World(TOOLS)
    answers = {}
    for mode in FAULT_MODES:
        with activate(ctx_for(tools=TOOLS, faults={"*": {"mode": mode}})) as ctx:
            answers[mode] = w.call("lookup_order", {"order_id": "ORD-1"})
            assert ctx.calls == [{"tool": "lookup_order", "status": answers[mode]["status"], "fault": mode}]
    assert answers["timeout"] == {"status": "timeout", "error": "request timed out"}
    assert answers["malformed"] == {"status": "ok", "data": "<<garbled resp0nse"}
    assert answers["permission_denied"] == {"status": "permission_denied"}
    stale = answers["stale"]
    assert stale["status"] == "ok" and stale["stale"] is True and stale["as_of"] == "3 days ago"
    assert stale["data"]["order_id"] == "ORD-1"


def test_fault_plans_per_tool_by_condition_name_and_by_rate():
    w = World(MORE)
    with activate(ctx_for(faults={"cancel_order": {"mode": "stale_result"}})):
        assert w.call("cancel_order", {"order_id": "ORD-1"})["stale"] is True
        assert "stale" not in w.call("lookup_order", {"order_id": "ORD-1"})
    fired = 0
    for r in range(400):
        ctx = ctx_for(rollout_index=r, faults={"*": {"mode": "timeout", "rate": 0.25}})
        fired += scheduled_fault(ctx, "lookup_order", 0) == "timeout"
        assert scheduled_fault(ctx, "lookup_order", 0) == scheduled_fault(ctx, "lookup_order", 0)
    assert 70 < fired < 130
    with pytest.raises(ValueError, match="unknown fault mode 'explode'"):
        scheduled_fault(ctx_for(faults={"*": {"mode": "explode"}}), "lookup_order", 0)
    assert fault_answer("malformed", "t", {}, None, WorldOptions(malformed_payload="%%")) == \
        {"status": "ok", "data": "%%"}


def test_faults_fire_before_execute_and_execute_answers_otherwise():
    seen = []

    def execute(tool, arguments):
        seen.append((tool, arguments, current_rollout.prompt))
        if arguments["order_id"] == "boom":
            raise ValueError("db down")
        if arguments["order_id"] == "plain":
            return 42
        return {"status": "ok", "data": {"real": True}, "mock_view": current_rollout.call(tool, arguments)}

    w = World(TOOLS)
    with activate(ctx_for(tools=TOOLS, prompt="hi", execute=execute, faults={"*": {"mode": "timeout"}})):
        assert w.call("lookup_order", {"order_id": "A1"})["status"] == "timeout"
    assert seen == []
    with activate(ctx_for(tools=TOOLS, prompt="hi", execute=execute, world_state="entity exists")) as ctx:
        real = w.call("lookup_order", {"order_id": "A1"})
        assert real["data"] == {"real": True} and real["mock_view"]["status"] == "ok"
        assert w.call("lookup_order", {"order_id": "plain"}) == {"status": "ok", "data": 42}
        assert w.call("lookup_order", {"order_id": "boom"}) == {"status": "error", "error": "ValueError: db down"}
        assert [c["tool"] for c in ctx.calls] == ["lookup_order"] * 4   # execute's own mock call is logged too
    assert seen[0] == ("lookup_order", {"order_id": "A1"}, "hi")


def test_world_options_validate_and_apply():
    with pytest.raises(ValueError, match=r"unknown option 'exist_share'.*valid fields: exists_share"):
        world_options({"exist_share": 0.5})
    with pytest.raises(ValueError, match=r"exists_share'\] must be a number in \[0, 1\]"):
        world_options({"exists_share": 3})
    with pytest.raises(ValueError, match="id_range"):
        world_options({"id_range": [5, 1]})
    assert world_options(None) == WorldOptions()
    w = World(TOOLS, options={"exists_share": 0.0})
    assert all(w.call("lookup_order", {"order_id": f"X-{i}"})["status"] == "not_found" for i in range(50))
    # The run's advanced["world"] applies to a world built without explicit options.
    run_opts = {"exists_share": 1.0, "id_range": [5, 6]}
    with activate(ctx_for(tools=TOOLS, world_options=run_opts)):
        ans = World(TOOLS).call("lookup_order", {"order_id": "X-1"})
        assert ans["status"] == "ok" and ans["data"]["id"] == 5
    assert WorldOptions().to_dict()["id_range"] == [1000, 90000]


def test_current_rollout_is_per_thread():
    barrier = threading.Barrier(4)
    seen = {}

    def play(i):
        with activate(ctx_for(prompt=f"prompt {i}", rollout_index=i, faults={"*": "timeout"} if i % 2 else None)):
            barrier.wait()
            seen[i] = (current_rollout.prompt, current_rollout.rollout_index,
                       current_rollout.call("lookup_order", {"order_id": "A100"})["status"])
    threads = [threading.Thread(target=play, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert seen[i][:2] == (f"prompt {i}", i)
        assert (seen[i][2] == "timeout") == bool(i % 2)
    assert current_rollout.prompt is None


def test_world_and_current_rollout_pickle():
    assert pickle.loads(pickle.dumps(current_rollout)) is current_rollout
    w = pickle.loads(pickle.dumps(World(MORE, seed=7)))
    assert w.call("lookup_order", {"order_id": "ORD-3"}) == World(MORE, seed=7).call("lookup_order",
                                                                                    {"order_id": "ORD-3"})
