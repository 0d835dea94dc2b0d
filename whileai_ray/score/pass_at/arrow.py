"""``pass_at`` over fact columns with Arrow compute: a million rows without decoding one.

``tally_table(table)`` reads the ``pa_*`` columns that ``pass_at_tally.pass_at_facts`` wrote
beside each spilled row and returns the same ``PassTally`` a Python pass over the rows would:
per-task counts from one ``group_by``, the rest from vectorised sums and ``unique``. Only
the default task key (``scenario_id``, else ``task_id``, else the prompt) is in the facts.
"""
from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.compute as pc

from .tally import CONFIG_SOURCES, PassTally

__all__ = ["tally_table", "FACT_COLUMNS", "DICTIONARY_COLUMNS"]

FACT_COLUMNS = ("pa_value", "pa_unjudged", "pa_task", "pa_cut", "pa_silent", "pa_think") + tuple(
    f"pa_cfg_{name}" for name in CONFIG_SOURCES)
# few distinct values in many rows: read dictionary-encoded (a million rows, a handful of strings)
DICTIONARY_COLUMNS = ("pa_unjudged",) + tuple(f"pa_cfg_{name}" for name in CONFIG_SOURCES)


def _count_true(column) -> int:
    return int(pc.sum(pc.cast(column, pa.int64())).as_py() or 0)


def _first_two(column) -> list:
    """The first two distinct non-null values (JSON text decoded) in row order, by Python ``==``."""
    seen: list = []
    for text in pc.unique(pc.drop_null(column)).to_pylist():   # unique keeps first-seen order
        value = json.loads(text)
        if value not in seen:
            seen.append(value)
            if len(seen) == 2:
                break
    return seen


def _task_counts(members: pa.Table) -> tuple[list, list, list]:
    """(tasks sorted, graded rows, passed rows) of the rows with a 0/1 reward. Two value_counts
    and a lookup, no ``group_by``: that goes through ``pyarrow.acero``, whose import pulls in
    ``pyarrow.dataset`` and pandas (over a second, once per process)."""
    graded = pc.value_counts(members.column("pa_task"))
    passed = pc.value_counts(members.filter(pc.equal(members.column("pa_value"), 1.0)).column("pa_task"))
    tasks = graded.field("values")
    order = pc.sort_indices(tasks)      # UTF-8 byte order is code-point order: Python's sorted()
    tasks, sizes = pc.take(tasks, order), pc.take(graded.field("counts"), order)
    wins = pc.fill_null(pc.take(passed.field("counts"), pc.index_in(tasks, value_set=passed.field("values"))), 0)
    return tasks.to_pylist(), sizes.to_pylist(), wins.to_pylist()


def tally_table(table: pa.Table) -> PassTally:
    """The ``PassTally`` of the rows whose fact columns are ``table`` (its tasks as columns, sorted)."""
    t = PassTally(n_rows=table.num_rows)
    value = table.column("pa_value")
    graded = pc.drop_null(value)
    t.n_graded = len(graded)
    if t.n_graded:
        t.graded_first = graded[0].as_py()
        distinct = pc.unique(graded).to_pylist()
        t.graded_all_equal = len(distinct) == 1 and not math.isnan(distinct[0])
    binary = pc.fill_null(pc.or_(pc.equal(value, 0.0), pc.equal(value, 1.0)), False)
    t.n_partial = t.n_graded - _count_true(binary)
    members = table.select(["pa_task", "pa_value"]).filter(binary)
    if members.num_rows:
        t.task_columns = _task_counts(members)
    unjudged = pc.drop_null(table.column("pa_unjudged"))
    if len(unjudged):
        vc = pc.value_counts(unjudged)
        for status, n in zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()):
            t.unjudged[status] += n
    t.n_cut = _count_true(table.column("pa_cut"))
    t.n_silent = _count_true(table.column("pa_silent"))
    t.n_think = _count_true(table.column("pa_think"))
    for name in CONFIG_SOURCES:
        t.config_seen[name] = _first_two(table.column(f"pa_cfg_{name}"))
    return t
