"""The report over a crafted record (issue 28, item 10), without a browser: counts that are
text in a ``.meta.json`` are escaped, never markup, and values of the wrong type draw nothing
instead of breaking the page; ``wai.load`` keeps only sidecar fields of the type a run writes."""
import json

from whileai_ray.result.html import sections
from whileai_ray.result.data import SimulationData
from whileai_ray.result.html.report import render_report
from whileai_ray.result import loading
from whileai_ray.result.loading import load
from whileai_ray.store.checkpoint.lines import parse_jsonl

X = "<script>alert(1)</script>"
ROWS = [{"prompt": f"q{i}", "steps": [], "final_text": "a", "scenario_id": f"s{i}", "reward": float(i % 2)}
        for i in range(4)]


def _data(**kw):
    return SimulationData(trajectories=[dict(r) for r in ROWS], **kw)


def test_counts_that_are_text_in_the_record_are_escaped_in_the_causes():
    data = _data(search={"rollouts": {"rerolled": X, "lost": X, "timed_out": X, "rows": X,
                                      "rerolled_by": {X: 2, "agent_error": X}, "lost_by": [X]}})
    html = sections.causes([("run", data)])
    assert "<script>" not in html and html.count("&lt;script&gt;") >= 5      # 4 counts and a cause name
    assert "re-rolls by cause" in html and ">2</text>" in html               # the numeric count is drawn


def test_values_of_the_wrong_type_draw_nothing_instead_of_breaking_the_page():
    data = _data(coverage={"pairwise": {"fraction": X}, "delivered": {"fault_share": X}, "unique_prompts": X},
                 coverage_curve=[{"n_rows": X, "unique_prompts": 1}], elapsed_seconds=float("nan"),
                 search={"rollouts": X}, warnings=[X])
    data.elapsed_seconds = X
    page = render_report(data)
    assert "<script>alert" not in page and "rebuilt from the rows in run order" in page


def test_load_keeps_only_sidecar_fields_of_the_type_a_run_writes(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "run.meta.json").write_text(json.dumps({"elapsed_seconds": X, "search": [X], "mode": "rl",
                                                         "warnings": [X, 3], "coverage_curve": {}}))
    data = load(path)
    assert data.mode == "rl" and data.elapsed_seconds == 0.0 and data.search == {} and data.coverage_curve == []
    note = [w for w in data.warnings if "did not have the type" in w]
    assert data.warnings[0] == X and len(note) == 1
    assert all(name in note[0] for name in ("search", "coverage_curve", "elapsed_seconds"))
    taken, notes = loading.checked_meta({"budget": True, "rollouts_per_request": 2}, "f")
    assert taken == {"rollouts_per_request": 2} and "budget" in notes[0]


def test_a_sidecar_that_cannot_be_read_is_ignored_and_said(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "run.meta.json").write_text("[" * 100_000 + "]" * 100_000)
    data = load(path)
    assert len(data.rows()) == 4 and any("sidecar could not be read" in w for w in data.warnings)


def test_a_line_nested_too_deep_is_skipped_and_named():
    deep = b'{"prompt": "d", "blob": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"
    good = b"".join(json.dumps(r).encode() + b"\n" for r in ROWS)
    got = parse_jsonl(good[:60] + good[60:] + deep + good, "ck.jsonl")
    assert len(got.rows) == 8 and got.bad_lines == 1
    assert got.warnings == ["ck.jsonl: line 5 is nested too deep to decode; skipped as corrupt"]
