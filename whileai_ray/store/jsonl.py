"""The JSONL checkpoint: every landed row on disk the moment it lands, resumable exactly once.

File layout (one JSON object per line, UTF-8, ``\\n`` terminated)::

    {<exported row>}
    {<exported row>}
    ...

Every line is one exported row exactly as ``rows()`` shows it: no header, no bookkeeping keys,
so any JSONL reader sees rows only. The run's ``fingerprint`` (tools, system prompt, agent;
see ``fingerprint.py``) and ``created`` stamp live in the sidecar ``<path>.meta.json``
(``checkpoint_meta.py``). A checkpoint written before the sidecar existed carries that dict as
its first line; it is still read (and resumed) as it is. A row's identity is recomputed from its content with
``schema.row_key``, so a resumed run (with a new run id) matches the rows already on disk.

``JsonlCheckpoint.open()`` loads what is on disk, refuses a file written by a different
setup (raising ``ValueError`` and leaving the file byte-identical), and repairs a torn last
line (a crash mid-write) by truncating to the last whole line, with a warning.
``append(rows)`` writes a batch in one ``write``, flushes and fsyncs, and never writes a key
twice. ``parse_jsonl`` is the shared, tolerant line parser also used by ``reader.load_rows``.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..core.identity import row_key
from .checkpoint_meta import read_sidecar, write_sidecar
from .disk_rows import DiskRows, gc_paused
from .fingerprint import fingerprint_mismatch
from .key_index import entry_line, index_path, line_crc, read_index, write_index

__all__ = ["JsonlCheckpoint", "JsonlContents", "parse_jsonl", "HEADER_KEY", "dump_line"]

log = logging.getLogger(__name__)

HEADER_KEY = "_whileai_ray_checkpoint"
_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str).encode


def dump_line(row: dict) -> bytes:
    """One row as a JSONL line (ASCII-escaped JSON, so any string round-trips)."""
    return (_ENCODE(row) + "\n").encode("ascii")


@dataclass
class JsonlContents:
    """What ``parse_jsonl`` found in a JSONL byte string."""

    rows: list = field(default_factory=list)
    header: dict | None = None
    warnings: list = field(default_factory=list)
    good_bytes: int = 0          # length of the prefix made only of whole, kept lines
    needs_newline: bool = False  # the last row was whole but had no trailing newline
    bad_lines: int = 0           # complete lines that were not JSON objects (skipped)


def parse_jsonl(data: bytes, source: str = "<jsonl>") -> JsonlContents:
    """Parse JSONL bytes: rows, the checkpoint header (if any) and warnings.

    A last segment without a trailing newline is kept when it is a whole JSON object and
    dropped (with a warning) when it is torn. Invalid complete lines are skipped and counted.
    """
    with gc_paused():
        scan = _scan(data, source, use_index=False)
    return JsonlContents(rows=[scan.decoded[i] for i in range(len(scan.keys))], header=scan.header,
                         warnings=scan.warnings, good_bytes=scan.good_bytes,
                         needs_newline=scan.needs_newline, bad_lines=scan.bad_lines)


_DECODE = json.JSONDecoder().decode


@dataclass
class _Scan:
    """What ``_scan`` found in a checkpoint's bytes (rows by span and key, not decoded)."""
    header: dict | None = None
    spans: list = field(default_factory=list)     # [(start, end)] of every row line
    keys: list = field(default_factory=list)      # row_key per span
    decoded: dict = field(default_factory=dict)   # span index -> row decoded while scanning
    entries: list = field(default_factory=list)   # [(end, crc, key)] for the .keys index
    warnings: list = field(default_factory=list)
    good_bytes: int = 0
    needs_newline: bool = False
    bad_lines: int = 0
    index_stale: bool = False


def _scan(data: bytes, path, use_index: bool = True, header: dict | None = None) -> _Scan:
    """Split JSONL bytes into row lines and key each one: from the ``.keys`` index beside
    ``path`` when the line's end offset and CRC match it, else by decoding the line (every line
    when ``use_index`` is False). A torn last line is dropped with a warning; a whole last line
    without its newline is kept (``needs_newline``); complete lines that are not JSON objects
    are skipped and counted."""
    out = _Scan(good_bytes=len(data), header=header)      # the sidecar's; an old file's first line wins
    if not data:
        return out
    cut = data.rfind(b"\n") + 1
    view = memoryview(data)
    first_end = data.find(b"\n")
    if first_end > 0 and data.find(HEADER_KEY.encode(), 0, first_end) >= 0:
        try:
            out.header = _DECODE(data[:first_end].decode("utf-8"))
        except ValueError:
            pass
    index = read_index(index_path(path), out.header.get("created")) if out.header and use_index else {}
    hits, pos, number = 0, 0, 0
    find, crc32 = data.find, line_crc
    while pos < cut:
        end = find(b"\n", pos)
        number += 1
        if end == pos:
            pos += 1
            continue
        crc = crc32(view[pos:end]) if use_index else 0       # only the index needs it
        hit = index.get(end)
        if hit is not None and hit[0] == crc:
            key = hit[1]
            hits += 1
        else:
            line = data[pos:end].decode("utf-8", "replace")
            try:
                obj = _DECODE(line)
            except ValueError:
                obj = None if line.strip() else ""
            if obj == "":
                pos = end + 1
                continue
            if type(obj) is not dict:
                out.bad_lines += 1
                out.warnings.append(f"{path}: line {number} is not a JSON object; skipped")
                pos = end + 1
                continue
            if HEADER_KEY in obj:
                out.header = out.header or obj
                pos = end + 1
                continue
            key = row_key(obj)
            out.decoded[len(out.keys)] = obj
        out.spans.append((pos, end))
        out.keys.append(key)
        out.entries.append((end, crc, key))
        pos = end + 1
    tail = data[cut:]
    if tail.strip():
        try:
            obj = json.loads(tail)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if HEADER_KEY in obj:
                out.header = out.header or obj
            else:
                key = row_key(obj)
                out.decoded[len(out.keys)] = obj
                out.spans.append((cut, len(data)))
                out.keys.append(key)
                out.entries.append((len(data), crc32(tail), key))
            out.needs_newline = True
        else:
            out.good_bytes = cut
            out.warnings.append(
                f"{path}: dropped a torn last line ({len(tail)} bytes, no trailing newline); "
                "it was being written when the run stopped and will be redone"
            )
    out.index_stale = hits != len(out.entries) or hits != len(index)
    return out


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class JsonlCheckpoint:
    """Append-only JSONL checkpoint keyed by ``row_key``; see the module docstring.

    Usage::

        ck = JsonlCheckpoint("runs/a.jsonl", fingerprint(tools, system_prompt, agent_name))
        done = ck.open()          # rows already on disk (resume), [] for a new file
        ck.append(batch)          # once per landed batch: one write, flush, fsync
        ck.close()
    """

    def __init__(self, path, fingerprint: dict):
        if not isinstance(fingerprint, dict):
            raise TypeError("JsonlCheckpoint(fingerprint=...) expects the dict from store.fingerprint()")
        self.path = Path(path)
        self.fingerprint = dict(fingerprint)
        self.warnings: list[str] = []
        self.duplicates_skipped = 0
        self.rows_written = 0
        self.rows_loaded = 0
        self._keys: set = set()
        self.header: dict | None = None
        self._fh = None
        self._ix = None                     # the .keys index (key_index.py), appended with each batch
        self._index_path = index_path(self.path)
        self._size = 0
        self._written_header: dict | None = None
        self._lock = threading.Lock()

    # -- open / resume -------------------------------------------------------------------
    def open(self) -> DiskRows:
        """Create parent dirs, load and verify an existing file, and get ready to append.

        Returns the rows already on disk (each key once) as ``DiskRows``: keys at once (from
        the ``.keys`` index, see ``key_index.py``), rows decoded when used. Raises
        ``ValueError`` when the file was written by a different setup; the file is not
        modified in that case.
        """
        if self._fh is not None:
            raise RuntimeError(f"checkpoint {self.path} is already open")
        if self.path.is_dir():
            raise ValueError(f"checkpoint={str(self.path)!r} is a folder; pass a file path such as "
                             f"{str(self.path / 'checkpoint.jsonl')!r}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = self.path.read_bytes() if self.path.exists() else b""
        side = read_sidecar(self.path, HEADER_KEY)
        with gc_paused():
            scan = _scan(data, self.path, header=side)
        if not scan.keys and scan.header is side:
            scan.header = None      # a sidecar left beside an empty or missing rows file speaks for nothing
        self._verify(scan.header, bool(scan.keys), scan.bad_lines)  # raises before anything is written
        if scan.good_bytes < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(scan.good_bytes)
                fh.flush()
                os.fsync(fh.fileno())
        self.warnings.extend(scan.warnings)
        for message in scan.warnings:
            log.warning(message)
        self._fh = open(self.path, "ab")
        if scan.needs_newline:
            self._fh.write(b"\n")
        if scan.good_bytes == 0 and not scan.keys:
            self._write_header()
            scan.index_stale = True
        self.header = scan.header or self._written_header
        created = (self.header or {}).get("created")
        if scan.index_stale:
            write_index(self._index_path, created, scan.entries)
        self._ix = open(self._index_path, "ab")
        self._fh.flush()
        self._size = self._fh.seek(0, os.SEEK_END)
        rows = self._kept(scan, data)
        self.rows_loaded = len(rows)
        return rows

    def _kept(self, scan, data: bytes) -> DiskRows:
        """Each key once (the first line wins); duplicates counted and said."""
        keys, spans, kept_keys, decoded = self._keys, [], [], {}
        for i, key in enumerate(scan.keys):
            if key in keys:
                self.duplicates_skipped += 1
                continue
            keys.add(key)
            if i in scan.decoded:
                decoded[len(kept_keys)] = scan.decoded[i]
            spans.append(scan.spans[i])
            kept_keys.append(key)
        if len(kept_keys) < len(scan.keys):
            self.warnings.append(f"{self.path}: {len(scan.keys) - len(kept_keys)} duplicate rows on disk ignored")
        return DiskRows(data, spans, kept_keys, decoded)

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
            what = ", ".join(differ)
            raise ValueError(
                f"checkpoint={str(self.path)!r} was written by a different run: the {what} differ. "
                "The file was left untouched. Use a new checkpoint path, or resume with the same "
                "tools, system prompt and agent that wrote it."
            )

    def _write_header(self) -> None:
        """The run's identity, in the sidecar (never a line of the rows file), before any row."""
        header = {HEADER_KEY: 1, "fingerprint": self.fingerprint,
                  "created": _dt.datetime.now(_dt.timezone.utc).isoformat()}
        self._written_header = header
        write_sidecar(self.path, header)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        _fsync_dir(self.path.parent)

    def _take_new(self, rows) -> list[tuple]:
        """``[(row, key)]`` for the rows whose key this checkpoint has not seen (now marked
        seen); the others are counted in ``duplicates_skipped``."""
        keys = self._keys
        kept = []
        for row in rows:
            key = row_key(row)
            if key in keys:
                self.duplicates_skipped += 1
                continue
            keys.add(key)
            kept.append((row, key))
        return kept

    # -- append --------------------------------------------------------------------------
    def has(self, row: dict) -> bool:
        """True when a row with the same ``row_key`` is already in the checkpoint."""
        return row_key(row) in self._keys

    def append(self, rows) -> int:
        """Write the rows whose key is new (one write, flush, fsync); return how many."""
        if self._fh is None:
            raise RuntimeError(f"checkpoint {self.path} is not open; call open() first")
        with self._lock:
            pairs = self._take_new(rows)
            if not pairs:
                return 0
            chunks = [dump_line(row) for row, _key in pairs]
            self._fh.write(b"".join(chunks))
            self._fh.flush()
            os.fsync(self._fh.fileno())
            entries, pos = [], self._size
            for chunk, (_row, key) in zip(chunks, pairs):
                pos += len(chunk)
                entries.append(entry_line(pos - 1, line_crc(chunk[:-1]), key))
            self._size = pos
            self._ix.write(b"".join(entries))   # after the fsync: the index is never ahead
            self._ix.flush()
            self.rows_written += len(chunks)
            return len(chunks)

    def close(self) -> None:
        """Flush and close the file (safe to call twice)."""
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
            if self._ix is not None:
                self._ix.close()
                self._ix = None

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
