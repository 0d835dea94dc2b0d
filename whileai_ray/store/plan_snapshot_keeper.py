"""PlanSnapshots: the driver's side of planner snapshots (``plan_snapshot_file.py`` holds the file).

One object per run. ``restore(resume, created, plan)`` returns the snapshot to continue from
(its rows claimed from the resume index, left undecoded) or None; ``after_round(...)`` is called
each time the driver observes a round: it notes that round's rows and, when it is time, takes a
snapshot (pickled at once, so the state is consistent; written to disk in a thread);
``deferred_rows(resume)`` decodes the rows a snapshot settled, at the end of the run.

When: every ``every_s`` seconds, stretched to 20x the time the last snapshot took to pickle,
so they cost at most ~5% of the loop however large the planner grows.
"""
from __future__ import annotations

import asyncio
import time

from .plan_snapshot_file import dump_snapshot, read_snapshot, write_snapshot
from ..core.identity import unit_row_key

__all__ = ["PlanSnapshots"]


class PlanSnapshots:
    def __init__(self, path: str | None, every_s: float, created, plan_fingerprint: str | None):
        self.path, self.every_s = path, float(every_s or 0.0)
        self.created, self.plan = created, plan_fingerprint
        self.settled: list = []             # (row_key, unit key, ordinal) of rows in observed rounds
        self.deferred: list = []            # the part of ``settled`` a restored snapshot brought
        self.from_round = None
        self.written = 0
        self.cost_s = 0.0
        self._next_at = time.monotonic() + self.every_s
        self._writing = None

    @property
    def enabled(self) -> bool:
        return bool(self.path) and self.every_s > 0

    def restore(self, resume) -> dict | None:
        """The snapshot to continue from, or None (none, foreign, or rows of it not on disk)."""
        if not self.enabled or resume.mode != "exact" or not resume.total:
            return None
        state = read_snapshot(self.path, self.created, self.plan)
        if state is None or not resume.claim([key for key, _, _ in state["settled"]]):
            return None
        self.deferred = state["settled"]
        self.settled = list(state["settled"])
        self.from_round = state["observed"]
        return state

    def after_round(self, planner, book, round_units: dict, outs: list) -> None:
        """Round ``book.observed`` was just observed: note its rows; snapshot when it is time."""
        round_units.pop(book.observed, None)
        self.settled.extend((unit_row_key(o.unit), o.unit.key, o.unit.ordinal) for o in outs
                            if o.row is not None)
        now = time.monotonic()
        if now < self._next_at or (self._writing is not None and not self._writing.done()):
            return
        t = time.perf_counter()
        blob = dump_snapshot({"planner": planner, "next_decide": book.next_decide, "observed": book.observed,
                              "pending": {r: round_units[r] for r in book.pending()},
                              "settled": self.settled}, self.created, self.plan)
        self.cost_s = time.perf_counter() - t
        self._next_at = now + max(self.every_s, 20 * self.cost_s)
        self._writing = asyncio.ensure_future(asyncio.to_thread(write_snapshot, self.path, blob))
        self.written += 1

    async def flush(self) -> None:
        """Wait for a snapshot still being written."""
        if self._writing is not None:
            await self._writing

    def deferred_rows(self, resume) -> list[dict]:
        """The rows a restored snapshot settled, decoded now and marked resumed."""
        rows = []
        for key, unit_key, ordinal in self.deferred:
            row = dict(resume.claimed_row(key))
            row["lineage"] = {**(row.get("lineage") or {}), "resumed": True}
            row["_key"], row["_ordinal"], row["_landed_s"] = list(unit_key), ordinal, 0.0
            rows.append(row)
        self.deferred = []
        return rows

    def summary(self) -> dict:
        return {"snapshot_round": self.from_round, "snapshots_written": self.written}
