"""The lines of a JSONL checkpoint: writing one row, scanning many.

``dump_line(row)`` is the one row encoder (strict JSON, see ``strict_json.py``). ``_scan``
splits a checkpoint's bytes into row lines and keys each one (a 128-bit digest of its
``row_key``): a whole group of lines at a time from the ``.keys`` index when the group vouches
for its bytes (``checkpoint/key_index.py``), else line by line, decoding it; ``scan_file`` does the same
reading the file a block at a time (a million-row checkpoint is 2 GB: its bytes are never all
held); ``parse_jsonl`` is the tolerant parser ``wai.load`` uses.

Tampering: when the index is sound (``key_index.sound_groups``) and a line it did not vouch for
as part of a group has a CRC no index record holds, and it comes before every indexed row was
found, it was edited or inserted after it was written (a same-length edit with its mtime set
back, a forged line placed first). It is left out of the rows (``_Scan.untrusted``), so its unit
is played again, and a warning names it by line and key. An index without row CRCs (older) or
a damaged one vouches for nothing: every line is decoded and trusted, as before.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ...core.identity import row_key
from ...core.strict_json import dumps, gc_paused
from .index_trust import IndexTrust as _Index, untrusted_warning
from .key_index import GROUP_MAX, RECORD, digest_pairs, index_path, read_index, records_crc, sound_groups
from .key_seal import sealed_records
from ..atomic import StrPath
from ..row_key_set import key_digest

__all__ = ["SHARD_KEY", "HEADER_KEY", "dump_line", "JsonlContents", "parse_jsonl"]

SHARD_KEY = "_shard"            # a stub's pointer to its row: [shard file, start, end, crc] (shards/storage.py)

HEADER_KEY = "_whileai_ray_checkpoint"


def dump_line(row: dict) -> bytes:
    """One row as a JSONL line: strict, ASCII-escaped JSON (``strict_json.py``: NaN/Infinity
    become null and lone surrogates U+FFFD, each named in the row's ``json_repairs``)."""
    return (dumps(row) + "\n").encode("ascii")


@dataclass
class JsonlContents:
    """What ``parse_jsonl`` found in a JSONL byte string."""

    rows: list[dict] = field(default_factory=list)
    header: dict | None = None
    warnings: list[str] = field(default_factory=list)
    good_bytes: int = 0          # length of the prefix made only of whole, kept lines
    needs_newline: bool = False  # the last row was whole but had no trailing newline
    bad_lines: int = 0           # complete lines that were not JSON objects (skipped)


def parse_jsonl(data: bytes, source: str = "<jsonl>") -> JsonlContents:
    """Parse JSONL bytes: rows, the checkpoint header (if any) and warnings.

    A last segment without a trailing newline is kept when it is a whole JSON object and
    dropped (with a warning) when it is torn. Invalid complete lines are skipped and counted.
    When ``source`` is a checkpoint's path (its sidecar beside it), the rows its key index
    disowns (``_disowned``: edited or inserted since they were written) are left out, with the
    warning that names them, as a resume leaves them out.
    """
    with gc_paused():
        scan = _scan(data, source, use_index=False)
        drop = _disowned(data, source, scan)
    return JsonlContents(rows=[scan.decoded[i] for i in range(scan.n) if i not in drop], header=scan.header,
                         warnings=scan.warnings, good_bytes=scan.good_bytes,
                         needs_newline=scan.needs_newline, bad_lines=scan.bad_lines)


def _disowned(data: bytes, source: str, scan: _Scan) -> set[int]:
    """The row numbers of ``scan`` (a plain scan of a checkpoint's bytes) its key index disowns;
    their warning is added to ``scan.warnings``. Empty unless ``source`` is a checkpoint with a
    sidecar and a sound index of this format."""
    import os
    if not scan.n or not isinstance(source, str) or not os.path.isfile(source):
        return set()
    from .meta import read_sidecar
    side = read_sidecar(source, HEADER_KEY)
    recs = read_index(index_path(source), side.get("created")) if side is not None else None
    if recs is None or not len(recs) or not sound_groups(recs):
        return set()                     # nothing to check against: no second pass (and no decoding)
    checked = _scan(data, source, use_index=True, header=side)
    if not checked.untrusted:
        return set()
    scan.warnings.append(untrusted_warning(source, checked.untrusted))
    kept = set(checked.records["start"].tolist())
    return {i for i, start in enumerate(scan.records["start"].tolist()) if start not in kept}


_DECODE = json.JSONDecoder().decode
_NL = ord("\n")


@dataclass
class _Scan:
    """What ``_scan`` found in a checkpoint's bytes: its rows by line span and key digest (as
    index records, ``key_index.RECORD``, grouped), only the lines the index did not vouch for
    decoded."""
    header: dict | None = None
    records: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=RECORD))
    decoded: dict[int, dict] = field(default_factory=dict)   # row number -> row decoded while scanning
    warnings: list[str] = field(default_factory=list)
    good_bytes: int = 0
    needs_newline: bool = False
    bad_lines: int = 0
    index_stale: bool = False
    size: int = 0                                 # bytes scanned (the file's size when it was read)
    sealed: bool = False                          # the index taken as is: the file is as a clean close left it
    untrusted: list[tuple[int, tuple]] = field(default_factory=list)  # [(line number, row_key)] the sound index disowns

    @property
    def n(self) -> int:
        return len(self.records)

    @property
    def spans(self) -> list[tuple[int, int]]:
        return list(zip(self.records["start"].tolist(), self.records["end"].tolist()))


class _Groups:
    """The records of a scan as they come: whole groups the index vouched for, and groups built
    from lines decoded one by one (contiguous lines, their CRC run on as they come)."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.built = 0                  # rows keyed by decoding (the index did not vouch for them)
        self._rows: list[tuple[int, int, int, int, int]] = []   # [(start, end, a, b, row crc)] of the open built group
        self._crc = 0

    def add_group(self, recs: np.ndarray) -> None:
        self.close()
        self.parts.append(recs)
        self.count += len(recs)

    def add_line(self, start: int, end: int, a: int, b: int, data: bytes | memoryview,
                 row_crc: int | None = None) -> None:
        """A decoded row's line (``data``: its bytes, newline included; ``row_crc``: their CRC)."""
        if self._rows and (start != self._rows[-1][1] + 1 or len(self._rows) >= GROUP_MAX):
            self.close()
        self._crc = zlib.crc32(data, self._crc)
        self._rows.append((start, end, a, b, zlib.crc32(data) if row_crc is None else row_crc))
        self.count += 1
        self.built += 1

    def close(self) -> None:
        if not self._rows:
            return
        recs = np.zeros(len(self._rows), dtype=RECORD)
        cols = list(zip(*self._rows))
        recs["start"], recs["end"] = cols[0], cols[1]
        recs["a"] = np.asarray(cols[2], dtype=np.uint64)
        recs["b"] = np.asarray(cols[3], dtype=np.int64)
        recs["row"] = np.asarray(cols[4], dtype=np.uint32)
        recs["n"][-1] = len(recs)
        recs["crc"][-1] = zlib.crc32(digest_pairs(recs), self._crc)
        recs["rcrc"][-1] = records_crc(recs)
        self.parts.append(recs)
        self._rows, self._crc = [], 0

    def records(self) -> np.ndarray:
        self.close()
        return np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=RECORD)


def _scan(data: bytes, path: StrPath, use_index: bool = True, header: dict | None = None) -> _Scan:
    """Split JSONL bytes into row lines and key each one: a group at a time from the ``.keys``
    index beside ``path`` when the group vouches for its bytes, else by decoding each line
    (every line when ``use_index`` is False). A torn last line is dropped with a warning; a
    whole last line without its newline is kept (``needs_newline``); complete lines that are
    not JSON objects are skipped and counted. ``header``: the checkpoint's sidecar
    (``checkpoint/meta.py``); the first line of a checkpoint written before the sidecar existed
    wins over it."""
    return _scan_blocks([(data, len(data))] if data else [], path, use_index, header)


def scan_file(path: StrPath, use_index: bool = True, block: int = 1 << 25, header: dict | None = None) -> _Scan:
    """``_scan`` of the file at ``path``, read ``block`` bytes at a time. With the checkpoint's
    sidecar ``header``, the index is read first and each read ends where an index group ends (when
    one ends inside the next ``block`` bytes), so no block is copied to join it to the next; when
    the seal of a clean close still holds (``checkpoint/key_seal.py``), the index is taken as is, unread bytes."""
    recs: np.ndarray | None
    if header and use_index:
        sealed = sealed_records(path, header.get("created"))      # checkpoint/key_seal.py: no byte read
        if sealed is not None:
            recs, size = sealed
            ix = _Index(recs)                   # whole groups, one after another, from byte 0 to the end
            if ix.formed.all() and ix.joined[:-1].all() and ix.gstart[0] == 0 and ix.gend[-1] + 1 == size:
                return _Scan(header=header, records=recs, good_bytes=size, size=size, sealed=True)
    recs = read_index(index_path(path), header.get("created")) if header and use_index else None
    cuts = (recs["end"][recs["n"] > 0].astype(np.int64) + 1) if recs is not None else np.zeros(0, np.int64)

    def blocks() -> Iterator[tuple[bytearray, int]]:
        try:
            fh = open(path, "rb", buffering=0)
        except FileNotFoundError:
            return
        # one buffer, read into again and again: a fresh 32 MB bytes a read costs its page faults
        # (two thirds of reading a cached 2 GB checkpoint); a block is (buffer, bytes in it)
        buf = bytearray(block)
        with fh:
            pos = 0
            while True:
                j = int(np.searchsorted(cuts, pos + block, side="right")) - 1
                size = int(cuts[j]) - pos if j >= 0 and cuts[j] > pos else block
                view = memoryview(buf)
                got = 0
                while got < size:                           # a short read: the rest of this block
                    more = fh.readinto(view[got:size])
                    if not more:
                        break
                    got += more
                del view
                if not got:
                    return
                pos += got
                yield buf, got
    return _scan_blocks(blocks(), path, use_index, header, recs)


def _scan_blocks(blocks: Iterable[tuple[bytes | bytearray, int]], path: StrPath, use_index: bool,
                 header: dict | None = None, recs: np.ndarray | None | Literal[False] = False) -> _Scan:
    """The scan over consecutive blocks of the file: whole lines (and whole index groups) of
    each are scanned with their offsets in the file; what a block's end cuts waits for the next.
    ``recs``: the index ``scan_file`` read for the sidecar's header (None: none), False: not read."""
    out = _Scan(header=header)
    buf, base, index, seen_first = b"", 0, _Index(None), False
    groups, state = _Groups(), {"number": 0}
    for block in blocks:
        data, n = block                                  # (bytes, how many of them are this block's)
        if buf:                                           # (a reused buffer is only read up to n)
            data = buf + bytes(memoryview(data)[:n])
            n = len(data)
        if not seen_first:
            first_end = data.find(b"\n", 0, n)
            if first_end < 0:
                buf = bytes(data[:n])
                continue                                  # the first line is longer than a block
            seen_first = True
            if first_end > 0 and data.find(HEADER_KEY.encode(), 0, first_end) >= 0:
                try:
                    out.header = _DECODE(data[:first_end].decode("utf-8"))
                except (ValueError, RecursionError):
                    pass
            if out.header and use_index:            # (scan_file read it already when the sidecar named it)
                if recs is not False and header is not None and out.header.get("created") == header.get("created"):
                    index = _Index(recs)
                else:
                    index = _Index(read_index(index_path(path), out.header.get("created")))
        stop = _scan_lines(data, data.rfind(b"\n", 0, n) + 1, base, index, path, out, groups, state, final=False)
        buf, base = bytes(data[stop:n]), base + stop
    if buf:                                               # what is left: whole lines, then maybe a torn one
        stop = _scan_lines(buf, buf.rfind(b"\n") + 1, base, index, path, out, groups, state, final=True)
        buf, base = buf[stop:], base + stop
    total = base + len(buf)
    out.good_bytes = out.size = total
    tail = buf
    if tail.strip():
        try:
            obj = json.loads(tail)
        except (ValueError, RecursionError):
            obj = None
        if isinstance(obj, dict):
            if HEADER_KEY in obj:
                out.header = out.header or obj
            elif not index.trusts(zlib.crc32(tail + b"\n"), len(tail) + 1):
                out.untrusted.append((state["number"] + 1, row_key(obj)))
            else:
                a, b, _ = key_digest(row_key(obj))
                out.decoded[groups.count] = obj
                groups.add_line(base, total, a, b, tail + b"\n")      # its newline is written on open
            out.needs_newline = True
        else:
            out.good_bytes = base
            out.warnings.append(
                f"{path}: dropped a torn last line ({len(tail)} bytes, no trailing newline); "
                "it was being written when the run stopped and will be redone"
            )
    out.records = groups.records()
    out.index_stale = (index.recs is None or groups.built > 0 or index.used != index.groups
                       or bool(out.untrusted))
    if out.untrusted:
        out.warnings.append(untrusted_warning(path, out.untrusted))
    return out


def _scan_lines(data: bytes | bytearray, cut: int, base: int, index: _Index, path: StrPath, out: _Scan,
                groups: _Groups, state: dict[str, int], final: bool) -> int:
    """Scan the whole lines of ``data[:cut]`` (``base``: where ``data`` starts in the file);
    returns where it stopped: ``cut``, or (not ``final``) the start of an index group that runs
    past ``cut`` (the next block completes it)."""
    view = memoryview(data)
    number, pos = state["number"], 0
    find, by_start, recs = data.find, index.by_start, index.recs
    while pos < cut:
        k = by_start.get(base + pos) if by_start else None
        if k is not None:
            if int(index.gend[k]) - base >= cut and not final:
                break                                     # the group is cut by the block's end
            run = index.check(view, base, cut, k)
            if run:
                assert recs is not None          # a group found by its start: the index has records
                lo, hi = int(index.first[k]), int(index.last[k + run - 1]) + 1
                groups.add_group(recs[lo:hi])
                index.used += run
                number += hi - lo
                pos = int(index.gend[k + run - 1]) - base + 1
                continue
        end = find(b"\n", pos)
        number += 1
        if end == pos:
            pos += 1
            continue
        line = data[pos:end].decode("utf-8", "replace")
        try:
            obj = _DECODE(line)
        except (ValueError, RecursionError) as exc:      # RecursionError: a crafted line nested too deep
            obj = exc if line.strip() else ""
        if obj == "":
            pos = end + 1
            continue
        if type(obj) is not dict:
            out.bad_lines += 1
            out.warnings.append(f"{path}: line {number} is " + ("nested too deep to decode; skipped as corrupt"
                                if isinstance(obj, RecursionError) else "not a JSON object; skipped"))
            pos = end + 1
            continue
        if HEADER_KEY in obj:
            out.header = out.header or obj
            pos = end + 1
            continue
        key = row_key(obj)
        data_crc = zlib.crc32(view[pos:end + 1])
        if not index.trusts(data_crc, end + 1 - pos):
            out.untrusted.append((number, key))          # edited or inserted since it was written
            pos = end + 1
            continue
        a, b, _ = key_digest(key)
        out.decoded[groups.count] = obj
        groups.add_line(base + pos, base + end, a, b, view[pos:end + 1], data_crc)
        pos = end + 1
    state["number"] = number
    return pos
