"""Server command lines and one server process's lifecycle, without Ray (runtime/servers/process.py,
runtime/servers/actor.py): the scripted server stands in for vLLM / llama.cpp here."""
import os
import signal
import sys
import time

import httpx
import pytest

from whileai_ray.runtime.servers.actor import ServerActor
from whileai_ray.runtime.servers.process import server_command


def test_llama_cpp_command_serves_a_gguf_and_offloads_layers_only_with_gpus():
    cpu = server_command("llama_cpp", "/m/smol.gguf", "10.0.0.5", 8001, 0, ["--n_threads", "2"])
    assert cpu == [sys.executable, "-m", "llama_cpp.server", "--model", "/m/smol.gguf", "--host", "10.0.0.5",
                   "--port", "8001", "--n_threads", "2"]
    gpu = server_command("llama_cpp", "/m/smol.gguf", "10.0.0.5", 8001, 1)
    assert gpu[-2:] == ["--n_gpu_layers", "-1"]
    mine = server_command("llama_cpp", "/m/smol.gguf", "h", 1, 1, ["--n_gpu_layers", "20"])
    assert mine.count("--n_gpu_layers") == 1 and mine[-1] == "20"
    with pytest.raises(ValueError, match="'vllm', 'llama_cpp', 'scripted'"):
        server_command("sglang", "m", "h", 1, 0)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_server_that_dies_is_restarted_on_its_port_until_max_restarts(tmp_path):
    actor = ServerActor(0, 1, max_restarts=1)
    started = actor.start("scripted", "scripted-7b", None, "127.0.0.1", 0, (), 30)
    assert "error" not in started, started
    url, first = started["url"], started["pid"]
    try:
        assert httpx.get(url + "/models", timeout=5, trust_env=False).status_code == 200
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (actor.restarts == 1 and actor.healthy()
                                                   and not actor.status()["restarting"]):
            time.sleep(0.1)
        status = actor.status()
        assert status["restarts"] == 1 and status["healthy"] and status["pid"] != first, status
        assert httpx.get(url + "/models", timeout=5, trust_env=False).status_code == 200   # same port
        second = status["pid"]
        os.kill(second, signal.SIGKILL)                          # past max_restarts: left down, said so
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not actor.status()["errors"]:
            time.sleep(0.1)
        status = actor.status()
        assert status["restarts"] == 1 and not status["alive"]
        assert "max_restarts=1 reached" in status["errors"][0]
    finally:
        actor.stop()
    assert not _alive(first) and not _alive(actor.status()["pid"])
    actor.stop()                                                  # twice is fine
