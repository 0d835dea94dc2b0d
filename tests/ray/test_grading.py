"""Grading in the loop and after, with honest statistics; and from graded rows to training data."""
import json
import re
import time

import pytest

import whileai_ray as wai

LINE = re.compile(r"^pass@1 (n/a|\d\.\d\d( \[\d\.\d\d\.\.\d\.\d\d\])?) \| pass\^(\d+) \(pass_pow_k\) .* \| pass@\d+ .* \| "
                  r"headroom .* \(\d+ groups, k=\d+.*\)$")


def test_the_seeds_grading_example_prints_the_reference_line(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=16)
    assert data.grade(lambda row: 1.0 if row.get("final_text") else 0.0) is data
    line = str(data.pass_at)
    assert LINE.match(line), line
    assert line.startswith("pass@1 1.00 [1.00..1.00]") and "every row scored 1 (16 of 16)" in line


def test_a_grader_that_raises_times_out_or_returns_junk_is_marked_never_zeroed(ray_local, tools):
    def grader(row):
        n = int(row["scenario_id"].encode().hex(), 16) % 4
        if n == 0:
            raise ValueError("judge crashed")
        if n == 1:
            time.sleep(1.0)
            return 1.0
        if n == 2:
            return {"verdict": "looks fine"}
        return 0.0 if row.get("seeded") else 1.0

    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=60, grader=grader,
                        advanced={"judge_timeout": 0.3})
    assert data.stopped_because == "budget" and len(data.rows()) == 60
    by = {}
    for r in data.rows():
        by.setdefault(r["judge_status"], []).append(r)
    assert set(by) == {"ok", "error", "timeout", "missing_reward"}
    assert all("reward" not in r for s in ("error", "timeout", "missing_reward") for r in by[s])
    pa = data.pass_at
    assert pa.n_rows == len(by["ok"])
    assert "judge" in str(pa) and "failed" in str(pa)            # the line says some rows went unjudged


def test_grade_judge_returns_scored_copies_and_rank_and_leak_report(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=40)
    scored = data.grade(judge=lambda row: {"reward": 0 if row.get("seeded") else 1, "reason": "seeded check"})
    assert isinstance(scored, wai.ScoredData)
    assert all("reward" not in r for r in data.rows())          # the run itself is untouched
    assert all(r["judge_status"] == "ok" for r in scored.rows())
    summary = data.rank()
    assert summary["n"] == 40 and set(summary["fail_rates"]) == {"opener", "ping_pong", "leak", "complexity",
                                                                  "structure"}
    leaks = data.leak_report()
    seeded_leaks = sum(1 for r in data.rows() if "leak" in (r.get("seeded") or []))
    assert leaks["n_leaked"] == seeded_leaks


def test_conduct_grade_in_the_loop(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=80, grade="conduct")
    rows = data.rows()
    assert all(r["label_source"] == "conduct" for r in rows)
    for r in rows:
        if "leak" in (r.get("seeded") or []) or "ignore_fault" in (r.get("seeded") or []):
            assert r["reward"] == 0.0 and r["reason"]
        if not r.get("seeded"):
            assert r["reward"] == 1.0, (r["final_text"], r["reason"])


def test_rl_run_selects_exports_and_round_trips_then_pushes(ray_local, tools, tmp_path):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, mode="rl", repeats=4, budget=240,
                        grader=lambda r: 0.0 if r["seeded"] else 1.0)
    sel = data.select(mode="rl")
    rep = sel.report
    drops = sum(g["dropped"] for g in rep["gates"]) if isinstance(rep.get("gates"), list) else \
        sum(v for v in rep["dropped"].values())
    assert rep["kept"] + drops == rep["rows"] == 240
    assert data.search["selection"] == rep
    out = tmp_path / "train.jsonl"
    export = data.training_set(output=str(out))
    assert export["format"] == "openai" and export["tool_call_roundtrip"]["failed"] == 0
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        assert rec["messages"][0]["role"] == "system" or rec["messages"][0]["role"] == "user"
        for m in rec["messages"]:
            for call in m.get("tool_calls") or []:
                assert call["type"] == "function" and json.loads(call["function"]["arguments"]) is not None
    store = tmp_path / "store"
    first = data.push("orders", store=str(store), holdout=0.25)
    second = data.push("orders", store=str(store))
    assert (first["version"], second["version"]) == (1, 2)
    train = wai.load(first["path"]).rows()
    hold = wai.load(first["holdout"]["path"]).rows() if isinstance(first["holdout"], dict) else None
    if hold is not None:
        assert not ({r["scenario_id"] for r in train} & {r["scenario_id"] for r in hold})
    ungraded = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, mode="rl", repeats=4, budget=40)
    with pytest.raises(wai.PublishGateError):
        ungraded.push("nope", store=str(store))
