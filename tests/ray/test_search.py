"""How the budget is spent: rl groups, hard_share, dimensions, seeds, until=, arms, coverage."""
from collections import Counter

import whileai_ray as wai


def test_rl_2000_rows_groups_add_up_and_mixed_groups_reach_k(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, mode="rl", repeats=4, budget=2000,
                        grader=lambda r: 0.0 if r["seeded"] else 1.0)
    rows = data.rows()
    assert len(rows) == 2000 and data.stopped_because == "budget"
    per_prompt = Counter(r["prompt"] for r in rows)
    assert max(per_prompt.values()) <= 4                        # no prompt above k
    rewards = {}
    for r in rows:
        rewards.setdefault(r["prompt"], []).append(r["reward"])
    for prompt, rs in rewards.items():
        if len(set(rs)) > 1:                                    # a mixed group: complete at k, or cut by the budget
            cut = any(r.get("group_cut") for r in rows if r["prompt"] == prompt)
            assert len(rs) == 4 or cut
    g = data.search["groups"]
    assert g["k"] == 4 and g["probe"] == 2
    assert g["complete"] + g["stopped_unanimous"] + g["partial"] == g["groups"] == len(per_prompt)
    assert g["mixed"] > 0 and g["stopped_unanimous"] > 0 and g["rollouts_saved"] > 0
    assert "pass^4" in str(data.pass_at)


def test_hard_share_is_delivered_and_dimensions_pin_one_axis(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=200, hard_share=0.7)
    mix = data.search["tier_mix"]
    assert mix["hard_share_requested"] == 0.7 and abs(mix["hard_share_realized"] - 0.7) <= 0.08
    pinned = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=60,
                          dimensions={"stance": ["adversarial", "boundary"]})
    stances = [r["scenario_dimensions"].get("stance") for r in pinned.rows()
               if r["scenario_dimensions"].get("origin") != "realized"]
    assert stances and set(stances) <= {"adversarial", "boundary"}
    worlds = {r["scenario_dimensions"].get("world_state") for r in pinned.rows()}
    assert len(worlds) > 2                                      # the other axes still vary


def test_seeds_run_first_and_the_budget_check_drops_what_does_not_fit(ray_local, tools):
    seeds = ["Where is my order ORD-1234?", "Cancel ORD-9 now", "Is ORD-77 shipped?"]
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=5, mode="rl", repeats=4,
                        seeds=seeds)
    assert data.search["seeds_dropped"] == seeds[1:]
    assert any("covers 1 of 3 seeds" in w for w in data.warnings)
    assert data.rows()[0]["prompt"] == seeds[0] and data.rows()[0]["writer_model"] == "seed"


def test_until_saturation_stops_when_every_cell_has_its_copies(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=5000, until="saturation",
                        advanced={"copies_needed": 2})
    rep = data.report()
    assert data.stopped_because == "saturation" and len(data.rows()) < 5000
    assert rep["min_cell_copies"] >= 2 and rep["saturation"] is True
    assert rep["pairwise"]["fraction"] == 1.0
    assert data.coverage_curve and data.coverage_curve[-1]["n_rows"] <= len(data.rows())


def test_arms_weights_move_with_yield_and_can_be_pinned(ray_local, tools):
    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=400, fault_rate=0.5)
    arms = Counter(r["arm"] for r in data.rows())
    assert arms["structured"] > 0 and (arms["open_ended"] + arms["failure_mutation"] + arms["behavior_targeted"]) > 0
    assert data.search["mutation_aims"]["world_fault"]["parents"] > 0
    pinned = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=100,
                          advanced={"arm_weights": {"structured": 1.0, "open_ended": 0.0, "behavior_targeted": 0.0,
                                                    "failure_mutation": 0.0}})
    assert {r["arm"] for r in pinned.rows()} == {"structured"}


def test_graded_failures_steer_the_search_and_can_be_turned_off(ray_local, tools):
    def grader(r):
        ok = not r.get("seeded")
        return {"reward": 1.0 if ok else 0.0, "markers": {"grounded": 1.0 if ok else 0.0}}

    data = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=1200, grader=grader,
                        fault_rate=0.0)
    aims = data.search["mutation_aims"]["graded_failure"]
    assert aims["parents"] > 0 and aims["rows"] > 0
    assert data.search["failure_criteria"]["grounded"] > 0
    assert any(r["arm"] == "failure_mutation" for r in data.rows())
    off = wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=300, grader=grader,
                       fault_rate=0.0, advanced={"mutate_graded_failures": False})
    assert off.search["mutation_aims"]["graded_failure"]["parents"] == 0
