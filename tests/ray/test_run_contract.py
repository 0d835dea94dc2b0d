"""simulate() details the seed docs promise, on a local Ray: configure(agent=) is played, scaffold=
reaches the model and nothing else, rubric= without grade=True is said, tasks= inherits k the
same way from every form, the last progress line says why the run ended, and the
SimulationData fields the docs list carry measured values."""
from __future__ import annotations

import time
import warnings
from collections import Counter

import pytest

import whileai_ray as wai
from whileai_ray.agents.backends import reset_configuration
from whileai_ray.testing.server import start_server

SYSTEM = "You are the order desk. Look orders up before you answer."


@pytest.fixture(scope="module")
def scripted():
    host, port, stop = start_server(port=0, seed=0, ask_rate=0.0, model="scripted-7b")
    yield f"http://{host}:{port}/v1", stop.server
    stop()


@pytest.fixture
def clean_configuration():
    reset_configuration()
    yield
    reset_configuration()


# ---- item 4: configure(agent=...) is the agent when agent= is left out ------------------------

def test_the_configured_agent_is_played_when_agent_is_unset(ray_local, tools, scripted, clean_configuration):
    url, _ = scripted
    wai.configure(agent=f"vllm:scripted-7b@{url}")
    data = wai.simulate(tools=tools, system_prompt=SYSTEM, simulator=False, budget=4, avg_turns=1, seed=1)
    rows = data.rows()
    assert len(rows) == 4
    assert all(r["model_version"] == "scripted-7b" and r["sampling"]["model"] == "scripted-7b" for r in rows)
    assert data.report()["agent_model"] == "scripted-7b"


# ---- item 7: scaffold= reaches the model-backed agent's system prompt, never the policy -------

def test_scaffold_reaches_the_model_and_stays_out_of_the_policy(ray_local, tools, scripted):
    url, handler = scripted
    scaffold = "Think step by step; quote the order id back to the user."
    handler.recent.clear()
    data = wai.simulate(f"vllm:scripted-7b@{url}", tools=tools, system_prompt=SYSTEM, simulator=False,
                        budget=4, avg_turns=1, seed=2, scaffold=scaffold)
    plain = wai.simulate(f"vllm:scripted-7b@{url}", tools=tools, system_prompt=SYSTEM, simulator=False,
                         budget=4, avg_turns=1, seed=2)
    systems = [m["content"] for req in handler.recent for m in req["messages"] if m["role"] == "system"]
    agent_systems = [s for s in systems if s.startswith(SYSTEM)]
    assert any(s == f"{SYSTEM}\n\n{scaffold}" for s in agent_systems)
    assert data.scaffold_chars == len(scaffold) and plain.scaffold_chars == 0
    assert data.system_prompt == SYSTEM and data.rows().system_prompt == SYSTEM
    rows, base = data.rows(), plain.rows()
    assert {r["lineage"]["system_prompt_sha"] for r in rows} == {r["lineage"]["system_prompt_sha"] for r in base}
    assert {r["policy_version"] for r in rows}.isdisjoint({r["policy_version"] for r in base})
    assert data.meta_dict()["system_prompt"] == SYSTEM            # what exports and the judge read


def test_scaffold_is_ignored_for_a_callable_agent_with_a_note(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=4, scaffold="Be terse.")
    assert data.scaffold_chars == 0
    assert any("scaffold= was ignored" in w and "callable" in w for w in data.warnings)


# ---- item 8: rubric= without grade=True is said, not dropped silently ------------------------

def test_rubric_without_grade_true_warns(ray_local, tools):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=4,
                            rubric="The agent states the order status.")
    said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert any("rubric= was given but this run did not grade with it" in m for m in said)
    assert any("grade=True" in w and "rubric=" in w for w in data.warnings)


# ---- item 5: tasks= inherits k the same way from every form; the docs' example runs at k=4 ----

def test_the_docs_tasks_example_runs_as_written_at_k4(ray_local, tools, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    TOOLS = tools
    agent = wai.seeded_agent(TOOLS)  # an offline demo agent, no key
    base = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0,
                        mode="rl", repeats=4, budget=32)
    rerun = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0,
                         tasks=base, mode="rl",  # same tasks, k=4 inherited
                         checkpoint="rerun.jsonl",  # rows land here as they finish
                         on_progress=print)  # or watch the whileai.simulations logger
    print(base.stopped_because, len(base.rows()), base.warnings)
    print(rerun.search["rollouts"])  # landed, resumed, rerolled_by, lost_by
    per_prompt = Counter(r["prompt"] for r in base.rows())
    assert max(per_prompt.values()) == 4 and len(base.rows()) == 32       # a split ask reached k
    assert rerun.rollouts_per_request == 4 and rerun.stopped_because == "tasks_done"
    assert set(Counter(r["prompt"] for r in rerun.rows()).values()) == {4}
    assert "k=4" in str(rerun.pass_at)
    assert (tmp_path / "rerun.jsonl").exists()
    out = capsys.readouterr().out
    assert "'landed':" in out and "'rows':" in out                   # on_progress=print got the dicts
    by_rows = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, tasks=base.rows(), mode="rl", budget=8)
    base.save(str(tmp_path / "base.jsonl"))
    by_path = wai.simulate(agent, tools=TOOLS, simulator=False, seed=0, tasks=str(tmp_path / "base.jsonl"),
                           mode="rl", budget=8)
    assert by_rows.rollouts_per_request == by_path.rollouts_per_request == 4


def test_k_is_the_most_rollouts_any_pinned_prompt_has(ray_local, tools):
    agent = wai.seeded_agent(tools)
    base = wai.simulate(agent, tools=tools, simulator=False, seed=3, mode="rl", repeats=4, budget=12,
                        repeat_policy="fixed")
    cut = [r for r in base.rows() if r["rollout_index"] < 2]            # every prompt at 2 rollouts
    for form in (cut, base.__class__(trajectories=[t for t in base.trajectories if t["rollout_index"] < 2],
                                     rollouts_per_request=4)):
        rerun = wai.simulate(agent, tools=tools, simulator=False, seed=3, tasks=form, budget=40)
        assert rerun.rollouts_per_request == 2                          # the rows, not the source's setting


# ---- item 10: a clock stop lands within one rollout's time; the last line says it ended -------

def test_time_budget_stops_dispatch_at_the_deadline_and_the_last_line_says_so(ray_local, tools):
    inner = wai.seeded_agent(tools)

    def slow_agent(message):
        time.sleep(0.3)
        return inner(message)

    got = []
    # the clock counts from the call, actor start-up included (on a loaded 2-core machine that alone
    # took over 12 s once: then no row lands, see the end); what is checked is how the stop lands
    # relative to the deadline
    data = wai.simulate(slow_agent, tools=tools, simulator=False, time_budget=6, budget=100_000,
                        on_progress=got.append)
    assert data.stopped_because == "time_budget"
    clock = data.search["clock"]
    assert clock["time_budget"] == 6.0 and clock["cut"] == 0
    assert clock["overrun_s"] < 0.3 + 3.0          # one rollout's time, plus slack for a loaded machine
    assert clock["stopped_after_s"] >= 6.0
    assert got[-1]["stopped_because"] == "time_budget"
    if not data.rows():                              # the actors' start-up alone outlasted the clock
        assert any("ran out before the first rollout landed" in w for w in data.warnings)


def test_an_early_end_prints_a_last_line_without_an_eta(ray_local, tools, caplog):
    import logging
    caplog.set_level(logging.INFO, logger="whileai_ray")
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=200, situations=5)
    assert data.stopped_because == "situations_exhausted"
    lines = [r.getMessage() for r in caplog.records if "rollouts" in r.getMessage()]
    assert lines[-1].endswith("ended: situations_exhausted (every situation asked for has its rollouts)")
    assert "left" not in lines[-1]


# ---- item 11: every field the docs list carries a measured value --------------------------------

def test_simulation_data_fields_carry_measured_values(ray_local, tools):
    policy = "You are the order desk. Never share another customer's order. Always look orders up first."
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, system_prompt=policy, simulator=False, budget=120,
                        grader=lambda r: 0.0 if r["seeded"] else 1.0)
    rows = data.rows()
    prof = data.profile
    assert prof.policy == policy and prof.tool_names == ["lookup_order"] and prof.kind == "callable"
    assert len(prof.rules) == 2 and prof.model_version == "seeded_agent"
    assert "lookup_order(order_id: string, required)" in data.scene_brief and "stance:" in data.scene_brief
    assert data.scene_brief_seconds > 0
    from whileai_ray.search.explain import duplicate_rate
    assert data.semantic_duplicate_rate == duplicate_rate(r["prompt"] for r in rows)     # worked out on first read
    assert 0.0 <= data.semantic_duplicate_rate <= 1.0 and data.meta_dict()["semantic_duplicate_rate"] == \
        data.semantic_duplicate_rate
    assert data.scenario_generation_seconds > 0 and data.embedding_selection_seconds > 0
    assert data.embedder_name
    assert sum(a["executed"] for a in data.arm_yield.values()) == len(rows)
    assert sum(a["failing"] for a in data.arm_yield.values()) == sum(1 for r in rows if r["reward"] < 0.5)
    rep = data.report()
    assert "user_temperature" in rep and rep["user_temperature"] is None        # no simulated person played
    assert "mock world answered every tool call" in rep["world_note"]
    s = data.search
    assert set(s["avoid"]) == {"near_copy_families_refused", "prompts_on_disk", "trace_near_copies"}
    assert isinstance(s["underexplored"], list) and isinstance(s["axis_gaps"], list)
    assert all({"axis", "value", "nudge"} <= set(g) for g in s["axis_gaps"])
    assert isinstance(s["plateau_batches"], int) and s["plateau_batches"] >= 0
    assert s["user_think"] == {"user_turns": 0, "stripped": 0, "unclosed": 0, "stripped_share": 0.0,
                               "unclosed_share": 0.0}
    g = s["grader"]
    assert g["judge"] == "<lambda>" or g["judge"] == "lambda_judge"
    assert g["judged_in_loop"] == len(rows) and g["scored"] == len(rows)
    assert g["passes"] + g["failures"] == len(rows) and g["errors"] == g["unjudged"] == 0
    after = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=20,
                         execute=lambda tool, args: {"status": "ok", "data": {"tool": tool}})
    assert "execute=<lambda> answered every tool call" in after.report()["world_note"]
    assert after.arm_yield == {}
    after.grade(lambda r: 0.0)
    assert sum(a["failing"] for a in after.arm_yield.values()) == 20
    assert after.search["grader"]["judged_after"] == 20 and after.search["grader"]["failures"] == 20


def test_model_runs_report_the_user_temperature_and_strip_user_think(ray_local, tools):
    host, port, stop = start_server(port=0, seed=4, ask_rate=1.0, model="thinker", user_think=True)
    try:
        url = f"http://{host}:{port}/v1"
        data = wai.simulate(f"vllm:thinker@{url}", tools=tools, system_prompt=SYSTEM, simulator=False, budget=6,
                            avg_turns=3, max_turns=3, patience="endless", seed=4,
                            advanced={"user_temperature": 0.3})
        user_requests = [r for r in stop.server.recent
                         if any("You are the user" in (m.get("content") or "") for m in r["messages"])]
    finally:
        stop()
    assert data.report()["user_temperature"] == 0.3
    assert user_requests and all(r["temperature"] == 0.3 for r in user_requests)
    think = data.search["user_think"]
    assert think["user_turns"] > 0 and think["stripped"] == think["user_turns"] and think["stripped_share"] == 1.0
    said = [s["user"] for r in data.rows() for s in r["steps"] if "user" in s]
    assert said and not any("<think>" in u or "</think>" in u for u in said)


# ---- item 14: in a run, the judge's and the writer's dialects are learned and recorded ------------

def test_a_run_records_the_dialects_its_judge_and_writer_spoke(ray_local, tools, clean_configuration):
    host, port, stop = start_server(port=0, seed=2, model="llama-like", dialect="llama_cpp")
    try:
        url = f"http://{host}:{port}/v1"
        wai.configure(judge=f"vllm:llama-like@{url}")
        data = wai.simulate(wai.seeded_agent(tools), tools=tools, system_prompt=SYSTEM, budget=8, seed=3,
                            simulator=f"vllm:llama-like@{url}", grade=True, rubric="States the order status.")
    finally:
        stop()
    rows = data.rows()
    assert len(rows) == 8 and all(r["judge_status"] == "ok" for r in rows)
    assert data.search["structured_output"] == {"writer": "json_object_schema", "judge": "json_object_schema"}
    assert all(r["judge_meta"]["structured_output"] == "json_object_schema" for r in rows)
    assert all(r["writer_model"] == "llama-like" for r in rows if r["arm"] == "llm_guided")


# ---- items 2, 3: the docs' evaluate(eval_set=) form, on a real run ---------------------------------

def test_the_docs_evaluate_example_runs_as_written(ray_local, tools):
    TOOLS = tools
    agent = wai.seeded_agent(TOOLS)
    asks = ["Where is my order ORD-1234?", "Please cancel ORD-77.", "Is ORD-9 shipped yet?"]
    data = wai.simulate(agent, tools=TOOLS, simulator=False, seeds=asks[:2], budget=8)   # seeds build the run
    scored = wai.evaluate(data, lambda row: 0.0 if row["seeded"] else 1.0, eval_set=asks)  # the eval set checks it
    assert scored.eval_coverage == {"eval_set": asks, "covered": asks[:2], "missing": [asks[2]]}
    assert set(scored.eval_scores) == set(asks[:2])
    assert len(scored.rows()) == len(data.rows()) == 8 and all("reward" not in r for r in data.rows())
    pinned = wai.run_judge(data, lambda row: 1, run_id="score_pinned")
    assert {r["lineage"]["scoring_run_id"] for r in pinned.rows()} == {"score_pinned"}


def test_avoid_counts_the_prompts_on_disk_a_resume_never_draws_again(ray_local, tools, tmp_path):
    ck = str(tmp_path / "ck.jsonl")
    agent = wai.seeded_agent(tools)
    wai.simulate(agent, tools=tools, simulator=False, budget=10, seed=1, checkpoint=ck)
    data = wai.simulate(agent, tools=tools, simulator=False, budget=15, seed=1, hard_share=0.9,
                        checkpoint=ck)          # another plan, the same run (another seed is refused)
    assert data.search["resume"]["mode"] == "precount"
    assert data.search["avoid"]["prompts_on_disk"] == 10 and len(data.rows()) == 15
