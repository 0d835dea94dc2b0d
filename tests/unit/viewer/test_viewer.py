"""``whileai-ray view DIR``: the viewer's server over a folder of real saved runs, asked over HTTP.

Runs are made by the seeded agent (``testing.seeded_rows.played``) and written the ways a run
writes them (``SimulationData.save`` as JSONL with its sidecar, as Parquet, and a checkpoint-like
JSONL with a header line that grows while the server runs). Each server binds 127.0.0.1:0 and
stops after its test; every request has a timeout, so a hang fails.
"""
import json
import os
import threading
import time

import httpx
import pytest

from whileai_ray import cli
from whileai_ray.core.rows import export_row
from whileai_ray.result import failure_breakdown as fb
from whileai_ray.result.data import SimulationData
from whileai_ray.score.pass_at.estimate import pass_at, pass_at_of_tally
from whileai_ray.score.pass_at.tally import tally_rows
from whileai_ray.store.checkpoint.lines import HEADER_KEY
from whileai_ray.testing.seeded_rows import played
from whileai_ray.viewer import make_server

HOSTILE = "<img src=x onerror=\"alert('x')\"><script>alert('x')</script>"
TOKEN = "a-long-enough-token-for-the-viewer"


def _odd(row):
    return 0.0 if len(row.get("final_text") or "") % 3 == 0 else 1.0


@pytest.fixture(scope="module")
def rows_a():
    rows = played(12, 4)
    rows[0]["prompt"] = HOSTILE + rows[0]["prompt"]
    rows[0]["final_text"] = "reply " + HOSTILE
    return rows


@pytest.fixture(scope="module")
def rows_b():
    return played(12, 4, grader=_odd)


@pytest.fixture
def folder(tmp_path, rows_a, rows_b):
    SimulationData(trajectories=[dict(r) for r in rows_a], mode="rl").save(str(tmp_path / "a.jsonl"), meta=True)
    (tmp_path / "nested").mkdir()
    SimulationData(trajectories=[dict(r) for r in rows_b], mode="rl").save(str(tmp_path / "nested" / "b.parquet"))
    (tmp_path / "notes.pkl").write_bytes(b"\x80\x04N.")           # not a run: never listed, never read
    return tmp_path


@pytest.fixture
def serve():
    servers = []

    def start(root, **kw):
        server = make_server(root, port=0, **kw)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        client = httpx.Client(base_url=f"http://127.0.0.1:{server.server_address[1]}", timeout=30)
        client.viewer = server
        return client

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        assert not thread.is_alive()


def test_the_list_shows_each_run_with_its_rows_mode_and_pass_at_1(folder, serve, rows_a, rows_b):
    SimulationData(trajectories=[dict(r) for r in rows_a]).save(str(folder / "a.parquet"))    # a's Parquet copy
    client = serve(folder)
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "+ Parquet copy" in page.text and 'href="/run?path=a.parquet"' not in page.text
    text = page.text
    assert 'href="/run?path=a.jsonl"' in text and 'href="/run?path=nested%2Fb.parquet"' in text
    assert "notes.pkl" not in text and "a.meta.json" not in text
    p1 = pass_at([export_row(r) for r in rows_a])
    assert f"{p1.pass_at_1:.3f}" in text and f"[{p1.ci95[0]:.2f}..{p1.ci95[1]:.2f}]" in text
    assert f"{pass_at([export_row(r) for r in rows_b]).pass_at_1:.3f}" in text
    assert ">rl<" in text and ">48<" in text
    assert "Content-Security-Policy" in page.headers and "default-src 'none'" in page.headers["content-security-policy"]


def test_a_run_filters_by_verdict_tool_tier_fault_and_judge_on_the_server(folder, serve, rows_a):
    client = serve(folder)
    failed = [i for i, r in enumerate(rows_a) if fb.failed(r)]
    assert 0 < len(failed) < len(rows_a)
    page = client.get("/run", params={"path": "a.jsonl", "verdict": "fail"}).text
    shown = [int(x.split('"')[0]) for x in page.split('<tr data-i="')[1:]]
    assert shown == failed
    assert f"{len(failed)} of {len(rows_a)} rows match" in page
    passed = client.get("/run", params={"path": "a.jsonl", "verdict": "pass", "judge": "ok"}).text
    assert f"{len(rows_a) - len(failed)} of {len(rows_a)} rows match" in passed
    tool = client.get("/run", params={"path": "a.jsonl", "tool": "lookup_order"}).text
    expected = sum(1 for r in rows_a if "lookup_order" in (r.get("tools_used") or []))
    assert f"{expected} of {len(rows_a)} rows match" in tool
    none = client.get("/run", params={"path": "a.jsonl", "tier": "no-such-tier"}).text
    assert f"0 of {len(rows_a)} rows match" in none
    nofault = client.get("/run", params={"path": "a.jsonl", "fault": "none"}).text
    assert f"{sum(1 for r in rows_a if not fb.fault_kinds(r))} of {len(rows_a)} rows match" in nofault


def test_a_large_run_is_paged_and_its_rows_are_decoded_only_when_shown(tmp_path, serve, rows_a):
    many = [dict(rows_a[i % len(rows_a)], scenario_id=f"s{i // 4}") for i in range(450)]
    SimulationData(trajectories=many).save(str(tmp_path / "many.jsonl"))
    client = serve(tmp_path)
    first = client.get("/run", params={"path": "many.jsonl"}).text
    assert "page 1 of 5" in first and first.count('<tr data-i="') == 100
    last = client.get("/run", params={"path": "many.jsonl", "page": 5}).text
    assert [int(x.split('"')[0]) for x in last.split('<tr data-i="')[1:]] == list(range(400, 450))
    row = client.get("/row", params={"path": "many.jsonl", "i": 449})
    assert row.status_code == 200 and "Row 449 of 450" in row.text
    assert client.get("/row", params={"path": "many.jsonl", "i": 450}).status_code == 404


def test_a_row_shows_its_conversation_tool_calls_and_verdict_escaped(folder, serve, rows_a):
    client = serve(folder)
    page = client.get("/row", params={"path": "a.jsonl", "i": 0})
    assert page.status_code == 200
    text = page.text
    assert HOSTILE not in text and "<img" not in text and "<script>alert" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in text
    assert "calls <code>lookup_order</code>" in text and 'class="msg world"' in text
    assert '<details class="row" open' in text and "verdict" in text
    assert "privileged" not in text                         # rows() form: the hidden block stays hidden


def test_the_comparison_gives_pass_at_k_and_pass_pow_k_for_every_k_with_intervals(folder, serve, rows_a, rows_b):
    client = serve(folder)
    page = client.get("/compare", params=[("path", "a.jsonl"), ("path", "nested/b.parquet")])
    assert page.status_code == 200
    text = page.text
    for rows in (rows_a, rows_b):
        tally = tally_rows([export_row(r) for r in rows])
        for k in (2, 3, 4):
            p = pass_at_of_tally(tally, k=k, min_k=1)
            assert f"{p.pass_pow_k:.3f}<br><span class=\"ci\">[{p.pass_pow_k_ci95[0]:.2f}..{p.pass_pow_k_ci95[1]:.2f}]" in text
            assert f"{p.pass_at_k:.3f}<br><span class=\"ci\">[{p.pass_at_k_ci95[0]:.2f}..{p.pass_at_k_ci95[1]:.2f}]" in text
    assert "<th>pass^4</th><th>pass@4</th>" in text and "<th>pass^5</th>" not in text
    assert text.count('<polyline class="curve"') == 4          # two runs, pass@k and pass^k each
    assert client.get("/compare").status_code == 404


def _checkpoint_lines(rows) -> bytes:
    return b"".join(json.dumps(r, default=str).encode() + b"\n" for r in rows)


def test_a_growing_checkpoint_is_read_again_as_rows_land(tmp_path, serve, rows_a):
    path = tmp_path / "run.jsonl"
    path.write_bytes(json.dumps({HEADER_KEY: 1}).encode() + b"\n" + _checkpoint_lines(rows_a[:10]))
    (tmp_path / "run.jsonl.meta.json").write_text(json.dumps({HEADER_KEY: 1, "fingerprint": {"run": {"mode": "rl"}}}))
    client = serve(tmp_path)
    assert "run.jsonl.meta.json" not in client.get("/").text    # the checkpoint's sidecar is not a run
    assert client.get("/api/run", params={"path": "run.jsonl"}).json()["rows"] == 10
    page = client.get("/run", params={"path": "run.jsonl"}).text
    assert 'data-rows="10"' in page and 'data-poll="/api/run?path=run.jsonl"' in page and "mode rl" in page
    torn = json.dumps(rows_a[12], default=str).encode()
    with open(path, "ab") as fh:                               # rows land, the last one half-written
        fh.write(_checkpoint_lines(rows_a[10:12]) + torn[:50])
    assert client.get("/api/run", params={"path": "run.jsonl"}).json()["rows"] == 12
    with open(path, "ab") as fh:
        fh.write(torn[50:] + b"\n")
    assert client.get("/api/run", params={"path": "run.jsonl"}).json()["rows"] == 13
    page = client.get("/run", params={"path": "run.jsonl"}).text
    assert "13 of 13 rows match" in page and 'data-rows="13"' in page
    assert "Row 12 of 13" in client.get("/row", params={"path": "run.jsonl", "i": 12}).text
    path.write_bytes(_checkpoint_lines(rows_a[:3]))            # rewritten (not grown): read afresh
    assert client.get("/api/run", params={"path": "run.jsonl"}).json()["rows"] == 3


def test_a_large_run_not_read_yet_shows_its_first_rows_at_once_and_the_rest_when_read(tmp_path, serve, rows_a):
    many = [dict(rows_a[i % len(rows_a)], scenario_id=f"s{i // 4}") for i in range(300)]
    SimulationData(trajectories=many).save(str(tmp_path / "big.jsonl"))
    client = serve(tmp_path)
    cache = client.viewer.cache
    cache.block_bytes = 0                                       # every file counts as large here
    path = os.path.realpath(tmp_path / "big.jsonl")
    held = cache._path_locks.setdefault(path, threading.Lock())
    with held:                                                  # the whole-file read waits behind this
        page = client.get("/run", params={"path": "big.jsonl"}).text
        assert 'data-ready="0"' in page and "Reading big.jsonl" in page
        assert page.count('<tr data-i="') == 100 and "100 of 100 rows match" in page
        assert client.get("/api/run", params={"path": "big.jsonl"}).json() == \
            {**client.get("/api/run", params={"path": "big.jsonl"}).json(), "ready": False, "rows": 100}
        listed = client.get("/").text
        assert "reading the run" in listed and '<meta http-equiv="refresh" content="2">' in listed
        assert cache.reading(path)
    deadline = time.monotonic() + 60
    while cache.reading(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    info = client.get("/api/run", params={"path": "big.jsonl"}).json()
    assert info["ready"] is True and info["rows"] == 300
    page = client.get("/run", params={"path": "big.jsonl"}).text
    assert 'data-ready="1"' in page and "300 of 300 rows match" in page and "page 1 of 3" in page
    assert "reading the run" not in client.get("/").text


def test_paths_outside_the_folder_are_refused(tmp_path, serve, rows_a):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    SimulationData(trajectories=[dict(r) for r in rows_a]).save(str(outside / "secret.jsonl"))
    SimulationData(trajectories=[dict(r) for r in rows_a]).save(str(root / "ok.jsonl"))
    os.symlink(outside / "secret.jsonl", root / "link.jsonl")
    os.symlink(outside, root / "linked_dir")
    client = serve(root)
    assert client.get("/run", params={"path": "ok.jsonl"}).status_code == 200
    for bad in ("../outside/secret.jsonl", str(outside / "secret.jsonl"), "link.jsonl",
                "linked_dir/secret.jsonl", "/etc/passwd", "ok.jsonl/..", "..", "", "a\x00b"):
        for route in ("/run", "/row", "/api/run"):
            answer = client.get(route, params={"path": bad, "i": 0})
            assert answer.status_code == 404, (route, bad)
            assert "secret" not in answer.text or bad in answer.text
    assert client.get("/compare", params={"path": "../outside/secret.jsonl"}).status_code == 404
    listed = client.get("/").text
    assert "ok.jsonl" in listed and "link.jsonl" not in listed and "secret" not in listed
    assert client.get("/../outside/secret.jsonl").status_code == 404


def test_a_host_that_is_not_loopback_needs_a_token(tmp_path, capsys):
    with pytest.raises(ValueError, match="--token"):
        make_server(tmp_path, host="0.0.0.0", port=0)
    with pytest.raises(ValueError, match="letters, digits"):
        make_server(tmp_path, port=0, token="a token; with spaces and a semicolon")
    with pytest.raises(ValueError, match="at least 16"):
        make_server(tmp_path, port=0, token="short")
    with pytest.raises(ValueError, match="not a folder"):
        make_server(tmp_path / "missing", port=0)
    assert cli.main(["view", str(tmp_path), "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "--token" in capsys.readouterr().err


def test_with_a_token_every_request_carries_it(folder, serve):
    client = serve(folder, token=TOKEN)
    for route in ("/", "/run?path=a.jsonl", "/api/run?path=a.jsonl"):
        assert client.get(route).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong-token-of-enough-length"}).status_code == 401
    assert client.get("/?token=wrong-token-of-enough-length").status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    first = client.get(f"/run?path=a.jsonl&token={TOKEN}")
    assert first.status_code == 303 and first.headers["location"] == "/run?path=a.jsonl"
    assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
    assert client.get("/run?path=a.jsonl").status_code == 200      # the cookie now carries it
    fresh = httpx.Client(base_url=str(client.base_url), timeout=30)
    assert fresh.get("/run?path=a.jsonl").status_code == 401


def test_without_a_token_only_loopback_host_names_are_answered(folder, serve):
    client = serve(folder)
    assert client.get("/", headers={"Host": "evil.example:8765"}).status_code == 403
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 200
    assert client.post("/").status_code == 501                   # GET only


def test_hostile_file_names_and_row_text_stay_text_on_every_page(tmp_path, serve, rows_a):
    name = "run <img src=x onerror=alert(1)>.jsonl"
    rows = [dict(r, tier=HOSTILE, tools_used=[HOSTILE]) for r in rows_a[:8]]
    SimulationData(trajectories=rows).save(str(tmp_path / name))
    client = serve(tmp_path)
    pages = [client.get("/").text,
             client.get("/run", params={"path": name}).text,
             client.get("/run", params={"path": name, "tool": HOSTILE}).text,
             client.get("/row", params={"path": name, "i": 0}).text,
             client.get("/compare", params={"path": name}).text]
    for text in pages:
        assert "<img" not in text and "<script>alert" not in text and "onerror=alert(1)>" not in text
    assert "8 of 8 rows match" in pages[2]


def test_the_view_command_prints_its_address_and_serves_until_stopped(folder):
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-m", "whileai_ray.cli", "view", str(folder), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = {}
        reader = threading.Thread(target=lambda: line.setdefault("text", proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=60)
        text = line.get("text", "")
        assert "serving" in text and "http://127.0.0.1:" in text, text
        url = text.split(" at ")[1].split()[0]
        page = httpx.get(url, timeout=30)
        assert page.status_code == 200 and "a.jsonl" in page.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_list_does_not_read_runs_again_when_the_cache_keeps_fewer_than_it_lists(tmp_path, serve, rows_a,
                                                                                     monkeypatch):
    from whileai_ray.viewer.run_index import RunCache
    for name in ("one", "two", "three"):
        SimulationData(trajectories=[dict(r) for r in rows_a]).save(str(tmp_path / f"{name}.jsonl"))
    reads = []
    real = RunCache._read
    monkeypatch.setattr(RunCache, "_read", staticmethod(lambda *a, **kw: reads.append(a[0]) or real(*a, **kw)))
    client = serve(tmp_path)
    client.viewer.cache.keep = 1                                   # one index kept at a time
    first = client.get("/").text
    assert client.get("/").text == first and first.count(">48<") == 3
    assert sorted(os.path.basename(p) for p in reads) == ["one.jsonl", "three.jsonl", "two.jsonl"]
    (tmp_path / "two.jsonl").write_bytes((tmp_path / "one.jsonl").read_bytes()[:0])   # emptied: read again
    assert ">0<" in client.get("/").text and len(reads) == 4


def test_a_damaged_file_is_named_on_the_list_and_answered_with_an_error_page(tmp_path, serve, rows_a):
    SimulationData(trajectories=[dict(r) for r in rows_a]).save(str(tmp_path / "ok.jsonl"))
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    client = serve(tmp_path)
    listed = client.get("/").text
    assert "could not read it" in listed and "ok.jsonl" in listed and ">48<" in listed
    answer = client.get("/run", params={"path": "broken.parquet"})
    assert answer.status_code in (404, 500) and ("Could not read the run" in answer.text or "Not found" in answer.text)
    assert "<h1>" in answer.text                             # a page that says so, not a dropped connection
    assert client.get("/run", params={"path": "ok.jsonl"}).status_code == 200
