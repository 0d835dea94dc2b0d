"""Real tool schemas end to end (issue 29): the seeded agent on three domains of realistic tools
(tests/data/tools_*.json), 300 rows each in rl mode, on a local Ray. Success situations' calls
validate against their schema (checked here with jsonschema), every tool is called, every
situation that aims at bad arguments sends an invalid call, and the world refuses each one."""
import json
from pathlib import Path

import pytest

import whileai_ray as wai

from bounded_call import bounded
from schema_check import schema_validator

DATA = Path(__file__).resolve().parents[1] / "data"
DOMAINS = ("retail", "airline", "support")
RUN_TIMEOUT_S = 240


def _validators(tools):
    return {t["function"]["name"]: schema_validator(t["function"]["parameters"]) for t in tools}


def _simulate(tools):
    """simulate(), bounded: a hang fails the test instead of the suite."""
    return bounded(lambda: wai.simulate(wai.seeded_agent(tools, seed=0), tools=tools, simulator=False, mode="rl",
                                        repeats=2, budget=300, seed=11, concurrency=8), RUN_TIMEOUT_S)


@pytest.mark.parametrize("domain", DOMAINS)
def test_seeded_agent_on_real_tool_schemas(ray_local, domain):
    tools = json.loads((DATA / f"tools_{domain}.json").read_text())
    validators = _validators(tools)
    data = _simulate(tools)
    rows = data.trajectories
    assert len(rows) == 300
    success_calls = success_valid = aimed = invalid_steps = 0
    called = set()
    for row in rows:
        dims = row["scenario_dimensions"]
        steps = [s for s in row["steps"] if "tool" in s]
        called.update(s["tool"] for s in steps)
        verdicts = [validators[s["tool"]].is_valid(s["arguments"]) for s in steps]
        for s, ok in zip(steps, verdicts):
            if not ok:                              # the world refuses each invalid call, never a success
                invalid_steps += 1
                assert s["result"]["status"] == "invalid_arguments", (s, row["prompt"])
                assert s["result"]["errors"] and "path" in s["result"]["errors"][0]
            else:
                assert s["result"].get("status") != "invalid_arguments", s
        broken = (row["privileged"].get("hidden_state") or {}).get("broken_arguments")
        if dims.get("tool_condition") == "invalid_arguments" and dims.get("tool") != "unrelated":
            aimed += 1                              # a situation aiming at bad arguments, labelled so
            assert broken and set(broken) == {"keyword", "path"}, row["privileged"]
            assert not all(verdicts), (broken, steps)
            if row.get("faults"):                   # a planned bad-argument fault fires as the refusal
                assert row["_fault_fired"] is True
        elif dims.get("tool_condition") != "invalid_arguments":
            success_calls += len(verdicts)
            success_valid += sum(verdicts)
    assert aimed >= 4, aimed
    assert success_calls >= 200 and success_valid / success_calls >= 0.99, (success_valid, success_calls)
    assert called == set(validators), set(validators) - called
    delivered = data.report()["delivered"]["invalid_calls"]
    assert delivered["calls"] == invalid_steps >= aimed
    assert sum(delivered["by_tool"].values()) == invalid_steps
