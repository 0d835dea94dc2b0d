"""``data.to_ray_dataset()``: a result's rows as a lazy ``ray.data.Dataset``.

``result/interop.py`` reaches this through the ``RayCluster`` a result is handed
(``services.py``; ``result/`` may not import ``ray``). Two cases:

* rows on disk (``ArrowRows``: a spill folder, a checkpoint's ``rows.parquet``): Ray Data reads
  the Parquet files where they are (``read_parquet``, only their ``row_json`` column) and a
  ``map_batches`` step turns each block into the table ``data.to_arrow()`` gives (the exported
  rows in the Parquet copy's columns, ``store/schema.py``): nothing is read until the dataset
  is consumed, and then by Ray's workers, never all at once by the caller. The files belong to
  the result (removed when it goes, unless saved), so the dataset holds a reference to it;
* rows in memory (a small result): its ``to_arrow()`` table, put in the object store once
  (``from_arrow``: no temporary files whose lifetime would have to follow the dataset's).

Ray Data does not promise row order across blocks unless ``DataContext.execution_options.
preserve_order`` is set; this module leaves the caller's context as it is.
"""
from __future__ import annotations

import json
import os

from ...core.rows import export_row
from ...core.strict_json import gc_paused
from ...store.parquet.folder import rows_to_table
from ..cluster import ensure_ray

__all__ = ["to_ray_dataset", "exported_table"]

_LOADS = json.JSONDecoder().decode


def exported_table(table):
    """One block of stored rows (``row_json``, or a foreign file's columns) -> the interop table."""
    with gc_paused():           # fresh dicts in no cycle, let go before the collector resumes (result/interop.py)
        if "row_json" in table.column_names:
            rows = [_LOADS(text) for text in table.column("row_json").to_pylist() if text is not None]
        else:
            rows = [{k: v for k, v in rec.items() if v is not None} for rec in table.to_pylist()]
        out = rows_to_table([export_row(r) for r in rows], nested=False)     # to_arrow()'s layout
        del rows
    return out


def _has_row_json(files) -> bool:
    import pyarrow.parquet as pq
    return all("row_json" in pq.ParquetFile(f).schema_arrow.names for f in files)


def to_ray_dataset(files=None, table=None, keep=None):
    """A ``ray.data.Dataset`` over ``files`` (Parquet, read lazily) or over ``table`` (an Arrow
    table of the interop schema). ``keep``: what owns the files, held by the dataset."""
    ensure_ray()
    import ray.data
    if files is None:
        return ray.data.from_arrow(table)
    files = [os.path.abspath(f) for f in files]
    ds = ray.data.read_parquet(files)
    if _has_row_json(files):
        ds = ds.select_columns(["row_json"])       # pushed down into the read: the facts stay on disk
    ds = ds.map_batches(exported_table, batch_format="pyarrow")
    ds._whileai_rows = keep         # the result's files live as long as the dataset does
    return ds
