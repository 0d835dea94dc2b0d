"""The agent's fingerprint (``core/code_identity.py``) and the resume check built on it
(``store/checkpoint/fingerprint.py``), issue 28 item 7.

Decided and pinned here: whitespace, comments and line moves do not change a digest; a changed
body, closure constant, default or class-form argument does; a cache a closure fills, an API
key, a URL's port or userinfo do not. Digests are equal in two fresh interpreters (different
hash seeds), and a header written before the run record resumes.
"""
import functools
import json
import os
import subprocess
import sys
import textwrap

import openai

from whileai_ray.core.code_identity import SCHEME, code_digest, data_digest, redact_url
from whileai_ray.store.checkpoint.fingerprint import (GRADER_ONLY, RUN_KEY, fingerprint_mismatch, mismatch_message, with_grader,
                                          with_run_record)

AGENT_FILE = '''
import openai
client = openai.OpenAI(base_url="http://127.0.0.1:{port}/v1", api_key="{key}")
MODEL = "gpt-4.1-mini"
def helper(text):
    return text.strip(){extra}
def agent(message, temperature=0.2):
    cache = {{}}
    r = client.chat.completions.create(model=MODEL, messages=[{{"role": "user", "content": helper(message)}}])
    return {{"steps": [], "final_text": r.choices[0].message.content}}
'''
DRIVER = '''
import json, sys
from whileai_ray.core.code_identity import code_digest
out = []
for path in sys.argv[1:]:
    ns = {"__name__": "__main__"}
    exec(compile(open(path).read(), path, "exec"), ns)
    out.append(code_digest(ns["agent"]))
print(json.dumps(out))
'''


def digests_in_fresh_process(tmp_path, sources, hash_seed):
    """The agent digest of each source, worked out in a new interpreter with its own hash seed."""
    paths = []
    for i, source in enumerate(sources):
        path = tmp_path / f"agent_{i}.py"
        path.write_text(source)
        paths.append(str(path))
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    out = subprocess.run([sys.executable, str(driver), *paths], capture_output=True, text=True, timeout=120,
                         env=env, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_closure_over_an_openai_client_has_one_digest_in_every_process(tmp_path):
    base = AGENT_FILE.format(port=8000, key="sk-one", extra="")
    sources = [
        base,
        # whitespace, comments, blank lines: the same agent
        "\n\n# a comment\n" + base.replace("def helper(text):", "def helper(text):   # strip it"),
        AGENT_FILE.format(port=9001, key="sk-two", extra=""),           # a rotated key, another port
        AGENT_FILE.format(port=8000, key="sk-one", extra=".lower()"),   # the helper it calls changed
        base.replace('"gpt-4.1-mini"', '"gpt-5"'),                     # a global constant changed
        base.replace("temperature=0.2", "temperature=0.7"),              # a default changed
    ]
    first = digests_in_fresh_process(tmp_path, sources, 1)
    assert digests_in_fresh_process(tmp_path, sources, 2) == first       # another process, another hash seed
    assert first[0].startswith(SCHEME + ":")
    assert first[1] == first[0] and first[2] == first[0]
    assert len(set(first[3:])) == 3 and first[0] not in first[3:]


def make(reply, cache):
    def agent(message):
        cache.setdefault(message, reply)
        return {"steps": [], "final_text": reply}
    return agent


def test_closure_constants_count_and_a_filled_cache_does_not():
    cache = {}
    a = make("yes", cache)
    before = code_digest(a)
    a("hello")                                   # the agent filled its cache while it ran
    assert code_digest(a) == before
    assert code_digest(make("yes", {})) == before
    assert code_digest(make("no", {})) != before


class Agent:
    def __init__(self, model, temperature=0.0):
        self.model, self.temperature = model, temperature
        self.client = openai.OpenAI(base_url="http://user:secret@10.0.0.1:8000/v1", api_key="sk-x")
        self.api_key = "sk-secret"
        self.seen = []

    def __call__(self, message):
        self.seen.append(message)
        return {"steps": [], "final_text": self.model}


def test_a_class_counts_by_its_code_and_constructor_arguments():
    form = functools.partial(Agent, "m1", temperature=0.1)
    assert code_digest(form) == code_digest(functools.partial(Agent, "m1", temperature=0.1))
    assert code_digest(form) != code_digest(functools.partial(Agent, "m2", temperature=0.1))
    assert code_digest(form) != code_digest(functools.partial(Agent, "m1", temperature=0.2))
    obj = Agent("m1")
    first = code_digest(obj)
    obj("hi")                                    # state it gathers is not what it is
    obj.api_key = "sk-rotated"
    assert code_digest(obj) == first
    assert code_digest(Agent("m2")) != first


def test_urls_lose_their_secrets_and_port():
    assert redact_url("https://user:sk-1@host.example:8443/v1/?key=abc#x") == "https://host.example/v1"
    assert data_digest({"a": [1, 2]}) == data_digest({"a": [1, 2]}) != data_digest({"a": [2, 1]})


def stored(**run):
    return {"tools_sha": "t", "system_prompt_sha": "p", "agent": "agent", "plan": "x", RUN_KEY: run}


def test_mismatch_names_the_arguments_and_old_headers_are_unknown():
    digest = code_digest(make("yes", {}))
    now = stored(seed=2, mode="rl", agent_code=digest, grader=None)
    was = stored(seed=1, mode="explore", agent_code=code_digest(make("no", {})), grader=digest)
    differ = fingerprint_mismatch(was, now)
    assert "seed (1 on disk, 2 now)" in differ and "mode ('explore' on disk, 'rl' now)" in differ
    assert any(d.startswith("agent") for d in differ) and "grader" in differ
    said = mismatch_message("/runs/a.jsonl", differ)
    assert "different run" in said and "/runs/a-2.jsonl" in said and "delete" in said and "grade(grader=" in said
    old = {k: v for k, v in was.items() if k != RUN_KEY}            # written before the run record existed
    assert fingerprint_mismatch(old, now) == []
    header = {"_whileai_ray_checkpoint": 1, "fingerprint": old, "created": "c"}
    upgraded = with_run_record(header, now)
    assert upgraded["fingerprint"][RUN_KEY] == now[RUN_KEY] and upgraded["created"] == "c"
    assert upgraded["fingerprint"]["plan"] == "x" and with_run_record(upgraded, now) is None
    only_grader = stored(seed=2, mode="rl", agent_code=digest, grader=code_digest(make("no", {})))
    assert fingerprint_mismatch(only_grader, now) == GRADER_ONLY       # regraded on resume, not refused
    adopted = with_grader({"fingerprint": only_grader, "created": "c"}, now)
    assert fingerprint_mismatch(adopted["fingerprint"], now) == [] and adopted["created"] == "c"
    other_python = stored(agent_code="c1-py3.99:" + "0" * 32)        # another interpreter's bytecode
    assert fingerprint_mismatch(other_python, stored(agent_code=digest)) == []


def test_the_digest_leaves_out_line_numbers_of_nested_code():
    src = textwrap.dedent('''
        def outer(m):
            def inner(x):
                return x * 2
            return inner(m)
    ''')
    ns1, ns2 = {}, {}
    exec(compile(src, "a.py", "exec"), ns1)
    exec(compile("\n\n\n" + src, "b.py", "exec"), ns2)
    assert code_digest(ns1["outer"]) == code_digest(ns2["outer"])
    ns3 = {}
    exec(compile(src.replace("x * 2", "x * 3"), "a.py", "exec"), ns3)
    assert code_digest(ns3["outer"]) != code_digest(ns1["outer"])


class Router:
    def __init__(self):
        self.calls = 0

    def pick(self, message):
        self.calls += 1
        return "a" if len(message) % 2 else "b"


def test_an_object_the_agent_holds_counts_by_its_class_not_its_state():
    router = Router()

    def agent(message):
        return {"steps": [], "final_text": router.pick(message)}
    before = code_digest(agent)
    agent("hi")                                  # the router counted a call: the same agent
    assert router.calls == 1 and code_digest(agent) == before
    bot = Agent("m1")
    assert code_digest(bot.__call__) != code_digest(Agent("m2").__call__)   # a bound method's owner counts
