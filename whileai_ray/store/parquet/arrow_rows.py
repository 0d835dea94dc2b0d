"""ArrowRows: rows that live in Parquet files and are decoded only when used.

A read-only ``Sequence`` of row dicts over one or more Parquet files: a spill folder
(``store/parquet/spill.py``), a checkpoint's ``<stem>.parquet/`` or a ``write_parquet`` file.
``rows[i]`` decodes one row (its row group's JSON is kept for the next neighbour), iteration
decodes one row group (~1,000 rows) at a time, so walking a million rows holds about one row
group in memory, never every row at once.

Reading: a scan opens each file afresh and lets it go after its last row group (a Parquet
reader kept open grows by ~100 KB with every row group it has read: +460 MB over a million
rows, measured), and reads it through plain buffered I/O: the files are zstd-compressed, so a
memory map would save no copy and only make every page touched count as resident memory. The
readers kept open answer the files' metadata and random access (reopened every
``_REOPEN_AFTER`` row groups for the same reason).

Rows come from the ``row_json`` column (the exact dict that was written; a Parquet copy of
row schema "1" or "2" alike); a foreign Parquet file without it gives its columns, nulls
dropped. Fact columns (``parquet/spill.py``) are read as
Arrow tables with ``read_columns`` for aggregations that never need the rows themselves.

Changing a row: decoded rows are fresh dicts, so editing one changes nothing on disk. What
changes rows (grading, ranking, labels) rewrites them batch by batch into new files and
``swap``s them in (``result/row_store.py``).
"""
from __future__ import annotations

import bisect
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ...core.strict_json import gc_paused
from .limits import check_footer, read_row_group
from ..schema import check_version
from .spill import PART_GLOB, OwnedFolder

__all__ = ["ArrowRows", "parquet_files_of"]

_LOADS: Callable[[str], dict] = json.JSONDecoder().decode     # row_json is always an object
_REOPEN_AFTER = 64       # row groups a kept reader reads before it is reopened (see the module docstring)


def parquet_files_of(path: str | os.PathLike[str]) -> list[str]:
    """The Parquet files of ``path``: the file itself, or a folder's ``rows.parquet`` and its
    ``part-*.parquet`` files in order."""
    path = Path(path)
    if path.is_file():
        return [str(path)]
    if not path.is_dir():
        raise FileNotFoundError(f"no Parquet file or folder at {str(path)!r}")
    files = ([str(path / "rows.parquet")] if (path / "rows.parquet").is_file() else [])
    files += [str(p) for p in sorted(path.glob(PART_GLOB))]
    if not files:
        raise FileNotFoundError(f"{str(path)!r} holds no rows.parquet and no {PART_GLOB} files")
    return files


class ArrowRows(Sequence[dict]):
    """Rows in Parquet files (see the module docstring). ``owner`` is the ``OwnedFolder`` the
    files live in, when they are this object's own (a spill); it goes when this object goes."""

    def __init__(self, files: Iterable[str | os.PathLike[str]], owner: OwnedFolder | None = None) -> None:
        self.owner = owner
        self._open([str(f) for f in files])

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "ArrowRows":
        """Rows of a Parquet file or folder the caller owns (nothing is ever written there)."""
        return cls(parquet_files_of(path))

    # ------------------------------------------------------------------ files
    def _open(self, files: list[str]) -> None:
        self.files = files
        self._pf = [pq.ParquetFile(f) for f in files]
        self._reads = 0
        self._groups: list[tuple[int, int]] = []     # (file, row group) of each non-empty group
        self._starts: list[int] = []                 # the index of each one's first row
        pos = 0
        for fi, pf in enumerate(self._pf):
            check_version(pf.schema_arrow, files[fi])
            md = pf.metadata
            check_footer(files[fi], md)         # a crafted footer is refused before a row is decoded
            for g in range(md.num_row_groups):
                n = md.row_group(g).num_rows
                if n:
                    self._groups.append((fi, g))
                    self._starts.append(pos)
                    pos += n
        self._n = pos
        self._has_json = all("row_json" in pf.schema_arrow.names for pf in self._pf)
        self._cached: tuple[int, list] = (-1, [])    # (group, its values): no group is -1

    def swap(self, files: Iterable[str | os.PathLike[str]], owner: OwnedFolder | None) -> None:
        """Point at new files (a rewrite's output); the old owner goes when nothing holds it."""
        self._open([str(f) for f in files])
        self.owner = owner

    @property
    def column_names(self) -> list[str]:
        if not self._pf:
            return []
        names = set(self._pf[0].schema_arrow.names)
        for pf in self._pf[1:]:
            names &= set(pf.schema_arrow.names)
        return [n for n in self._pf[0].schema_arrow.names if n in names]

    def has_columns(self, names: Iterable[str]) -> bool:
        have = set(self.column_names)
        return all(n in have for n in names)

    # ------------------------------------------------------------------ reading
    def _group_values(self, gi: int) -> list:
        """Row group ``gi`` as raw JSON strings (row_json) or record dicts (a foreign file)."""
        if self._cached[0] == gi:
            return self._cached[1]
        fi, g = self._groups[gi]
        self._reads += 1
        if self._reads % _REOPEN_AFTER == 0:
            self._pf[fi] = pq.ParquetFile(self.files[fi])
        values = self._read_group(self._pf[fi], g, self.files[fi])
        self._cached = (gi, values)
        return values

    def _read_group(self, pf: pq.ParquetFile, g: int, path: str) -> list:
        """Its values, decoded once ``parquet_limits`` found their size within the file's budget."""
        values: list
        if self._has_json:
            values = read_row_group(path, pf, g, columns=["row_json"]).column(0).to_pylist()
        else:
            values = read_row_group(path, pf, g).to_pylist()
        return values

    def _scan(self) -> Iterator[list]:
        """``(row group values)`` in order, each file opened afresh (see the module docstring)."""
        for fi, f in enumerate(self.files):
            pf = pq.ParquetFile(f)
            for g in range(pf.metadata.num_row_groups):
                yield self._read_group(pf, g, f)
            del pf

    @staticmethod
    def _decode(value: str | dict) -> dict:
        if isinstance(value, str):
            return _LOADS(value)
        return {k: v for k, v in value.items() if v is not None}

    def sample(self, limit: int) -> list:
        """At most ``limit`` rows, evenly spaced over the whole (every row when there are no more),
        decoded from one pass that decodes nothing else."""
        step = max(1, -(-self._n // max(1, limit)))
        out: list[dict] = []
        pos, decode = 0, self._decode
        for values in self._scan():
            first = (-pos) % step
            out.extend(decode(v) for v in values[first::step])
            pos += len(values)
        return out

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int | slice) -> Any:        # a row (a dict), or a list of them for a slice
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"row indices must be integers or slices, not {type(i).__name__}")
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"row index {i} out of range for {self._n} rows")
        gi = bisect.bisect_right(self._starts, i) - 1
        return self._decode(self._group_values(gi)[i - self._starts[gi]])

    def batches(self) -> Iterator[list[dict]]:
        """Decoded rows, one row group (a list of dicts) at a time."""
        decode = self._decode
        for values in self._scan():
            if values:
                with gc_paused():       # a row group's thousands of dicts, in no cycle: a third of the decode time was
                    rows = [decode(v) for v in values]      # the collector rescanning them
                yield rows

    def json_batches(self) -> Iterator[list[str]]:
        """The ``row_json`` strings, one row group at a time (copies without decoding)."""
        if not self._has_json:
            for rows in self.batches():
                yield [json.dumps(r, separators=(",", ":"), default=str) for r in rows]
            return
        for values in self._scan():
            if values:
                yield values

    def __iter__(self) -> Iterator[dict]:
        for rows in self.batches():
            yield from rows

    def read_columns(self, columns: Iterable[str], dictionary: Iterable[str] = ()) -> pa.Table:
        """These columns of every row, as one Arrow table (fact columns: small, typed). Columns
        named in ``dictionary`` (few distinct values) stay dictionary-encoded, as stored."""
        columns = list(columns)
        keep = [c for c in dictionary if c in columns]
        tables = [pq.ParquetFile(f, read_dictionary=keep or None).read(columns=columns) for f in self.files]
        if not tables:
            return pa.table({c: pa.array([], pa.null()) for c in columns})
        return pa.concat_tables(tables)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, ArrowRows)):
            if len(other) != len(self):
                return False
            return all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None     # type: ignore[assignment]  # unhashable like the list it equals (object has a __hash__)

    def __reduce__(self) -> tuple[type[ArrowRows], tuple[list[str]]]:
        # pickled (another process): the same files, not owned: they go with the original
        return (ArrowRows, (list(self.files),))

    def __copy__(self) -> ArrowRows:
        # a copy in this process shares the owner, so the files live as long as either does
        return ArrowRows(list(self.files), owner=self.owner)

    def __deepcopy__(self, memo: dict[int, Any]) -> ArrowRows:
        return self.__copy__()

    def __repr__(self) -> str:
        return f"ArrowRows({self._n} rows in {len(self.files)} file(s))"
