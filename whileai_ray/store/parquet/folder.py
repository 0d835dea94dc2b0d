"""Parquet output: rows stream into part files, then compact into one ``rows.parquet``.

Folder layout while a run is going::

    <folder>/part-00000.parquet   one row group of up to ``row_group_size`` rows
    <folder>/part-00001.parquet
    ...
    .<folder>.work/               beside it, hidden: where files are built (``parquet/swap.py``)

The folder only ever holds complete files holding rows that landed, each once, so DuckDB,
polars, pyarrow and ``ray.data.read_parquet`` pointed at it see exactly the run. A part is
written in the hidden work folder and renamed in. ``close(compact=True)`` builds the new
content, one ``<folder>/rows.parquet`` holding the rows of any ``rows.parquet`` already there
(``mode="a"``) and of the parts, with row groups of ``row_group_size`` rows, in the work
folder, and swaps it with the folder in one step (``swap.replace_folder``): a
compaction cut short at any point leaves the folder as it was before or as it is after,
never both; the next open removes what it left in the work folder.

The columns are the versioned schema of ``schema.py`` (``SCHEMA_VERSION = "2"``, also in the
file's key-value metadata: ``steps`` and ``messages`` nested, ``parquet/nested_steps.py``). DuckDB /
polars / pandas can query the typed and nested columns; reading back with ``read_parquet``
decodes ``row_json`` and returns rows equal to those written. Files of version 1 (``steps`` and
``messages`` as JSON text) are read the same way, and a compaction that meets one (a checkpoint
written before, resumed now) converts its row groups to version 2 (``as_current``).
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa
import pyarrow.parquet as pq

from ..atomic import atomic_path
from ...core.strict_json import gc_paused
from .encodings import writer_options
from .key_tally import KeyTally
from .limits import byte_budget, check_footer, checked_file, read_row_group
from .swap import recover, replace_folder, work_folder, write_into
from ..row_key_set import RowKeySet, key_digest
from .nested_steps import nest_json_columns
from .row_columns import rows_to_table
from ..schema import arrow_schema, check_version, key_string, row_key

if TYPE_CHECKING:
    import numpy as np

# what the readers and writers take as a file or folder
PathArg: TypeAlias = "str | os.PathLike[str]"

__all__ = ["ParquetSink", "write_parquet", "read_parquet", "rows_to_table", "as_current", "COMPACT_NAME"]

COMPACT_NAME = "rows.parquet"
_PART_GLOB = "part-*.parquet"
_TORN_GLOB = "*.parquet.*.tmp"             # atomic_path's temporary names, written in the folder before
_COMPRESSION = "zstd"


def as_current(table: pa.Table) -> pa.Table:
    """A table read from a version-1 file (``steps`` and ``messages`` as JSON text) in version 2's
    layout; a version-2 table as it is. ``row_json`` is copied unchanged either way."""
    if table.schema.get_field_index("steps") < 0 or not pa.types.is_string(table.schema.field("steps").type):
        return table
    return nest_json_columns(table).replace_schema_metadata(arrow_schema().metadata)


def write_parquet(rows: Iterable[dict], path: PathArg, row_group_size: int = 2000) -> str:
    """Write rows (any iterable) to one Parquet file, a row group at a time (atomically, parent
    dirs created); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    it, schema = iter(rows), arrow_schema()
    with atomic_path(path) as tmp, pq.ParquetWriter(tmp, schema, compression=_COMPRESSION,
                                                    **writer_options(schema)) as writer:
        while True:
            chunk = list(islice(it, max(1, row_group_size)))
            if not chunk:
                break
            writer.write_table(rows_to_table(chunk), row_group_size=max(1, row_group_size))
    return str(path)


def _rows_of_table(table: pa.Table, path: PathArg, warnings: list[str] | None = None,
                   first: int = 0) -> list[dict]:
    if "row_json" in table.column_names:
        loads = json.loads
        rows: list[dict] = []
        with gc_paused():
            for i, text in enumerate(table.column("row_json").to_pylist()):
                if text is None:
                    continue
                try:
                    rows.append(loads(text))
                except RecursionError:          # a crafted row: more nesting than the decoder walks
                    if warnings is not None:
                        warnings.append(f"{path}: row {first + i} is nested too deep to decode; skipped as corrupt")
        return rows
    # A foreign Parquet file: take its columns as they are, dropping nulls like rows() does.
    return [{k: v for k, v in rec.items() if v is not None} for rec in table.to_pylist()]


def _read_file(path: PathArg, warnings: list[str] | None = None, columns: list[str] | None = None) -> list[dict]:
    """The rows of one Parquet file, a row group at a time, each checked against what the file's
    size can hold before it is decoded (``parquet/limits.py``): a crafted footer is refused."""
    pf = checked_file(path)
    check_version(pf.schema_arrow, path)
    size = os.path.getsize(path)
    budget, spent, first = byte_budget(size), 0, 0
    rows: list[dict] = []
    for g in range(pf.num_row_groups):
        table = read_row_group(path, pf, g, columns=columns, size=size)
        spent += table.nbytes
        if spent > budget:
            raise ValueError(f"{path}: its row groups decode to more than {budget:,} bytes, over what a Parquet "
                             "file of this size may hold; it was written by something else or crafted. Not read.")
        rows.extend(_rows_of_table(table, path, warnings, first))
        first += table.num_rows
    return rows


def _folder_files(folder: Path) -> list[Path]:
    files: list[Path] = []
    if (folder / COMPACT_NAME).is_file():
        files.append(folder / COMPACT_NAME)
    files.extend(sorted(folder.glob(_PART_GLOB)))
    return files


def read_parquet(path: PathArg, warnings: list[str] | None = None) -> list[dict]:
    """Rows from a Parquet file, or a folder holding ``rows.parquet`` and/or part files.

    In a folder, rows are read from ``rows.parquet`` first, then the parts in order; a key
    seen twice (parts left by an interrupted compaction) is kept once. A row too deeply nested
    to decode is skipped and said in ``warnings``; a file whose footer claims more than its
    size can hold is refused (``parquet/limits.py``).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no Parquet file or folder at {str(path)!r}")
    if path.is_file():
        return _read_file(path, warnings)
    files = _folder_files(path)
    if not files:
        raise FileNotFoundError(f"{str(path)!r} holds no {COMPACT_NAME} and no {_PART_GLOB} files")
    rows: list[dict] = []
    seen: set[tuple[Any, ...]] = set()
    for file in files:
        for row in _read_file(file, warnings):
            key = row_key(row)
            if key not in seen:
                seen.add(key)
                rows.append(row)
    return rows


class ParquetSink:
    """Stream rows into ``<folder>/part-NNNNN.parquet`` row groups; compact on close.

    ``mode="w"`` (default) removes this sink's files (``rows.parquet``, ``part-*.parquet``)
    left in the folder by an earlier run; ``mode="a"`` keeps them, continues the part
    numbering and skips rows whose key is already there. The keys already there are read only
    when a question needs them (opening reads each file's footer: a million-row side's keys
    are seconds of hashing a resume does not wait for). Each file this sink writes carries a
    ``KeyTally`` of its rows' keys in its footer; ``mirrors(a)`` says whether the files found at
    open hold exactly the keys whose digests are ``a`` (a checkpoint's JSONL), and when they
    do, ``write(rows, new=True)`` takes rows the JSONL just took without looking them up.
    """

    def __init__(self, folder: PathArg, row_group_size: int = 2000, mode: str = "w") -> None:
        if mode not in ("w", "a"):
            raise ValueError(f"ParquetSink(mode={mode!r}): use 'w' (start fresh) or 'a' (append)")
        if not isinstance(row_group_size, int) or row_group_size < 1:
            raise ValueError(f"ParquetSink(row_group_size={row_group_size!r}): use a positive int such as 2000")
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise ValueError(f"ParquetSink folder {str(self.folder)!r} is a file; pass a folder path")
        recover(self.folder)                     # what a writer killed mid-compaction left (parquet/swap.py)
        self.folder.mkdir(parents=True, exist_ok=True)
        for torn in self.folder.glob(_TORN_GLOB):  # a part half written by a version that wrote in the folder
            torn.unlink()
        self.row_group_size = row_group_size
        self.rows_written = 0
        self.duplicates_skipped = 0
        self._buffer: list[dict] = []
        self._buffer_a: list[int] = []          # their key digests' first halves (a part's KeyTally)
        self._buffer_k: list[str] = []          # their key texts (the row_key column)
        self._buffer_t: list[str | None] = []   # their JSON texts where the caller had them (row_json)
        self._keys = RowKeySet()                # row_key strings taken (128-bit digests)
        self._closed = False
        existing = _folder_files(self.folder)
        if mode == "w":
            for file in existing:
                file.unlink()
            existing = []
        self.warnings: list[str] = []
        self.existing_rows = 0                   # rows in the files found at open
        self._found_tally: KeyTally | None = KeyTally()     # their keys' tally (None: a file has none)
        for file in list(existing):
            try:
                meta = pq.ParquetFile(file).metadata
                check_footer(file, meta)             # a crafted footer: removed like an unreadable file
                self.existing_rows += meta.num_rows
                tally = KeyTally.of_metadata(meta.metadata, meta.num_rows)
                self._found_tally = None if tally is None or self._found_tally is None else \
                    self._found_tally.merge(tally)
            except (OSError, ValueError, pa.ArrowException) as exc:   # the JSONL beside it is the truth
                file.unlink()
                existing.remove(file)
                self.warnings.append(f"{file}: unreadable Parquet ({type(exc).__name__}: {str(exc)[:240]}); "
                                     "removed, its rows are rebuilt from the checkpoint when the run closes")
        self._found = list(existing)             # their keys: read when first needed (_old_keys)
        self._old: RowKeySet | None = None if self._found else RowKeySet()
        numbers = [int(p.stem.split("-")[1]) for p in existing if p.name != COMPACT_NAME]
        self._next_part = max(numbers) + 1 if numbers else 0

    def mirrors(self, a: np.ndarray | list[int]) -> bool:
        """Do the files found at open hold exactly the keys whose ``key_digest`` first halves are
        ``a`` (each once)? Answered from the files' tallies; False when one has none."""
        return (self._found_tally is not None and not self._cut_short()
                and self._found_tally == KeyTally.of_digests(a))

    def _cut_short(self) -> bool:
        """Did the files found at open include ``rows.parquet`` and parts beside it? (A compaction
        cut short by a version before ``parquet/swap.py`` left the parts it merged; a run that
        stopped without compacting leaves new ones: either way the compaction that follows drops
        any row it already wrote.)"""
        names = {f.name for f in self._found}
        return COMPACT_NAME in names and len(names) > 1

    def _old_keys(self) -> RowKeySet:
        """The keys of the rows in the files found at open (read now, once)."""
        if self._old is None:
            found: list[str] = []
            for file in self._found:
                pf = pq.ParquetFile(file)
                found += [k for g in range(pf.num_row_groups)
                          for k in read_row_group(file, pf, g, columns=["row_key"]).column("row_key").to_pylist()]
            self._old = RowKeySet.first_of(found)[0]
        return self._old

    def write(self, rows: Iterable[dict], new: bool = False, texts: Iterable[str | None] | None = None,
              digests: list | None = None) -> int:
        """Buffer rows (new keys only); write full row groups out as parts. Returns rows taken.
        ``new=True``: the caller knows these keys are not in the files found at open. ``texts``:
        each row's ``strict_json.dumps(row)`` (its ``row_json``; None: encoded here), when the
        caller already made it (a checkpoint line). ``digests``: each row's ``key_digest`` when
        the caller made it already (the JSONL's)."""
        if self._closed:
            raise RuntimeError(f"ParquetSink {self.folder} is closed")
        taken = 0
        rows = rows if isinstance(rows, list) else list(rows)
        given = [None] * len(rows) if texts is None else list(texts)
        if len(given) != len(rows):
            raise ValueError(f"ParquetSink.write: {len(given)} texts for {len(rows)} rows; pass one per row (or None)")
        if digests is not None and len(digests) != len(rows):
            raise ValueError(f"ParquetSink.write: {len(digests)} digests for {len(rows)} rows; pass one per row")
        for i, (row, text) in enumerate(zip(rows, given)):
            a, b, key = digests[i] if digests is not None else key_digest(key_string(row_key(row)))
            if (not new and key in self._old_keys()) or not self._keys.add_digest(a, b, key):
                self.duplicates_skipped += 1
                continue
            self._buffer.append(row)
            self._buffer_a.append(a)
            self._buffer_k.append(key)
            self._buffer_t.append(text)
            taken += 1
        size = self.row_group_size
        while len(self._buffer) >= size:
            chunk = (self._buffer[:size], self._buffer_a[:size], self._buffer_k[:size], self._buffer_t[:size])
            del self._buffer[:size], self._buffer_a[:size], self._buffer_k[:size], self._buffer_t[:size]
            self._write_part(*chunk)
        return taken

    def missing(self, keys: Iterable[tuple[Any, ...]]) -> list[int]:
        """Positions in ``keys`` (``row_key`` tuples) of the rows this sink does not hold yet."""
        have, old = self._keys, self._old_keys()
        return [i for i, key in enumerate(keys) if key_string(key) not in have and key_string(key) not in old]

    def missing_digests(self, a: np.ndarray, b: np.ndarray, key_of: Callable[[int], tuple[Any, ...]]) -> list[int]:
        """``missing`` for the rows a checkpoint's JSONL held at open, given by their key digests
        (``identity.key_digest``), vectorised; ``key_of(i)`` gives key ``i`` for the rare digest
        that needs its text."""
        import numpy as np
        text = lambda i: key_string(key_of(i))   # noqa: E731
        held = self._keys.has_many(a, b, text) | self._old_keys().has_many(a, b, text)
        positions: list[int] = np.flatnonzero(~held).tolist()
        return positions

    def flush(self) -> None:
        """Write whatever is buffered as a (possibly short) part file."""
        if self._buffer:
            chunk = (self._buffer, self._buffer_a, self._buffer_k, self._buffer_t)
            self._buffer, self._buffer_a, self._buffer_k, self._buffer_t = [], [], [], []
            self._write_part(*chunk)

    def _write_part(self, rows: list[dict], digests: list[int], keys: list[str], texts: list[str | None]) -> None:
        path = self.folder / f"part-{self._next_part:05d}.parquet"
        tally = KeyTally()
        for a in digests:
            tally.add(a)
        table = rows_to_table(rows, keys=keys, texts=texts if any(t is not None for t in texts) else None)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), **tally.meta()})
        write_into(self.folder, path.name, lambda tmp: pq.write_table(       # built beside, renamed in
            table, tmp, row_group_size=self.row_group_size, compression=_COMPRESSION,
            **writer_options(table.schema)))
        self._next_part += 1
        self.rows_written += len(rows)

    def parts(self) -> list[Path]:
        """The part files currently on disk, in order."""
        return sorted(self.folder.glob(_PART_GLOB))

    def close(self, compact: bool = True) -> str:
        """Flush; with ``compact`` merge everything into ``rows.parquet``. Returns the path read
        back by ``read_parquet`` (the compacted file, or the folder when not compacted)."""
        if self._closed:
            target = self.folder / COMPACT_NAME
            return str(target if target.is_file() else self.folder)
        self.flush()
        self._closed = True
        if not compact:
            with contextlib.suppress(OSError):      # the parts' (empty) work folder
                work_folder(self.folder).rmdir()
            return str(self.folder)
        target = self.folder / COMPACT_NAME
        sources = ([target] if target.is_file() else []) + self.parts()
        # built in the work folder, then swapped with the folder in one step: a reader never
        # sees the parts beside the file they were merged into (parquet/swap.py)
        replace_folder(self.folder, lambda nxt: self._compact(sources, nxt / COMPACT_NAME))
        return str(target)

    def _compact(self, sources: list[Path], out: Path) -> None:
        """Write the rows of ``sources`` (``rows.parquet`` first, then the parts) to ``out``."""
        # a folder a compaction of an earlier version cut short holds rows.parquet and the parts it
        # merged: drop rows already written. The new file's KeyTally is its sources' (hashed from
        # their keys where one has none)
        seen = RowKeySet() if self._cut_short() else None
        tally = KeyTally()
        schema = arrow_schema()
        with pq.ParquetWriter(out, schema, compression=_COMPRESSION, **writer_options(schema)) as writer:
            pending: list[pa.Table] = []
            count = 0
            for source in sources:                # a row group at a time: a million rows are never all read
                file = pq.ParquetFile(source)
                known = None if seen is not None else KeyTally.of_metadata(file.metadata.metadata,
                                                                           file.metadata.num_rows)
                tally = tally.merge(known) if known is not None else tally
                # read_row_group, not iter_batches: the batch reader pre-buffers what it reads and
                # keeps it for the whole file (+400 MB live in a million-row compaction)
                for batch in (b for g in range(file.num_row_groups) for b in as_current(file.read_row_group(g)).to_batches()):
                    if known is None:
                        batch = self._tallied(batch, tally, seen)
                    pending.append(pa.Table.from_batches([batch]))
                    count += batch.num_rows
                    if count >= self.row_group_size:  # merge short parts into full row groups
                        writer.write_table(pa.concat_tables(pending), row_group_size=self.row_group_size)
                        pending, count = [], 0
            if pending:
                writer.write_table(pa.concat_tables(pending), row_group_size=self.row_group_size)
            writer.add_key_value_metadata(tally.meta())
        with open(out, "rb+") as fh:              # on disk before the swap makes it the folder's
            os.fsync(fh.fileno())

    @staticmethod
    def _tallied(batch: pa.RecordBatch, tally: KeyTally, seen: RowKeySet | None) -> pa.RecordBatch:
        """``batch`` with its keys added to ``tally`` (and, with ``seen``, without rows whose key
        ``seen`` already holds)."""
        keep: list[bool] = []
        for key in batch.column("row_key").to_pylist():
            a, b, text = key_digest(key)
            fresh = seen.add_digest(a, b, text) if seen is not None else True
            if fresh:
                tally.add(a)
            keep.append(fresh)
        return batch.filter(pa.array(keep)) if seen is not None else batch

    def __enter__(self) -> ParquetSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
