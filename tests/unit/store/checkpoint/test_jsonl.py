"""JSONL checkpoint: rows land on disk at once, resume exactly once, foreign files refused."""
import json
import os

import pytest

from whileai_ray.store.checkpoint.fingerprint import fingerprint
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.schema import row_key
from whileai_ray.testing.seeded_rows import TOOLS

FP = fingerprint(TOOLS, "You are a support agent.", "seeded_agent")


def make_row(i, rollout=0, eval_run=None):
    lineage = {"system_prompt_sha": "e3b0c44298fc1c14", "system_prompt_head": "", "system_prompt_chars": 0}
    if eval_run is not None:
        lineage["eval_run"] = eval_run
    return {
        "prompt": f"Check order ORD-{i:04d} — é 漢字 🚀 please",
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "", "tool_calls": [{"name": "lookup_order",
                                                                           "arguments": {"order_id": "ORD-1"}}]}],
        "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                   "result": {"status": "ok", "data": {"id": i, "ref": None, "score": 0.1 + i / 3}}}],
        "final_text": "done",
        "scenario_id": f"sc-{i:010d}",
        "rollout_index": rollout,
        "reward": 0.5 if i % 2 else 1,
        "intent_known": True,
        "lineage": lineage,
        "seed": 0,
    }


def test_new_checkpoint_creates_parents_and_lands_rows_immediately(tmp_path):
    path = tmp_path / "a" / "b" / "ck.jsonl"
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == []
    rows = [make_row(i) for i in range(3)]
    assert ck.append(rows) == 3
    # readable before close: every line is a row; who wrote them is in the sidecar
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == rows
    side = json.loads((tmp_path / "a" / "b" / "ck.jsonl.meta.json").read_text())
    assert side["fingerprint"] == FP and side["_whileai_ray_checkpoint"] == 1 and side["created"]
    ck.close()


def test_resume_returns_rows_equal_and_never_writes_a_key_twice(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i, r) for i in range(5) for r in range(2)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows[:6])
    ck2 = JsonlCheckpoint(path, FP)
    loaded = ck2.open()
    assert loaded == rows[:6]
    assert [list(r) for r in loaded] == [list(r) for r in rows[:6]]  # key order kept
    assert ck2.has(rows[0]) and not ck2.has(rows[7])
    assert ck2.append(rows) == 4  # only the 4 unseen keys
    assert ck2.duplicates_skipped == 6
    assert ck2.append([rows[9]]) == 0
    ck2.close()
    again = JsonlCheckpoint(path, FP)
    assert again.open() == rows
    again.close()
    assert len(path.read_text().splitlines()) == len(rows)


def test_key_ignores_run_but_separates_eval_runs():
    a, b = make_row(1), make_row(1)
    b["lineage"]["run_id"] = "other"
    assert row_key(a) == row_key(b)
    assert row_key(make_row(1, eval_run=1)) != row_key(make_row(1, eval_run=0))
    assert row_key(make_row(1, eval_run=0)) == row_key(make_row(1))
    assert row_key(make_row(1, rollout=1)) != row_key(a)


def test_torn_last_line_is_dropped_with_warning_and_file_repaired(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(4)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows)
    whole = path.read_bytes()
    path.write_bytes(whole[:-40])  # crash in the middle of the last row
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    assert loaded == rows[:3]
    assert any("torn last line" in w for w in ck.warnings)
    assert ck.append(rows) == 1  # the torn row is redone
    ck.close()
    assert JsonlCheckpoint(path, FP).open() == rows
    assert path.read_bytes() == whole


def test_whole_last_row_missing_only_its_newline_is_kept(tmp_path):
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(2)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows)
    path.write_bytes(path.read_bytes()[:-1])
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows
    ck.append([make_row(9)])
    ck.close()
    assert JsonlCheckpoint(path, FP).open() == rows + [make_row(9)]


@pytest.mark.parametrize("other, what", [
    (fingerprint(TOOLS + [{"name": "refund", "parameters": {"type": "object"}}], "You are a support agent.",
                 "seeded_agent"), "tools"),
    (fingerprint(TOOLS, "Different prompt", "seeded_agent"), "system prompt"),
    (fingerprint(TOOLS, "You are a support agent.", "gpt-x"), "agent"),
])
def test_checkpoint_of_another_run_is_refused_and_left_untouched(tmp_path, other, what):
    path = tmp_path / "ck.jsonl"
    with JsonlCheckpoint(path, FP) as ck:
        ck.append([make_row(i) for i in range(3)])
    path.write_bytes(path.read_bytes() + b'{"prompt": "torn')  # even a torn tail stays
    before = path.read_bytes()
    with pytest.raises(ValueError) as err:
        JsonlCheckpoint(path, other).open()
    assert what in str(err.value) and "new checkpoint path" in str(err.value)
    assert path.read_bytes() == before


def test_fingerprint_ignores_tool_layout_and_order():
    bare = [{"name": "lookup_order", "parameters": TOOLS[0]["function"]["parameters"]}]
    assert fingerprint(bare, "You are a support agent.", "seeded_agent") == FP
    two = [TOOLS[0], {"name": "refund", "parameters": {}}]
    assert fingerprint(two, "p", "a") == fingerprint(two[::-1], "p", "a")
    assert fingerprint(None, None, "a")["tools_sha"] == fingerprint([], "", "a")["tools_sha"]
    with pytest.raises(TypeError, match="tools"):
        fingerprint("lookup_order", "", "a")


def test_headerless_rows_file_resumes_with_warning(tmp_path):
    path = tmp_path / "saved.jsonl"
    rows = [make_row(i) for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows
    assert any("header" in w for w in ck.warnings)
    ck.close()


def test_non_checkpoint_file_and_folder_are_refused(tmp_path):
    junk = tmp_path / "notes.jsonl"
    junk.write_text("hello\nworld\n")
    with pytest.raises(ValueError, match="not a JSONL checkpoint"):
        JsonlCheckpoint(junk, FP).open()
    assert junk.read_text() == "hello\nworld\n"
    with pytest.raises(ValueError, match="folder"):
        JsonlCheckpoint(tmp_path, FP).open()
    with pytest.raises(RuntimeError, match="open"):
        JsonlCheckpoint(tmp_path / "x.jsonl", FP).append([make_row(1)])


def test_a_checkpoint_is_scanned_a_block_at_a_time_and_its_rows_read_by_offset(tmp_path):
    """Whatever the block size (a line cut by a block's end, a line longer than a block), the
    scan finds what a scan of the whole bytes finds; the rows on disk are read back from the file
    by offset, and a rewrite of the path later does not change what an open resume reads."""
    from whileai_ray.store.checkpoint.lines import _scan, scan_file
    path = tmp_path / "ck.jsonl"
    ck = JsonlCheckpoint(path, FP)
    ck.open()
    rows = [make_row(i) for i in range(20)]
    ck.append(rows)
    ck.close()
    with open(path, "ab") as fh:
        fh.write(b'{"prompt": "torn')                       # a torn last line
    whole = _scan(path.read_bytes(), path)
    for block in (5, 97, 1000, 1 << 25):
        got = scan_file(path, block=block)
        assert (got.header, got.spans, got.records.tobytes(), got.good_bytes, got.index_stale, got.warnings) == \
            (whole.header, whole.spans, whole.records.tobytes(), whole.good_bytes, whole.index_stale, whole.warnings)
        assert got.n == 20 and sorted(got.decoded) == list(range(20))
        assert got.size == path.stat().st_size and got.good_bytes < got.size
    again = JsonlCheckpoint(path, FP)
    loaded = again.open()                                    # cuts the torn line, keeps the 20 rows
    assert loaded.keys == [row_key(r) for r in rows] and loaded[7] == rows[7]
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"\n" * path.stat().st_size)
    os.replace(other, path)                                  # the path rewritten (as save() does) under a resume
    assert loaded[3] == rows[3] and list(loaded) == rows
    again.close()


def test_every_line_is_a_row_for_any_jsonl_reader(tmp_path):
    """pandas.read_json(lines=True), DuckDB and polars read every line as a row: no junk first row."""
    path = tmp_path / "ck.jsonl"
    rows = [make_row(i) for i in range(4)]
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(rows)
    parsed = [json.loads(line) for line in path.read_text().splitlines()]
    assert parsed == rows and all("prompt" in r and "_whileai_ray_checkpoint" not in r for r in parsed)
    again = JsonlCheckpoint(path, FP)
    assert again.open() == rows and not again.warnings       # verified through the sidecar, no warning
    again.close()
    with pytest.raises(ValueError, match="agent"):           # the sidecar still refuses a foreign run
        JsonlCheckpoint(path, fingerprint(TOOLS, "You are a support agent.", "gpt-x")).open()


def test_an_old_checkpoint_with_a_header_line_still_resumes_and_refuses(tmp_path):
    path = tmp_path / "old.jsonl"
    header = {"_whileai_ray_checkpoint": 1, "fingerprint": FP, "created": "2025-01-01T00:00:00+00:00"}
    rows = [make_row(i) for i in range(3)]
    path.write_text("".join(json.dumps(x) + "\n" for x in [header] + rows))
    ck = JsonlCheckpoint(path, FP)
    assert ck.open() == rows and ck.header["created"] == header["created"]
    assert ck.append([make_row(7)]) == 1
    ck.close()
    assert JsonlCheckpoint(path, FP).open() == rows + [make_row(7)]
    before = path.read_bytes()
    with pytest.raises(ValueError, match="system prompt"):
        JsonlCheckpoint(path, fingerprint(TOOLS, "Other prompt", "seeded_agent")).open()
    assert path.read_bytes() == before


def test_a_sidecar_left_beside_a_deleted_rows_file_does_not_block_a_new_run(tmp_path):
    path = tmp_path / "ck.jsonl"
    with JsonlCheckpoint(path, FP) as ck:
        ck.append([make_row(1)])
    path.unlink()
    other = fingerprint(TOOLS, "Another prompt", "seeded_agent")
    ck = JsonlCheckpoint(path, other)
    assert ck.open() == []
    ck.close()
    assert json.loads((tmp_path / "ck.jsonl.meta.json").read_text())["fingerprint"] == other
