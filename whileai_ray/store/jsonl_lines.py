"""The lines of a JSONL checkpoint: writing one row, scanning many.

``dump_line(row)`` is the one row encoder (strict JSON, see ``strict_json.py``). ``_scan``
splits a checkpoint's bytes into row lines and keys each one, from the ``.keys`` index when an
entry vouches for the line (``key_index.py``), else by decoding it; ``scan_file`` does the same
reading the file a block at a time (a million-row checkpoint is 2 GB: its bytes are never all
held); ``parse_jsonl`` is the tolerant parser ``wai.load`` uses.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..core.identity import row_key
from ..core.strict_json import dumps
from .disk_rows import gc_paused
from .key_index import entry_crc, index_path, line_crc, read_index

__all__ = ["HEADER_KEY", "dump_line", "JsonlContents", "parse_jsonl"]

HEADER_KEY = "_whileai_ray_checkpoint"


def dump_line(row: dict) -> bytes:
    """One row as a JSONL line: strict, ASCII-escaped JSON (``strict_json.py``: NaN/Infinity
    become null and lone surrogates U+FFFD, each named in the row's ``json_repairs``)."""
    return (dumps(row) + "\n").encode("ascii")


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
    size: int = 0                                 # bytes scanned (the file's size when it was read)


def _scan(data: bytes, path, use_index: bool = True, header: dict | None = None) -> _Scan:
    """Split JSONL bytes into row lines and key each one: from the ``.keys`` index beside
    ``path`` when the line's end offset and CRC match it, else by decoding the line (every line
    when ``use_index`` is False). A torn last line is dropped with a warning; a whole last line
    without its newline is kept (``needs_newline``); complete lines that are not JSON objects
    are skipped and counted. ``header``: the checkpoint's sidecar (``checkpoint_meta.py``); the
    first line of a checkpoint written before the sidecar existed wins over it."""
    return _scan_blocks([data] if data else [], path, use_index, header)


def scan_file(path, use_index: bool = True, block: int = 1 << 25, header: dict | None = None) -> _Scan:
    """``_scan`` of the file at ``path``, read ``block`` bytes at a time."""
    def blocks():
        try:
            fh = open(path, "rb")
        except FileNotFoundError:
            return
        with fh:
            while True:
                chunk = fh.read(block)
                if not chunk:
                    return
                yield chunk
    return _scan_blocks(blocks(), path, use_index, header)


def _scan_blocks(blocks, path, use_index: bool, header: dict | None = None) -> _Scan:
    """The scan over consecutive blocks of the file: whole lines of each are scanned with their
    offsets in the file, a line cut by a block's end waits for the next block."""
    out = _Scan(header=header)
    buf, base, index, seen_first = b"", 0, None, False
    state = {"hits": 0, "number": 0}
    for block in blocks:
        buf = buf + block if buf else block
        if not seen_first:
            first_end = buf.find(b"\n")
            if first_end < 0:
                continue                                  # the first line is longer than a block
            seen_first = True
            if first_end > 0 and buf.find(HEADER_KEY.encode(), 0, first_end) >= 0:
                try:
                    out.header = _DECODE(buf[:first_end].decode("utf-8"))
                except ValueError:
                    pass
            index = read_index(index_path(path), out.header.get("created")) if out.header and use_index else {}
        cut = buf.rfind(b"\n") + 1
        _scan_lines(buf, cut, base, index, use_index, path, out, state)
        buf, base = buf[cut:], base + cut
    index = index or {}
    total = base + len(buf)
    out.good_bytes = out.size = total
    tail = buf
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
                out.spans.append((base, total))
                out.keys.append(key)
                out.entries.append((total, line_crc(tail), key))
            out.needs_newline = True
        else:
            out.good_bytes = base
            out.warnings.append(
                f"{path}: dropped a torn last line ({len(tail)} bytes, no trailing newline); "
                "it was being written when the run stopped and will be redone"
            )
    out.index_stale = state["hits"] != len(out.entries) or state["hits"] != len(index)
    return out


def _scan_lines(data: bytes, cut: int, base: int, index: dict, use_index: bool, path, out: _Scan,
                state: dict) -> None:
    """Scan the whole lines of ``data[:cut]`` (``base``: where ``data`` starts in the file)."""
    view = memoryview(data)
    hits, number, pos = state["hits"], state["number"], 0
    find, crc32 = data.find, line_crc
    while pos < cut:
        end = find(b"\n", pos)
        number += 1
        if end == pos:
            pos += 1
            continue
        crc = crc32(view[pos:end]) if use_index else 0       # only the index needs it
        hit = index.get(base + end)
        if hit is not None and hit[0] == entry_crc(crc, hit[1]):
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
        out.spans.append((base + pos, base + end))
        out.keys.append(key)
        out.entries.append((base + end, crc, key))
        pos = end + 1
    state["hits"], state["number"] = hits, number
