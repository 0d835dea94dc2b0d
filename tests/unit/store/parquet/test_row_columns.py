"""The Parquet copy's table built column by column (``parquet/row_columns.py``, ``nested_build.py``,
``json_text.py``) is the table the dict-per-row code built: every value, the schema and its
metadata, and the bytes ``pq.write_table`` makes of it, on odd rows (unicode, lone surrogates,
NaN repaired, numpy values, nested tool results, empty and odd steps, graded rows, missing
optional fields, a lineage stamp). The reference is a copy of that code as it was (50aa2a8)."""
import copy
import datetime
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from whileai_ray.core.strict_json import clean_dumps, dumps, gc_paused
from whileai_ray.store.parquet.encodings import writer_options
from whileai_ray.store.parquet.folder import ParquetSink, rows_to_table
from whileai_ray.store.parquet.json_text import text_encoder
from whileai_ray.store.parquet.nested_steps import NESTED, dict_column, nested_column, nested_types
from whileai_ray.store.schema import (INT_COLUMNS, JSON_COLUMNS, STRING_COLUMNS, TAG_KEYS, _int_or_none, _reward,
                                      _spliced_json, arrow_schema, clean_text, key_string, row_key)
from whileai_ray.testing.seeded_rows import played


# ------------------------------------------------------------------ the reference (the code as it was)
def _ref_text(value):
    return None if value is None else value if isinstance(value, str) else dumps(value)


def _ref_json(value):
    return None if value is None else dumps(value)


def _ref_step(step):
    if not isinstance(step, dict):
        return {"kind": "other", "extra_json": _ref_json(step)}
    kind = next((k for k in ("tool", "user", "text") if k in step), "other")
    result = step.get("result")
    extra = {k: v for k, v in step.items() if k not in ("tool", "arguments", "result", "text", "user")}
    return {"kind": kind, "tool": _ref_text(step.get("tool")), "arguments_json": _ref_json(step.get("arguments")),
            "result_json": _ref_json(result),
            "status": _ref_text(result.get("status")) if isinstance(result, dict) else None,
            "text": _ref_text(step.get("text")), "user": _ref_text(step.get("user")),
            "extra_json": _ref_json(extra) if extra else None}


def _ref_message(message):
    if not isinstance(message, dict):
        return {"content": _ref_text(message)}
    calls = message.get("tool_calls")
    return {"role": _ref_text(message.get("role")), "content": _ref_text(message.get("content")),
            "name": _ref_text(message.get("name")),
            "tool_calls": None if calls is None else
            [{"name": _ref_text(c.get("name")), "arguments_json": _ref_json(c.get("arguments"))}
             if isinstance(c, dict) else {"name": None, "arguments_json": _ref_json(c)}
             for c in (calls if isinstance(calls, list) else [calls])]}


def ref_nested_column(values, name):
    convert = _ref_step if name == "steps" else _ref_message
    arrow_type = nested_types()[0 if name == "steps" else 1]
    out = [None if v is None else [convert(x) for x in (v if isinstance(v, list) else [v])] for v in values]
    try:
        return pa.array(out, type=arrow_type)
    except UnicodeEncodeError:
        return pa.array(json.loads(dumps(out)), type=arrow_type)


def ref_record_of(row, nested=True):
    key = row_key(row)
    rec = {"row_key": key_string(key)}
    for name in STRING_COLUMNS:
        value = row.get(name)
        rec[name] = value if isinstance(value, str) else None
    for name in INT_COLUMNS:
        rec[name] = _int_or_none(row.get(name))
    rec["eval_run"] = _int_or_none(key[3])
    rec["reward"] = _reward(row.get("reward"))
    spliced = None if nested else {}
    for name in JSON_COLUMNS:
        value = row.get(name)
        if nested and name in NESTED:
            rec[name] = value
        elif value is None:
            rec[name] = None
        elif spliced is not None and name in NESTED and (text := clean_dumps(value)) is not None:
            rec[name] = spliced[name] = text
        else:
            rec[name] = dumps(value)
    tags = {k: row[k] for k in TAG_KEYS if k in row}
    rec["tags"] = dumps(tags) if tags else None
    rec["row_json"] = _spliced_json(row, spliced) if spliced else dumps(row)
    return rec


def ref_rows_to_table(rows, nested=True):
    with gc_paused():
        records = [ref_record_of(r, nested=False) if not nested else ref_record_of(r) for r in rows]
        if nested:
            steps = {name: [rec.pop(name) for rec in records] for name in NESTED}
    flat = arrow_schema(nested=False)
    schema = flat.remove(flat.get_field_index("messages")).remove(flat.get_field_index("steps")) if nested else flat
    try:
        table = pa.Table.from_pylist(records, schema=schema)
    except UnicodeEncodeError:
        for rec in records:
            for name in ("row_key",) + STRING_COLUMNS:
                rec[name] = clean_text(rec[name])
        table = pa.Table.from_pylist(records, schema=schema)
    if not nested:
        return table
    with gc_paused():
        for name in NESTED:
            i = flat.get_field_index(name)
            table = table.add_column(i, name, ref_nested_column(steps[name], name))
    return table.replace_schema_metadata(arrow_schema().metadata)


# ------------------------------------------------------------------ odd rows
def _deep(n):
    value = {"leaf": [1, None, {"x": "y"}]}
    for i in range(n):
        value = {f"k{i % 3}": value, "i": i} if i % 2 else [value, None]
    return value


def odd_rows():
    graded = played(6, 2)
    ungraded = [{**r, "rollout_index": r["rollout_index"] + 10} for r in played(3, 2, grader=None)]
    rows = copy.deepcopy(graded + ungraded)
    rows[0]["steps"] = rows[0]["steps"] + [
        {"tool": "search", "arguments": {"q": "a", "filters": [{"k": 1}, {"other": [None, {"z": []}]}]},
         "result": {"status": "ok", "items": [{"id": 1}, {"id": 2, "extra": {"deep": [[]]}}]}},
        {"tool": 123, "arguments": [1, "x", None], "result": None, "stale": True},
        {"text": "thinking", "meta": {"tokens": 3}}, {"user": "and the refund?"}, {},
        "a bare string step", None, [1, [2, [3]]], 7.5, {"result": {"status": 404}},
        {"tool": "deep", "arguments": _deep(120), "result": {"status": "error", "why": _deep(30)}},
    ]
    rows[1]["messages"] = [{"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                            "tool_calls": [{"name": "x", "arguments": {"a": [1, {"b": None}]}}, "odd", None]},
                           "bare", None, {"role": 5, "tool_calls": {"name": 9, "arguments": None}},
                           {"role": "tool", "tool_calls": []}]
    rows[2].pop("messages", None)                       # missing optional fields
    rows[2].pop("lineage", None)
    rows[2].pop("reward", None)
    rows[3]["steps"] = []                               # empty steps and messages
    rows[3]["messages"] = []
    rows[4]["prompt"] = "ünïcödé 漢字 🚀 and a lone \ud800 surrogate"     # lone surrogates in text columns
    rows[4]["final_text"] = "cut \udc00 here"
    rows[4]["steps"][0]["text"] = "thinking \ud83d"              # ... and inside a nested step
    rows[5]["scenario_id"] = "sc-\udfff"                         # ... and in the row key
    rows[5]["messages"][0]["content"] = "pair \ud83d\ude00 as two code points"
    rows[6]["reward"] = float("nan")                              # NaN / Infinity: repaired by dumps
    rows[6]["lineage"] = {**rows[6]["lineage"], "x": float("inf")}
    rows[6]["steps"][0]["result"] = {"status": "ok", "score": float("-inf")}
    rows[7]["rollout_index"] = np.int64(3)                        # numpy values
    rows[7]["reward"] = np.float64(0.75)
    rows[7]["seed"] = np.int32(4)
    rows[7]["steps"][0]["result"] = {"status": "ok", "data": np.arange(3), "flag": np.bool_(True)}
    rows[7]["usage"] = {"tokens": np.int64(12), "when": datetime.date(2026, 1, 2)}
    rows[8]["reward"] = True                                      # bool reward, odd types in typed columns
    rows[8]["tier"] = 3
    rows[8]["seed"] = True
    rows[8]["rollout_index"] = "7\ud800"                          # (in the row key too)
    rows[8]["scenario_dimensions"] = None
    rows[8]["tools_used"] = ("a", "b")
    rows[9]["steps"] = {"tool": "single", "arguments": {}}         # steps and messages not lists
    rows[9]["messages"] = {"role": "user", "content": None}
    rows[9]["sampling"] = {"temperature": 0.7, (1, 2): "tuple key"}
    rows[9]["markers"] = {"a": {1, 2}}
    rows[10]["lineage"] = {**(rows[10].get("lineage") or {}), "eval_run": 3, "runs": 2, "resumed": True}
    rows[10]["faults"] = {"*": {"mode": "timeout", "rate": 1.0}}
    rows[10]["json_repairs"] = {"old": "kept"}
    rows[11]["steps"] = None
    rows[11]["messages"] = None
    for r in rows[:4]:
        r.update({"stance": "pushy", "length": "long", "ask": {"x": 1}})
    return rows


ROWS = odd_rows()


def _bytes(table):
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=5, compression="zstd")
    return sink.getvalue()


def _same(table, ref):
    assert table.schema.equals(ref.schema, check_metadata=True)
    assert _no_nan(table).equals(_no_nan(ref), check_metadata=True)    # (Arrow's equals: NaN != NaN)
    assert _bytes(table) == _bytes(ref)


def _no_nan(table):
    i = table.schema.get_field_index("reward")
    col = table.column(i)
    return table.set_column(i, table.schema.field(i), pc.if_else(pc.is_nan(col), pa.scalar(-1e300), col))


@pytest.mark.parametrize("nested", [True, False], ids=["nested", "flat"])
def test_the_columnar_table_is_the_dict_per_row_table_on_odd_rows(nested):
    _same(rows_to_table(ROWS, nested=nested), ref_rows_to_table(ROWS, nested=nested))
    for i in range(len(ROWS)):            # each row alone (a batch with no surrogate takes the fast path)
        _same(rows_to_table(ROWS[i:i + 1], nested=nested), ref_rows_to_table(ROWS[i:i + 1], nested=nested))
    _same(rows_to_table([], nested=nested), ref_rows_to_table([], nested=nested))


def test_given_keys_and_texts_give_the_same_table():
    keys = [key_string(row_key(r)) for r in ROWS]
    texts = [dumps(r) if i % 2 else None for i, r in enumerate(ROWS)]
    _same(rows_to_table(ROWS, keys=keys, texts=texts), ref_rows_to_table(ROWS))


@pytest.mark.parametrize("name", NESTED)
def test_nested_columns_built_column_by_column_equal_the_dict_built_ones(name):
    values = [r.get(name) for r in ROWS] + [None, [], "bare", [None, None]]
    for chunk in [values] + [[v] for v in values]:
        got, ref = nested_column(chunk, name), ref_nested_column(chunk, name)
        assert got.type == ref.type and got.equals(ref)
        assert dict_column(chunk, name).equals(ref)


def test_the_text_encoder_is_dumps():
    text_of = text_encoder()
    values = [r for r in ROWS] + [None, "x\ud800", "😀", 1.5, float("nan"), np.int64(2), {(1,): 2},
                                  [float("inf"), "\udc00"], {"k": datetime.datetime(2026, 1, 2, 3, 4)}, True]
    for v in values:
        assert text_of(v) == dumps(v)
    loop = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular"):
        text_of(loop)
    assert text_of({"after": "a circular value"}) == dumps({"after": "a circular value"})


def test_a_typed_column_that_does_not_fit_raises_as_before():
    row = {**ROWS[0], "rollout_index": 2 ** 70}
    with pytest.raises(Exception) as ref:
        ref_rows_to_table([row])
    with pytest.raises(type(ref.value)):
        rows_to_table([row])


def test_the_sinks_part_files_hold_the_reference_table(tmp_path):
    """Through ``ParquetSink`` (keys from its own hashing, row_json texts given for some rows):
    each part file is the reference table of its rows plus the key tally in the footer."""
    rows = [r for r in ROWS if key_string(row_key(r))]
    sink = ParquetSink(tmp_path / "run.parquet", row_group_size=4)
    for at in range(0, len(rows), 3):
        batch = rows[at:at + 3]
        sink.write(batch, texts=[dumps(r) if j % 2 else None for j, r in enumerate(batch)])
    sink.write(rows[:2])                  # duplicates: skipped
    sink.flush()
    parts = sink.parts()
    assert sink.duplicates_skipped == 2 and len(parts) == -(-len(rows) // 4)
    for n, part in enumerate(parts):      # byte for byte the file the reference table makes
        meta = pq.read_schema(part).metadata
        ref = ref_rows_to_table(rows[4 * n:4 * n + 4])
        assert {k: meta[k] for k in ref.schema.metadata} == ref.schema.metadata
        out = io.BytesIO()
        pq.write_table(ref.replace_schema_metadata(meta), out, row_group_size=4, compression="zstd",
                       **writer_options(ref.schema))          # (row_json plain: store/parquet/encodings.py)
        assert part.read_bytes() == out.getvalue()


def test_texts_that_do_not_match_the_rows_are_refused(tmp_path):
    sink = ParquetSink(tmp_path / "run.parquet", row_group_size=4)
    with pytest.raises(ValueError, match="texts for"):
        sink.write(ROWS[:3], texts=[None, None])
    assert sink.write(ROWS[:3], texts=iter([None, dumps(ROWS[1]), None])) == 3
