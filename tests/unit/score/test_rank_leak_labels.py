"""rank() quality scores, leak_report(), attach_labels() and the trust check."""
import json
import logging

import pytest

from whileai_ray.result.data import SimulationData
from whileai_ray.result.grading.paths import leak_report_of, rank_source
from whileai_ray.score.judges.labels import JudgeTrustError, attach_labels, trust_check
from whileai_ray.score.leak import LeakReport, leak_report
from whileai_ray.score.rank import SCORES, quality_of, rank
from whileai_ray.store.reader import load_rows, save_jsonl_atomic

SECRET = "the customer was refunded yesterday"


def row(prompt="Where is my order ORD-1? It should have arrived by now, I ordered it two weeks ago "
               "and paid for express shipping.", steps=None, final="ORD-1 shipped on May 4.", **extra):
    steps = [{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"},
              "result": {"status": "ok", "data": {"shipped": "May 4"}}}] if steps is None else steps
    return {"prompt": prompt, "steps": steps, "final_text": final, "scenario_id": "sc-1",
            "rollout_index": 0, **extra}


def test_rank_scores_each_axis_and_leaves_reward():
    rows = [
        row(reward=1),
        row(prompt="hello"),
        row(steps=[{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"}, "result": {"status": "ok"}}] * 3),
        row(final=f"Note: {SECRET}.", privileged={"reference": SECRET}),
        row(prompt="", final="", steps="nope"),
        row(prompt="Thanks a lot!", steps=[]),
    ]
    summary = rank(rows)
    assert rows[0]["reward"] == 1 and rows[0]["quality_reason"] == "ok" and rows[0]["quality"] == 0.96
    assert rows[0]["quality_scores"] == {"opener": 1.0, "ping_pong": 1.0, "leak": 1.0, "complexity": 0.8,
                                         "structure": 1.0}
    assert rows[1]["quality_scores"]["opener"] == 0.2 and rows[1]["quality_reason"].startswith("opener:")
    assert rows[2]["quality_scores"]["ping_pong"] == 0.0
    assert rows[3]["quality_scores"]["leak"] == 0.0 and rows[3]["quality"] == 0.2
    assert SECRET[:12] in rows[3]["quality_reason"]
    assert rows[4]["quality_scores"]["structure"] == 0.0 and rows[4]["quality"] <= 0.2
    assert rows[5]["quality_scores"]["complexity"] == 0.2
    assert set(rows[0]["quality_scores"]) == set(SCORES)
    assert summary["n"] == 6 and sum(summary["distribution"].values()) == 6
    by_hand = {name: sum(r["quality_scores"][name] < 0.5 for r in rows) / 6 for name in SCORES}
    assert summary["fail_rates"] == pytest.approx(by_hand, abs=1e-4)
    assert summary["n_pass"] == sum(r["quality"] >= 0.6 for r in rows)
    assert summary["best"][0]["index"] == 0 and summary["max"] == 0.96
    assert summary["min"] == min(r["quality"] for r in rows)
    with pytest.raises(ValueError, match="min_quality"):
        rank(rows, min_quality=2)


def test_rank_source_rewrites_a_path_and_a_run(tmp_path):
    path = tmp_path / "rows.jsonl"
    save_jsonl_atomic([row(), row(prompt="hi")], path)
    summary = rank_source(str(path), min_quality=0.9)
    assert summary["path"] == str(path) and summary["n_pass"] == 1
    assert [r["quality"] for r in load_rows(path)[0]] == [0.96, 0.76]
    data = SimulationData(trajectories=[row()], path=str(tmp_path / "run.jsonl"))
    rank_source(data)
    assert load_rows(tmp_path / "run.jsonl")[0][0]["quality_reason"] == "ok"
    assert quality_of(row())[0] == 0.96


def test_leak_report_reads_privileged_context():
    rows = [
        row(final=f"Good news: {SECRET}.", privileged={"reference": SECRET}),
        row(privileged={"hidden_state": {"world_state": "entity already acted on"}}),
        row(),
        row(final=f"The tool says {SECRET}.", privileged={"reference": SECRET},
            steps=[{"tool": "lookup_order", "arguments": {"order_id": "ORD-1"},
                    "result": {"status": "ok", "note": SECRET}}]),
    ]
    report = leak_report(rows)
    assert isinstance(report, LeakReport) and isinstance(report, dict)
    assert (report.n_rows, report.n_checked, report.n_leaked) == (4, 3, 1)
    assert report["checked"] == [0, 1, 3] and report.leaked[0]["index"] == 0
    assert report.leaked[0]["quote"] == SECRET and report.leaked[0]["field"] == "reference" and report.rate == pytest.approx(1 / 3)
    assert str(report) == "checked 3 of 4 rows: 1 reply quoted their privileged context (33.3%)"
    clean = leak_report_of(SimulationData(trajectories=rows[1:3]))
    assert str(clean) == "checked 1 of 2 rows: no reply quoted its privileged context"
    with pytest.raises(ValueError, match="min_len"):
        leak_report(rows, min_len=0)


def test_attach_labels_shapes_majority_and_kinds(tmp_path):
    rows = [row(scenario_id=f"sc-{i}", final=f"reply {i}") for i in range(4)]
    report = attach_labels(rows, {0: 1, "sc-1#0": 0, "nope": 1, 3: "x"})
    assert (report["matched"], report["unmatched"], report["invalid"]) == (2, 1, 1)
    assert rows[0]["gold_reward"] == 1 and rows[1]["gold_reward"] == 0 and rows[0]["gold_kind"] == "human"
    attach_labels(rows, {0: 0}, annotator="bo")
    assert "gold_reward" not in rows[0] and len(rows[0]["gold_labels"]) == 2     # a 1-1 tie
    attach_labels(rows, [1, 1, 1, 1], kind="verifier", replace=True)
    assert [r["gold_reward"] for r in rows] == [1, 1, 1, 1] and rows[0]["gold_kind"] == "program"
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"prompt": rows[2]["prompt"], "final_text": rows[2]["final_text"],
                                "label": 0}) + "\n")
    attach_labels(rows, str(path), replace=True)
    assert rows[2]["gold_reward"] == 0 and rows[2]["gold_labels"] == [
        {"label": 0, "kind": "human", "annotator": "unknown"}]
    with pytest.raises(ValueError, match="kind"):
        attach_labels(rows, {0: 1}, kind="crowd")
    with pytest.raises(ValueError, match="one per row"):
        attach_labels(rows, [1, 0])


def test_trust_check_modes(caplog):
    rows = [row(reward=i % 2) for i in range(30)]
    with caplog.at_level(logging.WARNING, logger="whileai_ray.trust"):
        summary = trust_check(rows, "warn")
    assert summary["measured"] is False and len(caplog.records) == 1
    with pytest.raises(JudgeTrustError, match="not measured"):
        trust_check(rows, "require")
    assert trust_check(rows, "off") is None
    attach_labels(rows, {i: i % 2 for i in range(30)})
    good = trust_check(rows, "require")
    assert good["ok"] and good["kappa"] == 1.0 and good["n"] == 30
    attach_labels(rows, {i: 1 for i in range(30)}, replace=True)
    with pytest.raises(JudgeTrustError, match="under the floors"):
        trust_check(rows, "require")
    attach_labels(rows, {i: i % 2 for i in range(30)}, kind="model", replace=True)
    assert trust_check(rows, "warn")["measured"] is False
    with pytest.raises(ValueError, match="trust="):
        trust_check(rows, "always")
