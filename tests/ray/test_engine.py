"""The engine end to end on a real local Ray: explore runs, stops, faults, execute=, progress."""
import json
import logging

import pytest

import whileai_ray as wai

ROW_KEYS = ["prompt", "messages", "steps", "final_text", "scenario_id", "tier", "ask_family", "intent_known",
            "tool_known", "rollout_index", "model_version", "policy_version", "writer_model", "schema_version",
            "scenario_dimensions", "arm", "behavior_signature", "lineage", "seed", "selection_reason",
            "finish_reason", "tools_used"]


def _strip_timing(rows):
    return [{k: v for k, v in r.items()} for r in rows]


def test_seed_example_explore_budget_16_and_32(ray_local, tools):
    agent = wai.seeded_agent(tools)
    for budget in (16, 32):
        data = wai.simulate(agent, tools=tools, simulator=False, seed=0, budget=budget)
        rows = data.rows()
        assert len(rows) == budget and len(data) == budget
        assert data.stopped_because == "budget"
        for row in rows:
            for key in ROW_KEYS:
                assert key in row, key
            assert "privileged" not in row
            assert row["steps"][0]["tool"] == "lookup_order"
        assert any("simulator=False" in w for w in data.warnings)
        assert data.report()["rows"] == budget
        assert data.search["rollouts"]["landed"] == budget
        assert data.rows == data.rows()


def test_same_seed_same_rows_and_concurrency_does_not_change_the_draw(ray_local, tools):
    agent = wai.seeded_agent(tools)
    a = wai.simulate(agent, tools=tools, simulator=False, seed=3, budget=150, concurrency=32)
    b = wai.simulate(agent, tools=tools, simulator=False, seed=3, budget=150, concurrency=1)
    c = wai.simulate(agent, tools=tools, simulator=False, seed=3, budget=150, concurrency=8,
                     advanced={"ray": {"rollout_actors": 2}})
    assert [r["prompt"] for r in a.rows()] == [r["prompt"] for r in b.rows()] == [r["prompt"] for r in c.rows()]
    assert a.rows() == b.rows() == c.rows()
    d = wai.simulate(agent, tools=tools, simulator=False, seed=4, budget=150)
    assert [r["prompt"] for r in d.rows()] != [r["prompt"] for r in a.rows()]


def test_situations_phrasings_repeats_stop_on_situations_exhausted(ray_local, tools):
    agent = wai.seeded_agent(tools)
    data = wai.simulate(agent, tools=tools, simulator=False, situations=5, phrasings=2, repeats=2, budget=1000)
    rows = data.rows()
    assert data.stopped_because == "situations_exhausted"
    assert len(rows) == 20
    assert len({r["scenario_id"] for r in rows}) == 5
    assert len({r["prompt"] for r in rows}) == 10          # two real wordings per situation
    per_prompt = {}
    for r in rows:
        per_prompt.setdefault(r["prompt"], set()).add(r["rollout_index"])
    assert all(v == {0, 1} for v in per_prompt.values())


def test_flaky_agent_still_fills_the_budget_and_counts_what_happened(ray_local, tools):
    inner = wai.seeded_agent(tools)
    calls = {"n": 0}

    def flaky(message):
        # fails on a deterministic 30% of (prompt, rollout, attempt) draws
        import hashlib
        ctx = wai.current_rollout
        h = hashlib.sha256(f"{message}|{ctx.rollout_index}|{ctx.unit.attempt}".encode()).digest()[0]
        if h < 77:
            raise RuntimeError("boom")
        return inner(message)

    data = wai.simulate(flaky, tools=tools, simulator=False, budget=200, seed=1)
    ro = data.search["rollouts"]
    assert len(data.rows()) == 200 and data.stopped_because == "budget"
    assert ro["rerolled_by"].get("agent_error", 0) > 20
    assert ro["rerolled"] + ro["lost"] == data.search["agent_errors"]
    assert data.report()["rollouts_lost"] == ro["lost"]


def test_an_agent_that_always_raises_stops_agent_failed_without_crashing(ray_local, tools):
    def broken(message):
        raise RuntimeError("boom")

    data = wai.simulate(broken, tools=tools, simulator=False, budget=8)
    assert data.stopped_because == "agent_failed"
    assert len(data.rows()) == 0
    assert "RuntimeError: boom" in data.search["first_agent_error"]
    assert any("failed" in w for w in data.warnings)


def test_empty_replies_stop_empty_replies(ray_local, tools):
    data = wai.simulate(lambda m: {"steps": [], "final_text": ""}, tools=tools, simulator=False, budget=8)
    assert data.stopped_because == "empty_replies"
    assert data.search["rollouts"]["lost_by"].get("empty_reply", 0) > 0


def test_fault_rate_is_delivered_exactly_and_reaches_callable_agents(ray_local, tools):
    agent = wai.seeded_agent(tools)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=2000, fault_rate=0.3, seed=0)
    rows = data.rows()
    share = sum(1 for r in rows if r.get("faults")) / len(rows)
    assert abs(share - 0.3) <= 0.02
    assert data.report()["delivered"]["fault_share"] == pytest.approx(share, abs=1e-4)
    faulted = [r for r in rows if r.get("faults")]
    statuses = {r["steps"][0]["result"].get("status") for r in faulted}
    assert statuses & {"timeout", "permission_denied"}          # the world answered with the fault


def test_execute_answers_tool_calls_and_faults_apply_first(ray_local, tools):
    seen = []

    def my_world(tool, arguments):
        seen.append(1)
        return {"status": "ok", "data": {"from": "execute", "prompt_len": len(wai.current_rollout.prompt)}}

    agent = wai.seeded_agent(tools)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=60, execute=my_world, fault_rate=0.5)
    rows = data.rows()
    for r in rows:
        result = r["steps"][0]["result"]
        mode = r.get("faults", {}).get("*", {}).get("mode")
        if mode == "stale":                       # a stale answer is the real one, marked stale
            assert result["stale"] is True and result["data"]["from"] == "execute"
        elif mode:
            assert not isinstance(result.get("data"), dict) or result["data"].get("from") != "execute"
        else:
            assert result["data"]["from"] == "execute"
            assert result["data"]["prompt_len"] == len(r["prompt"])


def test_progress_lines_and_on_progress_dict(ray_local, tools, caplog):
    caplog.set_level(logging.INFO, logger="whileai_ray")
    got = []
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=40, on_progress=got.append)
    assert got, "on_progress was never called"
    last = got[-1]
    for key in ("rows", "cap", "landed", "resumed", "rerolled", "rerolled_by", "timed_out", "lost", "lost_by",
                "inflight", "situations", "elapsed_s"):
        assert key in last
    assert last["rows"] == 40 and last["cap"] == 40
    lines = [r.getMessage() for r in caplog.records if r.name == "whileai_ray" and r.levelno == logging.INFO]
    assert any(line.startswith("40/40 rollouts, ") and "situations written" in line for line in lines)


def test_time_budget_stops_the_clock(ray_local, tools):
    import time
    inner = wai.seeded_agent(tools)

    def slow(message):
        time.sleep(0.05)
        return inner(message)

    t0 = time.monotonic()
    # the clock counts from the call, Ray start-up of the run's actors included
    data = wai.simulate(slow, tools=tools, simulator=False, budget=100000, time_budget=8.0, concurrency=4)
    assert data.stopped_because == "time_budget"
    assert time.monotonic() - t0 < 20
    assert 0 < len(data.rows()) < 100000
    assert data.report()["reproducible"] is False


def test_agent_timeout_is_cut_and_counted(ray_local, tools):
    import time

    def stuck(message):
        time.sleep(1.5)
        return {"steps": [], "final_text": "late"}

    data = wai.simulate(stuck, tools=tools, simulator=False, budget=2, timeout=0.2, concurrency=4)
    assert data.search["rollouts"]["timed_out"] >= 2
    assert any("timed out" in w for w in data.warnings)


def test_checkpoint_gets_every_landed_row(ray_local, tools, tmp_path):
    path = tmp_path / "deep" / "ck.jsonl"
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=30, checkpoint=str(path))
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    body = [x for x in lines if "prompt" in x]
    assert len(body) == 30
    assert sorted(r["prompt"] for r in body) == sorted(r["prompt"] for r in data.rows())


def test_grader_in_the_loop_marks_rows(ray_local, tools):
    def grader(row):
        if "ORD" not in row["prompt"]:
            raise ValueError("no id")
        return 0.0 if row.get("seeded") else 1.0

    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=60, grader=grader)
    rows = data.rows()
    statuses = {r["judge_status"] for r in rows}
    assert "ok" in statuses
    for r in rows:
        if r["judge_status"] == "ok":
            assert r["reward"] == (0.0 if r.get("seeded") else 1.0)
            assert r["lineage"]["scoring_run_id"].startswith("score_")
        else:
            assert "reward" not in r                       # a judge error is never a 0
    assert "pass@1" in str(data.pass_at)


def test_twenty_thousand_row_explore_run_ends_on_budget_with_distinct_prompts(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=20000,
                        advanced={"progress_every_rows": 10**6, "progress_every_s": 3600.0})
    rows = data.rows()
    assert len(rows) == 20000 and data.stopped_because == "budget"
    assert len({r["prompt"] for r in rows}) >= 19000
