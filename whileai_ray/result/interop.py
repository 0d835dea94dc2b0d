"""Results as Arrow, pandas, polars and Ray Data: where users already look at tables.

``data.to_arrow()`` gives the rows as a ``pyarrow.Table`` in the columns of the run's Parquet
copy (``store/schema.py``) in version 1's layout (``arrow_schema(nested=False)``): typed columns
(``reward``, ``tier``, ``scenario_id``, ...), the nested values as JSON text, and ``row_json``,
the whole row. The rows are the exported ones (what ``rows()`` shows: no ``privileged`` block,
no ``_`` bookkeeping), so a dataframe never carries the hidden state a training export strips.

Every other form is built from one stream of record batches (``arrow_batches``): a row group
(about 1,000 rows) at a time for a result whose rows are on disk (``ArrowRows``), so a
million-row result is never decoded into a million dicts at once; only the Arrow columns grow.
A spill (``store/parquet/spill.py``) holds each row's internal JSON, so every row is decoded and
exported here, when a table is asked for; the spill keeps no exported copy, which would cost
the Driver time for every row it lands (measured: 44 -> 127 us of CPU a row) whether or not a
table is ever made.

* ``to_arrow_reader()``: a ``pyarrow.RecordBatchReader`` over that stream (nothing is read
  before the consumer asks);
* ``__arrow_c_stream__``: the Arrow PyCapsule protocol, so ``pa.table(data)``,
  ``polars.DataFrame(data)`` or ``duckdb.sql("select ... from data")`` take the result
  directly, streaming (``polars.from_arrow(data)`` reads a bare stream as one struct Series);
* ``to_pandas()`` / ``to_polars()``: the table converted (polars is an optional dependency);
* ``nested=True`` (``to_arrow``, ``to_arrow_reader``, ``to_pandas``, ``to_polars``): ``steps`` and
  ``messages`` as list<struct> columns instead of JSON text (``nested_columns.py``), so a query
  unnests the tool calls: the types the Parquet copy stores since schema "2";
* ``to_ray_dataset()``: a lazy ``ray.data.Dataset`` over the result's Parquet files
  (``runtime/data/interop.py``, reached through the ``Cluster`` the result was given,
  ``cluster.py``: ``result/`` never imports ``ray``).

The same rows give the same table whether they are in memory or on disk.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.rows import export_row
from .row_store import is_arrow

if TYPE_CHECKING:
    from .cluster import Cluster
    from .row_store import Trajectories

__all__ = ["ArrowInterop", "arrow_batches", "interop_schema", "BATCH_ROWS"]

BATCH_ROWS = 1024            # rows per record batch for in-memory rows (a spill's row group on disk)


def interop_schema(nested: bool = False):
    """The schema of ``to_arrow()``: the Parquet copy's columns (``store/schema.py``) with
    ``steps`` and ``messages`` as JSON text; ``nested``: as nested types (``nested_columns.py``)."""
    from ..store.schema import arrow_schema
    from .nested_columns import nested_schema
    return nested_schema(arrow_schema(nested=False)) if nested else arrow_schema(nested=False)


def _batches_of_rows(rows, batch_rows: int = BATCH_ROWS):
    """Internal rows, ``batch_rows`` at a time: an ``ArrowRows`` a row group at a time (fresh
    dicts), a list in slices."""
    if is_arrow(rows):
        return rows.batches()
    return (rows[s:s + batch_rows] for s in range(0, len(rows), batch_rows))


def arrow_batches(rows, nested: bool = False):
    """``pyarrow.RecordBatch``es of ``interop_schema(nested)`` for ``rows`` (internal rows, a list
    or ``ArrowRows``), made one batch at a time.

    A batch is decoded, exported and made a table with the garbage collector paused, and its
    dicts are let go before it resumes: they form no cycle, and a collector that saw them would
    only walk them (14 us a row of a spill's ~100, measured)."""
    from ..core.strict_json import gc_paused
    from ..store.parquet.folder import rows_to_table
    from .nested_columns import nest_columns
    batches = _batches_of_rows(rows)
    while True:
        with gc_paused():
            batch = next(batches, None)
            if batch is None:
                return
            exported = [export_row(r) for r in batch]
            table = rows_to_table(exported, nested=False)
            if nested:
                table = nest_columns(table, exported)
            if isinstance(batch, list):     # ours (a slice, or a row group's fresh rows): emptied while paused
                batch.clear()
            del batch, exported
        yield from table.to_batches()


class ArrowInterop:
    """``to_arrow``, ``to_arrow_reader``, ``__arrow_c_stream__``, ``to_pandas``, ``to_polars``,
    ``to_ray_dataset`` for any result holding ``trajectories`` (SimulationData, ScoredData)."""

    if TYPE_CHECKING:             # the field of the dataclasses that mix this in
        trajectories: Trajectories
        _cluster: Cluster | None

    def to_arrow_reader(self, nested: bool = False):
        """The rows as a ``pyarrow.RecordBatchReader``, a batch decoded only when read; ``nested``:
        ``steps`` and ``messages`` as list<struct> columns (``nested_columns.py``), not JSON text."""
        import pyarrow as pa
        return pa.RecordBatchReader.from_batches(interop_schema(nested), arrow_batches(self.trajectories, nested))

    def __arrow_c_stream__(self, requested_schema=None):
        """The Arrow C stream (PyCapsule protocol): ``pa.table(data)``, ``polars.DataFrame(data)``,
        DuckDB and any other Arrow consumer read the rows batch by batch."""
        return self.to_arrow_reader().__arrow_c_stream__(requested_schema)

    def to_arrow(self, nested: bool = False):
        """The rows as one ``pyarrow.Table`` (see the module docstring for its columns); ``nested``:
        ``steps`` and ``messages`` as list<struct> columns that DuckDB and polars unnest."""
        return self.to_arrow_reader(nested).read_all()

    def to_pandas(self, nested: bool = False, **kwargs):
        """The rows as a ``pandas.DataFrame`` (``kwargs`` go to ``pyarrow.Table.to_pandas``)."""
        return self.to_arrow(nested).to_pandas(**kwargs)

    def to_polars(self, nested: bool = False):
        """The rows as a ``polars.DataFrame`` (polars is optional: ``pip install polars``)."""
        try:
            import polars
        except ImportError as exc:
            raise ImportError("to_polars() needs polars, which whileai_ray does not install by itself: "
                              "pip install polars (or use to_arrow() / to_pandas())") from exc
        return polars.from_arrow(self.to_arrow(nested))

    def to_ray_dataset(self):
        """The rows as a lazy ``ray.data.Dataset`` with ``to_arrow()``'s columns: read from the
        result's Parquet files where its rows are on disk (keep this result alive while the
        dataset is used: the files are removed with it unless saved), from one Arrow table in the
        object store where they are in memory. Starts or joins Ray like ``simulate()`` does."""
        cluster = self._cluster
        if cluster is None:
            raise RuntimeError(f"to_ray_dataset(): this {type(self).__name__} was built by hand and holds no Ray "
                               "cluster; use a result from wai.simulate(...) or wai.load(path) (save this one "
                               "with .save(path) first), or to_arrow() for the same rows without Ray")
        if is_arrow(self.trajectories):
            return cluster.to_ray_dataset(files=list(self.trajectories.files), table=None, keep=self.trajectories)
        return cluster.to_ray_dataset(files=None, table=self.to_arrow(), keep=None)
