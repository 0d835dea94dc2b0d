"""Training records on disk: chat JSONL (one record a line) or Parquet for large sets.

JSONL is what trainers read directly. The Parquet form holds the same records with typed
columns -- ``messages`` (a list of structs: role, content, tool_call_id, tool_calls),
``tools_json`` (the tool schemas as JSON text, since schemas have no fixed shape),
``loss_mask``, ``group_id``, ``reward``, ``schema_version`` -- so DuckDB or polars can query
it; ``read_training_file`` turns either form back into the records that were written.
Both writes are atomic (temporary name, then rename).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..store.atomic import unique_tmp
from ..store.checkpoint.jsonl import parse_jsonl
from ..store.reader import save_jsonl_atomic
from ..store.run_files import refuse_run_file

__all__ = ["write_training_jsonl", "write_training_parquet", "read_training_file", "write_records",
           "training_arrow_schema"]

_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                   ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_call_id", pa.string()),
                      ("tool_calls", pa.list_(_CALL))])
_MSG_KEYS = ("role", "content", "tool_call_id", "tool_calls")


def training_arrow_schema() -> pa.Schema:
    """The Arrow schema of a training Parquet file."""
    return pa.schema([("messages", pa.list_(_MESSAGE)), ("tools_json", pa.string()),
                      ("loss_mask", pa.list_(pa.int8())), ("group_id", pa.string()),
                      ("reward", pa.float64()), ("schema_version", pa.string())])


def _check_path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"output= must be a file path such as train.jsonl, got {type(path).__name__}")
    path = os.fspath(path)
    if Path(path).is_dir():
        raise ValueError(f"output={path!r} is a folder; pass a file path such as train.jsonl or train.parquet")
    return path


def _check_target(path) -> str:
    """``_check_path``, and never a run's own file (a checkpoint, its sidecars, its Parquet copy):
    the training file replaces what is there (``store/run_files.refuse_run_file``)."""
    path = _check_path(path)
    refuse_run_file(path, "training_set(output=...)")
    return path


def write_training_jsonl(records: list, path) -> str:
    """Write records as JSONL (atomically); return the path."""
    return save_jsonl_atomic(records, _check_target(path))


def write_training_parquet(records: list, path, row_group_size: int = 5000) -> str:
    """Write records as Parquet with ``training_arrow_schema()`` (atomically); return the path."""
    path = Path(_check_target(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist([{
        "messages": [{k: m.get(k) for k in _MSG_KEYS} for m in r["messages"]],
        "tools_json": json.dumps(r.get("tools") or [], ensure_ascii=False),
        "loss_mask": r.get("loss_mask"), "group_id": r.get("group_id"), "reward": r.get("reward"),
        "schema_version": r.get("schema_version", "1"),
    } for r in records], schema=training_arrow_schema())
    tmp = unique_tmp(path)                 # a unique name: never a planted <output>.tmp link
    pq.write_table(table, tmp, row_group_size=row_group_size, compression="zstd")
    os.replace(tmp, path)
    return str(path)


def write_records(records: list, path) -> str:
    """Parquet when ``path`` ends in ``.parquet``, else JSONL."""
    if str(os.fspath(path)).endswith(".parquet"):
        return write_training_parquet(records, path)
    return write_training_jsonl(records, path)


def _message_back(m: dict) -> dict:
    out = {k: v for k, v in m.items() if v is not None}
    if "tool_calls" in out:
        out["tool_calls"] = [dict(c, function=dict(c["function"])) for c in out["tool_calls"]]
    return out


def read_training_file(path) -> list:
    """The records of a training JSONL or Parquet file, as they were written."""
    path = Path(_check_path(path))
    if not path.is_file():
        raise FileNotFoundError(f"no training file at {str(path)!r}")
    if path.suffix != ".parquet":
        return parse_jsonl(path.read_bytes(), str(path)).rows
    out = []
    for rec in pq.read_table(path).to_pylist():
        record = {"messages": [_message_back(m) for m in rec["messages"]],
                  "tools": json.loads(rec["tools_json"] or "[]"), "loss_mask": rec["loss_mask"],
                  "schema_version": rec["schema_version"]}
        if rec.get("group_id") is not None:
            record["group_id"] = rec["group_id"]
        if rec.get("reward") is not None:
            record["reward"] = rec["reward"]
        out.append(record)
    return out
