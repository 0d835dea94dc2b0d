"""RowSpool: where the Driver puts the rows it lands, so that no process holds them all.

The Driver lands rows out of order (chunks come back as they finish) and used to keep every
one as a dict until the run ended, then hand the whole list to the caller: ~28 KB a row across
the two processes, so a million-row run could not finish. A spool instead:

* takes each landed row (``add``) into a small reorder buffer keyed by ``_ordinal``;
* moves rows out of the buffer in ordinal order once nothing before them can still land
  (``release(upto)``: the loop calls it when a round is observed, so a reproducible run's rows
  leave in exactly the order an in-memory sort gives); past ``window`` buffered rows the
  smallest leave anyway (a run that is not reproducible has no such bound);
* keeps released rows as a list while there are at most ``threshold``, and past that writes
  them to a temporary run folder as Parquet part files (``make_writer(folder)``: a
  ``SpillWriter`` with the caller's fact columns) and drops them from memory;
* ``head(rows)``: rows that come before every other (a restored planner snapshot settled them
  before the loop began: their ordinals are all smaller), written to a front segment of the
  folder so the files read back in order; ``tail(rows)`` rows after every other (rows on disk
  no planned unit matched).

While the rows are few, ``released(start)`` hands out the released rows past the first ``start``
(the caller's copy grows with its progress polls, so a small run's rows do not all cross between
processes at its end), and ``finish(skip)`` leaves out the first ``skip`` of them, which the
caller already has (``head_count``: how many head rows lead the list it returns).

A row may come as an ``EncodedRow`` (``parquet/spill_text.py``: its ``row_json`` made already,
by its lane or from its checkpoint line): the spill writes that text, and ``released``/``finish``
hand it out as the plain dict it is; a ``SlimRow`` (``parquet/slim_row.py``) as the row its text holds.

``finish()`` returns the rows as a list (few) or a ``SpilledRows`` (where they are). The
folder is then the caller's: the spool detaches its clean-up, the caller adopts the folder
(``OwnedFolder.adopt``) and removes it when its result goes. A spool that never finishes (the
run failed) removes its folder when it is garbage collected or the process exits.
"""
from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from .parquet.slim_row import plain_row

if TYPE_CHECKING:
    from .parquet.spill import OwnedFolder

__all__ = ["RowSpool", "SpilledRows", "DEFAULT_WINDOW"]

DEFAULT_WINDOW = 8192        # rows held for reordering when no round bound is given (8x a full lag)


class RowWriter(Protocol):
    """What ``make_writer(folder)`` returns (``parquet/spill.SpillWriter``): rows appended in
    order, then ``close()`` gives the files written, in row order."""

    def append(self, rows: list[dict]) -> object: ...

    def close(self) -> list[str]: ...


@dataclass(frozen=True)
class SpilledRows:
    """Where a finished spool's rows are: ``files`` in row order inside ``folder``."""
    folder: str
    files: list[str] = field(default_factory=list)
    count: int = 0


class RowSpool:
    def __init__(self, threshold: int, make_writer: Callable[[str], RowWriter] | None, parent: str | None = None,
                 window: int = DEFAULT_WINDOW) -> None:
        # make_writer: None only where the threshold is never reached (the rows stay a list)
        if threshold < 0 or window < 1:
            raise ValueError(f"RowSpool: need threshold >= 0 and window >= 1, got {threshold}, {window}")
        self.threshold, self.make_writer, self.parent, self.window = threshold, make_writer, parent, window
        self._heap: list[tuple[int, int, dict]] = []
        self._seq = count()
        self._rows: list[dict] | None = []   # released rows while few; None once spilled
        self._head: list[dict] = []          # head rows while few
        self._owner: OwnedFolder | None = None
        self._writer: RowWriter | None = None
        self._head_writer: RowWriter | None = None
        self.count = 0                    # rows taken so far (buffered, released, head and tail)
        self.head_count = 0               # head rows at the front of finish()'s list
        self._finished = False

    # --------------------------------------------------------------- taking rows
    def add(self, rows: Iterable[dict]) -> None:
        """Rows landed in any order; each needs its ``_ordinal``."""
        for row in rows:
            heapq.heappush(self._heap, (row.get("_ordinal", 0), next(self._seq), row))
            self.count += 1
        if len(self._heap) > self.window:
            self._emit(len(self._heap) - self.window)

    def release(self, upto: int) -> None:
        """Every row with ``_ordinal <= upto`` leaves the buffer, in order."""
        heap, out = self._heap, []
        while heap and heap[0][0] <= upto:
            out.append(heapq.heappop(heap)[2])
        self._put(out)

    def head(self, rows: Iterable[dict]) -> None:
        """Rows that come before every other (see the module docstring)."""
        for row in rows:
            self.count += 1
            if self._head_writer is not None:
                self._head_writer.append([row])
                continue
            self._head.append(plain_row(row))    # (an EncodedRow or SlimRow: plain in a list)
            if len(self._head) + self._released() > self.threshold:
                self._spill()

    def tail(self, rows: Iterable[dict]) -> None:
        """Rows that come after every other; the buffer is emptied first."""
        self._emit(len(self._heap))
        batch = []
        for row in rows:
            self.count += 1
            batch.append(row)
            if len(batch) >= 1024:
                self._put(batch)
                batch = []
        self._put(batch)

    # ------------------------------------------------------------------ output
    @property
    def spilled(self) -> bool:
        return self._writer is not None

    def _released(self) -> int:
        return len(self._rows) if self._rows is not None else 0

    def _emit(self, n: int) -> None:
        if n > 0:
            self._put([heapq.heappop(self._heap)[2] for _ in range(n)])

    def _put(self, rows: list[dict]) -> None:
        if not rows:
            return
        if self._writer is not None:
            self._writer.append(rows)
            return
        assert self._rows is not None            # None only once spilled, when there is a writer
        self._rows.extend(rows)
        if len(self._rows) + len(self._head) > self.threshold:
            self._spill()

    def _spill(self) -> None:
        """Past the threshold: everything released so far goes to disk, and all that follows."""
        if self._writer is not None:
            return
        from .parquet.spill import OwnedFolder      # lazy: pyarrow, only once a run is large
        assert self.make_writer is not None, "RowSpool: rows past the threshold need make_writer"
        assert self._rows is not None               # (not spilled yet: no writer)
        self._owner = owner = OwnedFolder(parent=self.parent)
        self._head_writer = self.make_writer(os.path.join(owner.path, "head"))
        self._head_writer.append(self._head)
        self._writer = self.make_writer(owner.path)
        self._writer.append(self._rows)
        self._head, self._rows = [], None

    def released(self, start: int, limit: int | None = None) -> list[dict] | None:
        """Released rows past the first ``start`` (at most ``limit``), in order; None once the
        rows went to disk (the caller then reads them there)."""
        if self._rows is None:
            return None
        return _plain(self._rows[start:None if limit is None else start + limit])

    def finish(self, skip: int = 0) -> list[dict] | SpilledRows:
        """Every row, in order: a list, or a ``SpilledRows`` whose folder the caller now owns.
        ``skip``: released rows the caller already has (``released``); the list is then the
        ``head_count`` head rows, then the released rows past the first ``skip``."""
        if self._finished:
            raise RuntimeError("RowSpool.finish() was already called")
        self._finished = True
        self._emit(len(self._heap))
        if self._writer is None:
            head = sorted(self._head, key=lambda r: r.get("_ordinal", 0))
            self.head_count = len(head)
            assert self._rows is not None            # (not spilled: no writer)
            rows = head + _plain(self._rows[skip:])
            self._head, self._rows = [], []
            return rows
        assert self._head_writer is not None and self._owner is not None    # (spilled: all three set)
        files = self._head_writer.close() + self._writer.close()
        folder = self._owner.keep()          # the caller adopts it (OwnedFolder.adopt)
        return SpilledRows(folder=folder, files=files, count=self.count)

    def discard(self) -> None:
        """The run failed: remove the folder now (nothing will read it)."""
        if self._owner is not None and self._owner.alive:
            self._owner.remove()


def _plain(rows: list[dict]) -> list[dict]:
    """``rows`` as plain dicts: an ``EncodedRow`` (a row with its ``row_json``, kept so in the list
    in case the rows spill) leaves the spool as the dict it is, never as its carrier class; a
    ``SlimRow`` (``parquet/slim_row.py``: a stub the Driver kept) as the whole row its text holds."""
    return [r if type(r) is dict else plain_row(r) for r in rows]
