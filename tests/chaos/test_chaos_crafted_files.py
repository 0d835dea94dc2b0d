"""Files a run reads are data (issue 28, items 10 and 11): crafted files on disk, read back.

* The HTML report of a checkpoint whose rows, ``.meta.json`` sidecar and labels carry markup
  (``<script>``, ``onerror=``, ``</script>``, ``<!--``, ``javascript:`` URLs) holds no element,
  attribute or script but its own.
* ``wai.load`` and a resume skip a JSON line nested 100,000 deep, with a warning naming it.
* A Parquet file whose footer claims 50 million rows (or whose dictionary decodes to 10 GB) is
  refused before anything is decoded.
* A ``_shard`` stub that names a path out of the run's shards folder, a link out of it, or a
  FIFO is refused, never opened.

What could eat memory or block runs in a child process under a memory limit (``RLIMIT_AS``)
and a timeout, so a regression fails the test instead of the machine.
"""
import json
import os
import resource
import subprocess
import sys
import textwrap
from html.parser import HTMLParser

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import whileai_ray as wai
from whileai_ray.result.html.page import CSS, JS
from bounded_call import bounded as _run_in_thread

QUIET = {"progress_every_rows": 10**6, "progress_every_s": 3600.0}
CHILD_MEMORY = 3 << 30          # bytes of address space a child may take (numpy and pyarrow map ~1 GB)


def _bounded(code: str, *args, timeout: float = 90, env=None) -> subprocess.CompletedProcess:
    """Run ``code`` in a child Python under ``CHILD_MEMORY`` and ``timeout``; a hang or a blown
    memory limit comes back as a failed run, never as a hung test."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, preexec_fn=limit,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child ran past {timeout} s (hung or decoding what it should have refused): "
                    f"{(exc.stdout or b'')[-500:]!r}")


# --------------------------------------------------------------------------- item 10: the report
HOSTILE = ['<script>alert("x")</script>', '"><img src=x onerror=alert(1)>', "</script><script>alert(2)</script>",
           "<!--", "javascript:alert(3)", "' onmouseover='alert(4)", "<svg onload=alert(5)>", "</style><b>"]
ALLOWED_TAGS = {"html", "head", "meta", "link", "title", "style", "body", "header", "h1", "p", "nav", "a", "main",
                "section", "h2", "h3", "div", "table", "thead", "tbody", "tr", "th", "td", "svg", "text", "rect",
                "line", "polyline", "circle", "code", "pre", "details", "summary", "span", "i", "b", "ul", "li",
                "label", "input", "button", "script"}


class _Markup(HTMLParser):
    """Every tag, attribute, script and style body of a page, as a browser would parse them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attrs, self.scripts, self.styles, self._in = [], [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.extend((tag, k, v or "") for k, v in attrs)
        if tag in ("script", "style"):
            self._in = tag
            (self.scripts if tag == "script" else self.styles).append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "script":
            self.scripts[-1] += data
        elif self._in == "style":
            self.styles[-1] += data


def _assert_only_its_own_markup(page: str) -> None:
    m = _Markup()
    m.feed(page)
    m.close()
    assert set(m.tags) <= ALLOWED_TAGS, set(m.tags) - ALLOWED_TAGS
    assert m.scripts == [JS] and m.styles == [CSS]        # the page's own script and style, nothing inside
    assert m.tags.count("a") == 7                         # the section links, no other link
    for tag, name, value in m.attrs:
        assert not name.startswith("on"), (tag, name, value)
        assert name not in ("src", "srcdoc", "action", "formaction", "style", "xlink:href"), (tag, name)
        flat = "".join(value.split()).lower()
        assert "javascript:" not in flat or name in ("data-text", "placeholder"), (tag, name, value)
        if name == "href":
            assert value.startswith("#") or value == "data:,", value


def _hostile_rows(n=6):
    rows = []
    for i in range(n):
        h = HOSTILE[i % len(HOSTILE)]
        tool = f"{h}tool{i}"
        rows.append({
            "prompt": f"{h} prompt {i}", "final_text": f"{h} reply", "reason": f"{h} reason",
            "steps": [{"tool": tool, "arguments": {h: h, "url": "javascript:alert(9)"}, "result": f'{{"x": "{h}"}}',
                       "text": h}],
            "tools_used": [tool], "arm": h, "tier": h, "scenario_id": f"{h}{i // 2}", "finish_reason": h,
            "scenario_dimensions": {h: h, "stance": h}, "faults": {tool: {"mode": h, "rate": 1.0}},
            "reward": float(i % 2), "judge_status": "ok" if i % 3 else h, "judge_name": h, "markers": {h: h},
            "model_version": h, "writer_model": h, "behavior_signature": h,
        })
    rows[0]["messages"] = [{"role": HOSTILE[0], "content": HOSTILE[1]},
                           {"role": "assistant", "content": HOSTILE[2],
                            "tool_calls": [{"function": {"name": HOSTILE[3], "arguments": HOSTILE[4]}}]},
                           {"role": "tool", "name": HOSTILE[5], "content": HOSTILE[6]}]
    return rows


def _hostile_meta(numbers_as_text: bool) -> dict:
    h = HOSTILE[0]
    count = h if numbers_as_text else 3
    return {"_whileai_ray_checkpoint": 1, "fingerprint": {"tools": h}, "created": h,
            "stopped_because": h, "mode": h, "repeat_policy": h, "writer_model": h, "user_model": h,
            "rollouts_per_request": count, "budget": count, "elapsed_seconds": count,
            "warnings": [h, HOSTILE[2]], "system_prompt": h, "tools": [h],
            "coverage": {"run_id": h, "agent_model": h, "unique_prompts": count, "unique_cells": count,
                         "pairwise": {"fraction": h if numbers_as_text else 0.5},
                         "delivered": {"fault_share": h if numbers_as_text else 0.25}},
            "coverage_curve": [{"n_rows": count, "unique_prompts": count, "unique_cells": count}],
            "search": {"rollouts": {"rerolled": h, "lost": HOSTILE[1], "timed_out": HOSTILE[2], "rows": HOSTILE[6],
                                    "rerolled_by": {h: 2, HOSTILE[1]: h}, "lost_by": {HOSTILE[2]: 1}}}}


@pytest.mark.parametrize("numbers_as_text", [False, True])
def test_a_crafted_checkpoint_and_sidecar_put_no_markup_in_the_report(tmp_path, numbers_as_text):
    folder = tmp_path / 'x"><img src=x onerror=alert(7)>'
    folder.mkdir()
    ck = folder / "run.jsonl"
    ck.write_text("".join(json.dumps(r) + "\n" for r in _hostile_rows()))
    (folder / "run.jsonl.meta.json").write_text(json.dumps(_hostile_meta(numbers_as_text)))
    data = wai.load(ck)
    assert data.search["rollouts"]["rerolled"] == HOSTILE[0]          # the sidecar was read
    out = data.to_html(tmp_path / "report.html", baseline=wai.load(ck), labels=[HOSTILE[1], HOSTILE[4]])
    page = open(out, encoding="utf-8").read()
    _assert_only_its_own_markup(page)
    assert page.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") >= 10   # shown, as text
    assert "&lt;/script&gt;&lt;script&gt;alert(2)" in page and "&lt;!--" in page
    assert "re-rolled" in page and "re-rolls by cause" in page


def test_labels_and_run_settings_with_markup_stay_text(tmp_path):
    rows = _hostile_rows(4)
    data = wai.load(_write_jsonl(tmp_path / "a.jsonl", rows))
    data.mode, data.repeat_policy, data.stopped_because = HOSTILE[2], HOSTILE[3], HOSTILE[4]
    data.search = {"rollouts": {"rerolled": HOSTILE[2], "lost": 0, "timed_out": 0, "rows": 4,
                                "rerolled_by": {"agent_error": 1}, "lost_by": {}}}
    page = open(data.to_html(tmp_path / "r.html", baseline=data, labels=[HOSTILE[2], HOSTILE[7]]),
                encoding="utf-8").read()
    _assert_only_its_own_markup(page)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --------------------------------------------------------------------------- item 11a: a deep line
DEEP = 100_000


def _deep_line() -> str:
    return '{"prompt": "deep", "steps": [], "final_text": "x", "blob": ' + "[" * DEEP + "]" * DEEP + "}\n"


@pytest.mark.parametrize("spill_rows", ["50000", "2"])      # read whole, or streamed to an Arrow spill
def test_wai_load_skips_a_line_nested_100000_deep_and_names_it(tmp_path, spill_rows):
    rows = [{"prompt": f"q{i}", "steps": [], "final_text": f"a{i}", "scenario_id": f"s{i}"} for i in range(4)]
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]) + _deep_line()
                    + "".join(json.dumps(r) + "\n" for r in rows[2:]))
    done = _bounded("""
        import sys, whileai_ray as wai
        data = wai.load(sys.argv[1])
        print(len(data.rows()), [r["prompt"] for r in data.rows()])
        print("WARN", [w for w in data.warnings if "line 3" in w])
        data.to_html(sys.argv[1] + ".html")
        print("OK")
    """, path, env={"WHILEAI_RAY_SPILL_ROWS": spill_rows})
    assert done.returncode == 0, done.stderr[-1500:]
    assert "4 ['q0', 'q1', 'q2', 'q3']" in done.stdout and "nested too deep" in done.stdout and "OK" in done.stdout


def test_a_checkpoint_with_a_line_nested_100000_deep_resumes(ray_local, tools, tmp_path):
    ck = tmp_path / "ck.jsonl"

    def run(budget):
        return wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=budget, seed=5,
                            checkpoint=str(ck), advanced=QUIET)
    _run_in_thread(lambda: run(8), 120)
    lines = ck.read_text().splitlines(keepends=True)
    ck.write_text("".join(lines[:4]) + _deep_line() + "".join(lines[4:]))
    resumed = _run_in_thread(lambda: run(12), 120)
    assert len(resumed.rows()) == 12
    assert any("line 5 is nested too deep" in w for w in resumed.warnings), resumed.warnings
    assert resumed.search["rollouts"]["resumed"] == 8
    again = wai.load(ck)
    assert len(again.rows()) == 12 and any("line 5" in w and "too deep" in w for w in again.warnings)


# --------------------------------------------------------------------------- item 11b: Parquet claims
LOAD_AND_WALK = """
    import sys, whileai_ray as wai
    try:
        data = wai.load(sys.argv[1])
    except ValueError as exc:
        print("REFUSED", exc)
        raise SystemExit(0)
    print("LOADED", len(data.rows()), flush=True)
    try:
        print(sum(1 for _ in data.rows()))    # a load that believed the footer: decodes it all
    except ValueError as exc:                 # a lazy (Arrow-backed) load refuses when it reads
        print("REFUSED", exc)
"""


def _dictionary_file(path, rows: int, value: str, group: int | None = None) -> None:
    indices = pa.array(np.zeros(rows, dtype=np.int32))
    table = pa.table({"row_json": pa.DictionaryArray.from_arrays(indices, pa.array([value]))})
    pq.write_table(table, path, row_group_size=group or rows)


@pytest.mark.parametrize("as_folder", [False, True])
def test_a_parquet_footer_claiming_50_million_rows_is_refused_before_decoding(tmp_path, as_folder):
    target = tmp_path / "rows.parquet"
    _dictionary_file(target, 50_000_000, json.dumps({"prompt": "x", "steps": [], "final_text": "y"}),
                     group=1 << 20)
    assert target.stat().st_size < 1_000_000
    done = _bounded(LOAD_AND_WALK, tmp_path if as_folder else target, timeout=60)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "REFUSED" in done.stdout and "50,000,000 rows" in done.stdout and "rows.parquet" in done.stdout


def test_a_resume_whose_parquet_side_claims_50_million_rows_rebuilds_it(ray_local, tools, tmp_path, caplog):
    ck = tmp_path / "ck.jsonl"

    def run(budget):
        return wai.simulate(wai.seeded_agent(tools), tools=tools, simulator=False, budget=budget, seed=6,
                            checkpoint=str(ck), advanced=QUIET)
    _run_in_thread(lambda: run(6), 120)
    side = tmp_path / "ck.parquet" / "rows.parquet"
    assert side.is_file()
    _dictionary_file(side, 50_000_000, json.dumps({"prompt": "x", "steps": [], "final_text": "y"}), group=1 << 20)
    resumed = _run_in_thread(lambda: run(9), 120)
    assert len(resumed.rows()) == 9 and resumed.search["rollouts"]["resumed"] == 6
    said = [r.getMessage() for r in caplog.records if "rows.parquet" in r.getMessage()]
    assert any("50,000,000 rows" in m and "rebuilt from the checkpoint" in m for m in said), said
    assert pq.ParquetFile(side).metadata.num_rows == 9           # rebuilt from the checkpoint


def test_a_parquet_dictionary_that_decodes_to_10_gb_is_refused(tmp_path):
    target = tmp_path / "bomb.parquet"
    _dictionary_file(target, 100_000, json.dumps({"prompt": "a" * 100_000, "steps": [], "final_text": "y"}))
    assert target.stat().st_size < 1_000_000
    done = _bounded(LOAD_AND_WALK, target, timeout=60)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "REFUSED" in done.stdout and "decodes to" in done.stdout


# --------------------------------------------------------------------------- item 11c: shard stubs
def _stub_checkpoint(tmp_path, name):
    folder = tmp_path / "run.shards"
    (folder / "rows").mkdir(parents=True, exist_ok=True)
    (tmp_path / "run.jsonl.shards.json").write_text(json.dumps({"_whileai_ray_shards": 1, "folder": str(folder)}))
    stub = {"prompt": "p", "steps": [], "final_text": "", "scenario_id": "s", "_key": ["k"], "_shard": [name, 0, 9, 1]}
    (tmp_path / "run.jsonl").write_text(json.dumps(stub, separators=(",", ":")) + "\n")
    return folder


LOAD_STUBS = """
    import sys, whileai_ray as wai
    from whileai_ray.store.shards.storage import check_stub_shards
    for what, call in (("LOAD", lambda: wai.load(sys.argv[1])), ("RESUME", lambda: check_stub_shards(sys.argv[2], sys.argv[1]))):
        try:
            call()
            print(what, "READ")
        except ValueError as exc:
            print(what, "REFUSED", exc)
"""


@pytest.mark.parametrize("name", ["../../../../../../../../dev/zero", "/etc/hostname", "../../run.jsonl"])
def test_a_stub_naming_a_path_out_of_the_shards_folder_is_refused_unopened(tmp_path, name):
    folder = _stub_checkpoint(tmp_path, name)
    done = _bounded(LOAD_STUBS, tmp_path / "run.jsonl", folder, timeout=60)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.count("REFUSED") == 2 and "not a shard file" in done.stdout, done.stdout


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_link_or_fifo_where_a_shard_should_be_is_never_opened(tmp_path, kind):
    name = "0123456789ab-000001.jsonl"
    folder = _stub_checkpoint(tmp_path, name)
    if kind == "link":
        os.symlink("/etc/hostname", folder / "rows" / name)
    else:
        os.mkfifo(folder / "rows" / name)
    done = _bounded(LOAD_STUBS, tmp_path / "run.jsonl", folder, timeout=30)
    assert done.returncode == 0, done.stderr[-1500:]
    assert done.stdout.count("REFUSED") == 2, done.stdout
    assert "outside the run's shards folder" in done.stdout or "not a regular file" in done.stdout
