"""The on-disk row schema (version 2; version 1 still read) and the key that makes resume exactly-once.

Rows are the exported ``rows()`` dicts: plain JSON values, nested, keys varying per row.
Two things here are shared by every writer and reader in ``whileai_ray.store``:

``row_key(row)``
    The identity of a row on disk: ``(scenario_id, prompt_sha, rollout_index, eval_run)``.
    ``prompt_sha`` is the first 16 hex chars of sha256(prompt, utf-8); ``eval_run`` is
    ``row["lineage"]["eval_run"]`` or 0. The run id is deliberately NOT part of the key, so
    a resumed run (which gets a new run id) recognises the rows an earlier attempt wrote.

The Arrow/Parquet schema, ``SCHEMA_VERSION = "2"``
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
    steps                     list<struct> one struct per step (kind, tool, arguments_json,
                                         result_json, status, text, user, extra_json;
                                         ``parquet/nested_steps.py``), null when absent
    messages                  list<struct> one struct per message (role, content, name,
                                         tool_calls: list<struct<name, arguments_json>>)
    scenario_dimensions,      string     JSON encoding of the field, null when absent
    lineage, faults,
    tools_used, seeded,
    markers, sampling, usage
    tags                      string     JSON object of the conversation tags present
                                         (stance, length, texture, tone, ask, ...)
    row_json                  string     the whole row as JSON, key order kept
    ========================  =========  ==================================================

    The typed, nested and JSON columns exist for query engines (DuckDB, polars, pandas): a
    tool call is ``unnest(steps)`` away. They are a view, not a lossless encoding (a step's
    arguments stay JSON text inside the struct; a step that is not a dict is ``kind="other"``).
    ``row_json`` is the source of truth when reading back with ``whileai_ray``: decoding
    it gives a dict equal (``==``, and in the same key order) to the row that was written,
    however odd its steps. The Parquet key-value metadata carries
    ``whileai_ray.schema_version`` = ``"2"`` and ``whileai_ray.columns`` (this column list as JSON).

Version 1 (files written before) is the same columns with ``steps`` and ``messages`` as JSON
text; ``arrow_schema(nested=False)`` is its layout, and what ``to_arrow()`` gives by default.
Readers take both versions (``check_version``): rows come from ``row_json`` either way.
"""
from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa

from ..core.identity import key_string, prompt_sha, row_key  # noqa: F401  (re-exported: the identity lives there)
from ..core.strict_json import clean_dumps, dumps

__all__ = [
    "SCHEMA_VERSION", "READ_VERSIONS", "METADATA_VERSION_KEY", "check_version", "row_key", "key_string",
    "arrow_schema", "record_of", "clean_text", "STRING_COLUMNS", "INT_COLUMNS", "JSON_COLUMNS", "TAG_KEYS",
]

SCHEMA_VERSION = "2"
READ_VERSIONS = ("1", "2")          # the versions readers take: row_json is the row in both
FLAT_VERSION = "1"                  # steps and messages as JSON text
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

_NESTED = ("steps", "messages")
# Strict ASCII JSON (strict_json.py): DuckDB and polars can parse every JSON column.
_DUMP = dumps


def arrow_schema(nested: bool = True) -> pa.Schema:
    """The fixed Arrow schema with its version in the metadata: version 2 (``steps`` and
    ``messages`` nested), or with ``nested=False`` version 1's layout (both as JSON text)."""
    from .parquet.nested_steps import nested_schema
    fields = [pa.field("row_key", pa.string())]
    fields += [pa.field(name, pa.string()) for name in STRING_COLUMNS]
    fields += [pa.field(name, pa.int64()) for name in INT_COLUMNS]
    fields += [pa.field("eval_run", pa.int64()), pa.field("reward", pa.float64())]
    fields += [pa.field(name, pa.string()) for name in JSON_COLUMNS]
    fields += [pa.field("tags", pa.string()), pa.field("row_json", pa.string())]
    columns = json.dumps([f.name for f in fields]).encode()
    schema = pa.schema(fields, metadata={
        METADATA_VERSION_KEY: (SCHEMA_VERSION if nested else FLAT_VERSION).encode(),
        METADATA_COLUMNS_KEY: columns,
    })
    return nested_schema(schema) if nested else schema


def check_version(schema: pa.Schema, path: str | os.PathLike[str]) -> None:
    """Refuse a file of a row schema version this code does not read (a newer whileai_ray's)."""
    version = (schema.metadata or {}).get(METADATA_VERSION_KEY)
    if version is not None and version.decode() not in READ_VERSIONS:
        raise ValueError(
            f"{path} was written with whileai_ray row schema version {version.decode()!r}; this "
            f"version reads schema {' and '.join(map(repr, READ_VERSIONS))}. Upgrade whileai_ray or re-export the file."
        )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _reward(value: object) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    return None


def clean_text(value: Any) -> Any:
    """A str Arrow can store: lone surrogates (invalid in UTF-8) become U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    return value


def record_of(row: dict, nested: bool = True) -> dict:
    """One row -> a dict with a value for every column of ``arrow_schema(nested)``; with
    ``nested`` the ``steps`` and ``messages`` values are the row's own (``parquet/nested_steps.py``
    converts them), else their JSON text."""
    key = row_key(row)
    rec: dict[str, Any] = {"row_key": key_string(key)}
    for name in STRING_COLUMNS:
        value = row.get(name)
        rec[name] = value if isinstance(value, str) else None
    for name in INT_COLUMNS:
        rec[name] = _int_or_none(row.get(name))
    rec["eval_run"] = _int_or_none(key[3])
    rec["reward"] = _reward(row.get("reward"))
    spliced: dict[str, str] | None = None if nested else {}
    for name in JSON_COLUMNS:
        value = row.get(name)
        if nested and name in _NESTED:
            rec[name] = value
        elif value is None:
            rec[name] = None
        elif spliced is not None and name in _NESTED and (text := clean_dumps(value)) is not None:
            rec[name] = spliced[name] = text
        else:
            rec[name] = _DUMP(value)
    tags = {k: row[k] for k in TAG_KEYS if k in row}
    rec["tags"] = _DUMP(tags) if tags else None
    rec["row_json"] = _spliced_json(row, spliced) if spliced else _DUMP(row)
    return rec


def _spliced_json(row: dict, texts: dict) -> str:
    """``dumps(row)``, with the JSON text of ``steps`` and ``messages`` (``texts``, already made
    for their columns) spliced in instead of encoded a second time (a tenth of ``to_arrow()``'s
    time): the row is encoded with a marker string in their place, and each marker, found
    exactly once (so no value of the row holds it), is replaced. Anything else (a repair the
    row needs, a marker seen twice): the row encoded whole."""
    shell = dict(row)
    for name in texts:
        shell[name] = _MARKERS[name][0]
    text = clean_dumps(shell)
    if text is None:
        return _DUMP(row)
    for name, value in texts.items():
        marker = _MARKERS[name][1]
        if text.count(marker) != 1:
            return _DUMP(row)
        text = text.replace(marker, value, 1)
    return text


# a string no row writes in practice; where one does, ``_spliced_json`` sees it twice and splices nothing
_MARKERS = {name: (m, json.dumps(m)) for name in _NESTED for m in [f"\x00whileai_ray:{name}\x00"]}
