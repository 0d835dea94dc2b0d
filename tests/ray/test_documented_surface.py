"""Every argument of simulate() and every attribute and method of SimulationData the seed docs list,
exercised where no other test reaches it end to end (the README's table points here)."""
from __future__ import annotations

import math

import pytest

import whileai_ray as wai
from whileai_ray.testing.server import start_server

SYSTEM = "You are the order desk. Always look orders up before you answer."


@pytest.fixture(scope="module")
def url():
    host, port, stop = start_server(port=0, seed=1, ask_rate=0.0, model="surface-7b")
    yield f"http://{host}:{port}/v1"
    stop()


def test_the_model_arguments_reach_the_rows(ray_local, tools, url):
    by_spec = wai.simulate(spec=f"vllm:surface-7b@{url}", tools=tools, system_prompt=SYSTEM, simulator=False,
                           budget=3, avg_turns=1, temperature=0.2, logprobs=True,
                           sampling={"top_p": 0.9}, seed=2)
    rows = by_spec.rows()
    assert len(rows) == 3 and all(r["model_version"] == "surface-7b" for r in rows)
    assert all(r["sampling"]["temperature"] == 0.2 and r["sampling"]["top_p"] == 0.9 for r in rows)
    assert all(isinstance(r.get("logprob"), float) and r["n_tokens"] > 0 for r in rows)
    by_backend = wai.simulate(backend=wai.OpenAI("surface-7b", base_url=url), tools=tools, system_prompt=SYSTEM,
                              simulator=False, budget=2, avg_turns=1)
    assert [r["model_version"] for r in by_backend.rows()] == ["surface-7b"] * 2


def test_counts_uniqueness_and_llm_grade(ray_local, tools, url):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, situations=3,
                        requests_per_situation=2, rollouts_per_request=2, budget=100, seed=4)
    assert data.stopped_because == "situations_exhausted"
    assert data.requests_per_situation == 2 and data.rollouts_per_request == 2 and data.n_situations == 3
    per_prompt = {}
    for r in data.rows():
        per_prompt.setdefault(r["prompt"], []).append(r["rollout_index"])
    assert all(sorted(v) == [0, 1] for v in per_prompt.values())
    unique = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, mode="rl", unique_situations=True,
                          budget=6)
    assert unique.unique_situations is True and unique.rollouts_per_request == 1
    assert len({r["prompt"] for r in unique.rows()}) == 6
    wai.configure(judge=f"vllm:surface-7b@{url}")
    try:
        graded = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=4, llm_grade=True)
    finally:
        wai.configure(judge=None)
    assert all(r.get("llm_reward") in (0, 1) and r.get("llm_reason") for r in graded.rows())
    assert all("reward" not in r for r in graded.rows())                 # advisory: reward untouched


def test_every_documented_attribute_holds_a_value(ray_local, tools, tmp_path, url):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, system_prompt=SYSTEM, simulator=False, budget=60,
                        mode="rl", repeats=4, seed=6)
    rows = data.rows()
    n = len(rows)
    assert len(data.trajectories) == n == len(data) and all("privileged" in t or True for t in data.trajectories)
    assert data.declared_tools == {"lookup_order"} and data.stages and data.semantic is False
    assert data.elapsed_seconds > 0 and math.isclose(data.rows_per_second, n / data.elapsed_seconds)
    assert data.rollout_seconds > 0 and 0 < data.first_row_seconds <= data.elapsed_seconds
    t = data.search["timings"]                   # (the Driver's clock: when its first and last rows landed)
    assert 0 < t["first_row_s"] <= t["last_row_s"] <= t["elapsed_s"]
    assert len(data.row_seconds) == n and all(s >= 0 for s in data.row_seconds)
    assert data.unique_prompts == len({r["prompt"] for r in rows})
    assert data.unique_behavior_signatures == len({r["behavior_signature"] for r in rows})
    assert data.arm_weights and math.isclose(sum(data.arm_weights.values()), 1.0, rel_tol=1e-6)
    assert data.coverage == data.report() and data.report() is not data.coverage
    assert data.budget == 60 and data.mode == "rl" and data.repeat_policy == "successive"
    assert set(data.allocator) == {"explore", "expand", "verify"} and data.allocator["verify"] > 0
    assert data.writer_model == "template" and data.user_model is None
    assert data.system_prompts == {rows[0]["lineage"]["system_prompt_sha"]: SYSTEM}
    assert data.coverage_curve and data.search["rollouts"]["rows"] == n
    assert wai.conversation(rows[0])[0] == {"role": "user", "content": rows[0]["prompt"]}
    path = data.save(str(tmp_path / "run.jsonl"), meta=True)
    assert data.path == path and (tmp_path / "run.meta.json").exists()
    assert data.judge_model is None
    report = data.grade_llm(base_url=url, rubric="The agent states the order status.")
    assert report["graded"] == n and data.judge_model == "surface-7b"
    assert data.llm_grade(spec=f"vllm:surface-7b@{url}") is data
    assert all(t.get("llm_reward") in (0, 1, None) for t in data.trajectories)
    failures = data.sft_rows()
    assert failures and all(f["reward"] < 1 and f["rejected_response"] is not None for f in failures)
    labels = [{"prompt": p, "label": 1} for p in sorted({r["prompt"] for r in rows})[:5]]
    out = data.attach_labels(labels)
    assert out["matched"] == 5
    assert sum(1 for t in data.trajectories if t.get("gold_reward") == 1) == out["rows_labeled"] >= 5
