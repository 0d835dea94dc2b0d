"""What a Parquet file's footer may claim before any of it is decoded.

A Parquet footer says how many rows the file holds and how large its columns are, and a reader
believes it: a 300 KB file whose footer claims 50 million rows of one dictionary-encoded string
(every row pointing at the same dictionary entry) decodes to gigabytes, and ``wai.load`` ran out
of memory on one. The file is data, so its claims are checked against what a file of its size
can hold, before a byte of it is decoded:

* rows: at most ``ROWS_PER_BYTE`` per byte of the file (a whileai_ray row costs about 5 bytes
  compressed, measured; a foreign file of tiny rows a few bits), and any file may hold
  ``ROWS_FREE`` rows;
* bytes: what the footer says the columns take uncompressed, and what a row group's
  dictionary-encoded strings decode to, at most ``EXPANSION`` times the file's size (zstd
  over JSON rows gives 15 to 50), and any file may decode to ``BYTES_FREE``.

``check_footer`` is the footer check (no page read); ``read_row_group`` reads one row group
with the dictionary check first, when the footer leaves room for a dictionary bomb (strings
that, as numbers of rows times the column's size, could pass the budget). A file past a limit
is refused with a ``ValueError`` that names it and the numbers.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["ROWS_PER_BYTE", "ROWS_FREE", "EXPANSION", "BYTES_FREE", "check_footer", "byte_budget",
           "read_row_group", "checked_file"]

ROWS_PER_BYTE = 8
ROWS_FREE = 100_000
EXPANSION = 1000
BYTES_FREE = 256 << 20


def byte_budget(size: int) -> int:
    """The most a file of ``size`` bytes may decode to."""
    return max(BYTES_FREE, EXPANSION * size)


def _refuse(path: str | os.PathLike[str], what: str) -> ValueError:
    return ValueError(f"{path}: its Parquet footer claims {what}; a file this size cannot hold that, so it was "
                      "written by something else or crafted. It was not read (nothing was decoded).")


def check_footer(path: str | os.PathLike[str], metadata: pq.FileMetaData | None = None,
                 size: int | None = None) -> None:
    """Raise ``ValueError`` when the footer of ``path`` claims more rows or bytes than a file of
    its size can hold (see the module docstring); reads the footer only."""
    metadata = metadata if metadata is not None else pq.ParquetFile(path).metadata
    size = os.path.getsize(path) if size is None else size
    rows, groups = metadata.num_rows, [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    if rows < 0 or any(g.num_rows < 0 for g in groups) or sum(g.num_rows for g in groups) != rows:
        raise _refuse(path, f"{rows} rows that its row groups do not add up to")
    if rows > max(ROWS_FREE, ROWS_PER_BYTE * size):
        raise _refuse(path, f"{rows:,} rows in {size:,} bytes (at most {ROWS_PER_BYTE} rows a byte, or "
                            f"{ROWS_FREE:,} rows in any file)")
    declared = sum(max(0, g.total_byte_size) for g in groups)
    if declared > byte_budget(size):
        raise _refuse(path, f"{declared:,} bytes of column data in {size:,} bytes of file (at most "
                            f"{EXPANSION} times its size, or {BYTES_FREE >> 20} MB)")


def checked_file(path: str | os.PathLike[str]) -> pq.ParquetFile:
    """``pq.ParquetFile(path)`` once its footer passed ``check_footer``."""
    pf = pq.ParquetFile(path)
    check_footer(path, pf.metadata)
    return pf


def _suspects(pf: pq.ParquetFile, g: int, columns: Iterable[str] | None, budget: int) -> list[str]:
    """Dictionary-encoded string columns of row group ``g`` that could decode past ``budget``
    (rows times the chunk's uncompressed size: loose, so a real file rarely needs a look)."""
    group, names = pf.metadata.row_group(g), set(columns) if columns is not None else None
    out = []
    for c in range(group.num_columns):
        chunk = group.column(c)
        name = chunk.path_in_schema
        if (names is None or name in names) and chunk.has_dictionary_page \
                and chunk.physical_type in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY") \
                and chunk.num_values * max(1, chunk.total_uncompressed_size) > budget:
            out.append(name)
    return out


def _decoded_bytes(column: pa.ChunkedArray) -> int:
    """Bytes a dictionary-encoded column's values take decoded (lengths of the entries its rows
    point at, summed), computed over the indices: nothing is decoded."""
    total = 0
    for chunk in column.chunks:
        if pa.types.is_dictionary(chunk.type) and len(chunk):
            lengths = pc.binary_length(chunk.dictionary)
            total += int(pc.sum(pc.take(lengths, chunk.indices)).as_py() or 0)
        else:
            total += chunk.nbytes
    return total


def read_row_group(path: str | os.PathLike[str], pf: pq.ParquetFile, g: int, columns: list[str] | None = None,
                   size: int | None = None) -> pa.Table:
    """Row group ``g`` of ``pf`` (the ParquetFile of ``path``) as an Arrow table, its strings
    decoded only once their decoded size is known to be within the file's budget."""
    budget = byte_budget(os.path.getsize(path) if size is None else size)
    suspects = [s for s in _suspects(pf, g, columns, budget) if "." not in s]
    if not suspects:
        table = pf.read_row_group(g, columns=columns)
    else:
        table = pq.ParquetFile(path, read_dictionary=suspects).read_row_group(g, columns=columns)
        decoded = sum(_decoded_bytes(table.column(name)) for name in suspects if name in table.column_names)
        if decoded > budget:
            raise _refuse(path, f"row group {g} decodes to {decoded:,} bytes (dictionary-encoded strings "
                                f"repeated), over the {budget:,} a file of this size may")
        table = pa.table({name: (col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col)
                          for name, col in zip(table.column_names, table.columns)}, metadata=table.schema.metadata)
    if table.nbytes > budget:
        raise _refuse(path, f"row group {g} decodes to {table.nbytes:,} bytes, over the {budget:,} a file of "
                            "this size may")
    return table
