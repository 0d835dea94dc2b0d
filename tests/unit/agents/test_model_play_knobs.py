"""tool_choice and min_user_turns in model play, seen on the wire (scripted server, real HTTP)."""
import asyncio
import json

import httpx
import openai
import pytest

from whileai_ray.agents.backends import parse_spec
from whileai_ray.agents.model_conversation import play_model_unit
from whileai_ray.agents.user_sim import SimulatedUser
from whileai_ray.config.advanced import validate_advanced
from whileai_ray.situations.situation import Situation
from whileai_ray.testing.server import start_server
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.testing.seeded_rows import TOOLS

META = RunMeta(run_id="r1", seed=0, tools=TOOLS, system_prompt="You help customers with orders.")
FORCE = {"type": "function", "function": {"name": "lookup_order"}}


def world(tool, args):
    return {"status": "ok", "data": {"order_id": args.get("order_id"), "state": "shipped"}}


def play_and_record(ask_rate, prompt="Where is my order ORD-6206?", **kw):
    host, port, stop = start_server(port=0, ask_rate=ask_rate)
    backend = parse_spec(f"vllm:scripted@{host}:{port}")
    bodies = []

    async def record(request):
        if request.url.path.endswith("/chat/completions"):
            bodies.append(json.loads(request.content))

    async def go():
        async with httpx.AsyncClient(event_hooks={"request": [record]}) as http, \
                openai.AsyncOpenAI(base_url=backend.base_url, api_key="x", max_retries=0,
                                   http_client=http) as client:
            unit = Unit(run_id="r1", situation=Situation(scenario_id="sc-0000000000", prompt=prompt),
                        rollout_index=0, seed=0)
            user = SimulatedUser(seed=0, opening=prompt, patience="endless")
            return await play_model_unit(client, backend, unit, META, world_call=world, user=user, **kw)
    try:
        return asyncio.run(go()), bodies
    finally:
        stop()


def test_tool_choice_is_sent_on_the_first_request_of_a_turn_only():
    traj, bodies = play_and_record(0.0, tool_choice=FORCE, max_turns=1)
    assert [s.get("tool") for s in traj["steps"]] == ["lookup_order", None]
    assert bodies[0]["tool_choice"] == FORCE
    assert "tool_choice" not in bodies[1]
    # the assistant's tool-call message carries "" (llama.cpp rejects null content)
    assert bodies[1]["messages"][2]["content"] == "" and bodies[1]["messages"][2]["tool_calls"]


def test_no_tool_choice_leaves_the_field_out():
    _, bodies = play_and_record(0.0, max_turns=1)
    assert bodies and all("tool_choice" not in b for b in bodies)


def test_min_user_turns_keeps_the_person_talking_after_a_statement():
    traj, _ = play_and_record(0.0, min_user_turns=3, max_turns=3, avg_turns=1)
    users = [s["user"] for s in traj["steps"] if "user" in s]
    assert len(users) == 2 and traj["user_turns"] == 2
    assert not traj["ended_on_question"]
    short, _ = play_and_record(0.0, max_turns=3, avg_turns=1)
    assert short["user_turns"] == 0


def test_tool_choice_knob_validation():
    assert validate_advanced({"tool_choice": "lookup_order"}).tool_choice == FORCE
    assert validate_advanced({"tool_choice": "auto"}).tool_choice == "auto"
    assert validate_advanced({"tool_choice": FORCE}).tool_choice == FORCE
    with pytest.raises(ValueError, match=r"advanced\['tool_choice'\]"):
        validate_advanced({"tool_choice": {"type": "function"}})
