"""RowList: the list ``data.rows`` returns; also callable, so ``data.rows()`` works too.

For an Arrow-backed run (``row_store.py``) ``data.rows`` is an ``ExportedRows`` instead: the
same exported rows, made when read (one row group at a time), so a million-row run never
holds them all; it compares equal to the list an in-memory run gives.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.rows import export_row
from .interop import ArrowInterop
from .row_store import is_arrow, row_store

if TYPE_CHECKING:
    from .row_store import Trajectories


class RowList(list):
    """A list of exported rows that carries the run's ``system_prompt`` and ``tools``, and each
    row's ``privileged`` block beside it (``privileged[i]``, never in the row itself), so that
    ``simulate(tasks=data.rows())`` replays the same expected outcomes and hidden state."""

    system_prompt: str = ""
    tools: list = []
    privileged: list = []

    def __call__(self) -> "RowList":
        return self


class ExportedRows(Sequence):
    """The exported rows of an Arrow-backed run, made when read (see the module docstring)."""

    def __init__(self, rows, system_prompt: str = "", tools=None):
        self._rows = rows
        self.system_prompt = system_prompt
        self.tools = list(tools or [])

    def __call__(self) -> "ExportedRows":
        return self

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [export_row(r) for r in self._rows[i]]
        return export_row(self._rows[i])

    def batches(self):
        """The exported rows, one row group at a time."""
        for batch in self._rows.batches():
            yield [export_row(r) for r in batch]

    def __iter__(self):
        for batch in self.batches():
            yield from batch

    def __eq__(self, other):
        if isinstance(other, (list, tuple, ExportedRows)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    # defining __eq__ leaves __hash__ None (Python's rule): unhashable, as the list it stands for

    def __repr__(self) -> str:
        return f"ExportedRows({len(self)} rows, on disk)"


class RowsView(ArrowInterop):
    """Shared by SimulationData and ScoredData: ``rows`` exports ``trajectories`` once (cached
    until they change), ``len()`` and iteration go over the trajectories themselves; the
    Arrow, pandas, polars and Ray Data forms come from ``interop.py``."""

    if TYPE_CHECKING:             # fields of the dataclasses that mix this in (SimulationData, ScoredData)
        trajectories: Trajectories
        system_prompt: str
        tools: list[Any]
        _rows_cache: Any

    @property
    def rows(self):
        """The exported rows (also callable: ``data.rows()``)."""
        if is_arrow(self.trajectories):
            cache = self._rows_cache
            if not isinstance(cache, ExportedRows) or cache._rows is not self.trajectories:
                self._rows_cache = ExportedRows(self.trajectories, self.system_prompt, self.tools)
            return self._rows_cache
        if self._rows_cache is None or len(self._rows_cache) != len(self.trajectories) \
                or isinstance(self._rows_cache, ExportedRows):
            rl = RowList(export_row(t) for t in self.trajectories)
            rl.system_prompt = self.system_prompt
            rl.tools = self.tools
            rl.privileged = [t.get("privileged") for t in self.trajectories]
            self._rows_cache = rl
        return self._rows_cache

    def _touch(self) -> None:
        self._rows_cache = None

    def _pass_tally(self):
        """The pass@k tally of these rows: Arrow compute over the fact columns when the rows are
        on disk, one pass over ``rows`` when they are in memory."""
        from ..score.pass_at.tally import tally_rows
        if is_arrow(self.trajectories):
            from ..score.pass_at.arrow import DICTIONARY_COLUMNS, FACT_COLUMNS, tally_table
            return tally_table(row_store(self.trajectories).facts(FACT_COLUMNS, DICTIONARY_COLUMNS))
        return tally_rows(self.rows)

    def __len__(self) -> int:
        return len(self.trajectories)

    def __iter__(self):
        return iter(self.trajectories)
