"""Sticky routing across model replicas: same unit -> same server, even spread, real HTTP play."""
import asyncio
import pickle
import subprocess
import sys
from collections import Counter

import pytest

from whileai_ray.agents.backends import OpenAI
from whileai_ray.agents.model_settings import ModelSettings
from whileai_ray.agents.play_model import play_model_row
from whileai_ray.agents.routing import EndpointClients, MultiEndpoint, StickyRouter, jump_hash
from whileai_ray.situations.situation import Situation
from whileai_ray.testing.server import start_server
from whileai_ray.core.unit import RunMeta, Unit
from whileai_ray.testing.seeded_rows import TOOLS

URLS = ["http://127.0.0.2:8001/v1", "http://127.0.0.2:8002/v1", "http://127.0.0.2:8003/v1"]


def unit(i, rollout=0, attempt=0, prompt=None):
    sit = Situation(scenario_id=f"sc-{i:010d}", prompt=prompt or f"Where is my order ORD-{1000 + i}?")
    return Unit(run_id="r1", situation=sit, rollout_index=rollout, attempt=attempt, seed=0)


def test_same_unit_same_server_across_turns_attempts_and_processes():
    router = StickyRouter(URLS)
    picks = [router.url_for(unit(i)) for i in range(50)]
    assert picks == [StickyRouter(URLS).url_for(unit(i)) for i in range(50)]
    assert [router.url_for(unit(i, attempt=3)) for i in range(50)] == picks
    # a fresh interpreter (different hash salt) picks the same servers
    code = ("from tests.unit.agents.test_routing import unit, URLS; from whileai_ray.agents.routing import StickyRouter;"
            "r = StickyRouter(URLS); print(','.join(r.url_for(unit(i)) for i in range(50)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().split(",") == picks
    # pickled (as it travels to a rollout actor) it still routes the same way
    clone = pickle.loads(pickle.dumps(MultiEndpoint("m", URLS)))
    assert [clone.for_unit(unit(i)).base_url for i in range(50)] == picks


def test_load_spreads_evenly_and_a_new_replica_moves_few_units():
    units = [unit(i, rollout=r) for i in range(500) for r in range(4)]
    three = StickyRouter(URLS)
    counts = Counter(three.index_for(u) for u in units)
    assert sorted(counts) == [0, 1, 2]
    assert all(abs(c - 2000 / 3) < 120 for c in counts.values()), counts
    four = StickyRouter(URLS + ["http://127.0.0.2:8004/v1"])
    moved = sum(three.index_for(u) != four.index_for(u) for u in units)
    assert 0.15 < moved / len(units) < 0.35          # about 1/4 move, all of them to the new replica
    assert all(four.index_for(u) == 3 for u in units if three.index_for(u) != four.index_for(u))


def test_situation_affinity_keeps_repeats_of_a_prompt_together():
    router = StickyRouter(URLS, affinity="situation")
    for i in range(30):
        assert len({router.url_for(unit(i, rollout=r)) for r in range(8)}) == 1
    rollout = StickyRouter(URLS)
    assert any(len({rollout.url_for(unit(i, rollout=r)) for r in range(8)}) > 1 for i in range(30))


def test_jump_hash_stays_in_range():
    assert {jump_hash(k, 1) for k in range(100)} == {0}
    assert {jump_hash(k * 7919, 5) for k in range(1000)} == set(range(5))


def test_bad_inputs_say_what_to_pass():
    with pytest.raises(ValueError, match="at least one base URL"):
        StickyRouter([])
    with pytest.raises(ValueError, match="http://"):
        MultiEndpoint("m", ["127.0.0.2:8000/v1"])
    with pytest.raises(ValueError, match="twice"):
        MultiEndpoint("m", [URLS[0], URLS[0] + "/"])
    with pytest.raises(ValueError, match="affinity"):
        MultiEndpoint("m", URLS, affinity="random")
    with pytest.raises(TypeError, match="list of base URLs"):
        StickyRouter(8000)
    with pytest.raises(ValueError, match="served model name"):
        MultiEndpoint("  ", URLS)


def test_multi_endpoint_reads_like_a_backend(monkeypatch):
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    ep = MultiEndpoint("Qwen/Qwen2.5-0.5B-Instruct", URLS)
    assert (ep.model, ep.name, ep.api_key, ep.base_url) == ("Qwen/Qwen2.5-0.5B-Instruct",
                                                            "Qwen/Qwen2.5-0.5B-Instruct", "EMPTY", URLS[0])
    chosen = ep.for_unit(unit(7))
    assert isinstance(chosen, OpenAI) and chosen.base_url in URLS and chosen.model == ep.model
    assert ep == MultiEndpoint("Qwen/Qwen2.5-0.5B-Instruct", URLS) and ep != MultiEndpoint("other", URLS)
    monkeypatch.setenv("VLLM_API_KEY", "sk-secret")
    assert ep.api_key == "sk-secret" and "sk-secret" not in repr(ep)
    assert MultiEndpoint(None, URLS).name == URLS[0]


@pytest.fixture
def two_servers():
    a, b = start_server(ask_rate=0.9), start_server(ask_rate=0.9)
    yield [f"http://{h}:{p}/v1" for h, p, _ in (a, b)], [a[2].server, b[2].server]
    a[2](), b[2]()


def test_preflight_fills_the_model_and_names_a_dead_replica(two_servers):
    urls, _ = two_servers
    resolved = asyncio.run(MultiEndpoint(None, urls).preflight())
    assert resolved.model == "scripted" and resolved.base_urls == tuple(urls)
    with pytest.raises(RuntimeError, match=r"replica 1 of 2 \(http://127.0.0.1:9/v1\)"):
        asyncio.run(MultiEndpoint("scripted", [urls[0], "http://127.0.0.1:9/v1"]).preflight(timeout=2))


def test_every_turn_and_the_simulated_user_hit_the_routed_server(two_servers):
    urls, handlers = two_servers
    backend = MultiEndpoint("scripted", urls)
    settings = ModelSettings(backend, user_backend=backend, max_turns=4)
    meta = RunMeta(run_id="r1", seed=0, tools=TOOLS, system_prompt="You help customers with orders.")

    async def go():
        clients = EndpointClients(backend, backend)
        seen, multi_turn = Counter(), 0
        for i in range(16):
            u = unit(i, prompt="I need help with something.") if i % 2 else unit(i)
            client, user_client = clients.for_unit(u)
            assert client is user_client
            before = [h.requests for h in handlers]
            row = await play_model_row(client, user_client, settings, u, meta)
            assert not row.get("_error"), row.get("_error")
            delta = [h.requests - b for h, b in zip(handlers, before)]
            routed = urls.index(backend.for_unit(u).base_url)
            assert delta[1 - routed] == 0 and delta[routed] >= 1
            multi_turn += delta[routed] > 1
            seen[routed] += 1
        assert clients.open_clients == 2
        return seen, multi_turn

    seen, multi_turn = asyncio.run(go())
    assert set(seen) == {0, 1} and multi_turn >= 4
