"""Arrow, pandas, polars and DuckDB read a result directly (issue 33 item 1): the same rows and
the same column types whether the result is in memory, spilled to disk, or opened from a
Parquet file; a spilled result streams a row group at a time."""
import copy
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import whileai_ray  # noqa: F401
from whileai_ray.core.rows import export_row
from whileai_ray.result.data import SimulationData
from whileai_ray.result.row_store import is_arrow, open_parquet, spill_rows
from whileai_ray.result.grading.scored import ScoredData
from whileai_ray.store.parquet.folder import write_parquet
from whileai_ray.store.schema import arrow_schema
from whileai_ray.store.parquet.spill import GROUP_ROWS
from whileai_ray.testing.seeded_rows import SYSTEM, TOOLS, played

ROWS = played(24, 4)
META = dict(system_prompt=SYSTEM, tools=TOOLS, mode="rl", rollouts_per_request=4, budget=len(ROWS))


def forms(rows=ROWS, tmp_path=None):
    """The same rows in memory, spilled, and (with tmp_path) opened from a saved Parquet file."""
    out = {"memory": SimulationData(trajectories=copy.deepcopy(rows), **META),
           "spilled": SimulationData(trajectories=spill_rows(copy.deepcopy(rows)), **META)}
    if tmp_path is not None:
        path = write_parquet(copy.deepcopy(rows), tmp_path / "saved.parquet")
        out["parquet"] = SimulationData(trajectories=open_parquet(path), **META)
    assert not is_arrow(out["memory"].trajectories)
    assert all(is_arrow(d.trajectories) for k, d in out.items() if k != "memory")
    return out


def test_to_arrow_is_the_same_table_in_memory_on_disk_and_from_a_file(tmp_path):
    tables = {k: d.to_arrow() for k, d in forms(tmp_path=tmp_path).items()}
    mem = tables["memory"]
    assert mem.schema.equals(arrow_schema(nested=False)) and mem.num_rows == len(ROWS)
    assert mem.schema.field("reward").type == pa.float64() and mem.schema.field("rollout_index").type == pa.int64()
    for name, table in tables.items():
        assert table.schema.equals(mem.schema), name
        assert table.equals(mem), name
    # the rows are the exported ones, in order: no privileged block, no _ bookkeeping
    decoded = [json.loads(t) for t in mem.column("row_json").to_pylist()]
    assert decoded == [export_row(r) for r in ROWS]
    assert all("privileged" not in r and not any(k.startswith("_") for k in r) for r in decoded)
    assert mem.column("reward").to_pylist() == [float(r["reward"]) for r in ROWS]
    assert mem.column("tier").to_pylist() == [r["tier"] for r in ROWS]


def test_the_arrow_c_stream_feeds_pa_table_and_streams_a_spill_a_row_group_at_a_time():
    rows = played(700, 4)           # 2,800 rows: three row groups on disk
    data = forms(rows)
    mem, disk = data["memory"], data["spilled"]
    assert pa.table(disk).equals(pa.table(mem)) and pa.table(mem).equals(mem.to_arrow())
    reader = pa.RecordBatchReader.from_stream(disk)        # the PyCapsule protocol, as any consumer uses it
    sizes = [batch.num_rows for batch in reader]
    assert sum(sizes) == len(rows) and max(sizes) <= GROUP_ROWS and len(sizes) >= 3
    # a requested schema the stream already has is honoured
    assert pa.RecordBatchReader.from_stream(disk, schema=arrow_schema(nested=False)).read_all().num_rows == len(rows)


def test_to_pandas_gives_the_same_frame_and_dtypes():
    data = forms()
    a, b = data["memory"].to_pandas(), data["spilled"].to_pandas()
    assert list(a.columns) == [f.name for f in arrow_schema(nested=False)]
    assert a.dtypes.to_dict() == b.dtypes.to_dict() and str(a["reward"].dtype) == "float64"
    assert a.equals(b) and len(a) == len(ROWS)
    assert a.groupby("tier")["reward"].mean().to_dict() == b.groupby("tier")["reward"].mean().to_dict()


def test_to_polars_gives_the_same_frame_and_says_how_to_install_it(monkeypatch):
    polars = pytest.importorskip("polars")
    data = forms()
    a, b = data["memory"].to_polars(), data["spilled"].to_polars()
    assert isinstance(a, polars.DataFrame) and a.schema == b.schema and a.equals(b)
    assert a["reward"].dtype == polars.Float64 and a.height == len(ROWS)
    assert polars.DataFrame(data["spilled"]).equals(a)          # the C stream, taken directly
    monkeypatch.setitem(sys.modules, "polars", None)            # polars not installed
    with pytest.raises(ImportError, match="pip install polars"):
        data["memory"].to_polars()


def test_duckdb_queries_a_result_and_its_tool_calls_directly():
    duckdb = pytest.importorskip("duckdb")
    data = forms()
    answers = []
    for name in ("memory", "spilled"):
        result = data[name]        # noqa: F841  (DuckDB finds the local variable by name)
        answers.append(duckdb.sql(
            "select json_extract_string(steps, '$[0].tool') as tool, count(*) as n, avg(reward) as mean "
            "from result where json_array_length(steps) > 0 group by tool order by tool").fetchall())
    assert answers[0] == answers[1] and answers[0]
    expected = {}
    for r in ROWS:
        if r["steps"]:
            expected[r["steps"][0]["tool"]] = expected.get(r["steps"][0]["tool"], 0) + 1
    assert {tool: n for tool, n, _ in answers[0]} == expected


def test_scored_data_and_an_empty_result_convert_too(tmp_path):
    scored = ScoredData(trajectories=spill_rows(copy.deepcopy(ROWS)), system_prompt=SYSTEM, tools=TOOLS)
    assert scored.to_arrow().equals(forms()["memory"].to_arrow())
    empty = SimulationData(trajectories=[], **META)
    table = empty.to_arrow()
    assert table.num_rows == 0 and table.schema.equals(arrow_schema(nested=False)) and len(empty.to_pandas()) == 0
    # the table round-trips through Parquet with the types intact
    pq.write_table(forms()["spilled"].to_arrow(), tmp_path / "copy.parquet")
    assert pq.read_table(tmp_path / "copy.parquet").equals(forms()["memory"].to_arrow())


def _odd_rows():
    """Seeded rows plus the step shapes a model-backed run writes: a user turn, a text step, a
    tool named by a number with list arguments, a step that is not a dict, no messages at all."""
    rows = copy.deepcopy(ROWS[:8])
    rows[0]["steps"] = rows[0]["steps"] + [{"user": "and the refund?"}, {"text": "Let me look."},
                                           {"tool": 123, "arguments": [1, "x"], "result": "plain text", "stale": True},
                                           "garbage"]
    rows[1].pop("messages", None)
    return rows


def test_nested_steps_and_messages_are_queryable_as_structs(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    rows = _odd_rows() + copy.deepcopy(ROWS[8:])
    data = forms(rows)
    a, b = data["memory"].to_arrow(nested=True), data["spilled"].to_arrow(nested=True)
    assert a.equals(b) and a.schema.equals(b.schema)
    steps_type = a.schema.field("steps").type
    assert pa.types.is_list(steps_type) and pa.types.is_struct(steps_type.value_type)
    assert pa.types.is_list(a.schema.field("messages").type)
    # the other columns are the flat table's, unchanged
    flat = data["memory"].to_arrow()
    assert a.drop_columns(["steps", "messages"]).equals(flat.drop_columns(["steps", "messages"]))
    first = a.column("steps")[0].as_py()
    assert [s["kind"] for s in first[-4:]] == ["user", "text", "tool", "other"]
    assert first[-2]["tool"] == "123" and json.loads(first[-2]["arguments_json"]) == [1, "x"]
    assert json.loads(first[-2]["extra_json"]) == {"stale": True} and first[-2]["status"] is None
    assert a.column("messages")[1].as_py() is None
    # a Parquet file of the nested table, queried by DuckDB: tool calls by tool and status
    path = str(tmp_path / "nested.parquet")
    pq.write_table(a, path)
    got = duckdb.sql(f"select s.tool, s.status, count(*) from (select unnest(steps) as s from read_parquet('{path}')) "
                     "where s.kind = 'tool' group by all order by all").fetchall()
    want = {}
    for r in rows:
        for s in r["steps"]:
            if isinstance(s, dict) and "tool" in s:
                status = s["result"].get("status") if isinstance(s["result"], dict) else None
                key = (str(s["tool"]), status)
                want[key] = want.get(key, 0) + 1
    assert {(t, s): n for t, s, n in got} == want
    args = duckdb.sql(f"select json_extract_string(s.arguments_json, '$.order_id') from "
                      f"(select unnest(steps) as s from read_parquet('{path}')) where s.tool = 'lookup_order' "
                      "limit 1").fetchall()[0][0]
    assert args == rows[0]["steps"][0]["arguments"]["order_id"]


def _internal_rows():
    """Internal rows as a run holds them: a privileged block, ``_`` bookkeeping, a hidden key deep
    inside a step, None values, a lone surrogate in a step's text, odd step shapes."""
    rows = _odd_rows() + copy.deepcopy(ROWS[8:])
    for i, r in enumerate(rows):
        r["privileged"] = {"expected": i, "hidden_state": {"k": [1, 2]}}
        r["_ordinal"], r["_landed_s"], r["judge_meta"] = i, 0.5, None
    rows[2]["steps"][0]["result"] = {"status": "ok", "reference": "the secret", "data": [{"rubric": 1, "v": 2}]}
    rows[3]["steps"] = rows[3]["steps"] + [{"text": "cut \ud83d in the middle"}]
    return rows


def test_a_spilled_result_gives_the_table_its_rows_give_in_memory_with_hidden_keys_stripped():
    """A spilled result's table is its internal rows exported, as in memory: the same table row for
    row (nested or not), a row group per batch, no hidden key at any depth, no ``privileged`` or
    ``_`` key, a lone surrogate repaired; a rewrite (grading's) shows in it; a bad row fails alike."""
    from whileai_ray.result.row_store import row_store
    rows = _internal_rows() + played(400, 4)          # 1,640 rows: two row groups on disk
    mem = SimulationData(trajectories=copy.deepcopy(rows), **META)
    disk = SimulationData(trajectories=spill_rows(copy.deepcopy(rows)), **META)
    want = mem.to_arrow()
    got = disk.to_arrow()
    assert got.schema.equals(want.schema) and got.equals(want) and pa.table(disk).equals(want)
    assert [b.num_rows for b in disk.to_arrow_reader()] == [GROUP_ROWS, len(rows) - GROUP_ROWS]
    decoded = [json.loads(t) for t in got.column("row_json").to_pylist()]
    exported = [export_row(r) for r in rows]
    assert decoded[:3] + decoded[4:] == exported[:3] + exported[4:]
    assert decoded[2]["steps"][0]["result"] == {"status": "ok", "data": [{"v": 2}]}      # hidden keys stripped
    assert all("privileged" not in r and not any(k.startswith("_") for k in r) for r in decoded)
    assert decoded[3]["steps"][-1]["text"] == "cut \ufffd in the middle" and decoded[3]["json_repairs"]
    assert disk.to_arrow(nested=True).equals(mem.to_arrow(nested=True))
    # a grading rewrite (the store's swap) shows in the table
    for data in (mem, disk):
        row_store(data.trajectories).update(lambda batch: [r.update(reward=0.5) for r in batch])
    assert disk.to_arrow().equals(mem.to_arrow()) and set(disk.to_arrow().column("reward").to_pylist()) == {0.5}
    # a row export_row refuses fails the same way spilled as in memory
    bad = copy.deepcopy(rows[:3])
    del bad[1]["final_text"]
    for trajectories in (bad, spill_rows(copy.deepcopy(bad))):
        with pytest.raises(ValueError, match="final_text"):
            SimulationData(trajectories=trajectories, **META).to_arrow()


def test_a_spill_file_with_an_extra_column_reads_as_its_rows():
    """A spill part with a column this version does not write (an ``export`` struct, as a
    development build wrote) is read from ``row_json`` like any other: the same rows, facts and
    table as the rows in memory."""
    from whileai_ray.result.row_store import row_store
    from whileai_ray.store.parquet.arrow_rows import ArrowRows
    rows = _internal_rows() + played(400, 4)
    mem = SimulationData(trajectories=copy.deepcopy(rows), **META)
    disk = SimulationData(trajectories=spill_rows(copy.deepcopy(rows)), **META)
    for f in disk.trajectories.files:
        table = pq.read_table(f)
        extra = pa.StructArray.from_arrays([pa.array(["not this row"] * table.num_rows)], names=["row_json"])
        pq.write_table(table.append_column("export", extra), f, row_group_size=GROUP_ROWS)
    old = SimulationData(trajectories=ArrowRows(disk.trajectories.files), **META)
    assert old.trajectories.has_columns(["export"]) and list(old.trajectories) == rows
    assert old.to_arrow().equals(mem.to_arrow()) and old.to_arrow(nested=True).equals(mem.to_arrow(nested=True))
    assert row_store(old.trajectories).facts().equals(row_store(mem.trajectories).facts())
