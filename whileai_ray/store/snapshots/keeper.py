"""PlanSnapshots: the driver's side of planner snapshots (``snapshots/file.py`` holds the file).

One object per run. ``restore(resume, build)`` reads the snapshot, has ``build`` turn it into a
planner and the units of the rounds after it, claims its rows from the resume index (left
undecoded) and returns them, or returns None (no file, another checkpoint or plan, not this
format, rows of it not on disk: the run replays from the seed; a file that was there and not
used is named in ``ignored``, which the run puts in ``data.warnings``). ``after_round(...)`` is
called each time the driver observes a round: it notes that round's rows and, when it is time,
takes a snapshot. ``deferred_rows(resume, run_id)`` decodes the rows a snapshot settled, at the end.

Taking a snapshot pauses the driver's loop only for ``Planner.state()`` (views of the
append-only columns, copies of the few that change in place, the small counters as JSON):
milliseconds, whatever the run's size. Diffing against the last snapshot, compressing and
writing happen in a thread (``SnapshotFile.write``). ``pause_max_s`` is the longest pause (wall
clock; ``pause_cpu_max_s`` the CPU time of it, which a busy machine does not inflate). The
garbage collector is held off during the pause: the state makes no cycles, and a collection
the loop's own garbage is due for is the loop's cost, not the snapshot's (it runs just after).

When: every ``every_s`` seconds (and never while the previous one is still being written),
stretched to 20x the last pause, so snapshots cost at most ~5% of the loop.
"""
from __future__ import annotations

import asyncio
import math
import gc
import json
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from .file import SnapshotFile, read_snapshot

if TYPE_CHECKING:
    from ..checkpoint.resume import ResumeIndex
    from ..parquet.spill import EncodedRow

__all__ = ["PlanSnapshots"]

# search/planner's Planner and its round book: store/ is a leaf and imports neither (Any to mypy)
Planner: TypeAlias = Any
Book: TypeAlias = Any
# build(meta, arrays) -> (planner, {round: units}): how the caller makes a planner of a snapshot
Build: TypeAlias = "Callable[[dict, dict[str, np.ndarray]], tuple[Planner, dict]]"
DumpRow: TypeAlias = "Callable[[object], str]"         # parquet/spill.py's dump_row


class PlanSnapshots:
    def __init__(self, path: str | None, every_s: float, created: str | None, plan_fingerprint: str | None,
                 budget: int | None = None) -> None:
        self.path, self.every_s = path, float(every_s or 0.0)
        self.budget = budget                # this run's: which frames it may continue from (fits)
        self.created, self.plan = created, plan_fingerprint
        self.deferred = _Settled(None, 0)   # the rows a restored snapshot settled (len(); iterated at the end)
        self.from_round: int | None = None
        self.written = 0
        self.pause_s = 0.0
        self.pause_max_s = 0.0
        self.pause_cpu_max_s = 0.0
        self.restore_s = 0.0
        self.ignored: str | None = None     # why a snapshot file that was there was not used
        self.continued = False              # a resumed run appends to the file it restored from
        self.errors: list[str] = []         # snapshots that could not be taken or written
        self._file = SnapshotFile(path, created, plan_fingerprint) if path else None
        self._next_at = time.monotonic() + self.every_s
        self._writing: asyncio.Future[int] | None = None
        self._round = -1                    # the round the last snapshot was taken after
        self._scratch: tuple[dict, dict] = ({}, {})   # buffers the planner's state copies reuse (see _take)
        self._takes = 0
        self._ending = False                # the run's last snapshot is being taken (finish)
        self._pre_bound = False             # the snapshot just before the budget may cut was taken
        # (time, rows landed) at the last snapshot, its write's seconds
        self._rate: tuple[float, int, float] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.path) and self.every_s > 0

    def restore(self, resume: ResumeIndex, build: Build) -> dict | None:
        """``{"planner", "next_decide", "observed", "pending": {round: units}}`` to continue from,
        or None. ``build(meta, arrays)`` returns ``(planner, {round: units})`` or raises ValueError."""
        if not self.enabled or resume.mode != "exact" or not resume.total:
            return None
        return self.settle(resume, self.prepare(build), build)

    def prepare(self, build: Build) -> dict:
        """The part of ``restore`` that needs no rows: read the file and build the planner of its
        last frame. Runs while the checkpoint is still being scanned (``run_setup.open_run``);
        returns what ``settle`` takes."""
        t = time.perf_counter()
        try:
            assert self.path is not None, "prepare: only a run with a snapshot path reads one"
            snap, problem = read_snapshot(self.path, self.created, self.plan, usable=self._fits)
            if snap is None:
                return {"problem": problem}
            arrays = snap.pop("arrays")
            try:
                planner, pending = build(snap["meta"], arrays)
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                return {"snap": snap, "error": exc}
            # what the file holds: a resumed run's next snapshot is a delta from it (its logs by
            # length; its tables, which the planner copied, kept; its logs the planner holds or let go)
            return {"snap": snap, "planner": planner, "pending": pending, "last": _file_state(snap, arrays)}
        finally:
            self.restore_s += time.perf_counter() - t

    def settle(self, resume: ResumeIndex, prepared: dict, build: Build) -> dict | None:
        """Claim the prepared planner's settled rows from ``resume`` (or fall back, see
        ``restore``); the planner to continue from, or None."""
        t = time.perf_counter()
        try:
            return self._settle(resume, prepared, build)
        finally:
            self.restore_s += time.perf_counter() - t

    def _settle(self, resume: ResumeIndex, prepared: dict, build: Build) -> dict | None:
        if "problem" in prepared:
            self.ignored = prepared["problem"]
            return None
        snap = prepared["snap"]
        frames, meta = snap["frames"], snap["meta"]
        try:
            if "error" in prepared:
                raise prepared["error"]
            planner, pending = prepared["planner"], prepared["pending"]
            settled = planner.landed_digests()
            # rows the snapshot settled that are not on disk (the file lost its tail): fall back
            # to the latest frame whose rows all are (each frame's settled rows are a prefix)
            on_disk = resume.on_disk_digests(*settled)
            if on_disk < len(settled[0]):
                metas = [json.loads(header["meta"]) for header in frames]
                usable = [j for j, m in enumerate(metas) if int(m["settled"]) <= on_disk and self._fits(m)[0]]
                if not usable:
                    return None             # replay from the seed
                planner = pending = None                   # (let the later state go first)
                assert self.path is not None               # (the snapshot settled was read from it)
                earlier, problem = read_snapshot(self.path, self.created, self.plan, upto=usable[-1] + 1)
                if earlier is None:
                    raise ValueError(f"its earlier frame {problem}")
                meta = earlier["meta"]
                planner, pending = build(meta, earlier.pop("arrays"))
                settled = planner.landed_digests()
            observed, next_decide = int(meta["observed"]), int(meta["next_decide"])
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            self.ignored = f"does not fit this run ({exc})"
            return None
        if not resume.claim_digests(*settled):
            return None
        self.deferred = _Settled(planner, len(settled[0]))
        self.from_round = self._round = observed
        last = prepared.get("last") if meta is snap["meta"] else None       # (None after a fall back)
        if last is not None and self._file is not None and self._file.continue_file(snap, last):
            self.continued = True           # the next snapshot is a delta from the file's state
        # before the loop: the first snapshot faults no fresh pages (the writer thread warms the
        # buffer of each next one: _write)
        planner.warm_scratch(self._scratch[(self._takes + 1) % 2])
        return {"planner": planner, "next_decide": next_decide, "observed": observed, "pending": pending}

    def _fits(self, meta: dict) -> tuple[bool, str | None]:
        """Whether a frame (its meta) may continue this run (search/planner/budget_bound.py): taken with
        this budget, or before the budget it was taken with cut anything and with a budget no
        larger than this one. A frame that does not say (an older file) fits only a run whose
        budget is not known here."""
        if self.budget is None:
            return True, None
        was, bound = meta.get("budget"), meta.get("bound")
        if not isinstance(was, int) or not isinstance(bound, bool):
            return False, "does not say which budget it was taken with (an older version wrote it)"
        if was == self.budget or (not bound and self.budget >= was):
            return True, None
        return False, (f"was taken after budget={was} had cut the plan, which budget={self.budget} "
                       "would not have")

    def after_round(self, planner: Planner, book: Book, round_units: dict) -> None:
        """Round ``book.observed`` was just observed, the next round not yet decided: snapshot
        when it is time, and once just before the budget may start to cut rounds (a larger-budget
        resume continues from that one: search/planner/budget_bound.py)."""
        round_units.pop(book.observed, None)
        now = time.monotonic()
        if self._writing is not None and not self._writing.done():
            return
        if not self._pre_bound and planner.budget_bound_round is None:
            if planner.capacity() < planner.budget_margin():
                self._pre_bound = True
                self._take(planner, book, round_units, now)
                return
            if self._nearing(planner, now):
                return                       # no write may still be going when that moment comes
        elif self._pre_bound:
            return                           # keep it in the file (a compaction drops older steps)
        if now >= self._next_at:
            self._take(planner, book, round_units, now)

    def _nearing(self, planner: Planner, now: float) -> bool:
        """Whether a snapshot started now could still be being written when the budget nears:
        the units left before then go (at the rate rows landed since the last snapshot, measured
        over a quarter of a second at least) in under twice the last write's time and a quarter
        of a second. A write still going then would let the budget cut a round before the
        snapshot that a larger-budget resume continues from is taken (it would continue from an
        earlier one: exact still, with more to replay)."""
        if self._rate is None:              # (the run's first look: its rate counts from here)
            self._rate = (now, planner.landed, 0.0)
        then, landed, write_s = self._rate
        if now - then < 0.25 or planner.landed <= landed:
            return False
        per_s = (planner.landed - landed) / (now - then)
        nearing: bool = planner.capacity() < planner.budget_margin() + per_s * (2 * write_s + 0.25)
        return nearing

    async def finish(self, planner: Planner, book: Book, round_units: dict) -> None:
        """The run's loop has ended: a last snapshot (a resume with a larger budget then replays
        nothing), unless the last one already holds the last observed round."""
        await self.flush()
        self._ending = True                 # (no buffer is warmed for a snapshot that never comes)
        if self.every_s > 0 and book.observed > self._round:
            self._take(planner, book, round_units, time.monotonic())
            await self.flush()

    def _take(self, planner: Planner, book: Book, round_units: dict, now: float) -> None:
        self._collect()
        t, cpu = time.perf_counter(), time.thread_time()
        collecting = gc.isenabled()
        gc.disable()
        try:
            # two scratch dicts, alternately: this snapshot's tables never reuse the buffers of the
            # last one, which the file still diffs against (SnapshotFile._last)
            self._takes += 1
            st, logs, tables = _planner_arrays(planner, self._scratch[self._takes % 2])
            rounds = sorted(book.pending())
            pending = [(r, u) for r in rounds for u in round_units[r]]
            units = planner.encode_units([u for _, u in pending])
            meta = json.dumps({"planner": st.meta, "next_decide": book.next_decide, "observed": book.observed,
                               "settled": len(st.logs["landed_wid"]), "budget": planner.s.budget,
                               "bound": planner.budget_bound_round is not None},
                              separators=(",", ":"), allow_nan=False)
            tables.update({"pending": units, "pending_round": np.asarray([r for r, _ in pending], dtype=np.int64)})
        except (ValueError, TypeError) as exc:      # state that is not plain data: stop taking snapshots
            self.errors.append(f"snapshot not taken: {exc}")
            self.every_s = 0.0
            self._next_at = float("inf")
            return
        finally:
            # the pause ends here, before the collector is back: a collection the loop's own
            # allocations made due runs right after and is the loop's cost, not the snapshot's
            self.pause_s = time.perf_counter() - t
            pause_cpu = time.thread_time() - cpu
            if collecting:
                gc.enable()
        self.pause_max_s = max(self.pause_max_s, self.pause_s)
        self.pause_cpu_max_s = max(self.pause_cpu_max_s, pause_cpu)
        self._next_at = now + max(self.every_s, 20 * self.pause_s)
        self._writing = asyncio.ensure_future(asyncio.to_thread(self._write, planner, meta, logs, tables, now, planner.landed))
        self._round = book.observed
        self.written += 1

    def _write(self, planner: Planner, meta: str, logs: dict[str, np.ndarray], tables: dict[str, np.ndarray],
               now: float, landed: int) -> int:
        """In a thread, while the loop goes on (it takes no snapshot until this is done): write,
        then make the next snapshot's buffer big enough for the book by then, pages touched (the
        last snapshot's tables, in it, are no longer the file's ``_last``)."""
        t = time.monotonic()
        try:
            assert self._file is not None, "snapshots are taken only with a file to write them to"
            return self._file.write(meta, logs, tables)
        finally:
            self._rate = (now, landed, time.monotonic() - t)
            if not self._ending:
                planner.warm_scratch(self._scratch[(self._takes + 1) % 2], ahead=True)

    def _collect(self) -> None:
        """Note a failed write (the next one starts a fresh file)."""
        if self._writing is not None and self._writing.done():
            exc = self._writing.exception()
            if exc is not None:
                self.errors.append(f"snapshot not written: {type(exc).__name__}: {exc}"[:300])
                self.written -= 1
            self._writing = None

    async def flush(self) -> None:
        """Wait for a snapshot still being written."""
        if self._writing is not None:
            await asyncio.wait([self._writing])
            self._collect()

    def deferred_rows(self, resume: ResumeIndex, run_id: str) -> list[dict]:
        """The rows a restored snapshot settled, decoded now and marked resumed."""
        return list(self.iter_deferred_rows(resume, run_id))

    def iter_deferred_rows(self, resume: ResumeIndex, run_id: str, stamp: dict | None = None) -> Iterator[EncodedRow]:
        """``deferred_rows`` one at a time (a large resume never holds them all), in order, with
        ``stamp`` (the run's lineage stamp) in their lineage. Each is an ``EncodedRow``: its
        ``row_json`` is made from its checkpoint line (the same encoder wrote both), not encoded again."""
        from ..parquet.spill import EncodedRow, dump_row
        deferred = self.deferred            # (left in place while it is read: progress still counts it)
        for (key, ordinal, phrasing), (row, line) in zip(deferred, resume.claimed_lines()):
            out = EncodedRow(row)
            old = row.get("lineage")
            out["lineage"] = {**(old or {}), "resumed": True, **(stamp or {})}
            out["_key"], out["_ordinal"], out["_landed_s"] = [run_id, key[0], phrasing, key[2], key[3]], ordinal, 0.0
            out.json = _encoded(out, line, old, dump_row)
            yield out

    def summary(self) -> dict:
        out: dict[str, object] = {"snapshot_round": self.from_round, "snapshots_written": self.written,
               "snapshot_bytes": self._file.size if self._file is not None else 0,
               "snapshot_pause_max_ms": round(1000 * self.pause_max_s, 2),
               "snapshot_pause_cpu_max_ms": round(1000 * self.pause_cpu_max_s, 2),
               "snapshot_restore_s": round(self.restore_s, 3), "snapshot_continued": self.continued}
        if self.ignored:
            out["snapshot_ignored"] = self.ignored
        if self.errors:
            out["snapshot_errors"] = list(self.errors)
        return out


def _planner_arrays(planner: Planner, scratch: dict) -> tuple[Any, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``(state, logs, tables)``: the planner's state and its arrays as the file names them."""
    st = planner.state(scratch=scratch)
    return (st, {f"planner.{k}": v for k, v in st.logs.items()},
            {f"planner.{k}": v for k, v in st.tables.items()})


def _file_state(snap: dict, arrays: dict[str, np.ndarray]) -> tuple[str, dict[str, int], dict[str, np.ndarray]] | None:
    """The state the file holds after the frame ``snap`` read last, in ``SnapshotFile._last``'s
    shape (meta JSON, its logs' lengths, its tables), from the frame header's list of logs; None
    when the header has none (the next snapshot is then a base)."""
    names = snap["frames"][-1].get("logs")
    if not isinstance(names, list) or not set(names) <= set(arrays):
        return None
    return (snap["frames"][-1]["meta"], {name: len(arrays[name]) for name in names},
            {name: arr for name, arr in arrays.items() if name not in names})


_BOOKKEEPING = (b'"_key":', b'"_ordinal":', b'"_landed_s":')     # fields the splice appends


def _encoded(row: dict, line: bytes, old_lineage: object, dump_row: DumpRow) -> str:
    """``dump_row(row)`` for a resumed row, from ``line`` (its checkpoint line, written by the same
    encoder, so each value's text is the same): its lineage's text replaced in place and the
    bookkeeping fields appended. Encoded whole when the line cannot be used that way (no line, no
    lineage dict, or that lineage text found more than once)."""
    if (not line or not isinstance(old_lineage, dict) or not line.endswith(b"}")
            or b'"_' in line and any(mark in line for mark in _BOOKKEEPING)):
        return dump_row(row)
    text = line.decode("ascii", "replace")
    old_text = dump_row(old_lineage)
    was = '"lineage":' + old_text
    at = text.find(was)
    if at < 0 or text.find(was, at + 1) >= 0:
        return dump_row(row)
    return "".join((text[:at], '"lineage":', _grown(row["lineage"], old_lineage, old_text, dump_row),
                    text[at + len(was):-1], ',"_key":', dump_row(row["_key"]),
                    ',"_ordinal":', _scalar(row["_ordinal"], dump_row), ',"_landed_s":',
                    _scalar(row["_landed_s"], dump_row), "}"))


def _grown(new: dict, old: dict, old_text: str, dump_row: DumpRow) -> str:
    """``dump_row(new)`` from ``old_text`` when ``new`` is ``old`` (the same values, in order)
    followed by keys of its own: those are encoded, the rest is the old text."""
    keys = list(new)
    n = len(old)
    if keys[:n] != list(old) or any(new[k] is not old[k] for k in keys[:n]):
        return dump_row(new)
    extra = dump_row({k: new[k] for k in keys[n:]})
    return old_text if extra == "{}" else old_text[:-1] + ("," if n else "") + extra[1:]


def _scalar(value: object, dump_row: DumpRow) -> str:
    """``dump_row(value)`` of an int or a finite float, without the encoder's set-up."""
    if type(value) is int:
        return int.__repr__(value)
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value)
    return dump_row(value)


class _Settled:
    """The rows a restored snapshot settled: how many, and (iterated, at the end of the run) their
    ``(row_key, ordinal, phrasing)`` in order, computed from the planner's columns a chunk at a time."""

    def __init__(self, planner: Planner | None, n: int) -> None:
        self.planner, self.n = planner, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[tuple, int, str]]:
        return iter(()) if self.planner is None else self.planner.iter_landed_keys(self.n)
