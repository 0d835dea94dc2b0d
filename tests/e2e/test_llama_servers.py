"""ModelServers with a real server: llama.cpp (``python -m llama_cpp.server``) serving SmolLM2-135M on
CPU, two replicas on a local Ray. The lifecycle vLLM replicas go through on a GPU cluster, for real:
start and health, every turn of a rollout on one replica, a replica's server killed mid-run
(restarted on the same port, its rollouts re-rolled, the run finishes), and a stop that leaves no
server process behind.

Which replica saw which request is recorded by a small forwarding proxy in front of each replica
(this module's :class:`RecordingProxy`): the run talks to the proxies, the proxies to the servers.
"""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

import whileai_ray as wai
from whileai_ray.agents.routing import MultiEndpoint
from whileai_ray.runtime.servers.model_servers import ModelServers
from whileai_ray.testing.models import MissingTestModel, smollm2_gguf

ALIAS = "smollm2"
SYSTEM_PROMPT = ("You are a support agent for an online shop. Check the order with lookup_order, then tell "
                 "the customer what you found in one or two sentences.")
# two model calls a rollout: the forced tool call, then the reply that reads the tool's answer
RUN = dict(system_prompt=SYSTEM_PROMPT, simulator=False, max_turns=1, avg_turns=1,
           advanced={"tool_choice": "lookup_order", "agent_max_tokens": 64})


class RecordingProxy:
    """Forwards ``/v1/...`` to one replica and records each request's messages and outcome."""

    def __init__(self, upstream_v1: str):
        self.upstream = upstream_v1[:-len("/v1")]
        self.records: list[dict] = []        # {"t", "text", "status"}
        self.inflight = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                text = ""
                if body:
                    messages = json.loads(body).get("messages") or []
                    text = "\n".join(str(m.get("content") or "") for m in messages)
                with proxy.lock:
                    proxy.inflight += 1
                try:
                    reply = httpx.request(method, proxy.upstream + self.path, content=body or None,
                                          headers={"content-type": "application/json"}, timeout=300,
                                          trust_env=False)
                    status, payload = reply.status_code, reply.content
                except httpx.HTTPError as exc:   # the replica went away mid-request
                    status, payload = 502, json.dumps({"error": {"message": str(exc)}}).encode()
                finally:
                    with proxy.lock:
                        proxy.inflight -= 1
                if body:
                    with proxy.lock:
                        proxy.records.append({"t": time.monotonic(), "text": text, "status": status})
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _llama_processes(ports) -> list[int]:
    """Live ``llama_cpp.server`` processes listening on one of ``ports`` (from /proc cmdlines)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"llama_cpp.server" in argv and any(str(p).encode() in argv for p in ports) and _alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture(scope="module")
def llama_servers(ray_local):
    try:
        gguf = smollm2_gguf()
    except MissingTestModel as exc:
        pytest.fail(str(exc))
    servers = ModelServers(str(gguf), replicas=2, gpus_per_replica=0, cpus_per_replica=1, command="llama_cpp",
                           extra_args=["--model_alias", ALIAS, "--n_ctx", "2048", "--n_threads", "1",
                                       "--seed", "0", "--verbose", "False"],
                           health_timeout_s=180)
    servers.start()
    yield servers
    servers.stop()


def test_two_llama_replicas_answer_and_each_rollout_stays_on_one(llama_servers, tools):
    servers = llama_servers
    status = servers.status()
    assert [s["healthy"] for s in status] == [True, True] and [s["restarts"] for s in status] == [0, 0]
    assert all(u.startswith("http://127.0.0.2:") for u in servers.urls)
    for url in servers.urls:
        listed = httpx.get(url + "/models", timeout=10, trust_env=False).json()["data"]
        assert [m["id"] for m in listed] == [ALIAS]
    assert servers.endpoint().model == ALIAS                      # the served name from --model_alias
    proxies = [RecordingProxy(u) for u in servers.urls]
    try:
        endpoint = MultiEndpoint(ALIAS, [p.url for p in proxies])
        data = wai.simulate(endpoint, tools=tools, budget=6, concurrency=2, seed=5,
                            **{**RUN, "advanced": {**RUN["advanced"], "run_id": "llama-routing-1"}})
    finally:
        for p in proxies:
            p.close()
    rows = data.rows()
    assert len(rows) == 6, (data.stopped_because, data.warnings)
    used = set()
    for row in rows:
        where = [i for i, p in enumerate(proxies) if any(row["prompt"] in r["text"] for r in p.records)]
        assert len(where) == 1, where                               # every turn on one replica
        turns = [r for r in proxies[where[0]].records if row["prompt"] in r["text"]]
        assert len(turns) >= 2 and all(t["status"] == 200 for t in turns)   # tool round, then the reply
        used.add(where[0])
    assert used == {0, 1}, used                                     # and the rollouts spread over both


def test_a_server_killed_mid_run_is_restarted_and_its_rollouts_rerolled(llama_servers, tools):
    servers = llama_servers
    old_pid = servers.status()[0]["pid"]
    proxies = [RecordingProxy(u) for u in servers.urls]
    seen, box = {"rows": 0}, {}

    def run():
        endpoint = MultiEndpoint(ALIAS, [p.url for p in proxies])
        try:
            box["data"] = wai.simulate(endpoint, tools=tools, budget=6, concurrency=4, seed=6,
                                       on_progress=lambda p: seen.update(rows=p["rows"]),
                                       **{**RUN, "advanced": {**RUN["advanced"], "run_id": "llama-kill-1",
                                                              "progress_every_rows": 1}})
        except BaseException as exc:   # shown by the assertion below
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and thread.is_alive() and not (seen["rows"] >= 1 and proxies[0].inflight):
            time.sleep(0.02)
        assert proxies[0].inflight, "replica 0 never had a request in flight"
        killed_at = time.monotonic()
        os.kill(old_pid, signal.SIGKILL)                            # the server, not its actor
        thread.join(timeout=600)
    finally:
        for p in proxies:
            p.close()
    assert not thread.is_alive() and "error" not in box, box.get("error")
    data = box["data"]
    assert len(data.rows()) == 6 and data.stopped_because == "budget"
    failed = [r for r in proxies[0].records if r["status"] != 200 and r["t"] >= killed_at]
    assert failed, "no request to the killed replica failed"
    rollouts = data.search["rollouts"]
    assert rollouts["rerolled_by"].get("agent_error", 0) >= 1, rollouts   # its rollouts went again
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and servers.status()[0]["restarting"]:
        time.sleep(0.2)
    status = servers.status()[0]
    assert status["restarts"] == 1 and status["pid"] != old_pid and status["healthy"], status
    assert not _alive(old_pid)
    reply = httpx.post(servers.urls[0] + "/chat/completions", timeout=120, trust_env=False, json={
        "model": ALIAS, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 8})
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] is not None


def test_stop_leaves_no_llama_server_running(llama_servers):
    servers = llama_servers
    ports = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in servers.urls]
    pids = [s["pid"] for s in servers.status()]
    assert sorted(_llama_processes(ports)) == sorted(pids)
    servers.stop()
    deadline = time.monotonic() + 15
    while _llama_processes(ports) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _llama_processes(ports) == [], "a llama_cpp.server process outlived stop()"
    assert not any(_alive(p) for p in pids)
    import ray
    assert all(t["state"] == "REMOVED" for t in ray.util.placement_group_table().values())
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.2:{ports[0]}/v1/models", timeout=2, trust_env=False)
