"""select(): gates, counts that add up, the printed report, and the hack scan."""
import pytest

from whileai_ray.core.rows import export_row
from whileai_ray.export import hack_scan, select
from whileai_ray.testing.seeded_rows import META, played

ROWS = played()


def test_rl_selection_counts_add_up_and_keeps_only_mixed_groups_in_band():
    sel = select(ROWS, mode="rl", run_meta=META)
    rep = sel.report
    assert rep["kept"] == len(sel) > 0
    assert rep["kept"] + sum(g["dropped"] for g in rep["gates"]) == rep["rows"] == len(ROWS)
    assert [g["gate"] for g in rep["gates"]] == ["ungraded", "junk", "leaks", "truncated", "band",
                                                 "unanimous", "duplicates", "target"]
    assert str(sel).splitlines()[0].startswith(f"rl selection: kept {rep['kept']} of {len(ROWS)} rows")
    assert "hack scan:" in str(sel) and "unanimous" in str(sel)
    groups = {}
    for row in sel:
        assert "privileged" not in row and row["group_id"].startswith("g-")
        groups.setdefault(row["group_id"], []).append(row["reward"])
    assert rep["groups"] == len(groups)
    for rewards in groups.values():
        assert len(set(rewards)) == 2 and 0.2 <= sum(rewards) / len(rewards) <= 0.8


def test_a_reply_that_quotes_its_privileged_reference_is_dropped_but_honest_tool_talk_is_not():
    leakers = [r for r in ROWS if r["seeded"] == ["leak"]]
    assert leakers, "the seeded run should contain a leak"
    sel = select(ROWS, mode="sft", run_meta=META)
    assert sel.report["dropped"]["leaks"] == len(leakers)
    kept_text = {r["final_text"] for r in sel}
    assert not kept_text & {r["final_text"] for r in leakers}
    # an honest reply naming the tool the reference also names is not a leak
    assert any("lookup_order" in t for t in kept_text)


def test_no_mode_picks_one_pass_row_per_prompt_with_distinct_behaviours_first():
    sel = select(ROWS, run_meta=META)
    assert str(sel).startswith(f"sft selection: kept {len(sel)} of {len(ROWS)} rows")
    assert all(r["reward"] == 1.0 for r in sel)
    prompts = [r["prompt"] for r in sel]
    assert len(prompts) == len(set(prompts))
    distinct = sel.report["distinct_behaviors"]
    small = select(ROWS, target=distinct)
    assert len({r["behavior_signature"] for r in small}) == distinct == len(small)
    assert small.report["dropped"]["target"] == len(sel) - distinct


def _row(prompt, reward, final="lookup_order for ORD-1: ok.", **extra):
    row = {"prompt": prompt, "steps": [{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"},
                                        "result": {"status": "ok"}}],
           "final_text": final, "scenario_id": "sc-" + prompt[:3], "reward": reward, "judge_status": "ok",
           "finish_reason": "stop"}
    row.update(extra)
    return row


def test_junk_truncation_and_replayed_groups_each_have_their_own_gate():
    rows = [_row("Check order ORD-1 please", r) for r in (1, 0, 1)]
    rows += [_row("Check order ORD-1 please", r, lineage={"eval_run": 1}) for r in (0, 1)]   # a replay
    rows += [_row("Where is ORD-2 now", 1, final="<agent error: boom>", finish_reason="error"),
             _row("Where is ORD-3 now", 1, finish_reason="length"), _row("Where is ORD-3 now", 0),
             _row("Where is ORD-4 now", None, judge_status="error")]
    sel = select(rows, mode="rl")
    d = sel.report["dropped"]
    assert (d["junk"], d["truncated"], d["ungraded"], d["duplicates"]) == (1, 1, 1, 2)
    assert d["unanimous"] == 1            # ORD-3 has one row left after truncation
    assert len(sel) == 3 and sel.report["kept"] + sum(d.values()) == len(rows)
    kept = select(rows, mode="rl", truncated="keep")
    assert "truncated" not in kept.report["dropped"] and len(kept) == 5


def test_select_needs_graded_rows_and_checks_its_arguments():
    ungraded = played(2, 2, grader=None)
    with pytest.raises(RuntimeError, match="graded"):
        select(ungraded)
    with pytest.raises(RuntimeError, match="grade"):
        select(ungraded, mode="rl")
    for kwargs, word in [({"mode": "ppo"}, "mode"), ({"target": 0}, "target"), ({"band": (0.9, 0.1)}, "band"),
                         ({"truncated": "maybe"}, "truncated"), ({"band": "wide"}, "band")]:
        with pytest.raises(ValueError, match=word):
            select(ROWS, **kwargs)
    with pytest.raises(TypeError, match="endorsed"):
        select(ROWS, endorsed=[3])


def test_exported_rows_select_the_same_as_internal_rows_except_the_leak_check():
    exported = [export_row(r) for r in ROWS]
    a, b = select(ROWS, mode="rl"), select(exported, mode="rl")
    assert b.report["dropped"]["leaks"] == 0
    assert {r["prompt"] for r in a} <= {r["prompt"] for r in b}


def test_hack_scan_names_what_explains_the_reward_and_checks_it_against_endorsed():
    wordy = [dict(r, reward=1.0 if len(r["final_text"].split()) > 10 else 0.0) for r in ROWS]
    scan = hack_scan(wordy, endorsed=("tool:lookup_order",))
    assert scan["best"] == "length_words" and scan["verdict"] == "suspect" and scan["r"] > 0.3
    assert "length_words" in scan["summary"] and "not endorsed" in scan["summary"]
    assert hack_scan(wordy, endorsed=("length",))["verdict"] == "endorsed"
    assert hack_scan(wordy)["verdict"] == "unreviewed"
    flat = [dict(r, reward=1.0) for r in ROWS]
    assert hack_scan(flat)["verdict"] == "no_signal"
    sel = select(ROWS, mode="rl", endorsed=("padding",))
    assert sel.report["hack_scan"]["endorsed"] == ["padding"]
