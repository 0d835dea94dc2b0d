"""The on-disk row schema (version 1) and the key that makes resume exactly-once.

Rows are the exported ``rows()`` dicts: plain JSON values, nested, keys varying per row.
Two things here are shared by every writer and reader in ``whileai_ray.store``:

``row_key(row)``
    The identity of a row on disk: ``(scenario_id, prompt_sha, rollout_index, eval_run)``.
    ``prompt_sha`` is the first 16 hex chars of sha256(prompt, utf-8); ``eval_run`` is
    ``row["lineage"]["eval_run"]`` or 0. The run id is deliberately NOT part of the key, so
    a resumed run (which gets a new run id) recognises the rows an earlier attempt wrote.

The Arrow/Parquet schema, ``SCHEMA_VERSION = "1"``
    One Parquet row per exported row, with these columns:

    ========================  =========  ==================================================
    column                    type       content
    ========================  =========  ==================================================
    row_key                   string     ``"scenario_id|prompt_sha|rollout_index|eval_run"``
    prompt, final_text,       string     the row's value when it is a string, else null
    scenario_id, tier,
    ask_family, model_version,
    policy_version,
    writer_model, arm,
    world_state,
    selection_reason,
    behavior_signature,
    finish_reason,
    judge_status, judge_name,
    reason, schema_version
    rollout_index, seed       int64      the row's value when it is an int, else null
    eval_run                  int64      ``lineage.eval_run`` or 0
    reward                    float64    the row's reward (bool -> 0/1), null when absent
    steps, messages,          string     JSON encoding of the field, null when absent
    scenario_dimensions,
    lineage, faults,
    tools_used, seeded,
    markers, sampling, usage
    tags                      string     JSON object of the conversation tags present
                                         (stance, length, texture, tone, ask, ...)
    row_json                  string     the whole row as JSON, key order kept
    ========================  =========  ==================================================

    The typed and JSON columns exist for query engines (DuckDB, polars, pandas).
    ``row_json`` is the source of truth when reading back with ``whileai_ray``: decoding
    it gives a dict equal (``==``, and in the same key order) to the row that was written.
    The Parquet key-value metadata carries ``whileai_ray.schema_version`` = ``"1"`` and
    ``whileai_ray.columns`` (this column list as JSON).
"""
from __future__ import annotations

import json

import pyarrow as pa

from ..core.identity import key_string, prompt_sha, row_key  # noqa: F401  (re-exported: the identity lives there)
from ..core.strict_json import dumps

__all__ = [
    "SCHEMA_VERSION", "METADATA_VERSION_KEY", "row_key", "key_string",
    "arrow_schema", "record_of", "clean_text", "STRING_COLUMNS", "INT_COLUMNS", "JSON_COLUMNS", "TAG_KEYS",
]

SCHEMA_VERSION = "1"
METADATA_VERSION_KEY = b"whileai_ray.schema_version"
METADATA_COLUMNS_KEY = b"whileai_ray.columns"

STRING_COLUMNS = (
    "prompt", "final_text", "scenario_id", "tier", "ask_family", "model_version",
    "policy_version", "writer_model", "arm", "world_state", "selection_reason",
    "behavior_signature", "finish_reason", "judge_status", "judge_name", "reason",
    "schema_version",
)
INT_COLUMNS = ("rollout_index", "seed")
JSON_COLUMNS = (
    "steps", "messages", "scenario_dimensions", "lineage", "faults", "tools_used",
    "seeded", "markers", "sampling", "usage",
)
TAG_KEYS = (
    "stance", "length", "texture", "tone", "ask", "vagueness", "phrasing", "pressure",
    "user", "history",
)

# Strict ASCII JSON (strict_json.py): DuckDB and polars can parse every JSON column.
_DUMP = dumps


def arrow_schema() -> pa.Schema:
    """The fixed Arrow schema of version 1, with the version in its metadata."""
    fields = [pa.field("row_key", pa.string())]
    fields += [pa.field(name, pa.string()) for name in STRING_COLUMNS]
    fields += [pa.field(name, pa.int64()) for name in INT_COLUMNS]
    fields += [pa.field("eval_run", pa.int64()), pa.field("reward", pa.float64())]
    fields += [pa.field(name, pa.string()) for name in JSON_COLUMNS]
    fields += [pa.field("tags", pa.string()), pa.field("row_json", pa.string())]
    columns = json.dumps([f.name for f in fields]).encode()
    return pa.schema(fields, metadata={
        METADATA_VERSION_KEY: SCHEMA_VERSION.encode(),
        METADATA_COLUMNS_KEY: columns,
    })


def _int_or_none(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reward(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def clean_text(value):
    """A str Arrow can store: lone surrogates (invalid in UTF-8) become U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def record_of(row: dict) -> dict:
    """One row -> a dict with a value for every column of ``arrow_schema()``."""
    key = row_key(row)
    rec = {"row_key": key_string(key)}
    for name in STRING_COLUMNS:
        value = row.get(name)
        rec[name] = value if isinstance(value, str) else None
    for name in INT_COLUMNS:
        rec[name] = _int_or_none(row.get(name))
    rec["eval_run"] = _int_or_none(key[3])
    rec["reward"] = _reward(row.get("reward"))
    for name in JSON_COLUMNS:
        value = row.get(name)
        rec[name] = None if value is None else _DUMP(value)
    tags = {k: row[k] for k in TAG_KEYS if k in row}
    rec["tags"] = _DUMP(tags) if tags else None
    rec["row_json"] = _DUMP(row)
    return rec
