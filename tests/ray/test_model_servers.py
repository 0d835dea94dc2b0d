"""ModelServers on a local CPU Ray: the scripted server stands in for vLLM."""
import os
import socket
import sys
import time

import httpx
import pytest

from whileai_ray.runtime.servers.model_servers import ModelServers


@pytest.fixture(scope="module")
def ray4():
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", _node_ip_address="127.0.0.2", include_dashboard=False, num_cpus=4,
             object_store_memory=200 * 1024**2, namespace="whileai_ray", log_to_driver=False)
    yield ray
    ray.shutdown()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def models(url: str) -> list[str]:
    with httpx.Client(trust_env=False, timeout=5) as http:
        response = http.get(url + "/models")
    response.raise_for_status()
    return [m["id"] for m in response.json()["data"]]


def test_two_scripted_replicas_start_answer_on_the_node_ip_and_stop_cleanly(ray4):
    servers = ModelServers("scripted-7b", replicas=2, gpus_per_replica=0, cpus_per_replica=2,
                           command="scripted", health_timeout_s=60)
    urls = servers.start()
    try:
        assert len(urls) == 2 and len(set(urls)) == 2
        assert all(u.startswith("http://127.0.0.2:") and u.endswith("/v1") for u in urls)
        assert [models(u) for u in urls] == [["scripted-7b"], ["scripted-7b"]]
        assert servers.healthy() == [True, True]
        assert len(servers.pids) == 2 and all(alive(p) for p in servers.pids)
        endpoint = servers.endpoint()
        assert endpoint.model == "scripted-7b" and list(endpoint.base_urls) == urls
        tables = ray4.util.placement_group_table()
        assert sum(t["state"] == "CREATED" for t in tables.values()) == 1
    finally:
        servers.stop()
    deadline = time.monotonic() + 10
    while any(alive(p) for p in servers.pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in servers.pids), "a server process outlived stop()"
    with pytest.raises(httpx.HTTPError):
        models(urls[0])
    assert all(t["state"] == "REMOVED" for t in ray4.util.placement_group_table().values())
    servers.stop()   # twice is fine


def test_port_base_and_context_manager(ray4):
    with socket.socket() as sock:
        sock.bind(("127.0.0.2", 0))
        port = sock.getsockname()[1]
    with ModelServers("scripted", replicas=1, gpus_per_replica=0, cpus_per_replica=1, command="scripted",
                      port_base=port, extra_args=["--latency-ms", "1"]) as servers:
        assert servers.urls == [f"http://127.0.0.2:{port}/v1"]
        pid = servers.pids[0]
        assert models(servers.urls[0]) == ["scripted"]
    time.sleep(0.5)
    assert not alive(pid)


def test_gpu_placement_on_a_cpu_only_cluster_fails_fast_naming_gpu(ray4):
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"GPU") as err:
        ModelServers("scripted", replicas=1, gpus_per_replica=1, command="scripted").start()
    assert time.monotonic() - t0 < 5
    assert "gpus_per_replica" in str(err.value)
    with pytest.raises(RuntimeError, match=r"CPU: need 12"):
        ModelServers("scripted", replicas=4, gpus_per_replica=0, cpus_per_replica=3, command="scripted").start()


def test_a_server_that_dies_or_stays_silent_is_named_with_its_log(ray4):
    crash = [sys.executable, "-c", "print('loading {model} on port {port}'); print('CUDA out of memory'); "
                                   "raise SystemExit(3)"]
    with pytest.raises(RuntimeError) as err:
        ModelServers("tiny", gpus_per_replica=0, cpus_per_replica=1, command=crash).start()
    text = str(err.value)
    assert "replica 0 of 1" in text and "exited with code 3" in text and "CUDA out of memory" in text
    assert "loading tiny on port" in text
    silent = [sys.executable, "-c", "import time; print('still compiling graphs', flush=True); time.sleep(60)"]
    servers = ModelServers("tiny", gpus_per_replica=0, cpus_per_replica=1, command=silent, health_timeout_s=2)
    with pytest.raises(RuntimeError, match=r"(?s)replica 0 of 1.*health_timeout_s=2.*still compiling graphs"):
        servers.start()
    assert servers.pids == []


def test_bad_arguments_say_what_to_pass():
    with pytest.raises(ValueError, match="gpus_per_replica >= 1"):
        ModelServers("Qwen/Qwen2.5-0.5B-Instruct", gpus_per_replica=0)
    with pytest.raises(ValueError, match="command must be"):
        ModelServers("m", command="sglang")
    with pytest.raises(ValueError, match="replicas"):
        ModelServers("m", replicas=0, command="scripted", gpus_per_replica=0)
    with pytest.raises(ValueError, match="strategy"):
        ModelServers("m", command="scripted", gpus_per_replica=0, strategy="RANDOM")


def test_a_killed_server_actor_takes_its_server_down(ray4):
    servers = ModelServers("scripted", replicas=1, gpus_per_replica=0, cpus_per_replica=1, command="scripted")
    servers.start()
    pid = servers.pids[0]
    ray4.kill(servers._actors[0], no_restart=True)   # a crashed actor: no stop() reached the server
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid), "the server outlived its actor"
    servers.stop()
