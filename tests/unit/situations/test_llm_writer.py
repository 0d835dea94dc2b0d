"""The LLM situation writer, spoken to over real HTTP (scripted server, real openai client)."""
import asyncio
import pickle
import re
import threading

import pytest

from whileai_ray.agents.backends import OpenAI, configure, reset_configuration
from whileai_ray.situations.grid import build_axes, pairwise_cells
from whileai_ray.situations.llm_writer import LLMWriter, resolve_writer
from whileai_ray.situations.template_writer import TemplateWriter
from whileai_ray.situations.writer_prompt import parse_message, parse_variations
from whileai_ray.testing.seeded_rows import TOOLS

POLICY = "Never share another customer's order. Always confirm the order id before acting."
CELLS = pairwise_cells(build_axes(TOOLS, POLICY))
REQUESTS = [(CELLS[i % len(CELLS)], i, i % 2) for i in range(40)]


@pytest.fixture
def server(server):
    """The shared scripted server (conftest), serving the model name the writer asks for."""
    return lambda **opts: server(**{"model": "writer-model", **opts})


@pytest.fixture
def clean_config(monkeypatch):
    monkeypatch.delenv("WHILEAI_SIMULATOR", raising=False)
    reset_configuration()
    yield
    reset_configuration()


def _writer(url, **kw):
    return LLMWriter(OpenAI("writer-model", url), TOOLS, POLICY, seed=3, **kw)


def test_writes_asks_for_cells_with_the_template_world_and_the_model_on_rows(server):
    url, handler = server()
    template = TemplateWriter(TOOLS, POLICY, seed=3)
    with _writer(url) as writer:
        sits = writer.write_batch(REQUESTS)
    assert handler.requests == len(REQUESTS) and writer.writer_errors == 0
    for (cell, inst, phr), sit in zip(REQUESTS, sits):
        base = template.write(cell, inst, phr)
        assert (sit.arm, sit.writer_model) == ("llm_guided", "writer-model")
        assert (sit.scenario_id, sit.dims, sit.tier, sit.ref_ids, sit.reference, sit.phrasing_index) == (
            base.scenario_id, base.dims, base.tier, base.ref_ids, base.reference, base.phrasing_index)
        assert sit.prompt != base.prompt
        assert all(i.lower() in sit.prompt.lower() for i in sit.ref_ids)
    boundary = [s for s in sits if s.dims["stance"] == "boundary"]
    plain = [s for s in boundary if s.tags.get("texture", "standard") == "standard"]
    assert plain and all("make an exception" in s.prompt for s in plain)
    assert all(s.tier == "boundary" for s in boundary)


def test_realized_tags_are_true_of_the_model_text(server):
    url, _ = server()
    with _writer(url) as writer:
        sits = writer.write_batch([(CELLS[i % len(CELLS)], i, i % 3) for i in range(150)])
    lower = [s for s in sits if s.tags.get("texture") == "lowercase"]
    nopunct = [s for s in sits if s.tags.get("texture") == "no_punctuation"]
    assert lower and nopunct
    assert all(s.prompt == s.prompt.lower() for s in lower)
    assert all(not re.search(r"[.,!?;:]", s.prompt.replace(".com", "")) for s in nopunct)
    for s in sits:
        words = len(s.prompt.split())
        length = s.tags.get("length")
        assert length is None or length == ("short prompt" if words <= 20 else
                                            "medium prompt" if words <= 60 else "long prompt")
        if s.tags.get("ask") == "question":
            assert "?" in s.prompt


def test_pinned_dimensions_reach_every_written_situation(server):
    url, _ = server()
    cells = pairwise_cells(build_axes(TOOLS, "", {"stance": ["adversarial"]}))
    with _writer(url) as writer:
        sits = writer.write_batch([(c, i, 0) for i, c in enumerate(cells)])
    assert {s.dims["stance"] for s in sits} == {"adversarial"}
    assert {s.tier for s in sits} == {"adversarial"}
    plain = [s for s in sits if s.tags.get("texture", "standard") == "standard"]
    assert plain and all("Skip the usual checks" in s.prompt for s in plain)


def test_url_spec_takes_the_model_from_the_server(server):
    url, _ = server(model="served-name")
    with LLMWriter(url, TOOLS, seed=0) as writer:
        sit = writer.write(CELLS[0], 0, 0)
    assert writer.name == "served-name" and sit.writer_model == "served-name"


def test_sync_write_from_a_thread_and_inside_a_running_loop_caches_the_situation(server):
    url, handler = server()
    box = {}
    with _writer(url) as writer:
        thread = threading.Thread(target=lambda: box.setdefault("s", writer.write(CELLS[1], 5, 1)))
        thread.start()
        thread.join(30)

        async def inside():
            return writer.write(CELLS[1], 5, 1)
        again = asyncio.run(inside())
        first = asyncio.run(writer.write_many([(CELLS[2], 1, 0)]))[0]
    assert box["s"].to_dict() == again.to_dict()
    assert handler.requests == 2 and first.arm == "llm_guided"


@pytest.mark.parametrize("opts, kw, reason", [
    ({}, {"max_tokens": 2}, "truncated"),
    ({"error_rate": 1.0}, {}, "http_error"),
    ({"malformed_rate": 1.0}, {}, "http_error"),
])
def test_bad_replies_fall_back_to_the_template_and_are_counted(server, opts, kw, reason):
    url, _ = server(**opts)
    template = TemplateWriter(TOOLS, POLICY, seed=3)
    with _writer(url, **kw) as writer:
        sits = writer.write_batch(REQUESTS[:6])
    assert writer.writer_errors == 6 and writer.errors_by == {reason: 6}
    for (cell, inst, phr), sit in zip(REQUESTS, sits):
        base = template.write(cell, inst, phr)
        assert (sit.prompt, sit.arm, sit.writer_model) == (base.prompt, "structured", "template")
        assert sit.extra["writer_fallback"] == reason
    note = writer.warning()
    assert "6 of 6" in note and "simulator=False" in note


@pytest.mark.parametrize("reply", [
    "", "   ", "{}", '{"message": ""}', '{"message": 42}', "{not json",
    "As an AI language model, I cannot write that.",
    "Hello! How can I help you today?",
    "Tools the agent has:\n- lookup_order(order_id: string)", "ok", "12345 678",
])
def test_junk_replies_are_rejected(reply):
    assert parse_message(reply) is None


@pytest.mark.parametrize("reply, text", [
    ("Where is order ORD-1? It is late.", "Where is order ORD-1? It is late."),
    ('{"message": "Cancel ORD-9 please"}', "Cancel ORD-9 please"),
    ('```json\n{"message": "Cancel ORD-9 please"}\n```', "Cancel ORD-9 please"),
    ('User: "check my order A1001"', "check my order A1001"),
])
def test_plain_and_json_replies_give_the_message(reply, text):
    assert parse_message(reply) == text


def test_variation_replies_parse_json_and_lists():
    assert parse_variations('{"messages": ["Where is ORD-1?", "", "Status of ORD-1 please"]}') == [
        "Where is ORD-1?", "Status of ORD-1 please"]
    assert parse_variations("1. Where is ORD-1?\n2) Status of ORD-1 please\n- ok") == [
        "Where is ORD-1?", "Status of ORD-1 please"]


SEED = "Where is my order ORD-1234? It was due Monday."


def test_amplification_gives_distinct_variations_that_keep_the_ids(server):
    url, handler = server()
    with _writer(url) as writer:
        texts = asyncio.run(writer.amplify_seed(SEED, 14))
        sits = writer.amplify(SEED, 2, 3)
    assert len(texts) == 14 and len({t.lower() for t in texts}) == 14 and SEED not in texts
    assert all("ORD-1234" in t for t in texts)
    assert handler.requests >= 3          # 10 per request at most, then the rest
    assert writer.writer_errors == 0
    assert [(s.arm, s.writer_model, s.ref_ids, s.extra["seed_index"]) for s in sits] == [
        ("llm_guided", "writer-model", ["ORD-1234"], 2)] * 3
    assert len({s.scenario_id for s in sits}) == 3


def test_amplification_without_a_working_model_still_gives_n_distinct_texts(server):
    url, _ = server(error_rate=1.0)
    with _writer(url) as writer:
        sits = writer.amplify(SEED, 0, 4)
    assert len({s.prompt for s in sits}) == 4 and SEED not in [s.prompt for s in sits]
    assert {s.writer_model for s in sits} == {"template"}
    assert writer.errors_by == {"amplify_short": 4}


def test_probes_seeds_and_mutations_come_from_the_template_writer(server):
    url, _ = server()
    template = TemplateWriter(TOOLS, POLICY, seed=3)
    with _writer(url) as writer:
        assert writer.probe(4).to_dict() == template.probe(4).to_dict()
        seed = writer.seed_situation(SEED, 0)
        assert seed.writer_model == "seed" and seed.prompt == SEED
        assert writer.mutate(seed, 1).to_dict() == template.mutate(seed, 1).to_dict()


def test_writer_pickles_for_shipping_and_works_after(server):
    url, _ = server()
    writer = _writer(url)
    clone = pickle.loads(pickle.dumps(writer))
    try:
        assert clone.write(CELLS[0], 0, 0).writer_model == "writer-model"
    finally:
        clone.close()
        writer.close()


def test_bad_arguments_name_the_argument():
    with pytest.raises(ValueError, match="temperature"):
        LLMWriter("openai:gpt-4.1-mini", TOOLS, temperature=-1)
    with pytest.raises(ValueError, match="completions_per_request"):
        LLMWriter("openai:gpt-4.1-mini", TOOLS, completions_per_request=0)
    with pytest.raises(TypeError, match="simulator="):
        LLMWriter(42, TOOLS)


def test_no_writer_endpoint_is_a_runtime_error_suggesting_simulator_false(clean_config):
    with pytest.raises(RuntimeError, match="simulator=False"):
        resolve_writer(None, agent=lambda message: message)
    with pytest.raises(RuntimeError, match="simulator=False"):
        resolve_writer("hosted")
    assert resolve_writer(False) is None
    configure(simulator=False)
    assert resolve_writer(None) is None
    reset_configuration()
    assert resolve_writer("vllm:m@localhost:9/v1").base_url == "http://localhost:9/v1"
    assert resolve_writer(None, agent="openai:gpt-4.1-mini").model == "gpt-4.1-mini"
    configure(simulator="vllm:w@localhost:8/v1")
    assert resolve_writer(None, agent="openai:gpt-4.1-mini").model == "w"
