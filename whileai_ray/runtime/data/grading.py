"""Work on a large result's rows on the cluster: Ray Data ``map_batches`` over its Parquet files.

``data.grade(fn)`` and ``wai.grade(path)`` on a result past ``advanced={"cluster_grade_rows":
...}`` rows land here (through the ``RayCluster`` a result is handed, ``services.py``; ``result/``
may not import ``ray``). The caller passes:

* ``files``: the Parquet files that hold the rows (a spill folder's parts, or any file with a
  ``row_json`` column): Ray Data reads them where they are, so the rows' bytes go from the
  files to the actors and back to files, never through the caller;
* ``make_fn``: a picklable zero-argument factory of the batch function ``fn(rows)`` that
  changes a batch of row dicts in place (grades them). Ray Data's convention for stateful
  work is a callable class: ``_ApplyToRows`` calls ``make_fn()`` once per actor, so a grader
  class is built, or a judge's HTTP client opened, once per actor and reused for every batch;
* ``to_table``: rows -> the output table (row JSON + fact columns), a plain function.

Order is kept (``preserve_order``) and each write task names its file by its task index, so
the output parts, sorted by name, read back in the input's row order; the row count is checked. Returns the
output part files and the ``OwnedFolder`` they live in (removed with the result that holds it).
"""
from __future__ import annotations

import glob
import json
import os

import ray
from ray.data.datasource import FilenameProvider

from ...store.parquet.spill import OwnedFolder
from ..cluster import ensure_ray
from ..caller.run import _ship_user_code_by_value

__all__ = ["map_row_batches", "PASSES"]

BATCH_ROWS = 1024
PASSES = {"runs": 0, "rows": 0}      # what ran on the cluster in this process (the bench and tests read it)
_LOADS = json.JSONDecoder().decode


class _ApplyToRows:
    """One per Ray Data actor: the batch function is built once, in ``__init__``."""

    def __init__(self, make_fn, to_table):
        self.fn = make_fn()
        self.to_table = to_table

    def __call__(self, table):
        rows = [_LOADS(text) for text in table.column("row_json").to_pylist()]
        self.fn(rows)
        return self.to_table(rows)


class _PartNames(FilenameProvider):
    """``part-<task index>-<write uuid>.parquet``: sorted by name, the write tasks' order, which
    is the rows' order (the uuid is Ray Data's guard against two writes sharing a name)."""

    def __init__(self):
        super().__init__(file_format="parquet")

    def get_filename_for_task(self, write_uuid: str, task_index: int) -> str:
        return f"part-{task_index:06d}-{write_uuid}.parquet"


def _rows_in(files) -> int:
    import pyarrow.parquet as pq
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files)


def map_row_batches(files, make_fn, to_table, *, parent: str | None = None, batch_rows: int = BATCH_ROWS,
                    actors: int | None = None, user_code=()):
    """Apply ``make_fn()`` to every batch of the rows in ``files`` on the cluster; returns
    ``(output part files, their OwnedFolder)``. ``user_code``: the caller's graders, whose
    modules (a script, a notebook, a test) travel by value. See the module docstring."""
    ensure_ray()
    _ship_user_code_by_value(*user_code)
    import ray.data
    files = [os.path.abspath(f) for f in files]
    expected = _rows_in(files)
    ctx = ray.data.DataContext.get_current()
    saved = (ctx.execution_options.preserve_order, ctx.enable_progress_bars)
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False
    cpus = int(ray.cluster_resources().get("CPU", 1))
    n = actors or max(1, cpus - 1)        # leave a CPU for the read and write tasks
    owner = OwnedFolder(parent=parent)
    try:
        ds = ray.data.read_parquet(files).select_columns(["row_json"])
        ds = ds.map_batches(_ApplyToRows, fn_constructor_args=(make_fn, to_table), batch_size=batch_rows,
                            batch_format="pyarrow", concurrency=(1, n), num_cpus=1)
        ds.write_parquet(owner.path, filename_provider=_PartNames())
    finally:
        ctx.execution_options.preserve_order, ctx.enable_progress_bars = saved
    out = sorted(glob.glob(os.path.join(owner.path, "part-*.parquet")))
    got = _rows_in(out)
    if got != expected:
        raise RuntimeError(f"cluster grading wrote {got} rows for {expected}; the rows on disk were left as "
                           "they were")
    PASSES["runs"] += 1
    PASSES["rows"] += got
    return out, owner
