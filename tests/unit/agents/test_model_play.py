"""Multi-turn model play and the simulated user, against the scripted server over real HTTP."""
import asyncio

import openai
import pytest

from whileai_ray.agents.backends import OpenAI, parse_spec
from whileai_ray.agents.model_conversation import AgentReplyError, AgentTimeout, play_model_unit, turn_cap
from whileai_ray.agents.user_sim import SimulatedUser, resolve_patience
from whileai_ray.situations.situation import Situation
from whileai_ray.testing.server import start_server
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.testing.seeded_rows import TOOLS

META = RunMeta(run_id="r1", seed=0, tools=TOOLS, system_prompt="You help customers with orders.")


def make_unit(prompt="Where is my order ORD-6206?", index=0, seed=0):
    return Unit(run_id="r1", situation=Situation(scenario_id="sc-0000000000", prompt=prompt),
                rollout_index=index, seed=seed)


def world(tool, args):
    return {"status": "ok", "data": {"order_id": args.get("order_id"), "state": "shipped"}}


@pytest.fixture
def endpoint():
    servers = []

    def _start(**opts):
        host, port, stop = start_server(**opts)
        servers.append(stop)
        return parse_spec(f"vllm:scripted@{host}:{port}")

    yield _start
    for stop in servers:
        stop()


def play(backend, unit=None, meta=META, user=None, **kw):
    async def go():
        async with openai.AsyncOpenAI(base_url=backend.base_url, api_key="x", max_retries=0) as client:
            u = user(client) if callable(user) else user
            kw.setdefault("world_call", world)
            return await play_model_unit(client, backend, unit or make_unit(), meta, user=u, **kw)
    return asyncio.run(go())


def test_tool_call_then_summary(endpoint):
    backend = endpoint(ask_rate=0.0)
    t = play(backend, temperature=0.2, max_tokens=64)
    tool_step, text_step = t["steps"]
    assert tool_step["tool"] == "lookup_order"
    assert tool_step["arguments"] == {"order_id": "ORD-6206"}
    assert tool_step["result"]["data"]["state"] == "shipped"
    assert t["final_text"] == text_step["text"] == "lookup_order for ORD-6206: ok."
    assert t["finish_reason"] == "stop" and t["user_turns"] == 0 and not t["ended_on_question"]
    assert t["usage"] == {"input_tokens": tool_step["input_tokens"] + text_step["input_tokens"],
                          "output_tokens": tool_step["output_tokens"] + text_step["output_tokens"]}
    assert t["usage"]["input_tokens"] > 0
    assert t["sampling"] == {"temperature": 0.2, "max_tokens": 64, "model": "scripted"}
    assert "ended_by" not in t


def test_same_unit_same_trajectory_and_bare_tools(endpoint):
    backend = endpoint(ask_rate=0.3, seed=5)
    bare = RunMeta(run_id="r1", tools=[TOOLS[0]["function"]])
    units = [make_unit(f"check ORD-{i}", index=i) for i in range(6)]
    first = [play(backend, u, bare, user=SimulatedUser(seed=0, opening=u.prompt)) for u in units]
    again = [play(backend, u, bare, user=SimulatedUser(seed=0, opening=u.prompt)) for u in units]
    assert first == again
    assert all(t["steps"][-1].get("text") for t in first)


def test_question_goes_to_the_user_until_the_turn_cap(endpoint):
    backend = endpoint(ask_rate=1.0)         # the agent asks at every user turn
    unit = make_unit()
    cap = turn_cap(unit.seed, unit.draw_key(), 100, 3)
    t = play(backend, unit, user=SimulatedUser(patience="endless", opening=unit.prompt,
                                               unit_key=unit.draw_key()),
             avg_turns=100, max_turns=3)
    assert t["user_turns"] == cap - 1
    assert [("user" in s) for s in t["steps"]] == [False, True] * (cap - 1) + [False]
    assert all("ORD-6206" in s["user"] for s in t["steps"] if "user" in s)
    assert t["ended_on_question"] and "ended_by" not in t


def test_person_walks_away_at_the_second_question(endpoint):
    backend = endpoint(ask_rate=1.0)
    unit = make_unit()
    user = SimulatedUser(patience={"second": 1.0, "later": 1.0}, opening=unit.prompt)
    t = play(backend, unit, user=user, avg_turns=50)
    assert t["ended_by"] == "user_left" and t["ended_on_question"]
    assert t["user_turns"] == 1 and user.questions == 2


def test_no_user_or_one_turn_ends_on_the_question(endpoint):
    backend = endpoint(ask_rate=1.0)
    for kw in ({"user": None}, {"user": SimulatedUser(patience="endless"), "avg_turns": 1}):
        t = play(backend, **kw)
        assert len(t["steps"]) == 1 and t["ended_on_question"] and t["user_turns"] == 0


def test_user_model_answers_in_character_over_http(endpoint):
    backend = endpoint(ask_rate=0.0)
    unit = make_unit("my parcel never came, can you check it?")   # no id: the agent must ask
    opening = "my parcel never came, it is order ORD-9 I think"
    t = play(backend, unit, avg_turns=50,
             user=lambda client: SimulatedUser(backend, opening=opening, client=client))
    assert t["steps"][0]["text"].endswith("?")
    assert "ORD-9" in t["steps"][1]["user"]
    assert t["steps"][2]["arguments"] == {"order_id": "ORD-9"}


def test_logprobs_tokens(endpoint):
    backend = endpoint(ask_rate=0.0)
    t = play(backend, meta=RunMeta(run_id="r"), logprobs="tokens")
    step = t["steps"][-1]
    assert t["n_tokens"] == step["n_tokens"] == step["output_tokens"] == len(t["token_logprobs"])
    assert t["logprob"] == pytest.approx(sum(x["logprob"] for x in t["token_logprobs"]))


def test_truncated_reply_has_finish_length(endpoint):
    backend = endpoint()
    t = play(backend, make_unit("tell me everything about shipping times"), RunMeta(run_id="r"), max_tokens=2)
    assert t["finish_reason"] == "length" and t["steps"][-1]["truncated"]


def test_world_errors_and_async_worlds(endpoint):
    backend = endpoint(ask_rate=0.0)

    def broken(tool, args):
        raise KeyError("no such table")

    async def async_world(tool, args):
        return {"status": "ok", "data": {"via": "async"}}
    t = play(backend, world_call=broken)
    assert t["steps"][0]["result"]["status"] == "error" and "no such table" in t["steps"][0]["result"]["error"]
    t = play(backend, world_call=async_world)
    assert t["steps"][0]["result"]["data"] == {"via": "async"}


def test_http_errors_timeouts_and_bad_bodies_raise(endpoint):
    with pytest.raises(openai.InternalServerError):
        play(endpoint(error_rate=1.0))
    with pytest.raises(AgentTimeout):
        play(endpoint(latency_ms=600), timeout=0.2)
    with pytest.raises(AgentReplyError):
        play(endpoint(malformed_rate=1.0))


def test_connection_errors_are_retried_then_raised():
    host, port, stop = start_server()
    stop()
    with pytest.raises(openai.APIConnectionError):
        play(OpenAI("m", base_url=f"http://{host}:{port}/v1"))


# --- the simulated user's patience ---------------------------------------------------------

@pytest.mark.parametrize("level", ["normal", "short"])
def test_walk_away_shares_match_the_odds(level):
    odds = resolve_patience(level)
    second, later = [], []
    for i in range(2000):
        user = SimulatedUser(patience=level, seed=0, unit_key=("sc", i))
        assert not user.walks_away(0)
        second.append(user.walks_away(1))
        later.append(user.walks_away(2 + i % 4))
    assert abs(sum(second) / 2000 - odds["second"]) < 0.03
    assert abs(sum(later) / 2000 - odds["later"]) < 0.03


def test_walk_away_draw_is_unbiased_across_seeds():
    """Pooled over 20,000 questions per index the share sits within a point of the odds."""
    second = later = 0
    for seed in range(10):
        for i in range(2000):
            user = SimulatedUser(patience="normal", seed=seed, unit_key=("sc", i))
            second += user.walks_away(1)
            later += user.walks_away(3)
    assert abs(second / 20000 - 0.35) < 0.01 and abs(later / 20000 - 0.60) < 0.01


def test_endless_never_leaves_and_reply_is_deterministic():
    async def answers(seed):
        user = SimulatedUser(patience="endless", seed=seed, unit_key=("k",), opening="order ORD-42 is late")
        return [await user.reply("which one?") for _ in range(20)]
    a, b = asyncio.run(answers(1)), asyncio.run(answers(1))
    assert a == b and all(x and "ORD-42" in x for x in a)


def test_a_person_who_left_stays_gone():
    async def go():
        user = SimulatedUser(patience={"second": 1.0, "later": 0.0})
        return [await user.reply("?") for _ in range(4)]
    first, *rest = asyncio.run(go())
    assert first and rest == [None, None, None]


def test_bad_patience_is_refused():
    with pytest.raises(ValueError, match="patience must be one of"):
        resolve_patience("lazy")
    with pytest.raises(ValueError, match="probability"):
        resolve_patience({"second": 2})
    with pytest.raises(ValueError, match="client="):
        SimulatedUser(OpenAI("m", base_url="http://x/v1"))
