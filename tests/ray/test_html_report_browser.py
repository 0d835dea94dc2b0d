"""The HTML report of a graded rl run, opened in headless Chromium (Debian's package) and watched
over the DevTools protocol: no console errors, no request but the file itself, row text that
tries to be markup stays text, every section draws something, and the row filter works.

Set ``WHILEAI_WRITE_DOCS_SCREENSHOT=1`` to (re)write notebooks/html_report.png, the README's picture,
from this test's own run.
"""
import hashlib
import os
from pathlib import Path

import pytest

import whileai_ray as wai
from whileai_ray.result import failure_breakdown as fb
from whileai_ray.testing.browser import Chromium, chromium_path
from screenshot_colours import colours, saturated_colours

DOCS_PNG = Path(__file__).resolve().parents[2] / "notebooks" / "html_report.png"
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object",
          "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
         {"type": "function", "function": {"name": "refund_order", "parameters": {"type": "object",
          "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
MARKUP = "<img src=x onerror=\"console.error('escaped?')\"><script>alert('escaped?')</script>"
SECTIONS = ["summary", "pass-rates", "coverage", "failures", "causes", "rows", "warnings"]
CHARTS = {"pass-rates", "coverage", "failures", "causes", "rows"}


def _draw(key: str) -> int:
    return hashlib.sha256(key.encode()).digest()[0]


def make_agent(error_share: int, fix_share: int = 0):
    inner = wai.seeded_agent(TOOLS)

    def support_agent(message):   # fails on a fixed share of draws (re-rolls); some replies carry markup
        ctx = wai.current_rollout
        if _draw(f"{message}|{ctx.rollout_index}|{ctx.unit.attempt}") < error_share:
            raise RuntimeError("agent call failed")
        out = inner(message)
        if _draw(f"fix|{message}|{ctx.rollout_index}") < fix_share:      # the "after" agent: fewer flaws
            out = {**out, "seeded": []}
        if _draw(message) < 40:
            out = {**out, "final_text": out["final_text"] + " " + MARKUP}
        return out
    return support_agent


def grader(row):
    if row.get("seeded"):
        return {"reward": 0.0, "reason": f"flaw {', '.join(row['seeded'])} <b>{MARKUP}</b>"}
    return {"reward": 1.0, "reason": "used the tool result"}


@pytest.fixture(scope="module")
def reports(ray_local, tmp_path_factory):
    if chromium_path() is None:
        pytest.fail("no chromium on PATH: apt-get install -y chromium (.ci/run installs it)")
    common = dict(tools=TOOLS, simulator=False, mode="rl", repeats=4, repeat_policy="fixed", budget=160, seed=0,
                  grader=grader,
                  system_prompt="You help customers with their orders.")
    base = wai.simulate(make_agent(26), **common)
    after = wai.simulate(make_agent(10, fix_share=128), tasks=base, **common)   # the same tasks, all paired
    folder = tmp_path_factory.mktemp("report")
    return {"base": base, "after": after, "one": base.to_html(folder / "one.html"),
            "two": after.to_html(folder / "two.html", baseline=base)}


def test_the_report_of_a_graded_rl_run_loads_clean_and_every_section_draws(reports):
    base = reports["base"]
    assert base.mode == "rl" and base.search["rollouts"]["rerolled"] > 0
    assert any(MARKUP in r["final_text"] for r in base.rows())
    with Chromium() as page:
        page.open(reports["one"])
        assert page.console_errors == []
        assert page.dialogs == []                              # no row text ran as script
        assert page.requests == ["file://" + os.path.abspath(reports["one"])]
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        boxes = {b["id"]: b for b in page.boxes("section")}
        assert list(boxes) == SECTIONS
        page.evaluate("document.querySelector('details.row[data-failed=\"1\"]').open = true")
        boxes = {b["id"]: b for b in page.boxes("section")}
        for sid, box in boxes.items():
            png = page.screenshot({**box, "h": min(box["h"], 1200)})
            assert colours(png) > 20, f"section {sid} looks blank"
            if sid in CHARTS:
                assert saturated_colours(png) >= 2, f"section {sid} has no chart colours"
        assert page.console_errors == []


def test_the_failed_rows_filter_and_the_text_filter(reports):
    rows = reports["base"].rows()
    n_failed = sum(1 for r in rows if fb.failed(r))
    assert 0 < n_failed < len(rows)
    with Chromium() as page:
        page.open(reports["one"])
        visible = "document.querySelectorAll('.browser:not([hidden]) details.row:not([hidden])')"
        assert page.evaluate(f"{visible}.length") == len(rows)
        page.evaluate("document.querySelector('.failed-only').click()")
        assert page.evaluate("document.querySelector('.count').textContent") == \
            f"{n_failed} of {len(rows)} rows shown"
        assert page.evaluate(f"Array.from({visible}).every(function (d) {{ return d.dataset.failed === '1'; }})")
        needle = rows[0]["prompt"][:30]
        page.evaluate("document.querySelector('.failed-only').click();"
                      "var q = document.querySelector('.search'); q.value = %r;"
                      "q.dispatchEvent(new Event('input'))" % needle)
        expected = sum(1 for r in rows if needle.lower() in " ".join(
            str(r.get(k) or "") for k in ("prompt", "final_text", "reason"))[:600].lower())
        assert page.evaluate(f"{visible}.length") == expected >= 1
        assert page.console_errors == []


def test_two_runs_side_by_side_with_the_paired_delta_and_tabs(reports):
    with Chromium(width=1100) as page:
        page.open(reports["two"])
        assert page.console_errors == [] and page.dialogs == []
        assert "Paired delta: this run vs baseline" in page.evaluate("document.body.innerText")
        hidden = "Array.from(document.querySelectorAll('.browser')).map(function (b) { return b.hidden; })"
        assert page.evaluate(hidden) == [False, True]
        page.evaluate("document.querySelectorAll('.tabs button')[1].click()")
        assert page.evaluate(hidden) == [True, False]
        boxes = {b["id"]: b for b in page.boxes("section")}
        top = {"x": 0, "y": 0, "w": 1100, "h": boxes["pass-rates"]["y"] + boxes["pass-rates"]["h"] + 12}
        png = page.screenshot(top, fast=False)
        assert colours(png) > 50 and saturated_colours(png) >= 3
        if os.environ.get("WHILEAI_WRITE_DOCS_SCREENSHOT") == "1":
            DOCS_PNG.parent.mkdir(exist_ok=True)
            DOCS_PNG.write_bytes(png)
        assert page.console_errors == []
