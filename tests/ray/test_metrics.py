"""Ray metrics of a run, read the way Prometheus reads them: over HTTP from the node's
metrics endpoint. This module starts its own Ray (not ``ray_local``): a metrics export port
and a 1 s report interval (Ray's floor; ``metrics_report_interval_ms`` is 10 s by default)."""
import hashlib
import os
import re
import socket
import time
import urllib.request

import pytest

import whileai_ray as wai

LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.2", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def metrics_ray():
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    if ray.is_initialized():
        ray.shutdown()
    port = _free_port()
    ray.init(address="local", _node_ip_address="127.0.0.2", include_dashboard=False, num_cpus=2,
             object_store_memory=200 * 1024**2, namespace="whileai_ray", log_to_driver=False,
             _metrics_export_port=port, _system_config={"metrics_report_interval_ms": 1000})
    yield f"http://127.0.0.2:{port}/metrics"
    ray.shutdown()


def scrape(url: str) -> list:
    """``[(series name, {label: value}, value)]`` of one Prometheus text page."""
    out = []
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        out.append((name, dict(LABELS.findall(labels)), float(value)))
    return out


def total(samples, name, **labels) -> float:
    return sum(v for n, lab, v in samples if n == name and all(lab.get(k) == w for k, w in labels.items()))


def flaky_agent(tools):
    inner = wai.seeded_agent(tools)

    def flaky(message):   # fails on a fixed 10% of (prompt, rollout, attempt) draws: re-rolls
        ctx = wai.current_rollout
        if hashlib.sha256(f"{message}|{ctx.rollout_index}|{ctx.unit.attempt}".encode()).digest()[0] < 26:
            raise RuntimeError("boom")
        return inner(message)
    return flaky


def test_a_3000_row_run_shows_its_rows_latency_and_pipe_on_the_metrics_endpoint(metrics_ray, tools):
    run_id = "metrics_3000"
    seen = {"inflight": None, "histogram": None, "at": 0.0}

    def look(samples):
        for n, lab, v in samples:
            if lab.get("run_id") == run_id and lab.get("mode") == "rl":
                if n == "ray_whileai_rollouts_inflight" and seen["inflight"] is None:
                    seen["inflight"] = v
                if n == "ray_whileai_rollout_seconds_count" and v > 0:
                    seen["histogram"] = v

    def watch(snap):   # scrape while the run goes, every 0.5 s once 200 rows have landed
        if time.monotonic() - seen["at"] < 0.5 or snap["landed"] < 200:
            return
        seen["at"] = time.monotonic()
        look(scrape(metrics_ray))

    data = wai.simulate(flaky_agent(tools), tools=tools, simulator=False, budget=3000, mode="rl", seed=3,
                        grader=lambda row: 0.0 if row.get("seeded") else 1.0, on_progress=watch,
                        advanced={"run_id": run_id, "progress_every_rows": 50})
    landed = data.search["rollouts"]["landed"]
    assert len(data.rows()) == landed == 3000

    ro = data.search["rollouts"]
    deadline = time.monotonic() + 30
    # The last counts reach the endpoint within a report interval or two (the Driver's and the
    # rollout actors' each on their own clock). A run that ends within one interval of its 200th
    # row shows its in-flight gauge only now: the warm Driver keeps its last report.
    while True:
        samples = scrape(metrics_ray)
        look(samples)
        rows = total(samples, "ray_whileai_rows_landed_total", run_id=run_id, mode="rl")
        timed = total(samples, "ray_whileai_rollout_seconds_count", run_id=run_id)
        done = rows == landed and timed >= landed + ro["rerolled"] and seen["inflight"] is not None
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert seen["inflight"] is not None, "the in-flight gauge never showed"
    assert seen["histogram"], "the rollout latency histogram never showed"
    assert rows == landed
    assert ro["rerolled_by"].get("agent_error", 0) > 0
    assert total(samples, "ray_whileai_rerolls_total", run_id=run_id, cause="agent_error") == \
        ro["rerolled_by"]["agent_error"]
    assert total(samples, "ray_whileai_rollouts_lost_total", run_id=run_id) == ro["lost"]
    # every attempt is timed, re-rolled ones too; every landed row got one verdict
    assert total(samples, "ray_whileai_rollout_seconds_count", run_id=run_id) >= landed + ro["rerolled"]
    assert total(samples, "ray_whileai_rollout_seconds_bucket", run_id=run_id, le="+Inf") >= landed
    assert total(samples, "ray_whileai_judge_seconds_count", run_id=run_id) == landed
    passed = sum(1 for r in data.rows() if r.get("reward") == 1.0)
    assert total(samples, "ray_whileai_rows_graded_total", run_id=run_id) == landed
    assert total(samples, "ray_whileai_rows_passed_total", run_id=run_id) == passed
    nodes = {lab["node"] for n, lab, _ in samples if n == "ray_whileai_rows_landed_total"
             and lab.get("run_id") == run_id}
    assert len(nodes) == 1 and next(iter(nodes)).startswith("127.0.0.2/")


def test_metrics_off_records_nothing_for_that_run(metrics_ray, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=200,
                        advanced={"run_id": "metrics_off", "metrics": False})
    on = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=200,
                      advanced={"run_id": "metrics_on"})
    assert len(data.rows()) == len(on.rows()) == 200
    deadline = time.monotonic() + 30
    while total(scrape(metrics_ray), "ray_whileai_rows_landed_total", run_id="metrics_on") < 200:
        assert time.monotonic() < deadline, "the run with metrics on never showed"
        time.sleep(0.5)
    samples = scrape(metrics_ray)
    assert not [n for n, lab, _ in samples if lab.get("run_id") == "metrics_off"]
    assert total(samples, "ray_whileai_rows_landed_total", run_id="metrics_on", mode="explore") == 200


def test_a_model_agent_s_tokens_and_cost_are_counted_as_its_rows_report_them(metrics_ray, tools):
    from whileai_ray.testing.server import start_server
    host, port, stop = start_server(port=0, seed=0, model="scripted-7b", cost_per_token=2e-6)
    try:
        data = wai.simulate(f"vllm:scripted-7b@http://{host}:{port}/v1", tools=tools, simulator=False,
                            system_prompt="You help with orders.", budget=40, seed=0,
                            advanced={"run_id": "metrics_tokens"})
    finally:
        stop()
    rows = data.rows()
    tokens_in = sum(r["usage"]["input_tokens"] for r in rows)
    cost = sum(r["usage"]["cost"] for r in rows)
    assert len(rows) == 40 and tokens_in > 0 and cost > 0
    deadline = time.monotonic() + 30
    while total(scrape(metrics_ray), "ray_whileai_rows_landed_total", run_id="metrics_tokens") < 40:
        assert time.monotonic() < deadline, "the model run never showed"
        time.sleep(0.5)
    samples = scrape(metrics_ray)
    assert total(samples, "ray_whileai_tokens_total", run_id="metrics_tokens", kind="input") == tokens_in
    assert total(samples, "ray_whileai_tokens_total", run_id="metrics_tokens", kind="output") == \
        sum(r["usage"]["output_tokens"] for r in rows)
    assert total(samples, "ray_whileai_cost_total", run_id="metrics_tokens") == pytest.approx(cost, rel=1e-6)
