"""One run read once per version of its file: a small index of every row, and rows on demand.

A run page filters and pages over 100,000 rows per request; decoding 100,000 row dicts each
time would take seconds. So a run is read once per ``(path, mtime, size)`` into a ``RunIndex``:
per row, only what the table shows and filters on (verdict, reward, tier, tools, fault kinds,
judge status, the prompt's start) plus where the row lives (its byte offset in a JSONL file,
its position in a Parquet file, read with the Arrow store). The pass@k tally is gathered in the
same pass from the fact columns the Arrow path uses (``score/pass_at/arrow.py``). Showing one
row decodes that row alone.

A checkpoint still being written only grows: when the same file (same inode) is longer than
the index read, only the new bytes are read (``RunCache``). Any other change reads it again.
A large file not read yet is read in the background (``RunCache.peek``): the page shows its
first rows at once and reloads when the whole run is read.
Files are data: JSON lines and Parquet are parsed, nothing is unpickled or run.
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from ..core.rows import export_row
from ..result.failure_breakdown import failed, fault_kinds, graded
from ..result.loading import checked_meta
from ..score.pass_at.tally import PASS_AT_FACTS, pass_at_facts
from ..store.checkpoint.lines import HEADER_KEY
from ..store.reader import read_meta

__all__ = ["RunIndex", "RunCache", "signature"]

PROMPT_CHARS = 160
BATCH = 2048
BLOCK_BYTES = 8 << 20         # a run file up to this size is read while the page waits (about half a second)


def signature(path: str) -> tuple:
    """What changes when a run's file changes: (inode, mtime_ns, size), summed over a folder's files."""
    if os.path.isdir(path):
        ino, mtime, size = 0, 0, 0
        for name in sorted(os.listdir(path)):
            if name.endswith(".parquet"):
                st = os.stat(os.path.join(path, name))
                ino, mtime, size = ino ^ st.st_ino, max(mtime, st.st_mtime_ns), size + st.st_size
        return ino, mtime, size
    st = os.stat(path)
    return st.st_ino, st.st_mtime_ns, st.st_size


def _names(value) -> list:
    values = value if isinstance(value, list) else [value] if value not in (None, "") else []
    return [str(v) for v in values]


@dataclass
class RunIndex:
    path: str
    kind: str                                        # "jsonl" or "parquet"
    sig: tuple = ()
    partial: bool = False                            # the first rows only (``RunCache.peek``)
    end: int = 0                                     # JSONL: bytes read (complete lines only)
    offsets: list = field(default_factory=list)      # JSONL: where each row's line starts
    verdict: list = field(default_factory=list)      # "pass" / "fail" / "ungraded"
    reward: list = field(default_factory=list)
    tier: list = field(default_factory=list)
    tools: list = field(default_factory=list)
    faults: list = field(default_factory=list)
    judge: list = field(default_factory=list)
    prompt: list = field(default_factory=list)
    facts: dict = field(default_factory=dict)        # the pass@k fact columns, one value per row
    meta: dict = field(default_factory=dict)
    skipped: int = 0                                 # lines that were not rows (torn, invalid)
    _tally: object = None
    _curves: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.verdict)

    # ------------------------------------------------------------ reading
    def _add(self, rows: list) -> None:
        for row in rows:
            self.verdict.append("fail" if failed(row) else "pass" if graded(row) else "ungraded")
            reward = row.get("reward")
            self.reward.append(float(reward) if graded(row) else None)
            self.tier.append(str(row.get("tier") or "ordinary"))
            self.tools.append(_names(row.get("tools_used")))
            self.faults.append([str(k) for k in fault_kinds(row)])
            status = row.get("judge_status")
            self.judge.append(str(status) if status is not None else "none")
            prompt = row.get("prompt")
            self.prompt.append(prompt[:PROMPT_CHARS] if isinstance(prompt, str) else "")
        for name, values in pass_at_facts(rows).items():
            self.facts.setdefault(name, []).extend(values)
        self._tally, self._curves = None, {}

    def read_jsonl(self, fh, size: int, limit: int | None = None) -> None:
        """Read complete lines from ``self.end`` up to ``size`` (or ``limit`` rows); a torn last
        line waits for its newline."""
        fh.seek(self.end)
        batch: list = []
        pos = self.end
        while pos < size:
            line = fh.readline(max(1, size - pos))
            if not line.endswith(b"\n"):
                break                                 # still being written: read it next time
            start, pos = pos, pos + len(line)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                self.skipped += 1
                continue
            if not isinstance(row, dict):
                self.skipped += 1
                continue
            if HEADER_KEY in row:                     # a checkpoint's header line: not a row
                continue
            self.offsets.append(start)
            batch.append(row)
            if limit is not None and len(self.offsets) >= limit:
                break
            if len(batch) >= BATCH:
                self._add(batch)
                batch = []
        self._add(batch)
        self.end = pos

    def read_parquet(self, limit: int | None = None) -> None:
        from ..store.parquet.arrow_rows import ArrowRows
        self._arrow = ArrowRows.open(self.path)
        for batch in self._arrow.batches():
            self._add(batch[:limit] if limit is not None else batch)
            if limit is not None:
                break

    # ------------------------------------------------------------ rows
    def row(self, i: int) -> dict:
        """Row ``i`` as ``rows()`` shows it (hidden and ``_`` keys dropped), decoded alone."""
        if not 0 <= i < len(self):
            raise IndexError(f"row {i} is not in this run ({len(self)} rows)")
        if self.kind == "parquet":
            return export_row(self._arrow[i])
        with open(self.path, "rb") as fh:
            fh.seek(self.offsets[i])
            return export_row(json.loads(fh.readline()))

    # ------------------------------------------------------------ pass@k
    def tally(self):
        if self._tally is None:
            import pyarrow as pa
            from ..score.row_facts import facts_schema
            from ..score.pass_at.arrow import tally_table
            schema = pa.schema([facts_schema().field(name) for name, _ in PASS_AT_FACTS])
            columns = {name: self.facts.get(name, []) for name, _ in PASS_AT_FACTS}
            self._tally = tally_table(pa.Table.from_pydict(columns, schema=schema))
        return self._tally

    def pass_at(self, k: int | None = None):
        """The run's ``PassAt`` (k: the default, or a given k), computed once per k."""
        from ..score.pass_at.estimate import pass_at_of_tally
        if k not in self._curves:
            self._curves[k] = pass_at_of_tally(self.tally()) if k is None else \
                pass_at_of_tally(self.tally(), k=k, min_k=1)
        return self._curves[k]

    def copy(self) -> "RunIndex":
        """A copy to extend: pages still rendering from this one never see its lists change."""
        return RunIndex(self.path, self.kind, sig=self.sig, end=self.end, facts={k: list(v) for k, v in self.facts.items()},
                        meta=self.meta, skipped=self.skipped, offsets=list(self.offsets), verdict=list(self.verdict),
                        reward=list(self.reward), tier=list(self.tier), tools=list(self.tools),
                        faults=list(self.faults), judge=list(self.judge), prompt=list(self.prompt))

    @property
    def mode(self) -> str:
        return self.meta.get("mode") or "unknown"


class RunCache:
    """The runs read so far, by path: up to ``keep`` runs and ``keep_rows`` rows in all (the least
    recently used go first; the one just read always stays)."""

    def __init__(self, keep: int = 64, keep_rows: int = 500_000):
        self.keep, self.keep_rows = keep, keep_rows
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._path_locks: dict = {}
        self._reading: set = set()                   # runs being read in the background
        self._summaries: dict = {}                   # path -> (signature, the list page's numbers)
        self.block_bytes = BLOCK_BYTES

    def get(self, path: str) -> RunIndex:
        with self._lock:
            lock = self._path_locks.setdefault(path, threading.Lock())
        with lock:                                   # one reader per run; others wait and share it
            sig = signature(path)
            with self._lock:
                index = self._items.get(path)
            if index is None or index.sig != sig:
                index = self._read(path, sig, index)
            with self._lock:
                self._items[path] = index
                self._items.move_to_end(path)
                while len(self._items) > 1 and (len(self._items) > self.keep or
                                                sum(map(len, self._items.values())) > self.keep_rows):
                    self._items.popitem(last=False)
            return index

    def cached(self, path: str) -> RunIndex | None:
        with self._lock:
            return self._items.get(path)

    def peek(self, path: str, head: int = 100) -> RunIndex:
        """The run's index without waiting long: up to date when it is cached, or cheap to bring
        up to date (a grown checkpoint, a small file); else a read of the whole file starts in the
        background and this returns its first ``head`` rows (``partial=True``), read at once."""
        sig = signature(path)
        index = self.cached(path)
        if index is not None and index.sig == sig:
            return index
        if sig[2] <= self.block_bytes or (index is not None and index.sig[0] == sig[0] and sig[2] >= index.sig[2]):
            return self.get(path)
        first = self._read(path, sig, None, limit=head)    # before the whole read starts to share the CPU
        with self._lock:
            start = path not in self._reading
            self._reading.add(path)
        if start:
            threading.Thread(target=self._background, args=(path,), daemon=True,
                             name="whileai-view-read").start()
        return first

    def summary(self, path: str) -> dict | None:
        """``{"rows", "mode", "pass_at"}`` of the run for the list page, or None while a large run
        is read in the background. Kept apart from the indexes (a few numbers a run, never evicted),
        so a folder of more rows than the cache keeps is not read again on every visit of the list."""
        sig = signature(path)
        with self._lock:
            known = self._summaries.get(path)
        if known is not None and known[0] == sig:
            return known[1]
        index = self.peek(path, head=0)
        if index.partial:
            return None
        out = {"rows": len(index), "mode": index.mode, "pass_at": index.pass_at()}
        with self._lock:
            self._summaries[path] = (index.sig, out)
        return out

    def reading(self, path: str) -> bool:
        with self._lock:
            return path in self._reading

    def _background(self, path: str) -> None:
        try:
            self.get(path)
        except Exception:
            pass                                     # the next page that asks reads it and says why
        finally:
            with self._lock:
                self._reading.discard(path)

    @staticmethod
    def _read(path: str, sig: tuple, old: RunIndex | None, limit: int | None = None) -> RunIndex:
        raw = read_meta(path)
        meta, _ = checked_meta(raw, path)
        if "mode" not in meta:                       # a checkpoint's sidecar: the mode is in its run record
            record = raw.get("fingerprint")
            run = record.get("run") if isinstance(record, dict) else None
            if not isinstance(run, dict):
                run = {}
            if isinstance(run.get("mode"), str):
                meta = {**meta, "mode": run["mode"]}
        if os.path.isdir(path) or path.endswith(".parquet"):
            index = RunIndex(path, "parquet", sig, meta=meta, partial=limit is not None)
            index.read_parquet(limit)
            return index
        if old is not None and old.kind == "jsonl" and old.sig[0] == sig[0] and sig[2] >= old.end:   # grown
            index = old.copy()
        else:
            index = RunIndex(path, "jsonl", partial=limit is not None)
        index.sig, index.meta = sig, meta
        with open(path, "rb") as fh:
            index.read_jsonl(fh, sig[2], limit)
        return index
