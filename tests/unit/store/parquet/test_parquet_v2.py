"""Row schema "2" (issue 33): the Parquet copy stores ``steps`` and ``messages`` as nested Arrow
types that DuckDB and polars unnest, ``row_json`` still gives back every row exactly (odd steps
included), and files of version 1, written before, stay readable and join version-2 ones."""
import copy
import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import whileai_ray as wai
from whileai_ray.store.parquet.arrow_rows import ArrowRows
from whileai_ray.store.parquet.folder import ParquetSink, read_parquet, rows_to_table, write_parquet
from whileai_ray.store.schema import arrow_schema
from whileai_ray.testing.seeded_rows import played

ROWS = played(10, 2)


def _deep(n):
    value = {"leaf": [1, None, {"x": "y"}]}
    for i in range(n):
        value = {f"k{i % 3}": value, "i": i} if i % 2 else [value, None]
    return value


def odd_rows():
    """Seeded rows whose steps hold what an agent may send: dicts whose keys vary, arrays of
    objects, None, very deep nesting, a step that is not a dict, a tool named by a number."""
    rows = copy.deepcopy(ROWS)
    rows[0]["steps"] = rows[0]["steps"] + [
        {"tool": "search", "arguments": {"q": "a", "filters": [{"k": 1}, {"other": [None, {"z": []}]}]},
         "result": {"status": "ok", "items": [{"id": 1}, {"id": 2, "extra": {"deep": [[]]}}]}},
        {"tool": 123, "arguments": [1, "x", None], "result": None, "stale": True},
        {"text": "thinking", "meta": {"tokens": 3}}, {"user": "and the refund?"},
        "a bare string step", None, [1, [2, [3]]],
        {"tool": "deep", "arguments": _deep(150), "result": {"status": "error", "why": _deep(40)}},
    ]
    rows[1]["messages"] = [{"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                            "tool_calls": [{"name": "x", "arguments": {"a": [1, {"b": None}]}}, "odd"]}, "bare"]
    rows[2].pop("messages", None)
    rows[3]["steps"] = []
    return rows


def test_the_parquet_copy_stores_steps_and_messages_nested_and_reads_rows_back_exactly(tmp_path):
    rows = odd_rows()
    path = write_parquet(rows, tmp_path / "rows.parquet", row_group_size=7)
    schema = pq.read_schema(path)
    assert schema.metadata[b"whileai_ray.schema_version"] == b"2"
    for name in ("steps", "messages"):
        assert pa.types.is_list(schema.field(name).type) and pa.types.is_struct(schema.field(name).type.value_type)
    back = read_parquet(path)                                   # row_json is the truth: exact, key order kept
    assert back == rows and [list(r) for r in back] == [list(r) for r in rows]
    assert list(ArrowRows.open(path)) == rows
    # polars and DuckDB reach the tool calls without JSON functions
    steps = pl.read_parquet(path).explode("steps").unnest("steps")
    tools = steps.filter(pl.col("kind") == "tool")
    assert tools.height == sum(1 for r in rows for s in r["steps"] if isinstance(s, dict) and "tool" in s)
    assert set(tools["tool"].to_list()) >= {"search", "123", "deep"}
    first = pl.read_parquet(path).row(0, named=True)["steps"]
    assert [s["kind"] for s in first[-8:]] == ["tool", "tool", "text", "user", "other", "other", "other", "tool"]
    assert json.loads(first[-8]["arguments_json"]) == rows[0]["steps"][-8]["arguments"]
    assert json.loads(first[-1]["arguments_json"]) == rows[0]["steps"][-1]["arguments"]   # deep: JSON text
    assert json.loads(first[-4]["extra_json"]) == "a bare string step" and first[-3]["extra_json"] is None
    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"select s.status, count(*) from (select unnest(steps) as s from read_parquet('{path}')) "
                     "where s.tool = 'deep' group by all").fetchall()
    assert got == [("error", 1)]


def _write_v1(rows, path):
    """A file as version 1 wrote it: steps and messages as JSON text, version "1" in its metadata."""
    table = rows_to_table(rows, nested=False)
    assert table.schema.metadata[b"whileai_ray.schema_version"] == b"1"
    assert pa.types.is_string(table.schema.field("steps").type)
    pq.write_table(table, path, compression="zstd")
    return str(path)


def test_version_1_files_stay_readable_and_join_version_2_ones(tmp_path):
    rows = odd_rows()
    old = _write_v1(rows, tmp_path / "old.parquet")
    assert read_parquet(old) == rows and list(ArrowRows.open(old)) == rows
    assert wai.load(old).rows() == wai.load(write_parquet(rows, tmp_path / "new.parquet")).rows()
    # a checkpoint's Parquet copy written before, appended to now: compaction converts the old rows
    folder = tmp_path / "copy"
    folder.mkdir()
    _write_v1(rows[:6], folder / "rows.parquet")
    sink = ParquetSink(folder, row_group_size=4, mode="a")
    sink.write(rows)                                            # the first 6 are already there: skipped
    assert sink.duplicates_skipped == 6
    target = sink.close()
    assert read_parquet(target) == rows
    schema = pq.read_schema(target)
    assert schema.metadata[b"whileai_ray.schema_version"] == b"2"
    assert schema.remove_metadata().equals(arrow_schema().remove_metadata())
    nested = pq.read_table(target).column("steps").to_pylist()
    assert [s["tool"] for s in nested[0] if s["kind"] == "tool"][:1] == [rows[0]["steps"][0]["tool"]]
    # a version this code does not know is still refused, by every reader
    future = tmp_path / "future.parquet"
    pq.write_table(rows_to_table(rows).replace_schema_metadata({b"whileai_ray.schema_version": b"3"}), future)
    for read in (read_parquet, ArrowRows.open):
        with pytest.raises(ValueError, match="schema version '3'"):
            read(future)


def test_the_flat_tables_row_json_is_the_rows_strict_json_whatever_the_steps_hold():
    """``to_arrow()``'s layout writes ``row_json`` from the ``steps``/``messages`` texts it already
    made (spliced, not encoded twice): it must be exactly ``strict_json.dumps(row)`` for every row,
    including rows that need a repair (NaN, a lone surrogate, in the steps or elsewhere), a key of
    no JSON type, and values that hold the splice's own marker text."""
    from whileai_ray.core.strict_json import dumps
    from whileai_ray.store.schema import _MARKERS, record_of
    rows = copy.deepcopy(ROWS + odd_rows())
    rows[0]["steps"][0]["result"] = {"score": float("nan")}
    rows[1]["messages"] = [{"role": "user", "content": "cut \ud83d here"}]
    rows[2]["reward"], rows[2]["note"] = float("inf"), "\udc00 lone"
    rows[3]["steps"] = rows[3]["steps"] + [{"text": _MARKERS["messages"][0]}]
    rows[4]["prompt"] = _MARKERS["steps"][0]                 # before the steps, in key order
    rows[5] = {_MARKERS["steps"][0]: 1, **rows[5]}
    rows[6]["prompt"], rows[6]["messages"] = _MARKERS["messages"][0], [{"content": _MARKERS["steps"][0]}]
    rows[7]["steps"], rows[8]["messages"] = "not a list", None
    rows[9]["seeded"] = {(1, 2): "a tuple key"}
    rows[10]["messages"] = {"role": "user", "content": "\ud83d\ude00 a pair is fine"}
    for row in rows:
        rec = record_of(row, nested=False)
        assert rec["row_json"] == dumps(row)
        assert rec["steps"] == (None if row.get("steps") is None else dumps(row["steps"]))
        assert rec["messages"] == (None if row.get("messages") is None else dumps(row["messages"]))
    assert json.loads(record_of(rows[0], nested=False)["row_json"])["json_repairs"]
