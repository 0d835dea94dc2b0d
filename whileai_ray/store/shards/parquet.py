"""The Parquet copy of a shared-storage run: only rows that landed, each once.

Rollout actors play rows the Driver never lands: past the budget, or in a chunk whose answer
was lost with its actor (the chunk is played again elsewhere, so its keys land from another
actor's shard). Their JSONL shards may hold such rows (no stub points at them), but
``<shards>/parquet/`` is what DuckDB, polars and ``ray.data.read_parquet`` read whole, so it
must hold exactly the landed rows. Hence two steps:

* an actor writes each Parquet part to ``<shards>/staged/`` (``write_staged``), outside the
  folder readers see, with the rows' origin in its footer (``whileai_ray.shard_rows``: per shard
  file its name and each row's byte offset, what a stub's ``_shard`` pointer names);
* the Driver, once the pool has closed, publishes (``publish``): a staged part whose rows all
  landed is renamed into ``parquet/`` as it is, one with some rows that did not is rewritten
  without them, one with none is removed; the landed rows no staged part holds (an actor that
  died before writing its buffer) are read from their JSONL shards into a ``part-fill-*``
  part. A file appears in ``parquet/`` only by a rename, complete.

What landed is what the checkpoint took (``CheckpointSink`` notes each taken stub's file and
offset: ``checkpoint/sink.note_landed``); whole shard files are decided by count, only a file some of whose rows
did not land is looked at row by row. The Driver reads footers, not rows, for everything else.

Left as it is: a run whose Driver died before publishing leaves its staged parts, removed when
the next run opens (``prepare_shards``); its landed rows stay readable through the stubs and
the JSONL shards, and are not in ``parquet/``.
"""
from __future__ import annotations

import json
import os
import uuid
from array import array
from typing import TYPE_CHECKING

from .files import delete, fs_of, join, listing, read_bytes

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

__all__ = ["STAGED", "ORIGIN_KEY", "write_staged", "publish"]

STAGED = "staged"                          # <shards>/staged/: parts not yet published
ORIGIN_KEY = b"whileai_ray.shard_rows"     # a part's footer: [[shard file, [row offsets]], ...]


def _write(fs: pafs.FileSystem | None, target: str, rows: list[dict] | None, origin: list[list],
           table: pa.Table | None = None) -> None:
    """Write a part (``rows``, or an Arrow ``table``) to ``target`` via ``target.tmp``."""
    import pyarrow.parquet as pq

    from ..parquet.folder import rows_to_table
    if table is None:
        assert rows is not None, "_write: the rows or their table"
        table = rows_to_table(rows)
    meta = {**(table.schema.metadata or {}), ORIGIN_KEY: json.dumps(origin, separators=(",", ":")).encode()}
    table = table.replace_schema_metadata(meta)
    if fs is None:
        pq.write_table(table, target + ".tmp", compression="zstd")
        os.replace(target + ".tmp", target)
    else:
        pq.write_table(table, target + ".tmp", compression="zstd", filesystem=fs)
        fs.move(target + ".tmp", target)


def write_staged(fs: pafs.FileSystem | None, path: str, name: str, rows: list[dict], origin: list[list]) -> None:
    """An actor's part: ``rows`` (stored form) from the shard files ``origin`` says, staged."""
    _write(fs, join(path, STAGED, name), rows, origin)


def _move(fs: pafs.FileSystem | None, src: str, dst: str) -> None:
    if fs is None:
        os.replace(src, dst)
    else:
        fs.move(src, dst)


def _origin(fs: pafs.FileSystem | None, file: str) -> list[list]:
    import pyarrow.parquet as pq
    meta = (pq.read_metadata(file, filesystem=fs) if fs is not None else pq.read_metadata(file)).metadata or {}
    origin: list[list] = json.loads(meta.get(ORIGIN_KEY, b"[]"))     # [[shard file, [row offsets]], ...]
    return origin


def publish(folder: str, landed: dict) -> dict:
    """Publish the staged parts of ``folder`` (see the module docstring) against ``landed`` (shard
    file -> offsets of its rows the checkpoint took). Returns counts: parts published as they
    are, rewritten, dropped, and rows filled from the JSONL shards."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    fs, path = fs_of(folder)
    out = {"published": 0, "rewritten": 0, "dropped": 0, "filled": 0}
    covered: set = set()
    for name in listing(fs, join(path, STAGED)):
        if not (name.startswith("part-") and name.endswith(".parquet")):
            continue
        src = join(path, STAGED, name)
        origin = _origin(fs, src)
        covered.update(f for f, _starts in origin)
        if all(len(landed.get(f, ())) == len(starts) for f, starts in origin):
            _move(fs, src, join(path, "parquet", name))
            out["published"] += 1
            continue
        keep, kept_origin = [], []
        for f, starts in origin:                  # a file some of whose rows did not land: row by row
            took = set(landed.get(f, ()))
            mask = [s in took for s in starts]
            keep += mask
            if any(mask):
                kept_origin.append([f, [s for s, k in zip(starts, mask) if k]])
        if any(keep):
            table = (pq.read_table(src, filesystem=fs) if fs is not None else pq.read_table(src)).filter(pa.array(keep))
            _write(fs, join(path, STAGED, "keep-" + name), None, kept_origin, table=table)
            _move(fs, join(path, STAGED, "keep-" + name), join(path, "parquet", name))
            out["rewritten"] += 1
        else:
            out["dropped"] += 1
        delete(fs, src)
    out["filled"] = _fill(fs, path, {f: landed[f] for f in sorted(landed) if f not in covered})
    return out


def _fill(fs: pafs.FileSystem | None, path: str, missing: dict[str, array[int]]) -> int:
    """The landed rows of shard files no part holds, read from the JSONL shards into one part."""
    if not missing:
        return 0
    rows, origin = [], []
    for name, offsets in missing.items():
        data, want, starts, pos = read_bytes(fs, join(path, "rows", name)), set(offsets), [], 0
        for line in data.split(b"\n"):
            if pos in want and line.strip():
                rows.append(json.JSONDecoder().decode(line.decode("utf-8")))
                starts.append(pos)
            pos += len(line) + 1
        origin.append([name, starts])
    name = f"part-fill-{uuid.uuid4().hex[:12]}-00000.parquet"
    _write(fs, join(path, STAGED, name), rows, origin)
    _move(fs, join(path, STAGED, name), join(path, "parquet", name))
    return len(rows)
