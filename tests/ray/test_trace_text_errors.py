"""simulate(traces=...) with production traces whose tool answers are errors written the way real
logs write them (``Error: order not found``, a traceback, ``{"status": 404}``): trace_mining counts
them as faults, the run's fault rate follows them and the grid keeps its fault cells (issue 29,
item 4). Before, they read as success and the traces' fault rate was 0.0."""
from __future__ import annotations

import json

import whileai_ray as wai
from whileai_ray.situations.grid import TOOL_CONDITIONS, build_axes

from bounded_call import bounded

TOOLS = [{"type": "function", "function": {"name": n, "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}
    for n in ("lookup_order", "cancel_order")]

ANSWERS = ["Error: order not found",
           'Traceback (most recent call last):\n  File "api.py", line 9, in get\nKeyError: \'W{n}\'',
           json.dumps({"status": 404, "detail": "no such order"}),
           json.dumps({"status": "ok", "data": {"order_id": "W{n}", "title": "error handling guide"}})]


def chat_trace(i):
    n = 4000 + i
    return {"messages": [
        {"role": "user", "content": f"Where is my order W{n}? It has not come yet."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
            "name": "lookup_order", "arguments": json.dumps({"order_id": f"W{n}"})}}]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": ANSWERS[i % 4].replace("{n}", str(n))},
        {"role": "assistant", "content": "Let me check that for you."}]}


def _simulate(timeout_s: float = 240, **kwargs):
    return bounded(lambda: wai.simulate(**kwargs), timeout_s)


def test_text_errors_in_traces_are_faults_that_steer_the_grid(ray_local, tmp_path):
    path = tmp_path / "production.jsonl"
    path.write_text("".join(json.dumps(chat_trace(i)) + "\n" for i in range(12)))
    data = _simulate(agent=wai.seeded_agent(TOOLS), tools=TOOLS, simulator=False, seed=0, budget=36,
                     traces=str(path))
    mining = data.search["trace_mining"]
    assert mining["traces"] == 12
    assert mining["tool_conditions"] == {"error": 9, "success": 3}         # 3 of 4 forms are failed calls
    assert mining["fault_traces"] == 9 and mining["world_states"]["entity missing"] == 9
    # every fault cell of this grid stays in the plan (invalid_arguments only where a schema has a rule to break)
    grid = build_axes(TOOLS, "", None)["tool_condition"]
    assert mining["regions"]["tool_condition"] == list(grid) and set(grid) <= set(TOOL_CONDITIONS)
    rows = data.rows()
    assert len(rows) == 36
    faulted = sum(1 for r in rows if r.get("faults"))
    assert abs(faulted - 36 * 9 / 12) <= 3                                  # the traces' fault share, 3 in 4
    grid_rows = [r for r in rows if r["scenario_dimensions"].get("origin") != "realized"]
    conditions = {r["scenario_dimensions"]["tool_condition"] for r in grid_rows}
    assert conditions - {"success"}, conditions                             # fault cells were played
