"""The key index beside a JSONL checkpoint: resume a large run without decoding its rows.

``<checkpoint>.keys`` holds one short JSON line per checkpoint row, written right after the
row's batch is fsynced to the checkpoint::

    {"_whileai_ray_keys": 1, "created": "<the checkpoint header's created stamp>"}
    [end, crc, scenario_id, prompt_sha, rollout_index, eval_run]
    ...

``end`` is the byte offset of the newline that ends the row's line in the checkpoint and
``crc`` the CRC-32 of the line's bytes; the rest is the row's ``schema.row_key``. Opening a
checkpoint then costs a read, a newline scan, a CRC pass and this small file (well under a
second for 100,000 rows) instead of decoding every row (seconds); rows are decoded when used.

The checkpoint stays the truth. An entry is used only when a line of the checkpoint ends at
``end`` and has that CRC; any other line (the index was lost, is behind after a crash between
the two writes, or the file was edited) is decoded and its key recomputed, and the index is
rewritten whole. A missing, foreign or unreadable index is simply rebuilt.
"""
from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

__all__ = ["KEYS_HEADER", "index_path", "read_index", "write_index", "entry_line", "line_crc"]

KEYS_HEADER = "_whileai_ray_keys"


def index_path(checkpoint_path) -> Path:
    return Path(str(checkpoint_path) + ".keys")


def line_crc(line: bytes) -> int:
    return zlib.crc32(line)


def entry_line(end: int, crc: int, key: tuple) -> bytes:
    """One index line (ASCII JSON), newline-terminated."""
    return (json.dumps([end, crc, *key], ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")


def _header_line(created) -> bytes:
    return (json.dumps({KEYS_HEADER: 1, "created": created}, separators=(",", ":")) + "\n").encode("ascii")


def read_index(path, created) -> dict:
    """``{end: (crc, key)}`` from the index at ``path``; ``{}`` when it is missing, unreadable
    or belongs to another checkpoint (another ``created`` stamp). A torn last line is ignored."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return {}
    lines = data.split(b"\n")
    try:
        head = json.loads(lines[0])
    except ValueError:
        return {}
    if not isinstance(head, dict) or head.get(KEYS_HEADER) != 1 or head.get("created") != created:
        return {}
    out = {}
    decode = json.JSONDecoder().decode
    for line in lines[1:]:
        if not line:
            continue
        try:
            end, crc, sid, psha, ri, er = decode(line.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            continue                      # torn or foreign line: that row is decoded instead
        out[end] = (crc, (sid, psha, ri, er))
    return out


def write_index(path, created, entries) -> None:
    """Rewrite the whole index atomically from ``[(end, crc, key)]``."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(_header_line(created))
        fh.write(b"".join(entry_line(end, crc, key) for end, crc, key in entries))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
