"""Parquet sink and file: rows stream as row groups, compact, and read back exactly."""
import json

import polars as pl
import pyarrow.parquet as pq
import pytest

from whileai_ray.store.parquet.folder import ParquetSink, read_parquet, write_parquet
from whileai_ray.store.schema import SCHEMA_VERSION, row_key


def make_row(i, rollout=0):
    row = {
        "prompt": f"Where is ORD-{i:04d}? ünïcödé 漢字 🚀",
        "messages": [{"role": "user", "content": f"Where is ORD-{i:04d}?"},
                     {"role": "tool", "name": "lookup_order", "content": json.dumps({"status": "ok"})}],
        "steps": [{"tool": "lookup_order", "arguments": {"order_id": f"ORD-{i}"},
                   "result": {"status": "ok", "data": {"id": i, "ref": None, "nested": [[1, 2.5], {"x": None}]}}}],
        "final_text": "lookup_order: ok.",
        "scenario_id": f"sc-{i % 7:010d}",
        "tier": "ordinary",
        "rollout_index": rollout,
        "model_version": "seeded_agent",
        "scenario_dimensions": {"tool": "lookup_order", "world_state": "entity exists"},
        "lineage": {"system_prompt_sha": "e3b0c44298fc1c14", "eval_run": 0},
        "seed": 3,
        "tools_used": ["lookup_order"],
        "texture": "typo",
        "big": 2 ** 62,
        "tiny": 1e-300,
        "flag": False,
    }
    if i % 3 == 0:
        row["reward"] = 1
    elif i % 3 == 1:
        row["reward"] = 0.25
        row["faults"] = {"*": {"mode": "timeout", "rate": 1.0}}
    return row


ROWS = [make_row(i, r) for i in range(40) for r in range(2)]


def test_file_round_trip_is_exact_including_key_order(tmp_path):
    path = write_parquet(ROWS, tmp_path / "out" / "rows.parquet", row_group_size=16)
    back = read_parquet(path)
    assert back == ROWS
    assert [list(r) for r in back] == [list(r) for r in ROWS]
    assert type(back[0]["reward"]) is int and type(back[2]["reward"]) is float
    meta = pq.read_schema(path).metadata
    assert meta[b"whileai_ray.schema_version"].decode() == SCHEMA_VERSION
    assert pq.ParquetFile(path).num_row_groups == 5


def test_polars_reads_typed_and_nested_columns(tmp_path):
    path = write_parquet(ROWS, tmp_path / "rows.parquet")
    df = pl.read_parquet(path)
    assert df.height == len(ROWS)
    assert df.filter(pl.col("rollout_index") == 1).height == 40
    assert df["reward"].null_count() == sum(1 for r in ROWS if "reward" not in r)
    assert df["reward"].dtype == pl.Float64
    first = df.row(0, named=True)
    # schema "2": steps and messages are nested, a tool call is a struct (its arguments JSON text)
    assert [(s["kind"], s["tool"], s["status"]) for s in first["steps"]] == [("tool", "lookup_order", "ok")]
    assert json.loads(first["steps"][0]["arguments_json"]) == ROWS[0]["steps"][0]["arguments"]
    assert [m["role"] for m in first["messages"]] == ["user", "tool"]
    assert json.loads(first["tags"]) == {"texture": "typo"}
    assert first["eval_run"] == 0 and first["prompt"] == ROWS[0]["prompt"]


def test_sink_streams_parts_then_compacts(tmp_path):
    folder = tmp_path / "sink"
    sink = ParquetSink(folder, row_group_size=25)
    for start in range(0, len(ROWS), 10):
        sink.write(ROWS[start:start + 10])
    # 80 rows in groups of 25 -> three parts on disk while running, each readable
    assert len(sink.parts()) == 3
    assert read_parquet(folder) == ROWS[:75]
    assert sink.write(ROWS[:5]) == 0 and sink.duplicates_skipped == 5
    out = sink.close()
    assert out == str(folder / "rows.parquet")
    assert sink.parts() == []
    assert read_parquet(out) == ROWS
    assert read_parquet(folder) == ROWS
    assert pl.read_parquet(out).height == len(ROWS)


def test_small_flushes_are_merged_into_full_row_groups(tmp_path):
    sink = ParquetSink(tmp_path / "s", row_group_size=20)
    for row in ROWS[:60]:
        sink.write([row])
        sink.flush()
    assert len(sink.parts()) == 60
    out = sink.close()
    assert pq.ParquetFile(out).num_row_groups == 3
    assert read_parquet(out) == ROWS[:60]


def test_append_mode_continues_and_write_mode_starts_fresh(tmp_path):
    folder = tmp_path / "s"
    first = ParquetSink(folder, row_group_size=7)
    first.write(ROWS[:30])
    first.close()
    second = ParquetSink(folder, row_group_size=7, mode="a")
    assert second.write(ROWS[:50]) == 20
    second.close()
    assert read_parquet(folder) == ROWS[:50]
    fresh = ParquetSink(folder, mode="w")
    fresh.write(ROWS[:3])
    assert read_parquet(fresh.close()) == ROWS[:3]


def test_empty_and_bad_arguments(tmp_path):
    assert read_parquet(write_parquet([], tmp_path / "empty.parquet")) == []
    assert read_parquet(ParquetSink(tmp_path / "e").close()) == []
    with pytest.raises(ValueError, match="mode"):
        ParquetSink(tmp_path / "x", mode="append")
    with pytest.raises(ValueError, match="row_group_size"):
        ParquetSink(tmp_path / "x", row_group_size=0)
    with pytest.raises(FileNotFoundError):
        read_parquet(tmp_path / "missing.parquet")


def test_newer_schema_version_is_refused(tmp_path):
    import pyarrow as pa
    table = pa.table({"row_json": ["{}"]}).replace_schema_metadata({b"whileai_ray.schema_version": b"9"})
    pq.write_table(table, tmp_path / "v9.parquet")
    with pytest.raises(ValueError, match="version '9'"):
        read_parquet(tmp_path / "v9.parquet")


def test_odd_values_survive_as_strict_json_with_their_repairs_named(tmp_path):
    rows = [{"prompt": "lone \ud800 surrogate", "scenario_id": "s\udc00", "x": float("inf"),
             "reward": True, "seed": "not-an-int", "steps": [], "empty": {}, "deep": [[[{"a": [None]}]]]}]
    back = read_parquet(write_parquet(rows, tmp_path / "odd.parquet"))
    # strict JSON (issue 11 item 13): Infinity -> null, lone surrogate -> U+FFFD, each named
    assert back == [{**rows[0], "prompt": "lone \ufffd surrogate", "scenario_id": "s\ufffd", "x": None,
                     "json_repairs": {"prompt": "lone surrogate", "scenario_id": "lone surrogate",
                                      "x": "Infinity"}}]
    assert back[0]["reward"] is True and row_key(back[0]) == row_key(rows[0])
    df = pl.read_parquet(tmp_path / "odd.parquet")
    assert df["reward"][0] == 1.0 and df["seed"][0] is None
