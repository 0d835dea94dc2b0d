"""The checkpoint files under attack, without Ray: foreign JSONL, a tampered key index, a corrupt
Parquet side, a full disk, JSON that strict readers reject, and a dataset name that walks out of
its store. Each test is one numbered item of issue 11."""
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from whileai_ray.store.checkpoint.fingerprint import fingerprint
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.checkpoint.key_index import RECORD, index_path
from whileai_ray.store.row_key_set import key_digest
from whileai_ray.store.schema import row_key
from whileai_ray.store.checkpoint.sink import CheckpointSink

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}}]
FP = fingerprint(TOOLS, "You are a support agent.", "seeded_agent")


def make_row(i, **extra):
    row = {"prompt": f"Check order ORD-{i:04d}", "steps": [], "final_text": "done",
           "scenario_id": f"sc-{i:010d}", "rollout_index": 0, "lineage": {"system_prompt_sha": "x"}}
    row.update(extra)
    return row


def strict_loads(line: str):
    """What jq / DuckDB / polars accept: no NaN or Infinity, every string valid UTF-8."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")

    obj = json.loads(line, parse_constant=refuse)

    def walk(value):
        if isinstance(value, str):
            value.encode("utf-8")                   # a lone surrogate raises here
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(obj)
    return obj


# -- item 3: a JSONL that is not a checkpoint ------------------------------------------------
def test_a_jsonl_of_chat_messages_is_refused_as_a_checkpoint_and_left_byte_identical(tmp_path):
    path = tmp_path / "chats.jsonl"
    lines = [json.dumps({"messages": [{"role": "user", "content": f"hi {i}"},
                                      {"role": "assistant", "content": "hello"}]}) for i in range(5)]
    path.write_text("\n".join(lines) + "\n")
    before = path.read_bytes()
    with pytest.raises(ValueError, match="not a whileai_ray checkpoint"):
        CheckpointSink(JsonlCheckpoint(path, FP))
    assert path.read_bytes() == before
    assert not index_path(path).exists()
    assert not (tmp_path / "chats.parquet").exists()


# -- item 5: the key index covers the key ------------------------------------------------------
def test_a_tampered_key_in_the_index_falls_back_to_the_line(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(4)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows)
    ix = index_path(path)
    data = ix.read_bytes()
    head = data.index(b"\n") + 1
    recs = np.frombuffer(data[head:], dtype=RECORD).copy()
    key = row_key(rows[1])
    recs["a"][1], recs["b"][1], _ = key_digest(("sc-tampered", *key[1:]))   # the second row's key, swapped
    ix.write_bytes(data[:head] + recs.tobytes())
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert sorted(loaded.keys) == sorted(row_key(r) for r in rows)
    assert ck.append([rows[1]]) == 0                  # the row is known: never written twice
    ck.close()
    body = [json.loads(x) for x in path.read_text().splitlines()]      # every line a row (issue 16)
    assert len(body) == 4


# -- item 10: a corrupt Parquet side never blocks a resume -----------------------------------
def test_a_corrupt_parquet_side_is_rebuilt_from_the_jsonl_with_a_warning(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(6)]
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    sink.append(rows)
    sink.close()
    compact = tmp_path / "ck.parquet" / "rows.parquet"
    assert compact.is_file()
    compact.write_bytes(b"PAR1 this is not parquet at all PAR1")
    sink = CheckpointSink(JsonlCheckpoint(path, FP))
    assert any("ck.parquet" in w and "rebuil" in w for w in sink.warnings), sink.warnings
    sink.append([make_row(7)])
    sink.close()
    from whileai_ray.store.parquet.folder import read_parquet
    back = read_parquet(tmp_path / "ck.parquet")
    assert sorted(map(row_key, back)) == sorted(map(row_key, rows + [make_row(7)]))


# -- item 11: disk full names the path and leaves no .tmp --------------------------------------
FULL_DISK = textwrap.dedent(r"""
    import json, os, resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)       # a write past the limit fails with EFBIG
    what, target = sys.argv[1], sys.argv[2]
    rows = [{"prompt": "p%d" % i, "steps": [], "final_text": "x" * 2000, "scenario_id": "s%d" % i}
            for i in range(200)]
    if what == "checkpoint":
        from whileai_ray.store.checkpoint.fingerprint import fingerprint
        from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
        ck = JsonlCheckpoint(target, fingerprint([], "", "a"))
        ck.open()
        ck.append(rows[:10])
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))
    try:
        if what == "save":
            from whileai_ray.store.reader import save_jsonl_atomic
            save_jsonl_atomic(rows, target)
        elif what == "parquet":
            from whileai_ray.store.parquet.folder import write_parquet
            rows = [dict(r, final_text=os.urandom(1000).hex()) for r in rows]   # incompressible
            write_parquet(rows, target)
        elif what == "checkpoint":
            ck.append(rows[10:])
    except OSError as exc:
        print("ERROR:", exc)
        sys.exit(3)
    print("NO ERROR")
""")


@pytest.mark.parametrize("what", ["save", "parquet", "checkpoint"])
def test_a_full_disk_names_the_path_and_leaves_no_tmp_file(tmp_path, what):
    target = tmp_path / ("out.parquet" if what == "parquet" else "out.jsonl")
    if what == "save":
        target.write_text("precious\n")
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, str(script), what, str(target)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 3, out.stdout + out.stderr
    assert str(target) in out.stdout, out.stdout
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    if what == "save":
        assert target.read_text() == "precious\n"             # the old file is still whole
    if what == "checkpoint":                                   # no torn line: the 10 rows reopen clean
        ck = JsonlCheckpoint(target, fingerprint([], "", "a"))
        assert len(ck.open()) == 10 and ck.warnings == []
        ck.close()


# -- item 13: strict JSON on disk -------------------------------------------------------------
def test_nan_infinity_and_lone_surrogates_are_written_as_strict_json(tmp_path):
    polars = pytest.importorskip("polars")
    path = tmp_path / "ck.jsonl"
    odd = [make_row(1, reward=float("nan"), final_text="bad \ud800 text"),
           make_row(2, reward=math.inf, steps=[{"tool": "t", "result": {"x": -math.inf, "s": "\udfff"}}]),
           make_row(3, reward=1.0)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(odd)
    lines = path.read_text(encoding="utf-8").splitlines()
    body = [strict_loads(x) for x in lines]                           # every line a row (issue 16)
    assert body[0]["reward"] is None and body[0]["json_repairs"]["reward"] == "NaN"
    assert body[0]["final_text"] == "bad \ufffd text" and body[0]["json_repairs"]["final_text"] == "lone surrogate"
    assert body[1]["steps"][0]["result"]["x"] is None
    assert "json_repairs" not in body[2]
    assert [row_key(r) for r in body] == [row_key(r) for r in odd]   # keys unchanged by the repair
    reopened = JsonlCheckpoint(path, FP)
    assert sorted(reopened.open().keys) == sorted(row_key(r) for r in odd)
    reopened.close()
    (tmp_path / "body.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert polars.read_ndjson(tmp_path / "body.jsonl").height == 3
    from whileai_ray.store.reader import save_jsonl_atomic
    save_jsonl_atomic(odd, tmp_path / "saved.jsonl")
    for line in (tmp_path / "saved.jsonl").read_text(encoding="utf-8").splitlines():
        strict_loads(line)
    from whileai_ray.store.parquet.folder import read_parquet, write_parquet
    write_parquet(odd, tmp_path / "rows.parquet")
    table = polars.read_parquet(tmp_path / "rows.parquet")
    for text in table["row_json"].to_list():
        strict_loads(text)
    assert len(read_parquet(tmp_path / "rows.parquet")) == 3


# -- item 15: load_pushed refuses path traversal ----------------------------------------------
def test_load_pushed_refuses_names_that_leave_the_store(tmp_path):
    from whileai_ray.export.push import load_pushed, push
    store = tmp_path / "store"
    outside = tmp_path / "x" / "v1"
    outside.mkdir(parents=True)
    rows = [make_row(i) for i in range(3)]
    push(rows, {"mode": "explore"}, "orders", store=str(store), gate=False)
    from whileai_ray.store.parquet.folder import rows_to_table
    import pyarrow.parquet as pq
    pq.write_table(rows_to_table(rows), outside / "rows.parquet")
    (outside / "meta.json").write_text(json.dumps({"secret": True}))
    for bad in ("../x", "ds_../x_v1", "orders/../../x", "/etc", "..", "ds_.._v1"):
        with pytest.raises(ValueError, match="name"):
            load_pushed(bad, store=str(store))
    back, meta = load_pushed("orders", store=str(store))
    assert len(back) == 3


# -- item 2, the lock alone: a killed holder never blocks the next writer -----------------------
def test_the_lock_of_a_killed_process_does_not_block_and_a_live_one_is_named(tmp_path):
    import pickle
    import signal

    from whileai_ray.store.checkpoint.lock import CheckpointBusy, CheckpointLock, probe

    ck = tmp_path / "ck.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from whileai_ray.store.checkpoint.lock import CheckpointLock
        CheckpointLock({str(ck)!r}, run_id="holder-run").acquire()
        print("held", flush=True)
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    try:
        assert holder.stdout.readline().strip() == "held"
        assert probe(ck)["run_id"] == "holder-run"
        with pytest.raises(CheckpointBusy) as info:
            CheckpointLock(ck, run_id="second").acquire(retry_s=0.2)
        assert "holder-run" in str(info.value) and f"pid {holder.pid}" in str(info.value)
        again = pickle.loads(pickle.dumps(info.value))          # crosses from the Driver to the caller
        assert str(again) == str(info.value) and again.holder["run_id"] == "holder-run"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert ck.with_name("ck.jsonl.lock").exists()                # its description stays on disk ...
    nxt = CheckpointLock(ck, run_id="next")
    nxt.acquire(retry_s=0)                                        # ... and blocks nobody, not for a moment
    assert probe(ck)["run_id"] == "next"
    nxt.release()
    assert probe(ck) is None
