"""``rows_to_table``: rows as an Arrow table of the row schema (``store/schema.py``), column by column.

The Parquet copy of a checkpoint turns every landed row into this table, in the Driver. It used
to make one dict per row (``schema.record_of``) and hand the list to ``pa.Table.from_pylist``,
which walked the dicts again; now each column is one Python list made straight from the rows
and given to ``pa.array`` with its type, and the small JSON values are encoded by one C encoder
per batch (``json_text.py``). The table is the one ``record_of`` + ``from_pylist`` gave, value
for value, schema and metadata included (``tests/unit/store/parquet/test_row_columns.py``
compares the two on odd rows): the same helpers decide each value (``_int_or_none``,
``_reward``, ``clean_text`` where Arrow refuses a lone surrogate in a text column, the spliced
``row_json`` of the flat layout).

Callers that already hold a row's key text or its JSON text pass them (``keys``, ``texts``)
and nothing is computed twice: ``ParquetSink`` hashes each row's key when it takes the row,
and a checkpoint writes each stored row as exactly ``dumps(row)`` before the Parquet copy does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pyarrow as pa

from ...core.strict_json import clean_dumps, gc_paused
from ..schema import (INT_COLUMNS, JSON_COLUMNS, STRING_COLUMNS, TAG_KEYS, _int_or_none, _reward, _spliced_json,
                      arrow_schema, clean_text, key_string, row_key)
from .json_text import text_encoder
from .nested_steps import NESTED, nested_column

__all__ = ["rows_to_table"]


def rows_to_table(rows: Iterable[dict], nested: bool = True, *, keys: Sequence[str] | None = None,
                  texts: Sequence[str | None] | None = None) -> pa.Table:
    """Rows -> an Arrow table of the version-2 schema (``steps`` and ``messages`` nested), or
    with ``nested=False`` of version 1's layout (both as JSON text: ``to_arrow()``'s default).

    ``keys``: each row's ``key_string(row_key(row))``, when the caller has them. ``texts`` (the
    nested layout only): each row's ``strict_json.dumps(row)`` or None, when the caller has it."""
    rows = rows if isinstance(rows, list) else list(rows)
    text_of = text_encoder()
    with gc_paused():
        if keys is None:
            row_keys = [row_key(r) for r in rows]
            keys = [key_string(k) for k in row_keys]
            eval_runs = [_int_or_none(k[3]) for k in row_keys]
        else:
            eval_runs = [_int_or_none(_eval_run(r)) for r in rows]
        arrays = [_strings(keys)]
        for name in STRING_COLUMNS:
            arrays.append(_strings([v if isinstance(v, str) else None for v in [r.get(name) for r in rows]]))
        for name in INT_COLUMNS:
            arrays.append(pa.array([_int_or_none(r.get(name)) for r in rows], pa.int64()))
        arrays.append(pa.array(eval_runs, pa.int64()))
        arrays.append(pa.array([_reward(r.get("reward")) for r in rows], pa.float64()))
        spliced: list[dict[str, str]] = [{} for _ in rows] if not nested else []
        for name in JSON_COLUMNS:
            values = [r.get(name) for r in rows]
            if nested and name in NESTED:
                arrays.append(nested_column(values, name))
            elif name in NESTED:            # flat: the text is spliced into row_json (schema._spliced_json)
                arrays.append(pa.array([_flat_text(v, name, s, text_of) for v, s in zip(values, spliced)],
                                       pa.string()))
            else:
                arrays.append(pa.array([None if v is None else text_of(v) for v in values], pa.string()))
        tags = ({k: r[k] for k in TAG_KEYS if k in r} for r in rows)
        arrays.append(pa.array([text_of(t) if t else None for t in tags], pa.string()))
        if not nested:
            row_json = [_spliced_json(r, s) if s else text_of(r) for r, s in zip(rows, spliced)]
        elif texts is not None:
            row_json = [text_of(r) if t is None else t for r, t in zip(rows, texts)]
        else:
            row_json = [text_of(r) for r in rows]
        arrays.append(pa.array(row_json, pa.string()))
    return pa.Table.from_arrays(arrays, schema=arrow_schema(nested))


def _strings(values: Sequence[Any]) -> pa.Array:
    """A text column; a lone surrogate (which Arrow refuses) stored replaced (row_json is exact)."""
    try:
        return pa.array(values, pa.string())
    except UnicodeEncodeError:
        return pa.array([clean_text(v) for v in values], pa.string())


def _flat_text(value: Any, name: str, spliced: dict[str, str], text_of: Callable[[Any], str]) -> str | None:
    """``steps`` / ``messages`` as JSON text (flat layout), noted in ``spliced`` when it needed no
    repair (``record_of(row, nested=False)``)."""
    if value is None:
        return None
    text = clean_dumps(value)
    if text is not None:
        spliced[name] = text
        return text
    return text_of(value)


def _eval_run(row: dict) -> Any:
    """``row_key(row)[3]``: ``lineage.eval_run`` or 0."""
    lineage = row.get("lineage")
    eval_run = lineage.get("eval_run", 0) if isinstance(lineage, dict) else 0
    return eval_run or 0
