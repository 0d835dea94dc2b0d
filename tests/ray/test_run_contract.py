"""simulate() details the seed docs promise, on a local Ray: configure(agent=) is played, scaffold=
reaches the model and nothing else, rubric= without grade=True is said, tasks= inherits k the
same way from every form, the last progress line says why the run ended, and the
SimulationData fields the docs list carry measured values."""
from __future__ import annotations

import time
import warnings
from collections import Counter

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import reset_configuration
from whileai_ray.testing.server import start_server

SYSTEM = "You are the order desk. Look orders up before you answer."


@pytest.fixture(scope="module")
def scripted():
    host, port, stop = start_server(port=0, seed=0, ask_rate=0.0, model="scripted-7b")
    yield f"http://{host}:{port}/v1", stop.server
    stop()


@pytest.fixture
def clean_configuration():
    reset_configuration()
    yield
    reset_configuration()


# ---- item 4: configure(agent=...) is the agent when agent= is left out ------------------------

def test_the_configured_agent_is_played_when_agent_is_unset(ray_local, tools, scripted, clean_configuration):
    url, _ = scripted
    wai.configure(agent=f"vllm:scripted-7b@{url}")
    data = wai.simulate(tools=tools, system_prompt=SYSTEM, simulator=False, budget=4, avg_turns=1, seed=1)
    rows = data.rows()
    assert len(rows) == 4
    assert all(r["model_version"] == "scripted-7b" and r["sampling"]["model"] == "scripted-7b" for r in rows)
    assert data.report()["agent_model"] == "scripted-7b"


# ---- item 7: scaffold= reaches the model-backed agent's system prompt, never the policy -------

def test_scaffold_reaches_the_model_and_stays_out_of_the_policy(ray_local, tools, scripted):
    url, handler = scripted
    scaffold = "Think step by step; quote the order id back to the user."
    handler.recent.clear()
    data = wai.simulate(f"vllm:scripted-7b@{url}", tools=tools, system_prompt=SYSTEM, simulator=False,
                        budget=4, avg_turns=1, seed=2, scaffold=scaffold)
    plain = wai.simulate(f"vllm:scripted-7b@{url}", tools=tools, system_prompt=SYSTEM, simulator=False,
                         budget=4, avg_turns=1, seed=2)
    systems = [m["content"] for req in handler.recent for m in req["messages"] if m["role"] == "system"]
    agent_systems = [s for s in systems if s.startswith(SYSTEM)]
    assert any(s == f"{SYSTEM}\n\n{scaffold}" for s in agent_systems)
    assert data.scaffold_chars == len(scaffold) and plain.scaffold_chars == 0
    assert data.system_prompt == SYSTEM and data.rows().system_prompt == SYSTEM
    rows, base = data.rows(), plain.rows()
    assert {r["lineage"]["system_prompt_sha"] for r in rows} == {r["lineage"]["system_prompt_sha"] for r in base}
    assert {r["policy_version"] for r in rows}.isdisjoint({r["policy_version"] for r in base})
    assert data.meta_dict()["system_prompt"] == SYSTEM            # what exports and the judge read


def test_scaffold_is_ignored_for_a_callable_agent_with_a_note(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=4, scaffold="Be terse.")
    assert data.scaffold_chars == 0
    assert any("scaffold= was ignored" in w and "callable" in w for w in data.warnings)


# ---- item 8: rubric= without grade=True is said, not dropped silently ------------------------

def test_rubric_without_grade_true_warns(ray_local, tools):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=4,
                            rubric="The agent states the order status.")
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("rubric= was given but this run did not grade with it" in m for m in said)
    assert any("grade=True" in w and "rubric=" in w for w in data.warnings)
