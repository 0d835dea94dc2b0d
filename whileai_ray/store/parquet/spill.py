"""Spill: a run's internal rows on disk as Parquet part files, appended batch by batch.

Why: a million-row run cannot keep every row as a dict in one process (~14 KB a row once
decoded). Whoever receives landed rows (``simulate()`` today, the Driver later) calls
``SpillWriter.append(rows)`` once per landed batch; the rows go to disk and are dropped from
memory. ``store/parquet/arrow_rows.py`` reads them back lazily, one row group at a time.

Folder layout::

    <folder>/part-00000.parquet   closed after ``part_rows`` rows (so every closed part is a
    <folder>/part-00001.parquet   whole, readable file), row groups of ``group_rows`` rows
    ...

Columns: ``row_json``, the whole internal row as JSON (``privileged`` and ``_`` bookkeeping
included: what ``trajectories`` hands back), then the *fact* columns the caller's ``facts``
function returns for each batch: small typed values (a reward, a task key, a few flags) that
aggregations such as ``pass_at`` and ``report()`` read with Arrow compute instead of decoding
rows. The store does not know what the facts mean; ``score/row_facts.py`` defines them.

``OwnedFolder`` is the temporary run folder's lifetime: it is removed when the object that
owns it is garbage collected, or at interpreter exit, unless ``keep()`` was called.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Callable, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from .encodings import writer_options
from .spill_text import EncodedRow, dump_row     # (the encoder and its carrier: spill_text.py, no pyarrow)

__all__ = ["SpillWriter", "OwnedFolder", "LandedRows", "SPILL_VERSION_KEY", "SPILL_VERSION", "PART_GLOB",
           "dump_row", "spill_schema", "table_of", "EncodedRow"]

SPILL_VERSION_KEY = b"whileai_ray.spill_version"
SPILL_VERSION = b"1"
PART_GLOB = "part-*.parquet"
GROUP_ROWS = 1024            # one row group: what a reader decodes at a time (~2-3 MB of JSON)
PART_ROWS = 65_536           # rows per part file
_COMPRESSION = "zstd"


def spill_schema(facts_schema: pa.Schema | None = None) -> pa.Schema:
    """``row_json`` then the fact fields, with the spill version in the metadata."""
    fields = [pa.field("row_json", pa.string())] + (list(facts_schema) if facts_schema is not None else [])
    return pa.schema(fields, metadata={SPILL_VERSION_KEY: SPILL_VERSION})


def table_of(rows: list, facts: Callable[[list], dict] | None, schema: pa.Schema) -> pa.Table:
    """``rows`` as a spill table: their JSON and the ``facts(rows)`` columns, in ``schema``."""
    columns = {"row_json": [r.json if isinstance(r, EncodedRow) else dump_row(r) for r in rows]}
    if facts is not None:
        columns.update(facts(rows))
    try:
        return pa.Table.from_pydict(columns, schema=schema)
    except UnicodeEncodeError:   # a fact held a lone surrogate: store it replaced (row_json is exact)
        for name, values in columns.items():
            if name != "row_json":
                columns[name] = [v.encode("utf-8", "replace").decode("utf-8") if isinstance(v, str) else v
                                 for v in values]
        return pa.Table.from_pydict(columns, schema=schema)


class OwnedFolder:
    """A temporary folder removed when this object is garbage collected or the process exits.

    Hold it from the object whose data lives in it (an ``ArrowRows``): when that object goes,
    so does the folder. ``keep()`` cancels the removal (the folder then belongs to the user).
    """

    def __init__(self, prefix: str = "whileai-ray-run-", parent: str | None = None):
        self.path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.path, True)

    @classmethod
    def adopt(cls, path: str) -> "OwnedFolder":
        """Own a folder made elsewhere (a Driver's spool, handed over when its run ended)."""
        folder = cls.__new__(cls)
        folder.path = os.fspath(path)
        folder._finalizer = weakref.finalize(folder, shutil.rmtree, folder.path, True)
        return folder

    def keep(self) -> str:
        self._finalizer.detach()
        return self.path

    def remove(self) -> None:
        self._finalizer()

    @property
    def alive(self) -> bool:
        return self._finalizer.alive

    def __repr__(self) -> str:
        return f"OwnedFolder({self.path!r})"


class SpillWriter:
    """Append internal rows to ``<folder>/part-NNNNN.parquet``; see the module docstring.

    ``facts(rows) -> {column: [value per row]}`` and ``facts_schema`` (the fact fields) add the
    typed columns; without them only ``row_json`` is written. ``close()`` returns the part files.
    """

    def __init__(self, folder: str | os.PathLike[str], facts: Callable[[list], dict] | None = None,
                 facts_schema: pa.Schema | None = None, group_rows: int = GROUP_ROWS,
                 part_rows: int = PART_ROWS) -> None:
        if (facts is None) != (facts_schema is None):
            raise ValueError("SpillWriter: pass facts= and facts_schema= together, or neither")
        if group_rows < 1 or part_rows < group_rows:
            raise ValueError(f"SpillWriter: need 1 <= group_rows <= part_rows, got {group_rows}, {part_rows}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.facts = facts
        self.schema = spill_schema(facts_schema)
        self.group_rows, self.part_rows = group_rows, part_rows
        self.rows_written = 0
        self.files: list[str] = []
        self._buffer: list[dict] = []
        self._writer: pq.ParquetWriter | None = None
        self._in_part = 0
        self._closed = False

    def append(self, rows: Iterable[dict]) -> int:
        """Buffer ``rows``; write every full row group. Returns how many rows were taken."""
        if self._closed:
            raise RuntimeError(f"SpillWriter {self.folder} is closed")
        n = 0
        for row in rows:
            self._buffer.append(row)
            n += 1
            if len(self._buffer) >= self.group_rows:
                self._write_group()
        return n

    def table_of(self, rows: list) -> pa.Table:
        """``rows`` as a table of this writer's schema (row_json + facts)."""
        return table_of(rows, self.facts, self.schema)

    def _write_group(self) -> None:
        rows, self._buffer = self._buffer, []
        if not rows:
            return
        if self._writer is None:
            path = self.folder / f"part-{len(self.files):05d}.parquet"
            self._writer = pq.ParquetWriter(path.with_name(path.name + ".tmp"), self.schema,
                                            compression=_COMPRESSION, **writer_options(self.schema))
            self.files.append(str(path))
        self._writer.write_table(self.table_of(rows), row_group_size=self.group_rows)
        self.rows_written += len(rows)
        self._in_part += len(rows)
        if self._in_part >= self.part_rows:
            self._close_part()

    def _close_part(self) -> None:
        if self._writer is not None:
            self._writer.close()
            final = self.files[-1]
            os.replace(final + ".tmp", final)
            self._writer, self._in_part = None, 0

    def close(self) -> list[str]:
        """Write what is buffered, close the open part; return every part file, in order."""
        if not self._closed:
            self._write_group()
            self._close_part()
            self._closed = True
        return list(self.files)

    def __enter__(self) -> SpillWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LandedRows:
    """Where a run's landed rows go: a list while they are few, a spill folder past ``threshold``.

    ``append(rows)`` once per landed batch; ``finish()`` returns the list (``threshold`` not
    reached) or the ``(files, owner)`` of the spill, every row in landing order. Once spilled,
    nothing is kept in memory but the open row group. ``make_writer(folder)`` builds the
    ``SpillWriter`` (the caller decides the fact columns); ``parent`` is where the temporary
    run folder is made (the system's temp folder by default).
    """

    def __init__(self, threshold: int, make_writer: Callable[[str], SpillWriter],
                 parent: str | None = None) -> None:
        self.threshold = threshold
        self.make_writer = make_writer
        self.parent = parent
        self.rows: list | None = []
        self.owner: OwnedFolder | None = None
        self.writer: SpillWriter | None = None
        self.count = 0

    @property
    def spilled(self) -> bool:
        return self.writer is not None

    def append(self, rows: Iterable[dict]) -> None:
        rows = list(rows)
        self.count += len(rows)
        if self.writer is None:
            held = self.rows
            assert held is not None        # the list goes only when the writer comes
            held.extend(rows)
            if len(held) > self.threshold:
                self.owner = OwnedFolder(parent=self.parent)
                self.writer = self.make_writer(self.owner.path)
                self.writer.append(held)
                self.rows = None
            return
        self.writer.append(rows)

    def finish(self) -> list | tuple[list[str], OwnedFolder | None]:
        """The list of rows, or ``(files, owner)`` when they were spilled."""
        if self.writer is None:
            assert self.rows is not None   # not spilled: the rows are still the list
            return self.rows
        return self.writer.close(), self.owner
