"""The row store behind a SimulationData: one interface over a list or Arrow-backed files.

``data.trajectories`` is a plain list for small runs (as it always was) and an ``ArrowRows``
(``store/parquet/arrow_rows.py``: Parquet files, decoded when used) for large ones. ``row_store(rows)``
wraps either in the same interface, so summaries and actions are written once:

* ``len()``, iteration, ``[i]``: the rows (an Arrow store decodes one row group at a time);
* ``batches()``: the rows a row group at a time (a list store: the list itself, one batch);
* ``facts(columns)``: the fact columns (``score/row_facts.py``) as an Arrow table: read from disk
  for Arrow stores, computed from the rows for a list;
* ``update(fn)``: change every row: ``fn(batch)`` edits a batch's dicts in place; a list
  store is edited where it is, an Arrow store is rewritten batch by batch into a new spill
  folder that then replaces the old one (which goes when nothing holds it).

``spill_rows(rows)`` writes rows to a new owned spill folder; ``landed_rows(threshold)`` is the
component ``simulate()`` hands each landed batch to (a list until ``threshold`` rows, then a
spill); ``open_parquet(path)`` reads a Parquet file or folder as rows without loading them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..score.row_facts import FACT_NAMES, fact_spill_writer, facts_schema, facts_table, row_facts

if TYPE_CHECKING:                 # types only: this module imports pyarrow on first use, never on import
    from typing_extensions import TypeAlias, TypeIs

    from ..store.parquet.arrow_rows import ArrowRows

    # what ``data.trajectories`` holds: a list of row dicts, or the rows of a spilled run on disk
    Trajectories: TypeAlias = "list[dict[str, Any]] | ArrowRows"

__all__ = ["row_store", "is_arrow", "spill_rows", "landed_rows", "land_runs", "as_trajectories", "open_parquet", "row_spool",
           "adopt_spilled", "grader_note_rows",
           "MemoryStore", "ArrowStore", "new_writer", "rows_table", "open_large_path", "count_rows", "parent_of"]


def is_arrow(rows: object) -> TypeIs[ArrowRows]:
    """Are these rows Arrow-backed (an ``ArrowRows``)? (no pyarrow import for a list)"""
    return type(rows).__name__ == "ArrowRows" and hasattr(rows, "read_columns")


def new_writer(folder: str):
    """A ``SpillWriter`` that writes the fact columns of ``score/row_facts.py`` beside each row."""
    return fact_spill_writer(folder)


def rows_table(rows: list):
    """Rows as one spill table (row_json + fact columns): what a cluster worker returns for the
    batch it changed (a plain function, so it travels to the worker by reference)."""
    from ..store.parquet.spill import spill_schema, table_of
    return table_of(rows, row_facts, spill_schema(facts_schema()))


class _Store:
    """What both forms share: the rows, their length, iteration and indexing."""

    def __init__(self, rows):
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class MemoryStore(_Store):
    """A list of row dicts (the in-memory form)."""

    is_arrow = False

    def batches(self):
        if len(self.rows):
            yield self.rows

    def facts(self, columns=None, dictionary=()):
        table = facts_table(list(self.rows))
        return table.select(list(columns)) if columns is not None else table

    def update(self, fn) -> None:
        fn(self.rows)


class ArrowStore(_Store):
    """Rows in Parquet files (an ``ArrowRows``), changed by rewriting them."""

    is_arrow = True

    def batches(self):
        return self.rows.batches()

    def facts(self, columns=None, dictionary=()):
        """The fact columns; those in ``dictionary`` (few distinct values) may come dictionary-encoded."""
        names = list(columns) if columns is not None else list(FACT_NAMES)
        if self.rows.has_columns(names):
            return self.rows.read_columns(names, dictionary)
        # a Parquet file written without facts (a checkpoint's, a save): computed once, kept
        cached = getattr(self.rows, "_facts_cache", None)
        if cached is None or cached[0] != self.rows.files:
            import pyarrow as pa
            tables = [facts_table(batch) for batch in self.rows.batches()]
            table = pa.concat_tables(tables) if tables else facts_table([])
            cached = (list(self.rows.files), table)
            self.rows._facts_cache = cached
        return cached[1].select(names)

    def update(self, fn) -> None:
        from ..store.parquet.spill import OwnedFolder
        owner = OwnedFolder(parent=parent_of(self.rows))
        writer = new_writer(owner.path)
        for batch in self.rows.batches():
            fn(batch)
            writer.append(batch)
        self.rows.swap(writer.close(), owner)

    def swap_in(self, files, owner) -> None:
        """Point at a rewrite made elsewhere (the cluster's)."""
        self.rows.swap(files, owner)


def parent_of(rows) -> str | None:
    """New spill folders go beside the current one (same disk), else to the temp folder."""
    import os
    owner = getattr(rows, "owner", None)
    return os.path.dirname(owner.path) if owner is not None else None


def row_store(rows):
    """The store interface over ``rows`` (a list or an ``ArrowRows``)."""
    return ArrowStore(rows) if is_arrow(rows) else MemoryStore(rows)


def spill_rows(rows, parent: str | None = None):
    """Write ``rows`` (any iterable of dicts, or batches via ``row_batches``) to a new owned
    spill folder; return them as ``ArrowRows``."""
    from ..store.parquet.arrow_rows import ArrowRows
    from ..store.parquet.spill import OwnedFolder
    owner = OwnedFolder(parent=parent)
    writer = new_writer(owner.path)
    writer.append(rows)
    return ArrowRows(writer.close(), owner=owner)


def landed_rows(threshold: int, parent: str | None = None):
    """Where ``simulate()`` puts landed rows: a list until ``threshold``, then a spill folder
    (``store/spill.LandedRows``). ``as_trajectories(landed)`` gives what a SimulationData holds."""
    from ..store.parquet.spill import LandedRows
    return LandedRows(threshold, new_writer, parent)


def row_spool(threshold: int, parent: str | None = None):
    """What the Driver lands rows into (``store/row_spool.RowSpool``): kept in ordinal order, a
    list up to ``threshold`` rows, spilled with the fact columns past it (the Driver makes its own
    the same way: ``runtime/driver/setup.make_spool``)."""
    from ..store.row_spool import RowSpool
    return RowSpool(threshold, new_writer, parent)


def adopt_spilled(spilled):
    """A Driver's ``SpilledRows`` as ``ArrowRows`` owning its folder (removed when they go)."""
    from ..store.parquet.arrow_rows import ArrowRows
    from ..store.parquet.spill import OwnedFolder
    return ArrowRows(spilled.files, owner=OwnedFolder.adopt(spilled.folder))


def grader_note_rows(rows):
    """What ``grader_health.add_grader_note`` needs to read: the rows themselves for a list; for
    rows on disk, nothing when no row was graded or one graded ok (the ``judge_status`` fact
    says so without decoding a million rows), else the rows (every graded one failed)."""
    if not is_arrow(rows):
        return rows
    import pyarrow.compute as pc
    status = ArrowStore(rows).facts(["judge_status"]).column(0)
    if status.null_count == len(status):
        return []
    if pc.any(pc.equal(status, "ok")).as_py():
        return [{"judge_status": "ok"}]
    return rows


def as_trajectories(landed):
    """A finished ``LandedRows`` as ``trajectories``: its list, or ``ArrowRows`` over its spill."""
    out = landed.finish()
    if isinstance(out, list):
        return out
    from ..store.parquet.arrow_rows import ArrowRows
    files, owner = out
    return ArrowRows(files, owner=owner)


def count_rows(path) -> int:
    """Rows in a JSONL (its newlines, counted without decoding) or Parquet file (its footer)."""
    from ..store.reader import is_parquet
    if is_parquet(path):
        import pyarrow.parquet as pq
        return pq.ParquetFile(path).metadata.num_rows
    n = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            n += block.count(b"\n")
    return n


def open_large_path(path, threshold: int | None = None):
    """``(rows, meta)`` of a file with more rows than a run keeps in memory (``spill_rows``; for a
    path, ``WHILEAI_RAY_SPILL_ROWS`` when set): a Parquet file is read where it is (never
    written), a JSONL file is spilled to a temporary folder in one streaming pass. None for a
    smaller file (read it whole, as always)."""
    import logging
    import os
    from ..config.advanced import KNOBS
    from ..store.reader import is_parquet, jsonl_rows, read_meta
    path = os.fspath(path)
    if threshold is None:
        threshold = int(os.environ.get("WHILEAI_RAY_SPILL_ROWS") or KNOBS["spill_rows"][1])
    if not os.path.isfile(path) or count_rows(path) <= threshold:
        return None
    meta = read_meta(path)
    if is_parquet(path):
        return open_parquet(path), meta
    warnings: list = []
    rows = spill_rows(jsonl_rows(path, warnings))
    for message in warnings:
        logging.getLogger("whileai_ray.store.reader").warning(message)
    if warnings:
        meta["warnings"] = list(meta.get("warnings") or []) + warnings
    return rows, meta


def open_parquet(path):
    """A Parquet file or folder (``rows.parquet`` / ``part-*.parquet``, or a spill) as ``ArrowRows``;
    the files are read, never written."""
    from ..store.parquet.arrow_rows import ArrowRows
    return ArrowRows.open(path)


LAND_BATCH = 1024                         # rows handed to the landed-rows store at a time


def land_runs(run_rows: list, threshold: int):
    """What a SimulationData holds: the one run's rows as the Driver handed them (a list, or
    ``ArrowRows`` over its spill when past ``advanced={"spill_rows": ...}``), or, for ``runs=N``,
    every run's rows in order through ``landed_rows`` (a list up to ``threshold``, a spill past
    it; a run's own spill goes once it is copied)."""
    if len(run_rows) == 1:
        return run_rows[0]
    landed = landed_rows(threshold)
    for i, rows in enumerate(run_rows):
        for batch in row_store(rows).batches():
            for start in range(0, len(batch), LAND_BATCH):
                landed.append(batch[start:start + LAND_BATCH])
        run_rows[i] = None
        del rows, batch
    return as_trajectories(landed)
