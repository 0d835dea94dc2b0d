"""``whileai-ray view`` in headless Chromium (Debian's package, as the HTML report's browser test
drives it): the list of runs, a filter, a row, a comparison and a live refresh, each page loaded
from the viewer's server on 127.0.0.1 and watched over the DevTools protocol: no console errors,
no dialog (row text that tries to be markup stays text), no request but to the viewer itself.

No Ray here: the runs are the seeded agent's rows saved as a run saves them. It lives beside
the report's browser test (tests/ray) because it starts a browser; like that test it fails, not
skips, without chromium (.ci/run installs it).

Set ``WHILEAI_WRITE_DOCS_SCREENSHOT=1`` to (re)write notebooks/viewer.png, the README's picture.
"""
import json
import os
import threading
import time
from pathlib import Path

import pytest

from whileai_ray.result import failure_breakdown as fb
from whileai_ray.result.data import SimulationData
from whileai_ray.store.checkpoint.lines import HEADER_KEY
from whileai_ray.testing.browser import Chromium, chromium_path
from screenshot_colours import colours, saturated_colours
from whileai_ray.testing.seeded_rows import played
from whileai_ray.viewer import make_server

DOCS_PNG = Path(__file__).resolve().parents[2] / "notebooks" / "viewer.png"
MARKUP = "<img src=x onerror=\"console.error('escaped?')\"><script>alert('escaped?')</script>"
VISIBLE_ROWS = "document.querySelectorAll('table.rows tbody tr').length"


def _odd(row):
    return 0.0 if len(row.get("final_text") or "") % 3 == 0 else 1.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if chromium_path() is None:
        pytest.fail("no chromium on PATH: apt-get install -y chromium (.ci/run installs it)")
    folder = tmp_path_factory.mktemp("runs")
    before = played(16, 4)
    for r in before[::5]:
        r["final_text"] = (r.get("final_text") or "") + " " + MARKUP
        r["prompt"] = MARKUP + " " + r["prompt"]
    after = played(16, 4, grader=_odd)
    SimulationData(trajectories=before, mode="rl").save(str(folder / "before.jsonl"), meta=True)
    SimulationData(trajectories=after, mode="rl").save(str(folder / "after.parquet"))
    live = folder / "live.jsonl"
    live.write_bytes(json.dumps({HEADER_KEY: 1}).encode() + b"\n" + _lines(before[:6]))
    server = make_server(folder, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_address[1]}", "before": before, "after": after, "live": live,
           "server": server, "folder": folder}
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def _lines(rows) -> bytes:
    return b"".join(json.dumps(r, default=str).encode() + b"\n" for r in rows)


def _only_the_viewer(page, url):
    assert page.requests and all(r.startswith(url + "/") for r in page.requests), page.requests


def test_the_list_of_runs_loads_clean_and_links_each_run(runs):
    with Chromium() as page:
        page.open_url(runs["url"] + "/")
        assert page.console_errors == [] and page.dialogs == []
        names = page.evaluate("Array.from(document.querySelectorAll('a.run')).map(function (a) "
                              "{ return a.textContent; })")
        assert names == ["after.parquet", "before.jsonl", "live.jsonl"]
        cells = page.evaluate("document.querySelector('table.runs tbody tr:nth-child(2)').innerText")
        assert "rl" in cells and "64" in cells and "[" in cells
        png = page.screenshot(page.boxes("section#runs")[0])
        assert colours(png) > 20
        _only_the_viewer(page, runs["url"])


def test_a_filter_shows_only_the_failed_rows_and_a_row_opens_its_conversation(runs):
    before = runs["before"]
    failed = [i for i, r in enumerate(before) if fb.failed(r)]
    assert 0 < len(failed) < len(before)
    with Chromium() as page:
        page.open_url(runs["url"] + "/")
        page.follow("document.querySelector('a.run[href*=\"before\"]').click()")
        assert page.evaluate(VISIBLE_ROWS) == len(before)
        page.follow("document.querySelector('select[name=verdict]').value = 'fail';"
                    "document.querySelector('form.filters').submit()")
        assert page.evaluate("location.search").count("verdict=fail") == 1
        shown = page.evaluate("Array.from(document.querySelectorAll('table.rows tbody tr')).map(function (t) "
                              "{ return parseInt(t.dataset.i, 10); })")
        assert shown == failed
        assert page.evaluate("document.querySelector('select[name=verdict]').value") == "fail"
        page.follow("document.querySelector('table.rows tbody tr a').click()")
        assert page.evaluate("document.querySelector('section#row h2').textContent") == \
            f"Row {failed[0]} of {len(before)}"
        assert page.evaluate("document.querySelectorAll('.msg.agent').length") >= 1
        assert page.evaluate("document.querySelectorAll('.call code').length") >= 1
        assert "fail" in page.evaluate("document.querySelector('.verdict').innerText")
        assert page.console_errors == [] and page.dialogs == []
        _only_the_viewer(page, runs["url"])


def test_marked_up_row_text_never_runs(runs):
    marked = next(i for i, r in enumerate(runs["before"]) if MARKUP in r["prompt"])
    with Chromium() as page:
        page.open_url(f"{runs['url']}/run?path=before.jsonl")
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        page.open_url(f"{runs['url']}/row?path=before.jsonl&i={marked}")
        assert page.evaluate("document.querySelectorAll('img, script').length") == 1    # the page's own script
        assert "<script>alert('escaped?')</script>" in page.evaluate("document.body.innerText")
        assert page.console_errors == [] and page.dialogs == []


def test_the_comparison_of_ticked_runs_draws_the_leaderboard(runs):
    with Chromium(width=1100) as page:
        page.open_url(runs["url"] + "/")
        page.follow("document.querySelector('input[value=\"before.jsonl\"]').click();"
                    "document.querySelector('input[value=\"after.parquet\"]').click();"
                    "document.querySelector('form').submit()")
        assert page.evaluate("document.querySelectorAll('table.leaderboard tbody tr').length") == 2
        heads = page.evaluate("Array.from(document.querySelectorAll('table.leaderboard th')).map(function (t) "
                              "{ return t.textContent; })")
        assert heads[:4] == ["run", "rows", "tasks", "pass@1"] and heads[-2:] == ["pass^4", "pass@4"]
        assert page.evaluate("document.querySelectorAll('svg.leaderboard-chart polyline.curve').length") == 4
        box = page.boxes("section#leaderboard")[0]
        png = page.screenshot({"x": 0, "y": 0, "w": 1100, "h": box["y"] + box["h"] + 12}, fast=False)
        assert colours(png) > 50 and saturated_colours(png) >= 2
        if os.environ.get("WHILEAI_WRITE_DOCS_SCREENSHOT") == "1":
            DOCS_PNG.parent.mkdir(exist_ok=True)
            DOCS_PNG.write_bytes(png)
        assert page.console_errors == []
        _only_the_viewer(page, runs["url"])


def test_a_running_checkpoint_refreshes_as_rows_land(runs):
    live, before = runs["live"], runs["before"]
    with Chromium() as page:
        page.open_url(f"{runs['url']}/run?path=live.jsonl")
        assert page.evaluate("document.querySelector('.nrows').textContent") == "6"
        with open(live, "ab") as fh:
            fh.write(_lines(before[6:15]))
        deadline, seen = time.monotonic() + 20, None
        while time.monotonic() < deadline:
            time.sleep(0.5)
            try:
                seen = page.evaluate("document.querySelector('.nrows') && document.querySelector('.nrows').textContent")
            except RuntimeError:
                continue                    # the page is reloading
            if seen == "15":
                break
        assert seen == "15", f"the run page still shows {seen} rows 20 s after 9 more landed"
        assert page.evaluate(VISIBLE_ROWS) == 15
        assert page.console_errors == []
        assert any("/api/run?path=live.jsonl" in r for r in page.requests)
        _only_the_viewer(page, runs["url"])


def _wait_for(page, expression, want, seconds=20):
    deadline, seen = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        time.sleep(0.5)
        try:
            seen = page.evaluate(expression)
        except RuntimeError:
            continue                        # the page is reloading
        if seen == want:
            break
    return seen


def test_a_large_run_paints_its_first_rows_then_reloads_when_read(runs):
    rows = [dict(runs["after"][i % 64], scenario_id=f"t{i // 4}") for i in range(400)]
    SimulationData(trajectories=rows, mode="rl").save(str(runs["folder"] / "large.jsonl"))
    cache = runs["server"].cache
    cache.block_bytes = 0                   # counts as large: read in the background
    lock = cache._path_locks.setdefault(os.path.realpath(runs["folder"] / "large.jsonl"), threading.Lock())
    try:
        with Chromium() as page:
            with lock:                      # the whole-file read waits until the first page is checked
                page.open_url(f"{runs['url']}/run?path=large.jsonl")
                assert page.evaluate("document.querySelector('main').dataset.ready") == "0"
                assert page.evaluate(VISIBLE_ROWS) == 100
                assert "Reading large.jsonl" in page.evaluate("document.querySelector('#summary').innerText")
            assert _wait_for(page, "document.querySelector('main') && document.querySelector('main').dataset.ready",
                             "1") == "1", "the page did not reload once the run was read"
            assert page.evaluate("document.querySelector('.nrows').textContent") == "400"
            assert "page 1 of 4" in page.evaluate("document.querySelector('.pager').innerText")
            assert page.console_errors == []
            _only_the_viewer(page, runs["url"])
    finally:
        cache.block_bytes = 8 << 20
