"""The HTML report without a browser: what it shows, that row text is escaped, that it fetches
nothing, that a bad output path is refused before anything is written, and the CLI around it.
(The browser test is tests/ray/test_html_report_browser.py.)"""
import json
import re

import pytest

from whileai_ray.cli import main
from whileai_ray.result.data import SimulationData
from whileai_ray.result import failure_breakdown as fb
from whileai_ray.result.html.report import render_report
from whileai_ray.result.html.rows import pick_rows
from whileai_ray.result.grading.scored import ScoredData

PAYLOAD = "<script>alert('x')</script><img src=x onerror=alert(1)>"


def _row(i, reward, *, prompt=None, tool="lookup_order", fault=None, stance="ordinary", arm="structured"):
    steps = [{"tool": tool, "arguments": {"order_id": f"ORD-{i}"},
              "result": {"status": "timeout" if fault else "ok", "data": {"id": i}}}]
    row = {"prompt": prompt or f"where is order ORD-{i // 2}?", "steps": steps, "final_text": f"reply {i}",
           "scenario_id": f"s{i // 2}", "tier": "ordinary", "tools_used": [tool], "arm": arm,
           "scenario_dimensions": {"stance": stance, "tool": tool, "tool_condition": fault or "success"},
           "reward": reward, "reason": f"reason {i}", "judge_status": "ok", "judge_name": "grader",
           "privileged": {"reference": "TOP-SECRET-42"}}
    if fault:
        row["faults"] = {tool: {"mode": fault, "rate": 1.0}}
    return row


def _rows(n=24):
    rows = []
    for i in range(n):
        fault = "timeout" if i % 3 == 0 else None
        rows.append(_row(i, 0.0 if (fault or i % 5 == 0) else 1.0, fault=fault,
                         stance=("ordinary", "hurried", "adversarial")[i % 3],
                         tool=("lookup_order", "refund_order")[i % 2], arm=("structured", "open_ended")[i % 2]))
    return rows


def _data(rows, **kw):
    return SimulationData(trajectories=rows, stopped_because="budget", mode="rl", repeat_policy="fixed",
                          rollouts_per_request=2, warnings=kw.pop("warnings", []), **kw)


def test_every_section_is_there_and_names_what_it_shows():
    page = render_report(_data(_rows(), search={"rollouts": {"rows": 24, "rerolled": 5, "lost": 1, "timed_out": 2,
                                                             "rerolled_by": {"agent_error": 5},
                                                             "lost_by": {"agent_error": 1}}}))
    for sid in ("summary", "pass-rates", "coverage", "failures", "causes", "rows", "warnings"):
        assert f'<section id="{sid}">' in page and f'href="#{sid}"' in page
    assert "pass@1" in page and "pass@k" in page and "pass^k" in page
    assert "failure rate by stance and tool<" in page     # the two axes with the most values (ties by name)
    assert "by fault kind" in page and "timeout" in page and "by arm" in page and "by tool" in page
    assert "re-rolls by cause" in page and "agent_error" in page and "5 re-rolled, 1 lost" in page
    assert page.count('<details class="row"') == 24
    assert "TOP-SECRET-42" not in page                 # privileged fields never shown


def test_row_text_is_escaped_everywhere_it_appears():
    rows = _rows(6)
    rows[0] = _row(0, 0.0, prompt=PAYLOAD, tool="lookup_order")
    rows[0]["final_text"] = PAYLOAD
    rows[0]["reason"] = PAYLOAD
    rows[0]["steps"][0]["arguments"] = {"order_id": PAYLOAD}
    rows[0]["arm"] = PAYLOAD
    rows[0]["scenario_dimensions"]["stance"] = PAYLOAD
    page = render_report(_data(rows, warnings=[PAYLOAD]), labels=[PAYLOAD])
    scripts = re.findall(r"<script>", page)
    assert len(scripts) == 1                           # the page's own script, nothing from a row
    assert "<img" not in page and "onerror=alert(1)>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_the_file_fetches_nothing():
    page = render_report([_data(_rows()), _data(_rows())])
    assert not re.search(r"""\bsrc\s*=""", page)          # no image, script or frame source
    assert not re.search(r"@import|url\(", page)
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs and all(h.startswith("#") or h.startswith("data:") for h in hrefs), hrefs


def test_two_runs_side_by_side_with_the_paired_delta():
    before = _data(_rows())
    after_rows = _rows()
    for r in after_rows:
        r["reward"] = 1.0                                 # every task passes after the change
    page = render_report([before, _data(after_rows)], ["before", "after"])
    assert "Paired delta: after vs before" in page
    assert "paired on 12 task(s)" in page
    assert "UNCONFIRMED (IMPROVED)" in page               # one run per side: the delta_report verdict
    assert page.count('class="browser"') == 2 and '<div class="tabs">' in page


def test_the_same_inputs_give_the_same_file():
    assert render_report(_data(_rows())) == render_report(_data(_rows()))


def test_a_scored_data_and_a_run_without_records_still_render():
    scored = ScoredData(trajectories=_rows(), judge_name="rubric-judge")
    page = render_report(scored)
    assert "rubric-judge" in page and "re-rolls and losses were not recorded" in page
    assert "rebuilt from the rows in run order" in page
    ungraded = [{k: v for k, v in r.items() if k not in ("reward", "judge_status")} for r in _rows()]
    page = render_report(_data(ungraded))
    assert "no graded rows" in page and "not graded" in page


def test_the_browser_keeps_every_failed_row_when_it_cuts():
    rows = _rows(40)
    shown = pick_rows(rows, 20)
    failed = [i for i, r in enumerate(rows) if fb.failed(r)]
    assert len(shown) == 20 and set(failed) <= set(shown) and shown == sorted(shown)
    page = render_report(_data(rows), max_rows=20)
    assert page.count('<details class="row"') == 20 and "showing 20" in page


def test_breakdowns_count_failed_of_graded_worst_first():
    rows = _rows(24)
    tools = {g.key: (g.failed, g.n) for g in fb.by_tool(rows)}
    assert tools == {"lookup_order": (sum(1 for r in rows if r["tools_used"] == ["lookup_order"] and fb.failed(r)), 12),
                     "refund_order": (sum(1 for r in rows if r["tools_used"] == ["refund_order"] and fb.failed(r)), 12)}
    faults = fb.by_fault(rows)
    assert faults[0].key == "timeout" and faults[0].rate == 1.0 and faults[0].n == 8
    hm = fb.heat_map(rows)
    assert {hm["x"], hm["y"]} <= {"stance", "tool", "tool_condition"}
    assert sum(g.n for g in hm["cells"].values()) == 24
    rows[0]["reward"] = None                              # a judge failure is not a row either way
    assert sum(g.n for g in fb.by_arm(rows)) == 23


@pytest.mark.parametrize("bad", ["rows.jsonl", "report", "out.txt"])
def test_to_html_refuses_a_path_that_is_not_html_and_writes_nothing(tmp_path, bad):
    data = _data(_rows())
    target = tmp_path / bad
    target.write_text("keep me")
    with pytest.raises(ValueError, match=r"path=.*must end in \.html"):
        data.to_html(target)
    assert target.read_text() == "keep me"
    with pytest.raises(ValueError, match="does not exist"):
        data.to_html(tmp_path / "missing" / "r.html")
    with pytest.raises(ValueError, match="max_rows"):
        data.to_html(tmp_path / "r.html", max_rows=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == [bad]


def test_to_html_writes_one_file_and_returns_its_path(tmp_path):
    out = _data(_rows()).to_html(tmp_path / "run.html", baseline=_data(_rows()))
    assert out == str(tmp_path / "run.html")
    text = (tmp_path / "run.html").read_text()
    assert text.startswith("<!DOCTYPE html>") and "baseline" in text and "this run" in text
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]       # no .tmp left behind


def _save(path, rows, meta=None):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps({k: v for k, v in r.items() if k != "privileged"}) + "\n")
    return str(path)


def test_cli_report_html_one_run_and_two(tmp_path, capsys):
    a, b = _save(tmp_path / "a.jsonl", _rows()), _save(tmp_path / "b.jsonl", _rows())
    assert main(["report", a, "--html", str(tmp_path / "a.html")]) == 0
    assert "wrote" in capsys.readouterr().out and (tmp_path / "a.html").exists()
    assert main(["report", a, b, "--html", str(tmp_path / "ab.html")]) == 0
    text = (tmp_path / "ab.html").read_text()
    assert "Paired delta: b.jsonl vs a.jsonl" in text
    assert main(["report", a, b]) == 0
    out = capsys.readouterr().out
    assert "paired delta" in out and "pass_at_1" in out


def test_cli_report_html_with_bad_arguments_exits_2_before_reading(tmp_path, capsys):
    a = _save(tmp_path / "a.jsonl", _rows())
    assert main(["report", a, "--html", a]) == 2                  # would overwrite the rows: refused
    assert "--html=" in capsys.readouterr().err and len(open(a).readlines()) == 24
    assert main(["report", a, a, a]) == 2
    assert main(["report", a, "--html", str(tmp_path / "x.html"), "--max-rows", "0"]) == 2
    assert not (tmp_path / "x.html").exists()


def test_an_empty_run_renders_every_section_saying_what_is_missing():
    page = render_report(SimulationData())
    for sid in ("summary", "pass-rates", "coverage", "failures", "causes", "rows", "warnings"):
        assert f'<section id="{sid}">' in page
    assert "no graded rows" in page and "0 rows, 0 failed" in page
