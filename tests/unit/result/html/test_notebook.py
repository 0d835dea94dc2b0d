"""The notebook helpers: HTML view of a run, SVG chart, live progress, progress-line parsing."""
import xml.etree.ElementTree as ET

import pytest

from whileai_ray.result.data import SimulationData
from whileai_ray.result.html.notebook import html_view, metrics_chart
from whileai_ray.result.progress.notebook_bar import (NotebookProgress, notebook_progress, parse_progress_line,
                                                      progress_html)
from whileai_ray.result.progress.lines import format_line


def _row(i, reward, prompt=None, final="done"):
    return {"prompt": prompt or f"where is order A-{i // 4}?", "steps": [], "final_text": final,
            "scenario_id": f"s{i // 4}", "tier": "ordinary", "tools_used": ["lookup_order"],
            "reward": reward, "hidden_state": {"secret": "TOP-SECRET-42"}}


def _data(rows, warnings=()):
    return SimulationData(trajectories=rows, warnings=list(warnings), stopped_because="budget",
                          coverage={"unique_prompts": 7, "unique_cells": 3,
                                    "pairwise": {"fraction": 0.5}, "delivered": {"fault_share": 0.25}})


def test_html_view_summarises_and_escapes_row_text():
    rows = [_row(i, float(i % 2)) for i in range(16)]
    rows[0] = _row(0, 0.0, prompt="<script>alert('x')</script> & more", final="a < b")
    page = html_view(_data(rows, warnings=["writer <ran> dry"]))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; more" in page
    assert "a &lt; b" in page
    assert "writer &lt;ran&gt; dry" in page and "1 warning(s)" in page
    assert "TOP-SECRET-42" not in page                      # privileged fields never shown
    assert "pass@1 0.50" in page                            # the pass_at line
    assert "pairwise coverage" in page and "50%" in page and "25%" in page
    assert "first 5 of 16 rows" in page
    assert page.count("<tr><td>") == 5
    assert "<svg" in page


def test_html_view_of_an_empty_run_has_no_chart_or_table():
    page = html_view(SimulationData(stopped_because="writer_failed"))
    assert "writer_failed" in page and "0 rows" in page
    assert "<svg" not in page and "wai-rows" not in page


def test_long_row_text_is_cut():
    page = html_view(_data([_row(0, 1.0, final="x" * 5000)]))
    assert "x" * 159 + "\u2026" in page and "x" * 200 not in page


def test_metrics_chart_is_valid_svg_with_one_bar_per_run_and_metric():
    a = _data([_row(i, 1.0 if i % 4 else 0.0) for i in range(32)])
    b = _data([_row(i, 1.0 if i % 2 else 0.0) for i in range(32)])
    chart = metrics_chart({"rate 0.2": a, "rate <0.5>": b})
    root = ET.fromstring(chart.svg)                         # well-formed XML
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect") if r.find("{http://www.w3.org/2000/svg}title") is not None]
    assert len(bars) == 2 * 4                               # pass@1, pass@4, pass^4, coverage per run
    titles = [r.find("{http://www.w3.org/2000/svg}title").text for r in bars]
    assert "rate 0.2 pass@1 0.750" in titles and "rate <0.5> pass@1 0.500" in titles
    assert chart._repr_html_() == chart.svg


def test_metrics_chart_marks_missing_values_and_rejects_empty_input():
    ungraded = _data([_row(i, None) for i in range(4)])
    assert "n/a" in metrics_chart(ungraded).svg
    with pytest.raises(ValueError, match="metrics_chart"):
        metrics_chart({})


SNAP = {"rows": 30, "cap": 120, "landed": 30, "resumed": 0, "rerolled": 2, "rerolled_by": {},
        "timed_out": 0, "lost": 1, "lost_by": {"agent_error": 1}, "inflight": 8, "situations": 31,
        "elapsed_s": 65.0}


def test_progress_outside_ipython_prints_the_progress_line(capsys):
    seen = []
    progress = notebook_progress(then=seen.append)
    progress(SNAP)
    progress({**SNAP, "rows": 120, "landed": 120})
    out = capsys.readouterr().out.splitlines()
    assert out == [format_line(SNAP), format_line({**SNAP, "rows": 120, "landed": 120})]
    assert progress.last["rows"] == 120 and len(seen) == 2


def test_progress_in_ipython_displays_once_then_updates_in_place(monkeypatch):
    import IPython
    import IPython.display as display
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())     # "inside a kernel"
    calls = []

    class Handle:
        def update(self, obj):
            calls.append(("update", obj.data))

    def fake_display(obj, display_id=None):
        calls.append(("display", obj.data, display_id))
        return Handle()

    monkeypatch.setattr(display, "display", fake_display)
    progress = NotebookProgress()
    for rows in (30, 60, 120):
        progress({**SNAP, "rows": rows})
    assert [c[0] for c in calls] == ["display", "update", "update"]
    assert calls[0][2] is True
    assert "width:25.0%" in calls[0][1] and "width:100.0%" in calls[2][1]


def test_progress_html_handles_a_zero_cap():
    assert "width:0.0%" in progress_html({"rows": 0, "cap": 0})


def test_notebook_progress_rejects_a_non_callable():
    with pytest.raises(TypeError, match="then"):
        notebook_progress(then="print")


def test_parse_progress_line_reads_the_last_line_of_a_log():
    log = "\n".join(["starting", format_line({**SNAP, "rows": 10}), "noise",
                     "(pid=3) " + format_line({**SNAP, "elapsed_s": 3725}), "done"])
    got = parse_progress_line(log)
    assert got == {"rows": 30, "cap": 120, "resumed": 0, "situations": 31, "rerolled": 2, "lost": 1,
                   "elapsed_s": 3720.0}                      # "1h2m" has minute resolution
    assert parse_progress_line("no progress yet") is None
    resumed = format_line({**SNAP, "resumed": 12, "rerolled": 0, "lost": 0})
    assert parse_progress_line(resumed)["resumed"] == 12
    with pytest.raises(TypeError):
        parse_progress_line(None)
