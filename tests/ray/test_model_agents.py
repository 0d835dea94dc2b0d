"""Model-backed agents over real HTTP: the project's scripted OpenAI-compatible server on
127.0.0.1, multi-turn play with tool calls, world answers and the simulated user's turns."""
import pytest

import whileai_ray as wai
from whileai_ray.testing.server import start_server

SYSTEM = "You are the order desk. Look orders up before you answer. Never invent order details."


@pytest.fixture(scope="module")
def server():
    host, port, stop = start_server(port=0, seed=0, ask_rate=0.5, model="scripted-7b")
    yield f"http://{host}:{port}/v1"
    stop()


@pytest.fixture(scope="module")
def flaky_server():
    host, port, stop = start_server(port=0, seed=1, error_rate=0.3, malformed_rate=0.1, model="flaky")
    yield f"http://{host}:{port}/v1"
    stop()


def test_spec_string_agent_plays_multi_turn_with_tools_and_the_user(ray_local, tools, server):
    data = wai.simulate(f"vllm:scripted-7b@{server}", tools=tools, system_prompt=SYSTEM, simulator=False,
                        budget=24, seed=0, avg_turns=3, max_turns=4, patience="endless")
    rows = data.rows()
    assert len(rows) == 24 and data.stopped_because == "budget"
    assert all(r["model_version"] == "scripted-7b" for r in rows)
    assert all(r["sampling"]["model"] == "scripted-7b" for r in rows)
    assert all(r["usage"]["output_tokens"] > 0 for r in rows)
    tool_steps = [s for r in rows for s in r["steps"] if "tool" in s]
    assert tool_steps and all(isinstance(s["result"], dict) and "status" in s["result"] for s in tool_steps)
    user_steps = [s for r in rows for s in r["steps"] if "user" in s]
    assert user_steps, "the simulated user never answered a question"
    assert "same_model" in data.degraded
    assert any("also played the user" in w for w in data.warnings)
    eq = data.search["ended_on_question"]
    assert eq["n"] == 24 and 0.0 <= eq["share"] <= 1.0


def test_backend_object_and_user_model_separate_models(ray_local, tools, server):
    agent = wai.OpenAI("scripted-7b", base_url=server)
    data = wai.simulate(agent, tools=tools, system_prompt=SYSTEM, simulator=False, budget=8,
                        user_model=f"vllm:other-user@{server}", avg_turns=2)
    assert len(data.rows()) == 8
    assert "same_model" not in data.degraded
    assert data.user_model == "other-user"


def test_server_errors_and_malformed_bodies_are_rerolled_and_counted(ray_local, tools, flaky_server):
    data = wai.simulate(f"vllm:flaky@{flaky_server}", tools=tools, system_prompt=SYSTEM, simulator=False,
                        budget=20, avg_turns=1, repeats=3, mode="rl", repeat_policy="fixed")
    ro = data.search["rollouts"]
    assert ro["rerolled_by"].get("agent_error", 0) > 0
    assert len(data.rows()) + ro["lost"] >= 20 or data.stopped_because == "budget"
    assert all(not r["final_text"].startswith("<agent error") for r in data.rows())


def test_no_endpoint_fails_before_any_budget(ray_local, tools, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        wai.simulate("openai:gpt-4.1-mini", tools=tools, simulator=False, budget=5)
    with pytest.raises(RuntimeError, match="127.0.0.1:9"):
        wai.simulate("vllm:m@http://127.0.0.1:9/v1", tools=tools, simulator=False, budget=5)
    with pytest.raises(RuntimeError, match="simulator=False"):
        wai.simulate(wai.seeded_agent(tools), tools=tools, budget=5)     # the default writer needs an endpoint


def test_keys_never_reach_rows_or_reprs(ray_local, tools, server):
    secret = "sk-test-SECRET-1234567890"
    agent = wai.OpenAI("scripted-7b", base_url=server, api_key=secret)
    assert secret not in repr(agent)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=4, avg_turns=1)
    import json
    assert secret not in json.dumps(data.rows(), default=str)
    assert secret not in json.dumps(data.report(), default=str) and secret not in json.dumps(data.search, default=str)


def test_llm_situation_writer_writes_asks(ray_local, tools, server):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=f"vllm:writer@{server}", budget=12)
    rows = data.rows()
    assert len(rows) == 12
    assert any(r["writer_model"] == "writer" and r["arm"] == "llm_guided" for r in rows)
    assert not any(w.startswith("simulator=False wrote") for w in data.warnings)
    # the asks are written a round at a time (prefetch), not one blocking call per ask
    writer = data.search["writer"]
    assert writer["written"] >= 12 and writer["prefetched"] == writer["written"] and writer["errors"] == 0


def test_writer_failures_fall_back_to_the_template_and_are_reported(ray_local, tools, flaky_server):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=f"vllm:writer@{flaky_server}",
                        budget=40, seed=2)
    assert len(data.rows()) == 40
    errors = data.search["writer_errors"]
    assert errors["errors"] > 0 and sum(errors["by"].values()) == errors["errors"]
    assert any(r["writer_model"] == "template" for r in data.rows())
    assert any(w.startswith("the situation writer writer failed on") for w in data.warnings)


def test_grade_true_uses_the_llm_judge_in_the_loop(ray_local, tools, server, monkeypatch):
    monkeypatch.setenv("WHILEAI_JUDGE", f"vllm:judge@{server}")
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=12, grade=True)
    rows = data.rows()
    assert all(r["judge_status"] == "ok" and r["reward"] in (0, 1) for r in rows)
    assert all(r["judge_meta"]["model"] == "judge" for r in rows)
    monkeypatch.delenv("WHILEAI_JUDGE")
    with pytest.raises(RuntimeError, match="WHILEAI_JUDGE"):
        wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=12, grade=True)
    with pytest.raises(RuntimeError, match="WHILEAI_JUDGE"):
        wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=12, llm_grade=True)
