"""The response cache (agents/response_cache.py, http_transport.CachingTransport): its key, its
SQLite store shared by processes, a broken file treated as a miss, and the counts; model calls
counted by the project's scripted OpenAI-compatible server (real HTTP, real files)."""
import asyncio
import json
import logging
import multiprocessing
import sqlite3
import subprocess
import sys

import pytest

from whileai_ray.agents import response_cache as rc
from whileai_ray.agents.backends import OpenAI, make_client
from whileai_ray.agents.chat_call import chat_completion
from whileai_ray.config.advanced import validate_advanced
from whileai_ray.result.data import SimulationData
from whileai_ray.score.judges.llm_judge import Judge
from whileai_ray.testing.seeded_rows import TOOLS

URL = "http://127.0.0.1:8000/v1"
BODY = {"model": "m", "messages": [{"role": "user", "content": "Where is ORD-1?"}], "temperature": 0,
        "max_tokens": 64, "seed": 7, "tools": [{"type": "function", "function": {"name": "lookup_order"}}]}


pytestmark = pytest.mark.usefixtures("clean_model_env")   # (tests/unit/conftest.py)


# ---- the key ------------------------------------------------------------------------------------
def test_the_same_request_has_the_same_key_in_another_process():
    code = ("import json, sys; from whileai_ray.agents.response_cache import request_key; "
            "print(request_key(sys.argv[1], json.loads(sys.argv[2])))")
    reordered = json.dumps(dict(reversed(list(BODY.items()))))      # key order does not matter
    out = subprocess.run([sys.executable, "-c", code, URL, reordered], capture_output=True, text=True,
                         timeout=60, check=True).stdout.strip()
    assert out == rc.request_key(URL, BODY) and len(out) == 64


@pytest.mark.parametrize("change", [
    {"messages": [{"role": "user", "content": "Where is ORD-2?"}]},
    {"temperature": 0.7}, {"max_tokens": 65}, {"seed": 8}, {"model": "other"},
    {"tools": [{"type": "function", "function": {"name": "cancel_order"}}]},
    {"response_format": {"type": "json_object"}},
])
def test_any_change_in_the_request_is_another_key(change):
    assert rc.request_key(URL, {**BODY, **change}) != rc.request_key(URL, BODY)
    assert rc.request_key("http://127.0.0.1:8001/v1", BODY) != rc.request_key(URL, BODY)


def test_secrets_in_the_url_are_not_part_of_the_key():
    assert rc.public_url("http://user:sekrit@127.0.0.1:8000/v1/?key=abc") == "http://127.0.0.1:8000/v1"
    assert rc.request_key("http://user:sekrit@127.0.0.1:8000/v1?key=abc", BODY) == rc.request_key(URL, BODY)


def test_agents_are_cached_at_temperature_0_only_unless_asked():
    assert rc.cacheable("agent", BODY)
    assert not rc.cacheable("agent", {**BODY, "temperature": 0.7})
    assert not rc.cacheable("agent", {k: v for k, v in BODY.items() if k != "temperature"})
    assert rc.cacheable("agent", {**BODY, "temperature": 0.7}, agent_sampled=True)
    for role in ("judge", "writer", "user"):
        assert rc.cacheable(role, {**BODY, "temperature": 0.9})
    assert not rc.cacheable("judge", {**BODY, "stream": True})


# ---- the store ----------------------------------------------------------------------------------
def test_put_and_get_round_trip_and_the_first_answer_stays(tmp_path):
    store = rc.CacheStore(str(tmp_path / "c" / "responses.sqlite"))
    reply = {"choices": [{"message": {"role": "assistant", "content": "shipped ✓"}}], "usage": {"prompt_tokens": 3}}
    key = rc.request_key(URL, BODY)
    assert store.get(key) is None
    assert store.put(key, reply)
    assert store.put(key, {"choices": [{"message": {"content": "another"}}]})     # INSERT OR IGNORE
    assert rc.CacheStore(store.path).get(key) == reply and len(store) == 1
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _writer(path: str, worker: int, n: int) -> None:
    store = rc.CacheStore(path)
    for i in range(n):
        shared = i % 2 == 0              # half the keys every worker writes, half its own
        key = rc.request_key(URL, {**BODY, "i": i} if shared else {**BODY, "i": i, "w": worker})
        reply = {"choices": [{"message": {"content": f"w{worker} i{i} " + "x" * (i * 37 % 2000)}}]}
        assert store.put(key, reply)
        assert store.get(key) is not None


def test_four_processes_write_one_cache_with_no_torn_entry(tmp_path):
    path, n = str(tmp_path / "responses.sqlite"), 150
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, n)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT key, reply FROM responses").fetchall()
    assert len(rows) == n // 2 + 4 * (n // 2)
    store = rc.CacheStore(path)
    for key, _ in rows:                  # every entry parses and matches its digest
        reply = store.get(key)
        assert reply is not None and reply["choices"][0]["message"]["content"].startswith("w")


def test_a_garbage_file_is_a_miss_with_a_warning(tmp_path, caplog):
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"this is not a database, just garbage " * 200)
    store = rc.CacheStore(str(path))
    with caplog.at_level(logging.WARNING, logger="whileai.cache"):
        assert store.get(rc.request_key(URL, BODY)) is None
        assert store.put(rc.request_key(URL, BODY), {"choices": [{}]}) is False
    assert "treated as a miss" in caplog.text and store.broken


def test_a_tampered_entry_is_a_miss_with_a_warning(tmp_path, caplog):
    store = rc.CacheStore(str(tmp_path / "responses.sqlite"))
    key = rc.request_key(URL, BODY)
    store.put(key, {"choices": [{"message": {"content": "ok"}}]})
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE responses SET reply = ? WHERE key = ?", ('{"choices": [{"mess', key))
    with caplog.at_level(logging.WARNING, logger="whileai.cache"):
        assert rc.CacheStore(store.path).get(key) is None
    assert "unreadable" in caplog.text


# ---- through the transport: hits and misses ------------------------------------------------------
def test_a_repeated_request_is_answered_from_the_cache_and_counted(server, tmp_path):
    url, handler = server()
    spec = rc.CacheSpec(str(tmp_path / "responses.sqlite"))
    body = {"model": "scripted", "messages": [{"role": "user", "content": "Where is ORD-1?"}], "temperature": 0,
            "max_tokens": 64}

    async def twice(request):
        async with make_client(OpenAI("scripted", url, "x"), timeout=30, cache=spec) as client:
            with rc.unit_tally() as tally:
                first = await chat_completion(client, request, 30)
                second = await chat_completion(client, request, 30)
        return first, second, tally

    before = rc.STATS.snapshot(spec.path)
    first, second, tally = asyncio.run(twice(body))
    assert first == second and handler.requests == 1
    assert tally == {"agent": {"hits": 1, "misses": 1}}
    assert rc.since(spec.path, before) == {"agent": {"hits": 1, "misses": 1}}
    sampled = {**body, "temperature": 0.7}      # an agent at temperature > 0: not cached by default
    asyncio.run(twice(sampled))
    assert handler.requests == 3


@pytest.mark.parametrize("failure", [{"error_rate": 1.0}, {"malformed_rate": 1.0}])
def test_an_error_or_a_malformed_reply_is_never_kept(server, tmp_path, failure):
    import openai
    from whileai_ray.agents.chat_call import AgentReplyError
    url, handler = server(**failure)
    spec = rc.CacheSpec(str(tmp_path / "responses.sqlite"))
    body = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}

    async def call():
        async with make_client(OpenAI("scripted", url, "x"), timeout=30, cache=spec) as client:
            for _ in range(2):
                with pytest.raises((openai.APIStatusError, AgentReplyError)):
                    await chat_completion(client, body, 30)
    asyncio.run(call())
    assert handler.requests == 2 and len(rc.CacheStore(spec.path)) == 0


def test_a_broken_cache_file_still_calls_the_model(server, tmp_path, caplog):
    url, handler = server()
    path = tmp_path / "responses.sqlite"
    path.write_bytes(b"\x00garbage" * 500)
    judge = Judge(base_url=url, cache=str(path))
    row = {"prompt": "Where is ORD-1?", "steps": [], "final_text": "It shipped.", "lineage": {}}
    with caplog.at_level(logging.WARNING, logger="whileai.cache"):
        assert judge(row)["reward"] in (0, 1) and judge(row)["reward"] in (0, 1)
    assert handler.requests == 3            # /models, then two verdicts: nothing cached, nothing lost
    assert "treated as a miss" in caplog.text


# ---- the judge: a regrade costs no model call ----------------------------------------------------
def _rows():
    return [{"prompt": f"Where is order ORD-{i}?", "scenario_id": f"sc-{i}", "rollout_index": 0,
             "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                        "result": {"status": "ok", "data": {"status": "shipped"}}}],
             "final_text": f"Order ORD-{i} has shipped." if i % 2 else "Sorry, I cannot reach it.",
             "lineage": {}} for i in range(6)]


def test_a_second_grade_with_an_llm_judge_makes_no_model_call(server, tmp_path):
    url, handler = server()
    cache = str(tmp_path / "responses.sqlite")
    data = SimulationData(trajectories=_rows(), system_prompt="You help with orders.", tools=TOOLS)
    first = data.grade(judge=Judge("Report the status.", base_url=url, cache=cache))
    calls = handler.requests
    assert calls >= 6 and first.cache["misses"] == 6 and first.cache["hits"] == 0
    second = data.grade(judge=Judge("Report the status.", base_url=url, cache=cache))
    assert handler.requests == calls + 1          # only the judge's /models check: no model call
    assert second.cache == {"path": first.cache["path"], "hits": 6, "misses": 0,
                            "by_role": {"judge": {"hits": 6, "misses": 0}}, "agent_sampled": False}
    assert [r["reward"] for r in second.rows] == [r["reward"] for r in first.rows]
    assert [r["reason"] for r in second.rows] == [r["reason"] for r in first.rows]
    # a run made with advanced={"cache": ...}: its regrade reads the same cache with a plain judge
    data.coverage["cache"] = {"path": first.cache["path"], "agent_sampled": False}
    third = data.grade(judge=Judge("Report the status.", base_url=url))
    assert handler.requests == calls + 2 and third.cache["hits"] == 6


def test_wai_grade_in_place_reads_the_cache_and_reports_it(server, tmp_path):
    import whileai_ray as wai
    url, handler = server()
    cache = str(tmp_path / "responses.sqlite")
    first = wai.grade(_rows(), spec=Judge("Report the status.", base_url=url, cache=cache))
    calls = handler.requests
    assert first["cache"]["misses"] == 6
    rows = _rows()
    again = wai.grade(rows, spec=Judge("Report the status.", base_url=url, cache=cache))
    assert handler.requests == calls + 1 and again["cache"]["hits"] == 6 and again["cache"]["misses"] == 0
    assert (again["n0"], again["n1"]) == (first["n0"], first["n1"]) and all("reward" in r for r in rows)
    reports = []
    for _ in range(2):      # a run made with the cache: data.grade_llm reads it with no judge cache=
        data = SimulationData(trajectories=_rows(), system_prompt="You help with orders.", tools=TOOLS)
        data.coverage["cache"] = {"path": first["cache"]["path"], "agent_sampled": False}
        reports.append(data.grade_llm(base_url=url, rubric="Report the status."))
    assert [r["cache"]["hits"] for r in reports] == [0, 6] and [r["cache"]["misses"] for r in reports] == [6, 0]
    assert handler.requests == calls + 1 + 7 + 1      # /models each time, and the first run's 6 verdicts


def test_the_metrics_count_the_rows_cache_lookups():
    from whileai_ray.runtime.metrics.recorder import batch_counts
    rows = [{"_cache": {"agent": {"hits": 2, "misses": 1}, "user": {"hits": 0, "misses": 1}}},
            {"_cache": {"agent": {"hits": 1, "misses": 0}}}, {}]
    assert batch_counts(rows)["cache"] == {("agent", "hit"): 3, ("agent", "miss"): 1, ("user", "miss"): 1}


def test_the_sync_judge_reads_the_cache_too(server, tmp_path):
    url, handler = server()
    cache = str(tmp_path / "responses.sqlite")
    row = _rows()[1]
    first = Judge(base_url=url, cache=cache)(row)
    calls = handler.requests
    again = Judge(base_url=url, cache=cache)(row)
    assert handler.requests == calls + 1          # /models only
    assert (first["judge_meta"].pop("cache"), again["judge_meta"].pop("cache")) == ("miss", "hit")
    assert again == first
    assert "cache" not in Judge(base_url=url)(row)["judge_meta"]      # no cache, no note


def test_the_llm_writer_reads_the_cache(server, tmp_path):
    from whileai_ray.situations.grid import build_axes, pairwise_cells
    from whileai_ray.situations.llm_writer import LLMWriter
    url, handler = server(model="writer-model")
    policy = "Never share another customer's order."
    cells = pairwise_cells(build_axes(TOOLS, policy))
    requests = [(cells[i % len(cells)], i, 0) for i in range(8)]
    spec = rc.CacheSpec(str(tmp_path / "responses.sqlite"))

    def write():
        with LLMWriter(OpenAI("writer-model", url), TOOLS, policy, seed=3) as writer:
            writer.response_cache = spec
            return [s.prompt for s in writer.write_batch(requests)]
    before = rc.STATS.snapshot(spec.path)
    first = write()
    calls = handler.requests
    assert write() == first and handler.requests == calls       # at temperature 0.9 too: no call
    assert rc.since(spec.path, before) == {"writer": {"hits": 8, "misses": 8}}


# ---- the knob -----------------------------------------------------------------------------------
def test_the_advanced_knobs_are_checked(tmp_path):
    checked = validate_advanced({"cache": str(tmp_path / "c.sqlite"), "cache_agent_sampled": True})
    assert checked.cache == str(tmp_path / "c.sqlite") and checked.cache_agent_sampled is True
    assert rc.cache_spec(checked.cache, checked.cache_agent_sampled) == rc.CacheSpec(str(tmp_path / "c.sqlite"), True)
    assert rc.cache_spec(validate_advanced({}).cache) is None
    with pytest.raises(TypeError, match="did you mean 'cache'"):
        validate_advanced({"cahce": "x.sqlite"})
    with pytest.raises(ValueError, match="needs advanced\\['cache'\\]"):
        validate_advanced({"cache_agent_sampled": True})
    with pytest.raises(ValueError, match="is a folder"):
        validate_advanced({"cache": str(tmp_path)})
    with pytest.raises(ValueError, match="file path"):
        validate_advanced({"cache": 3})
    with pytest.raises(ValueError, match="Judge\\(cache=...\\)"):
        Judge(base_url=URL, cache=str(tmp_path))
