"""load_rows / save_jsonl_atomic: every format whileai_ray writes reads back to the same rows."""
import json

import pytest

from whileai_ray.store.checkpoint.fingerprint import fingerprint
from whileai_ray.store.checkpoint.jsonl import JsonlCheckpoint
from whileai_ray.store.parquet.folder import ParquetSink, write_parquet
from whileai_ray.store.reader import load_rows, meta_path_for, save_jsonl_atomic, save_meta_atomic

FP = fingerprint([{"name": "lookup_order", "parameters": {"type": "object"}}], "sys", "seeded_agent")


def make_row(i):
    return {
        "prompt": f"Need help with ORD-{i} — naïve café ☕ \u2028 line sep",
        "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                   "result": {"status": "not_found", "data": None, "vals": [0.1, -2, 1e20]}}],
        "final_text": "sorry\nnot found",
        "scenario_id": f"probe_{i:06d}",
        "rollout_index": i % 3,
        "lineage": {"eval_run": 0, "resumed": True},
        "tools_used": [],
        "reward": 0.0,
    }


ROWS = [make_row(i) for i in range(30)]


def test_save_then_load_jsonl_is_exact_and_atomic(tmp_path):
    path = tmp_path / "deep" / "run.jsonl"
    assert save_jsonl_atomic(ROWS, path) == str(path)
    assert not path.with_name("run.jsonl.tmp").exists()
    rows, meta = load_rows(path)
    assert rows == ROWS and meta == {}
    save_jsonl_atomic(ROWS[:2], path)  # overwrite, not append
    assert load_rows(str(path))[0] == ROWS[:2]


def test_meta_sidecar_is_returned(tmp_path):
    path = tmp_path / "run.jsonl"
    save_jsonl_atomic(ROWS, path)
    sidecar = save_meta_atomic({"schema_version": "1", "stopped_because": "budget", "warnings": ["w1"]}, path)
    assert sidecar == str(tmp_path / "run.meta.json") == str(meta_path_for(path))
    rows, meta = load_rows(path)
    assert rows == ROWS and meta["stopped_because"] == "budget" and meta["warnings"] == ["w1"]


def test_checkpoint_header_is_skipped_and_torn_line_warned(tmp_path):
    path = tmp_path / "ck.jsonl"
    with JsonlCheckpoint(path, FP) as ck:
        ck.append(ROWS)
    assert load_rows(path)[0] == ROWS
    path.write_bytes(path.read_bytes()[:-15])
    before = path.read_bytes()
    rows, meta = load_rows(path)
    assert rows == ROWS[:-1]
    assert len(meta["warnings"]) == 1 and "torn last line" in meta["warnings"][0]
    assert path.read_bytes() == before  # reading never repairs the file


def test_parquet_file_and_folders(tmp_path):
    pfile = write_parquet(ROWS, tmp_path / "a.parquet")
    assert load_rows(pfile) == (ROWS, {})
    # a Parquet file without the .parquet suffix is recognised by its magic bytes
    odd = tmp_path / "export.bin"
    odd.write_bytes((tmp_path / "a.parquet").read_bytes())
    assert load_rows(odd)[0] == ROWS
    sink = ParquetSink(tmp_path / "parts", row_group_size=8)
    sink.write(ROWS)
    sink.close(compact=False)
    assert load_rows(tmp_path / "parts")[0] == ROWS
    sink2 = ParquetSink(tmp_path / "compacted", row_group_size=8)
    sink2.write(ROWS)
    sink2.close()
    (tmp_path / "compacted" / "meta.json").write_text(json.dumps({"budget": 30}))
    assert load_rows(tmp_path / "compacted") == (ROWS, {"budget": 30})


def test_folder_of_jsonl_files_in_name_order(tmp_path):
    save_jsonl_atomic(ROWS[10:], tmp_path / "b.jsonl")
    save_jsonl_atomic(ROWS[:10], tmp_path / "a.jsonl")
    assert load_rows(tmp_path)[0] == ROWS


def test_bad_paths_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_rows(tmp_path / "nope.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="jsonl"):
        load_rows(tmp_path / "empty")
    with pytest.raises(TypeError, match="path"):
        load_rows(ROWS)
    with pytest.raises(ValueError, match="folder"):
        save_jsonl_atomic(ROWS, tmp_path)


def test_large_checkpoint_loads_whole(tmp_path):
    # 20,000 rows of ~2 KB (how fast: the bench's micro lines and resume line)
    filler = "x" * 1500
    rows = [dict(make_row(i), scenario_id=f"sc-{i}", final_text=filler) for i in range(20000)]
    path = tmp_path / "big.jsonl"
    with JsonlCheckpoint(path, FP) as ck:
        for start in range(0, len(rows), 500):
            ck.append(rows[start:start + 500])
    ck = JsonlCheckpoint(path, FP)
    loaded = ck.open()
    ck.close()
    assert len(loaded) == 20000 and loaded[-1] == rows[-1]
