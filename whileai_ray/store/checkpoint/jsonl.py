"""The JSONL checkpoint: every landed row on disk the moment it lands, resumable exactly once.

File layout (one JSON object per line, UTF-8, ``\\n`` terminated)::

    {<exported row>}
    {<exported row>}
    ...

Every line is one exported row exactly as ``rows()`` shows it: no header, no bookkeeping keys,
so any JSONL reader (pandas, DuckDB, polars) sees rows only. The run's ``fingerprint`` (tools,
system prompt, agent; see ``checkpoint/fingerprint.py``) and ``created`` stamp live in the sidecar
``<path>.meta.json`` (``checkpoint/meta.py``). A checkpoint written before the sidecar existed
carries that dict as its first line; it is still read, resumed and refused by it. A row's identity is recomputed from its content with
``schema.row_key``, so a resumed run (with a new run id) matches the rows already on disk.

``JsonlCheckpoint.open()`` takes the checkpoint's lock (``checkpoint/lock.py``: one writer
at a time, a second run fails naming the first), loads what is on disk, refuses a file written by a different
setup (raising ``ValueError`` and leaving the file byte-identical), and repairs a torn last
line (a crash mid-write) by truncating to the last whole line, with a warning.
``append(rows)`` writes a batch in one ``write``, flushes and fsyncs, and never writes a key
twice, and a failed write (a full disk) leaves no torn line. A file with no header whose lines
are not rows of a run is refused untouched. The line encoder and scanner live in
``checkpoint/lines.py`` (re-exported here).

The checkpoint is known by its real path (``atomic.real_path``): a symlink to it, or another
spelling of its path, names the same file, the same lock and the same sidecars, so two runs on
two names of one file are refused like two runs on one name. Its own files beside it (sidecar,
key index, seal, lock, plan, shards) are plain files the run creates; a symlink found at one of
them was planted and is refused (``run_files.refuse_planted_links``), never written through.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import threading
from collections.abc import Iterable, Sequence
from io import FileIO
from pathlib import Path

from ...core.identity import key_string, row_key
from ...core.strict_json import gc_paused
from ..atomic import StrPath, fsync_dir, open_nofollow, real_path, write_error
from .lock import CheckpointLock
from .meta import read_sidecar, write_sidecar
from .disk_rows import DiskRows
from .edge_lines import Digest
from .fingerprint import fingerprint_mismatch, mismatch_message, with_run_record
from .lines import HEADER_KEY, JsonlContents, _Scan, dump_line, parse_jsonl, scan_file
from ..row_key_set import RowKeySet, key_digest
from .key_index import index_path, records_for, write_index
from .key_seal import unseal, write_seal

__all__ = ["JsonlCheckpoint", "JsonlContents", "parse_jsonl", "HEADER_KEY", "dump_line"]

log = logging.getLogger(__name__)

_ROW_FIELDS = (("prompt", str), ("steps", list), ("final_text", str))


def _refuse_foreign_rows(path: StrPath, decoded: dict[int, dict]) -> None:
    """A file without a checkpoint header is resumed only when every line is a row a run
    wrote (a ``save()`` file, say); chat transcripts or any other JSONL are refused untouched."""
    for row in decoded.values():
        missing = [name for name, kind in _ROW_FIELDS if not isinstance(row.get(name), kind)]
        if missing:
            keys = ", ".join(sorted(map(str, row))[:6]) or "none"
            raise ValueError(
                f"checkpoint={str(path)!r} is not a whileai_ray checkpoint: it has no checkpoint header "
                f"and holds lines that are not rows of a run (no {'/'.join(missing)}; keys: {keys}). "
                "The file was left untouched; pass a new checkpoint path.")


class JsonlCheckpoint:
    """Append-only JSONL checkpoint keyed by ``row_key``; see the module docstring.

    Usage::

        ck = JsonlCheckpoint("runs/a.jsonl", fingerprint(tools, system_prompt, agent_name))
        done = ck.open()          # rows already on disk (resume), [] for a new file
        ck.append(batch)          # once per landed batch: one write, flush, fsync
        ck.close()
    """

    def __init__(self, path: StrPath, fingerprint: dict, *, run_id: str | None = None, caller: dict | None = None,
                 lock: bool = True) -> None:
        if not isinstance(fingerprint, dict):
            raise TypeError("JsonlCheckpoint(fingerprint=...) expects the dict from store.fingerprint()")
        self.path = Path(real_path(path))        # one file, one name: its lock and sidecars hang off it
        # one writer at a time (checkpoint/lock.py); run_id and caller describe this run to a second one
        self.lock = CheckpointLock(self.path, run_id, caller) if lock else None
        self.fingerprint = dict(fingerprint)
        self.warnings: list[str] = []
        self.duplicates_skipped = 0
        self.rows_written = 0
        self._indexed = 0                   # records in the .keys index (what a seal vouches for)
        self.rows_loaded = 0
        self._keys = RowKeySet()                # every row_key in the file (128-bit digests)
        self.header: dict | None = None
        self._fh: FileIO | None = None
        self._ix: FileIO | None = None      # the .keys index (checkpoint/key_index.py), appended with each batch
        self._index_path = index_path(self.path)
        self._size = 0
        self._written_header: dict | None = None
        self._lock = threading.Lock()

    # -- open / resume -------------------------------------------------------------------
    def open(self) -> DiskRows:
        """Create parent dirs, load and verify an existing file, and get ready to append.

        Returns the rows already on disk (each key once) as ``DiskRows``: keys at once (from
        the ``.keys`` index, see ``checkpoint/key_index.py``), rows decoded when used. Raises
        ``ValueError`` when the file was written by a different setup; the file is not
        modified in that case.
        """
        if self._fh is not None:
            raise RuntimeError(f"checkpoint {self.path} is already open")
        if self.path.is_dir():
            raise ValueError(f"checkpoint={str(self.path)!r} is a folder; pass a file path such as "
                             f"{str(self.path / 'checkpoint.jsonl')!r}")
        from ..run_files import refuse_planted_links
        refuse_planted_links(self.path)                   # never write through a planted symlink
        self.path.parent.mkdir(parents=True, exist_ok=True)
        scan = self._read_and_verify()                   # raises before anything is written
        if self.lock is not None:
            self.lock.acquire()                          # CheckpointBusy: another run appends here
            try:
                if self.path.exists() and self.path.stat().st_size != scan.size:
                    scan = self._read_and_verify()           # it moved while we waited: read it again
            except BaseException:
                self.lock.release()
                raise
        try:
            return self._open_locked(scan)
        except BaseException:
            if self.lock is not None:
                self.lock.release()
            raise

    def _read_and_verify(self) -> _Scan:
        """Scan the file a block at a time (its bytes are never all held: rows are read back by
        offset when used, ``DiskRows``)."""
        side = read_sidecar(self.path, HEADER_KEY)
        with gc_paused():
            scan = scan_file(self.path, header=side)
        if not scan.n and scan.header is side:
            scan.header = None      # a sidecar left beside an empty or missing rows file speaks for nothing
        self._verify(scan.header, bool(scan.n), scan.bad_lines)
        if scan.header is None:
            _refuse_foreign_rows(self.path, scan.decoded)
        return scan

    def _open_locked(self, scan: _Scan) -> DiskRows:
        if scan.good_bytes < scan.size:
            with open(self.path, "r+b") as fh:
                fh.truncate(scan.good_bytes)
                fh.flush()
                os.fsync(fh.fileno())
        self.warnings.extend(scan.warnings)
        for message in scan.warnings:
            log.warning(message)
        unseal(self.path)                                # it may change from now on (checkpoint/key_seal.py)
        self._fh = rows_file = open(self.path, "ab", buffering=0)   # unbuffered: a failed write leaves nothing behind
        self._size = rows_file.seek(0, os.SEEK_END)
        if scan.needs_newline:
            self._write(b"\n")
        if scan.good_bytes == 0 and not scan.n:
            self._write_header()
            scan.index_stale = True
        self.header = scan.header or self._written_header
        upgraded = with_run_record(self.header, self.fingerprint)    # a header older than the run record
        if upgraded is not None and read_sidecar(self.path, HEADER_KEY) is not None:
            write_sidecar(self.path, upgraded)                      # learns it: checked from now on
            self.header = upgraded
        created = (self.header or {}).get("created")
        if scan.index_stale:
            if scan.n:
                self.warnings.append(f"{self._index_path}: the key index was missing, stale or tampered with; "
                                     f"rebuilt from the {scan.n} rows of the checkpoint")
            write_index(self._index_path, created, scan.records)
        self._ix = open(open_nofollow(self._index_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                      what="the checkpoint's key index"), "ab", buffering=0)
        self._indexed = scan.n
        rows = self._kept(scan)
        self.rows_loaded = len(rows)
        return rows

    def _kept(self, scan: _Scan) -> DiskRows:
        """Each key once (the first line wins); duplicates counted and said. Keys are the index's
        digests; a row is read only when its first 64 bits are another row's."""
        recs = scan.records
        every = DiskRows.at(self.path, recs["start"], recs["end"], recs["a"], recs["b"], scan.decoded)
        self._keys, first = RowKeySet.first_of_digests(recs["a"], recs["b"],
                                                       lambda i: key_string(every.key_of(i)))
        if len(first) == scan.n:
            return every
        every.close()
        self.duplicates_skipped += scan.n - len(first)
        at = {int(i): j for j, i in enumerate(first.tolist())}
        decoded = {at[i]: row for i, row in scan.decoded.items() if i in at}
        self.warnings.append(f"{self.path}: {scan.n - len(first)} duplicate rows on disk ignored")
        kept = recs[first]
        return DiskRows.at(self.path, kept["start"], kept["end"], kept["a"], kept["b"], decoded)

    def _verify(self, header: dict | None, has_rows: bool, bad_lines: int) -> None:
        if header is None:
            if bad_lines and not has_rows:
                raise ValueError(
                    f"checkpoint={str(self.path)!r} exists but is not a JSONL checkpoint (no valid rows); "
                    "pass a new checkpoint path or remove the file"
                )
            if has_rows:
                self.warnings.append(f"{self.path}: no whileai_ray checkpoint header; "
                                     "could not verify that the same tools, system prompt and agent wrote it")
            return
        stored = header.get("fingerprint") or {}
        differ = fingerprint_mismatch(stored, self.fingerprint)
        if differ:
            raise ValueError(mismatch_message(self.path, differ))   # names what differs, how to start fresh

    def _write_header(self) -> None:
        header = {HEADER_KEY: 1, "fingerprint": self.fingerprint,
                  "created": _dt.datetime.now(_dt.timezone.utc).isoformat()}
        self._written_header = header
        write_sidecar(self.path, header)        # the run's identity, beside the rows, never a line of them
        fsync_dir(self.path.parent)

    def _write(self, data: bytes) -> None:
        """Append ``data`` whole and fsync it, or (disk full, I/O error) cut the file back to
        where it was and raise an OSError that names the checkpoint: no torn line is left."""
        view, done = memoryview(data), 0
        fh = self._fh
        assert fh is not None, "_write: only while the checkpoint is open (open() set the file)"
        try:
            while done < len(view):
                done += fh.write(view[done:])
            os.fsync(fh.fileno())
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fh.fileno(), self._size)
            raise write_error(self.path, exc, "appending to the checkpoint") from exc
        self._size += len(data)

    def _take_new(self, rows: list[dict], digests: Sequence[Digest | None] | None
                  ) -> list[tuple[int, Digest]]:
        """``[(i, (a, b, key_string))]`` for the rows whose key this checkpoint has not seen
        (nor an earlier row of ``rows``); the others are counted in ``duplicates_skipped``.
        ``digests[i]``, when given, is row ``i``'s ``key_digest`` made where it was built.
        Nothing is marked seen: ``append`` does that once the rows are on disk."""
        keys = self._keys
        batch: set[str] = set()
        kept = []
        for i, row in enumerate(rows):
            digest = (digests[i] if digests is not None else None) or key_digest(row_key(row))
            if digest[2] in batch or keys.has_digest(*digest):
                self.duplicates_skipped += 1
                continue
            batch.add(digest[2])
            kept.append((i, digest))
        return kept

    # -- append --------------------------------------------------------------------------
    def has(self, row: dict) -> bool:
        """True when a row with the same ``row_key`` is already in the checkpoint."""
        return row_key(row) in self._keys

    def append(self, rows: Iterable[dict]) -> int:
        """Write the rows whose key is new (one write, flush, fsync); return how many."""
        return len(self.append_new(rows))

    def append_new(self, rows: Iterable[dict]) -> list[dict]:
        """``append``, returning the rows written (those whose key was new), in order."""
        return [row for row, _line, _digest in self.append_lines(list(rows))]

    def append_lines(self, rows: list[dict], lines: Sequence[bytes | None] | None = None,
                     digests: Sequence[Digest | None] | None = None) -> list[tuple[dict, bytes, Digest]]:
        """``append_new``, as ``(row, line, digest)`` for each row written. ``lines[i]`` and
        ``digests[i]``, when given, are row ``i``'s ``dump_line`` and ``key_digest(row_key(...))``
        made where the row was built (``edge_lines.py``): written as they are, not made again."""
        if self._fh is None:
            raise RuntimeError(f"checkpoint {self.path} is not open; call open() first")
        with self._lock:
            pairs = self._take_new(rows, digests)
            if not pairs:
                return []
            chunks = [(lines[i] if lines is not None else None) or dump_line(rows[i]) for i, _d in pairs]
            start = self._size
            data = b"".join(chunks)
            self._write(data)                        # raises with nothing written and nothing marked
            for _i, digest in pairs:
                self._keys.add_digest(*digest)
            if self._ix is not None:             # after the fsync: the index is never ahead
                try:
                    self._ix.write(records_for(chunks, start, [d[0] for _i, d in pairs],
                                               [d[1] for _i, d in pairs], data).tobytes())
                    self._indexed += len(chunks)
                except OSError:                  # an index behind its checkpoint is rebuilt on open
                    self._ix.close()
                    self._ix = None
            self.rows_written += len(chunks)
            return [(rows[i], line, digest) for (i, digest), line in zip(pairs, chunks)]

    def close(self) -> None:
        """Flush and close the file (safe to call twice)."""
        with self._lock:
            whole = self._fh is not None and self._ix is not None      # the index kept up with every batch
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            if self._ix is not None:
                self._ix.close()
                self._ix = None
            if whole and self.header and len(self._keys):
                try:
                    write_seal(self.path, self.header.get("created"), self._indexed)
                except OSError:                  # no seal: the next open verifies every byte
                    unseal(self.path)
            if self.lock is not None:
                self.lock.release()

    def __enter__(self) -> JsonlCheckpoint:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
